#include "analysis/own_holds.hpp"

#include <algorithm>
#include <utility>

#include "analysis/gated_holds.hpp"

namespace culprit {

std::vector<OwnHoldVerdict> judge_own_holds(const Observations& obs, const std::map<uint64_t, CommBaseline>& baselines,
                                            const AttributionConfig& cfg) {
  std::map<uint64_t, std::vector<std::pair<uint32_t, double>>> by_comm;
  for (const auto& [who, own] : gated_own_time_per_step(obs)) by_comm[who.second].emplace_back(who.first, own);
  std::vector<OwnHoldVerdict> verdicts;
  for (const auto& [comm, receivers] : by_comm) {
    auto base = baselines.find(comm);
    if (receivers.size() < 2 || base == baselines.end()) continue;
    for (const auto& [process, own] : receivers) {
      std::vector<double> others;
      for (const auto& [other, other_own] : receivers)
        if (other != process) others.push_back(other_own);
      const Excess x = significant_excess(own, robust_of(std::move(others)), base->second.cycle_ns, cfg);
      if (x.ns > 0) verdicts.push_back({process, comm, x});
    }
  }
  return verdicts;
}

void offer_slow_own_holds(const Observations& obs, const std::vector<OwnHoldVerdict>& verdicts,
                          std::vector<Evidence>& evidence) {
  // (process, comm) -> the receive steps of one of its channels in the window.
  std::map<std::pair<uint32_t, uint64_t>, double> steps;
  std::map<std::pair<uint64_t, int32_t>, uint32_t> process_of;
  for (const GlobalCommRank& r : obs.comm_ranks) process_of[{r.comm_hash, r.rank}] = r.process;
  for (const EdgeSummary& e : obs.edges) {
    auto receiver = process_of.find({e.key.comm_hash, e.key.dst_rank});
    if (receiver == process_of.end()) continue;
    double& most = steps[{receiver->second, e.key.comm_hash}];
    most = std::max(most, static_cast<double>(e.recv_steps));
  }
  std::map<uint32_t, std::pair<double, double>> own;  // process -> (ns, strongest margin)
  for (const OwnHoldVerdict& v : verdicts) {
    auto [ns, margin] = own[v.process];
    own[v.process] = {ns + v.excess.ns * steps[{v.process, v.comm}], std::max(margin, v.excess.margin)};
  }
  for (const auto& [process, found] : own)
    if (process < evidence.size())
      evidence[process].offer(found.first, CulpritClass::kGpuConsumer, std::nullopt, found.second);
}

}  // namespace culprit
