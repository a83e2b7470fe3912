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
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/observations.hpp"

namespace culprit {

// The job's block layout, where the processes seen show one: block size and each block's host.
struct BlockLayout {
  int64_t block = 1;
  std::map<int64_t, std::string> host_of_block;  // block index (rank / block) -> its host

  std::optional<std::string> host_of(int64_t global_rank) const;
  // The global ranks of a host's block (empty where no block is the host's).
  std::vector<int64_t> ranks_of(const std::string& host) const;
};
std::optional<BlockLayout> block_layout(const std::vector<GlobalProcess>& processes);

std::optional<std::string> host_by_block_layout(const std::vector<GlobalProcess>& processes, int64_t global_rank);

}  // namespace culprit
