// Signal of the connection facts pass: a slow wire. SendWait runs from isend accepted to
// completion: the wire and the NICs, not the GPUs. Whether the sender's GPU was also
// waiting does not matter: in a short ring its input came through this wire.
//
// Preferred, where the input has them (wire_ns, send_wait_min_ns): the wire's busy time per
// step and its shortest single send, both well above the communicator's: beyond mad_k robust
// deviations and abs_floor_ns, and by rel_floor of its median where kMinRobustSample or more
// connections measure those deviations, else by link_ratio x its quickest. Queueing behind other
// sends, which any saturated link shows, lengthens neither the busy time nor (where a step
// found the wire idle) the shortest send; sends paced one by one by credit carry latency in
// their busy time but not a longer shortest send. A slow wire lengthens both.
//
// Sums only: SendWait far above what even a saturated healthy link shows, i.e. one send's
// share with all NCCL_STEPS queued above the communicator's typical SendWait.
//
// Each channel is judged as a connection of its own, but a link's channels share its NICs and
// route: a slow link slows them all. So a channel is a slow wire only where most channels of its
// link are (judge_wires_by_link): one channel out of line with its link's others is jitter (a
// healthy tree+dp 5x8x8 under LL128, fresh seed 11081: one channel of eight of a link at 33 us a
// send, the others 29-30, each from eight single-step ops, was named a slow link at 0.92).
//
// The shortest send is every op's (EdgeView::send_wait_min_ns): the quicker of the mean over
// send ops of their quickest step, without the op whose quickest was the longest where three or
// more have one, and the quickest op's SendWait per step. A slow wire slows every op; a healthy
// wire paced by credit that came in bursts queues all the recorded steps of some ops (a healthy
// link of a tree+dp under LL: one op of eight at 46 us, the others at 12-13; of a tree under LL:
// four ops of eight at 39-42 us, the others at 12; in both its busy time held latency too).
//
// What it cannot tell apart: a wire slower by less than rel_floor (a quarter of a transfer),
// or by less than link_ratio in a communicator of fewer than kMinRobustSample connections.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "analysis/edge_stats.hpp"

namespace culprit {

struct WireJudgement {
  bool slow = false;
  // Per step: SendWait (or, where known, wire time) above the communicator's low reference.
  // It may be negative; it is the wire's excess only where `slow`.
  double excess_per_step_ns = 0;
  double margin = 0;  // where slow: how many times the tightest of its guards it clears
};

WireJudgement judge_wire(const EdgeView& view, const CommBaseline& base, const AttributionConfig& config);

// judge_wire for every view (same order), each against its communicator's baseline, a channel
// slow only where its link's (communicator, sender, receiver) lower median channel is too.
std::vector<WireJudgement> judge_wires_by_link(const std::vector<EdgeView>& views,
                                               const std::map<uint64_t, CommBaseline>& baselines,
                                               const AttributionConfig& config);

}  // namespace culprit
