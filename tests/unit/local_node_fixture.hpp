// A node's GPUs as the local stage sees them (LocalData) and as it reports them
// (GlobalCommRank), for the unit tests of the passes that measure on each node.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/observations.hpp"
#include "io/local_data.hpp"

namespace culprit::test {

// Ranks 0 .. gpus-1 of communicator `comm` on `host`, process r holding rank r (pid 100 + r).
inline void add_node_gpus(LocalData& data, std::vector<GlobalCommRank>& ranks, const std::string& host,
                          uint64_t comm, int32_t gpus) {
  for (int32_t r = 0; r < gpus; ++r) {
    data.processes.push_back({host, 100 + r, r, ""});
    CommRankSeen seen;
    seen.comm_hash = comm;
    seen.rank = r;
    seen.process = static_cast<uint32_t>(r);
    data.comm_ranks.push_back(seen);
    GlobalCommRank g;
    g.comm_hash = comm;
    g.rank = r;
    g.process = static_cast<uint32_t>(r);
    ranks.push_back(g);
  }
}

}  // namespace culprit::test
