// A node's GPUs of one communicator in their order along its chain, read from their places
// (pipeline/chain_places.hpp): the GPU that meets the tree's parent first. And, of a ring's,
// the one that stops last.
#pragma once

#include <cstdint>
#include <optional>
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

// The GPU of `member`'s node in `comm` that stopped last of them in every collective of
// another algorithm than the tree where all of them recorded a stop, three or more
// (GlobalCommRank::last_stops); none where no GPU did, or too few collectives say.
std::optional<uint32_t> last_to_stop(const Observations& obs, const ProcessContext& context, uint32_t member,
                                     uint64_t comm);

}  // namespace culprit
