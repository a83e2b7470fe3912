#include "analysis/own_holds.hpp"

#include <algorithm>
#include <utility>

#include "analysis/gated_holds.hpp"

namespace culprit {

std::vector<OwnHoldVerdict> judge_own_holds(const Observations& obs, const std::map<uint64_t, CommBaseline>& baselines,
                                            const AttributionConfig& cfg, const WireGroups& replicas) {
  struct Receiver {
    uint32_t process;
    uint64_t comm;
    double work;  // per gated step
  };
  std::map<uint64_t, std::vector<Receiver>> by_group;
  for (const auto& [who, work] : gated_work_per_step(obs))
    by_group[wire_group_of(who.second, replicas)].push_back({who.first, who.second, work});
  std::vector<OwnHoldVerdict> verdicts;
  for (const auto& [group, receivers] : by_group) {
    if (receivers.size() < 2) continue;
    for (const Receiver& r : receivers) {
      auto base = baselines.find(r.comm);
      if (base == baselines.end()) continue;
      std::vector<double> others;
      for (const Receiver& o : receivers)
        if (o.process != r.process || o.comm != r.comm) others.push_back(o.work);
      const Excess x = significant_excess(r.work, robust_of(std::move(others)), base->second.cycle_ns, cfg);
      if (x.ns > 0) verdicts.push_back({r.process, r.comm, x});
    }
  }
  return verdicts;
}

std::set<uint32_t> slow_own_holders(const std::vector<OwnHoldVerdict>& verdicts) {
  std::set<uint32_t> out;
  for (const OwnHoldVerdict& v : verdicts) out.insert(v.process);
  return out;
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
