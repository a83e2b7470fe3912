// Hand-built inputs shared by the unit tests of the attribution's passes: processes of one
// collective communicator (rank = process) and connections with both halves recorded.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "analysis/connection_facts.hpp"

namespace culprit::test {

// Process p on hosts[p], holding rank p of collective communicator `comm`.
inline void add_collective_processes(Observations& obs, uint64_t comm, const std::vector<std::string>& hosts) {
  for (size_t p = 0; p < hosts.size(); ++p) {
    obs.processes.push_back({hosts[p], static_cast<int64_t>(100 + p), static_cast<int64_t>(p), ""});
    GlobalCommRank c;
    c.comm_hash = comm;
    c.rank = static_cast<int32_t>(p);
    c.process = static_cast<uint32_t>(p);
    c.has_collective = true;
    obs.comm_ranks.push_back(c);
  }
}

// Ranks 0, 1, ... of communicator `comm` held by `members` (existing processes), in order.
inline void add_comm_ranks(Observations& obs, uint64_t comm, const std::vector<uint32_t>& members,
                           bool collective = true) {
  for (size_t r = 0; r < members.size(); ++r) {
    GlobalCommRank c;
    c.comm_hash = comm;
    c.rank = static_cast<int32_t>(r);
    c.process = members[r];
    c.has_collective = collective;
    obs.comm_ranks.push_back(c);
  }
}

// A connection src -> dst (ranks = processes) on `channel` over `steps` steps, both halves
// recorded; its facts start with nothing judged.
inline EdgeFacts& add_connection(Observations& obs, std::vector<EdgeFacts>& facts, uint64_t comm, uint32_t src,
                                 uint32_t dst, int32_t channel, uint64_t steps) {
  EdgeSummary e;
  e.key = {comm, static_cast<int32_t>(src), static_cast<int32_t>(dst), channel, 0};
  e.send_steps = e.recv_steps = steps;
  obs.edges.push_back(e);
  // Both ends exist as processes, each alone on its node, as the exchange gives them.
  while (obs.processes.size() <= std::max(src, dst)) {
    const int64_t p = static_cast<int64_t>(obs.processes.size());
    obs.processes.push_back({"node" + std::to_string(p), 1000 + p, p, ""});
  }
  EdgeFacts f;
  f.src = src;
  f.dst = dst;
  f.view.has_send = f.view.has_recv = true;
  facts.push_back(f);
  return facts.back();
}

}  // namespace culprit::test
