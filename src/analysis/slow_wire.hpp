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
// What it cannot tell apart: a wire slower by less than rel_floor (a quarter of a transfer),
// or by less than link_ratio in a communicator of fewer than kMinRobustSample connections.
#pragma once

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

}  // namespace culprit
