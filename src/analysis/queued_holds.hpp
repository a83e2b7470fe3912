// Queued holds: a receiving GPU that is the bottleneck of its lane, told by the queue of its
// own earlier steps that each input waited behind (gated_holds.hpp), without peers to set it
// against. A GPU that consumes slower than its inputs come fills its input slots: input k
// can only be sent once the GPU freed step k - NCCL_STEPS, so each input, once arrived, waits
// behind up to NCCL_STEPS - 1 of its own steps before the GPU frees it; its own time per step
// is then about NCCL_STEPS times its work. A GPU that keeps up frees each input as it arrives
// (own time about its work); inputs queue at a healthy one only where they arrived in a burst
// (a kernel that started after them), which its quick work drains. So a receiver whose own
// time per gated step is half its slots' worth of its work or more, and whose work per step
// stands beyond the guards of the connection phases (rel_floor of its communicator's step,
// abs_floor_ns: a burst drained by quick work does not), is slow to consume whatever its
// communicator's other receivers show, and where none of them is measured at all
// (own_holds.hpp then judges nothing). Measured, docs/accuracy.md ("A receiver that queues
// its own steps"): healthy receivers' own time stayed within 2.7 times their work.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "analysis/edge_stats.hpp"
#include "analysis/observations.hpp"
#include "analysis/own_holds.hpp"

namespace culprit {

// Own time per gated step over work per gated step at which a receiver holds half its input
// slots' worth of its own steps queued: NCCL_STEPS / 2.
inline constexpr double kQueuedHoldRatio = kSlotsPerConnection / 2.0;

// The receivers whose own time per gated step is at least kQueuedHoldRatio times their work
// per gated step, that work beyond rel_floor of their communicator's step and abs_floor_ns;
// each with its work per step as the excess (a GPU that keeps up works a step in a small
// part of it), its margin the lesser of the work's over its guard and the queue's over
// kQueuedHoldRatio.
std::vector<OwnHoldVerdict> judge_queued_holds(const Observations& observations,
                                               const std::map<uint64_t, CommBaseline>& baselines,
                                               const AttributionConfig& config);

// `a` and `b` as one list, one verdict per (process, communicator): the larger excess.
std::vector<OwnHoldVerdict> merge_own_hold_verdicts(std::vector<OwnHoldVerdict> a,
                                                    const std::vector<OwnHoldVerdict>& b);

}  // namespace culprit
