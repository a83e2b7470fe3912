// Signal of the connection facts pass: the one saturated wire of a flow (its wire group has too
// few saturated links to compare them with each other, saturated_wires.hpp) against the
// unsaturated links of its group.
//
// Physics: a saturated wire's busy time per step is one chunk's transfer, free of latency
// (EdgeView::wire_saturated). An unsaturated wire's busy time is the union of its sends' times
// on the wire, at least one transfer per step and more by the latency where the wire found
// itself idle: it is an upper bound of that link's transfer time. So the saturated link's
// departure from the unsaturated links' median busy time is at most its departure in transfer
// time: a lower bound of how much slower it moves a chunk.
//
// Statistics: where no fault is present the saturated link is the slowest of the group by
// nature (it saturated because it is), so its departure is at most the largest of the group's
// links' natural departures; the family-wise false alarm rate over every link judged in the job
// (link_samples.hpp) covers that choice. The spread of transfer times between healthy links
// cannot be measured on unsaturated wires (the latency in their busy time shrinks it), so it is
// the prior (links differ by prior_sigma) taken as a bound, not an estimate: known, with
// unlimited degrees of freedom; where the unsaturated links spread more than the prior, their
// spread, at its degrees of freedom. The median's own sampling variance is added.
//
// What it cannot tell apart: in a latency-bound flow (small chunks) the unsaturated links'
// busy time is mostly latency, so the bound is loose and a slow link departs by little (a
// single-channel ring of 19 nodes whose 4.3x link costs 22 %: its busy time is 1.11x its
// peers'); a link naturally slower than prior_sigma allows by more than the critical value.
#pragma once

#include <vector>

#include "analysis/link_samples.hpp"
#include "analysis/saturated_wires.hpp"

namespace culprit {

// A bottleneck is judged against as few as one unsaturated link: the spread between links is
// the prior, known, whatever their number, so one link is a reference as a median is, with the
// variance of one link's departure (the median's factor below, pi/2, bounds it). Two nodes of
// one GPU have two links, a channel's two directions: a 5.41x link of a tree 2x1x6 under LL
// that cost the job 121 % (fresh seed 11077) was named by nobody while three were asked for.
inline constexpr size_t kMinBottleneckPeers = 1;

// The saturated links `bottlenecks` of one wire group against its unsaturated links
// `unsaturated` (kMinBottleneckPeers or more), at the family-wise tail `tail`: one judgement
// written for each view of each saturated link into `out` (indexed like `views`).
void judge_bottleneck_links(const LinksOfGroup& bottlenecks, const LinksOfGroup& unsaturated,
                            const std::vector<EdgeView>& views, double tail, const LinkPeerConfig& config,
                            std::vector<SaturatedWireJudgement>& out);

}  // namespace culprit
