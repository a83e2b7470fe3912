// Context helper: the host of a global rank that no input holds, from how the job was
// launched.
//
// Launchers place consecutive global ranks on one node (Slurm's block distribution,
// torchrun's node-major order): node k holds ranks k x G to k x G + G - 1. Where every host
// seen holds its ranks inside one such aligned block of the same size G (the widest any host
// spans), and no two hosts share a block, a rank that exported nothing belongs to the host
// whose block holds it. A GPU that recorded nothing at all (it never entered the collective
// its peers wait in, and has no network connection of its own) is then still placed.
//
// What it cannot tell: a rank of a block no host holds (its whole node sent nothing), nor any
// rank of a job launched otherwise (round-robin, a custom rank file): then nothing is inferred.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/observations.hpp"

namespace culprit {

std::optional<std::string> host_by_block_layout(const std::vector<GlobalProcess>& processes, int64_t global_rank);

}  // namespace culprit
