// Signal of the connection facts pass: a timed wire whose busy time and shortest send both
// stand out from the other links of its wire group (its communicator, or the communicators of
// its kind, size and chunk: wire_groups.hpp), by a Student t test on the spread between links.
//
// Physics: a slow wire takes longer to move each chunk, so both its busy time per step and its
// shortest single send grow by the slowdown; queueing behind other sends lengthens neither, and
// sends paced by credit carry latency in their busy time but not a longer shortest send
// (slow_wire.hpp). Links of one job differ by a few percent for good (NICs, cables, switch
// ports), and a healthy unsaturated wire's busy time also holds latency, so the yardstick is
// the spread between the group's links, measured in logs without the link judged (a slow link
// is no part of its own yardstick: in a ring whose two directions' links differ by a fifth,
// the judged link moved the chi-square median of ten by a place), combined with a prior
// (links differ by 10 %, worth four links), at a family-wise false alarm rate over every link
// judged in the job (link_samples.hpp). Both times must clear it; each link counts once, and
// most of its channels must each be slower than the group's links in both times (a healthy link
// can have idle channels, whose busy time holds latency, and queued ones, whose shortest send
// holds the queue: each of its medians then stands out, though no channel is slow).
//
// slow_wire.hpp's fixed guard (5 robust deviations of the group's connections, the link
// itself among them) and, for saturated wires, saturated_wires.hpp also judge every wire; the
// strongest verdict stands.
//
// What it cannot tell apart: a link slower by fault from one slower by nature. Among six
// links that differ by 10 %, the critical t is about 6 (8 degrees of freedom, 1e-3 over six
// links), so a link must be about 1.8x slower in both times to be named; and a healthy
// unsaturated link's busy time holds latency, which shrinks a slow link's departure there.
#pragma once

#include <vector>

#include "analysis/link_samples.hpp"

namespace culprit {

struct BusyWireJudgement {
  bool slow = false;
  double margin = 0;              // how many times the tightest of its guards it clears
  double excess_per_step_ns = 0;  // its busy time per step above its peers'
};

// One judgement per view (same order); slow only for a timed wire (busy time and shortest
// send known) of a wire group with kMinLinks or more timed links.
std::vector<BusyWireJudgement> judge_busy_wires(const std::vector<EdgeView>& views, const WireGroups& groups = {},
                                                const LinkPeerConfig& config = {.leave_judged_out = true});

}  // namespace culprit
