// A node's GPUs of one communicator in their order along its chain, read from their places
// (pipeline/chain_places.hpp): the GPU that meets the tree's parent first.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/observations.hpp"
#include "analysis/process_context.hpp"

namespace culprit {

// The GPUs of `member`'s node in `comm`, ordered along the chain; empty where the places give
// no order: a GPU without places, or places that vary between collectives (chains that differ
// between channels), where some GPU's mean place lies more than a quarter from a whole place
// or two GPUs share one.
std::vector<uint32_t> chain_order_of(const Observations& obs, const ProcessContext& context, uint32_t member,
                                     uint64_t comm);

}  // namespace culprit
