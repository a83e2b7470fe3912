// Signal of the connection facts pass: a saturated wire that moves a chunk more slowly than
// the other links of its wire group (its communicator, or the communicators of its kind, size
// and chunk, which are replicas: wire_groups.hpp).
//
// Physics: a wire whose sends queue behind each other at nearly every step (EdgeView::
// wire_saturated) never waited for its sender, so its busy time per step is the time it takes
// to move one chunk, free of latency. A slow link is the bottleneck of its flow, so its queue
// fills and it is saturated; a healthy link of a flow paced by something else is not, and its
// busy time holds latency as well. So saturated wires are compared with saturated wires,
// each link once (its channels share its NICs and route: one sample of how links differ),
// in logs:
//   - departure: the link's median log transfer time over its channels minus the median of
//     the group's saturated links;
//   - noise of that departure: the spread of a link's channels around their median, pooled
//     over the group's links, over the square root of its channel count;
//   - spread between healthy links (NICs, cables and switch ports differ a little for good):
//     the variance at which the departures look like draws of one normal law (chi-square
//     median, robust to the slow link itself), combined with a prior (links differ by 10 %,
//     worth four links) for groups of few links;
//   - verdict: a Student t critical value at a family-wise false alarm rate over every link
//     judged in the job, so that few links need a larger departure than many.
// The link must also be slower by min_ratio: a link less than 5 % slower cannot cost the job
// 5 %. Every wire is also judged by slow_wire.hpp's tests (busy time and shortest send against
// all wires of the group) and busy_wire_peers.hpp's (the same, link by link against the other
// links' spread); the strongest verdict stands. The statistics are link_samples.hpp's.
//
// A group with fewer than kMinLinks saturated links has no spread between them to measure:
// those links are judged as the bottlenecks of their flows against the group's unsaturated
// links (bottleneck_wires.hpp), in the same family of tests.
//
// What it cannot tell apart: a link slower by fault from one slower by nature (among six links
// that differ by 10 %, a link must be about 1.5x slower to be named).
#pragma once

#include <vector>

#include "analysis/link_samples.hpp"

namespace culprit {

struct SaturatedWireJudgement {
  bool judged = false;  // a saturated wire, judged here (else slow_wire's tests apply)
  bool slow = false;
  double margin = 0;               // how many times the tightest of its guards it clears
  double excess_per_step_ns = 0;   // its busy time per step above its peers' transfer time
};

// One judgement per view (same order); `judged` where the view is a saturated wire of a
// wire group (a communicator, or the communicators of one kind, size and chunk: wire_groups.hpp)
// with kMinLinks or more saturated links, or with fewer and an unsaturated one or more.
std::vector<SaturatedWireJudgement> judge_saturated_wires(const std::vector<EdgeView>& views,
                                                          const WireGroups& groups = {},
                                                          const LinkPeerConfig& config = {});

}  // namespace culprit
