#include "analysis/last_arrival_time.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

namespace culprit {

void offer_last_arrival_time(std::span<const MemberWait> members, const ArrivalJudgement& judged,
                             const std::function<bool(const MemberWait&)>& held_from_beyond,
                             std::vector<Evidence>& evidence) {
  struct OwnTime {
    double ns = 0;
    double margin = std::numeric_limits<double>::infinity();
  };
  // Where a GPU's wait is not judged in one of its collective communicators, its lateness may
  // come from there.
  std::set<uint32_t> unjudged_somewhere;
  for (const MemberWait& m : members)
    if (!judged.wait_deficits.count({m.process, m.comm_hash})) unjudged_somewhere.insert(m.process);
  std::map<uint32_t, OwnTime> own;
  for (const MemberWait& m : members) {
    // Unjudged somewhere, or a pipeline's stage (it inherits lateness from its send/recv input).
    if (unjudged_somewhere.count(m.process) || m.stage != 0) continue;
    auto last = judged.last_arrivals.find({m.process, m.comm_hash});
    if (last == judged.last_arrivals.end() || held_from_beyond(m)) continue;
    OwnTime& t = own[m.process];
    t.ns += judged.wait_deficits.at({m.process, m.comm_hash}).deficit_ns * m.ops;
    t.margin = std::min(t.margin, last->second.margin());
  }
  for (const auto& [process, t] : own)
    if (process < evidence.size() && t.ns > 0) evidence[process].offer(t.ns, CulpritClass::kGpuProducer, {}, t.margin);
}

}  // namespace culprit
