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
// receives; only ranks with at least one op's gated steps (kSlotsPerConnection).
std::map<std::pair<uint32_t, uint64_t>, double> gated_own_time_per_step(const Observations& observations);

}  // namespace culprit
