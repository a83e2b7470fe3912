// A node's GPUs of one communicator along the chain from one of its ends, read on the node from
// the order they stop each tree channel (pipeline/chain_places.hpp). And, of a ring's, the one
// that stops last.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "analysis/observations.hpp"
#include "analysis/process_context.hpp"

namespace culprit {

// The GPUs of `member`'s node in `comm` along the chain of the tree channels it ends, `member`
// first (GlobalCommRank::chain_from); empty where the order was not read, the chains of its
// channels differ, or a GPU of it is not known.
std::vector<uint32_t> chain_from(const Observations& obs, const ProcessContext& context, uint32_t member,
                                 uint64_t comm);

// The GPU of `member`'s node in `comm` that stopped last of them in every collective of
// another algorithm than the tree where all of them recorded a stop, three or more
// (GlobalCommRank::last_stops); none where no GPU did, or too few collectives say.
std::optional<uint32_t> last_to_stop(const Observations& obs, const ProcessContext& context, uint32_t member,
                                     uint64_t comm);

}  // namespace culprit
