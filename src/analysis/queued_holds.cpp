#include "analysis/queued_holds.hpp"

#include <algorithm>
#include <utility>

#include "analysis/gated_holds.hpp"

namespace culprit {

std::vector<OwnHoldVerdict> judge_queued_holds(const Observations& obs,
                                               const std::map<uint64_t, CommBaseline>& baselines,
                                               const AttributionConfig& cfg) {
  const auto own = gated_own_time_per_step(obs);
  std::vector<OwnHoldVerdict> verdicts;
  for (const auto& [who, work] : gated_work_per_step(obs)) {
    auto base = baselines.find(who.second);
    if (base == baselines.end() || !(work > 0)) continue;
    const double queue = own.at(who) / work;
    if (queue < kQueuedHoldRatio) continue;
    const Excess x = beyond_guard(work, std::max(cfg.rel_floor * base->second.cycle_ns, cfg.abs_floor_ns));
    if (x.ns > 0) verdicts.push_back({who.first, who.second, {x.ns, std::min(x.margin, queue / kQueuedHoldRatio)}});
  }
  return verdicts;
}

std::vector<OwnHoldVerdict> merge_own_hold_verdicts(std::vector<OwnHoldVerdict> a,
                                                    const std::vector<OwnHoldVerdict>& b) {
  for (const OwnHoldVerdict& v : b) {
    auto same = std::find_if(a.begin(), a.end(),
                             [&](const OwnHoldVerdict& u) { return u.process == v.process && u.comm == v.comm; });
    if (same == a.end())
      a.push_back(v);
    else if (v.excess.ns > same->excess.ns)
      *same = v;
  }
  return a;
}

}  // namespace culprit
