#include "analysis/send_wait_peers.hpp"

#include <cmath>
#include <map>
#include <optional>
#include <utility>

#include "analysis/place_peers.hpp"

namespace culprit {

bool sets_the_pace(double quickest_op_ns, const CollectivePace& pace, double link_ratio) {
  return pace.step_ns > 0 && quickest_op_ns >= pace.step_ns && pace.step_ns >= link_ratio * pace.typical_send_wait_ns;
}

double full_windows_outlasted(double quickest_op_ns, const CollectivePace& pace, int nccl_steps) {
  if (pace.typical_quickest_op_ns <= 0) return 0;
  return quickest_op_ns / (nccl_steps * pace.typical_quickest_op_ns);
}

double beyond_any_healthy_window(double quickest_op_ns, const CollectivePace& pace, int nccl_steps) {
  const double slowest_healthy_link = std::exp(3 * kLinkPriorSigma);
  return full_windows_outlasted(quickest_op_ns, pace, nccl_steps) / slowest_healthy_link;
}

std::vector<SlowSendWait> slow_send_waits(const PeerRoles& roles, std::span<const SendWaitFigure> sends,
                                          double false_alarm) {
  std::vector<PeerFigure> figures;
  // Per (sender, communicator): its slowest connection, the one a verdict names.
  std::map<std::pair<uint32_t, uint64_t>, const SendWaitFigure*> slowest;
  for (const SendWaitFigure& s : sends) {
    if (s.per_step_ns <= 0) continue;
    std::optional<PeerFigure> f = roles.figure(s.sender, s.comm_hash, s.sender_rank, std::log(s.per_step_ns));
    const std::optional<PeerRole> far = roles.of(s.receiver, s.comm_hash, s.receiver_rank);
    if (!f || !far) continue;
    f->far_place = far->place;
    f->prior_sigma = kLinkPriorSigma;
    figures.push_back(*f);
    auto [it, added] = slowest.emplace(std::make_pair(s.sender, s.comm_hash), &s);
    if (!added && s.per_step_ns > it->second->per_step_ns) it->second = &s;
  }
  const PeerDepartures departures = peer_departures(figures);
  std::vector<SlowSendWait> out;
  if (departures.judged == 0) return out;
  const double tail = false_alarm / static_cast<double>(departures.judged);
  for (const auto& [who, d] : departures.of) {
    const std::optional<PeerOutlier> p = significant(d, tail);
    if (!p) continue;
    const SendWaitFigure& s = *slowest.at(who);
    // Its SendWait beyond its peers' typical one (the departure is of logs).
    const double excess_per_step = s.per_step_ns * (1 - std::exp(-d.excess));
    out.push_back({s.connection, excess_per_step * s.steps, p->margin()});
  }
  return out;
}

}  // namespace culprit
