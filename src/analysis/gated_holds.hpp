// Gated holds: a receiving GPU's own time per step, where its per-step traces show it
// (GlobalCommRank::gated_*, io/slot_gates.hpp). A GPU that holds its inputs because its own
// output slots are not free yet (its sends wait for a slow receiver) passes backpressure on;
// what it holds after its inputs arrived and its output slots were free is its own. Per-op
// sums cannot tell the two apart: the gate of step k is the send of step k - NCCL_STEPS.
#pragma once

#include <cstdint>
#include <map>
#include <utility>

#include "analysis/observations.hpp"

namespace culprit {

// (process, communicator) -> the mean own time per gated step of that rank's network
// receives; only ranks with at least one op's gated steps (kSlotsPerConnection). What of a
// hold is not backpressure: the queue of the GPU's earlier steps included.
std::map<std::pair<uint32_t, uint64_t>, double> gated_own_time_per_step(const Observations& observations);

// The same ranks' mean work per gated step: the own time after the GPU had freed the step
// before. How fast the GPU consumes: a kernel that started after its inputs had arrived, and
// then worked them at its usual pace, held the last of them for the whole queue.
std::map<std::pair<uint32_t, uint64_t>, double> gated_work_per_step(const Observations& observations);

}  // namespace culprit
