#include "analysis/data_flow.hpp"

#include <map>
#include <set>
#include <string>
#include <utility>

namespace culprit {

std::vector<WaitEdge> data_flow_edges(const Observations& obs, const std::vector<EdgeFacts>& facts,
                                      const ProcessContext& context) {
  std::vector<WaitEdge> flow;
  std::map<std::pair<std::string, uint64_t>, std::vector<uint32_t>> members_on_host;
  std::set<std::pair<uint64_t, uint32_t>> receives_from_net, sends_to_net;
  for (const auto& [key, process] : context.rank_map())
    members_on_host[{context.host_of(process), key.first}].push_back(process);
  for (size_t i = 0; i < facts.size(); ++i) {
    if (facts[i].src == facts[i].dst) continue;
    flow.push_back({facts[i].dst, facts[i].src, 1.0, "data"});
    receives_from_net.insert({obs.edges[i].key.comm_hash, facts[i].dst});
    sends_to_net.insert({obs.edges[i].key.comm_hash, facts[i].src});
  }
  for (const auto& [host_comm, members] : members_on_host) {
    uint64_t comm = host_comm.second;
    for (uint32_t a : members) {
      bool a_pure_receiver = receives_from_net.count({comm, a}) && !sends_to_net.count({comm, a});
      if (a_pure_receiver) continue;
      for (uint32_t b : members) {
        bool b_pure_sender = sends_to_net.count({comm, b}) && !receives_from_net.count({comm, b});
        if (a != b && !b_pure_sender) flow.push_back({a, b, 1.0, "data"});
      }
    }
  }
  return flow;
}

std::vector<double> waited_per_process(const Observations& obs, const std::vector<EdgeFacts>& facts, size_t n) {
  std::vector<double> waited(n, 0.0);
  for (size_t i = 0; i < facts.size(); ++i) {
    const EdgeSummary& e = obs.edges[i];
    waited[facts[i].dst] += static_cast<double>(e.phase_ns[kRecvWait]);
    waited[facts[i].src] += static_cast<double>(e.phase_ns[kSendGpuWait] + e.phase_ns[kSendPeerWait]);
  }
  return waited;
}

}  // namespace culprit
