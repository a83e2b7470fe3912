#include "analysis/busy_wire_peers.hpp"

#include <algorithm>
#include <cmath>

namespace culprit {
namespace {

bool timed(const EdgeView& v) { return v.wire_ns > 0 && v.send_wait_min_ns > 0; }

// The shortest send a link is judged by is the view's (EdgeView::send_wait_min_ns): the
// quicker of its ops' mean shortest step and its quickest op's mean step. (A tree+dp job under
// LL: a healthy link's channel queued every step of six ops of eight, its ops' shortest steps
// 12-38 us, mean 25.5, its quickest op 12.4, the group's links 12.0; with its other channel's
// idle sends, whose busy time holds the latency, both of its times stood out, at 1.29.)
double shortest_send_of(const EdgeView& v) { return timed(v) ? v.send_wait_min_ns : 0.0; }

}  // namespace

std::vector<BusyWireJudgement> judge_busy_wires(const std::vector<EdgeView>& views, const WireGroups& groups,
                                                const LinkPeerConfig& config) {
  std::vector<BusyWireJudgement> out(views.size());
  auto busy = measured_links_of(views, groups, [](const EdgeView& v) { return timed(v) ? v.wire_ns : 0.0; });
  auto shortest =
      measured_links_of(views, groups, [](const EdgeView& v) { return shortest_send_of(v); });
  std::erase_if(busy, [](const auto& group) { return group.second.size() < kMinLinks; });
  size_t judged_links = 0;
  for (const auto& [group, links] : busy) judged_links += links.size();
  const double tail = config.false_alarm / static_cast<double>(std::max<size_t>(1, judged_links));
  for (const auto& [group, links] : busy) {
    // Both groupings hold the same links in the same order: both take exactly the timed views.
    const GroupMargins by_busy = judge_links_of_group(links, tail, config);
    const GroupMargins by_shortest = judge_links_of_group(shortest.at(group), tail, config);
    const double peers_ns = std::exp(by_busy.reference);
    size_t k = 0;
    for (const auto& [key, link] : links) {
      const double margin = std::min(by_busy.margin[k], by_shortest.margin[k]);
      for (size_t i : link.views) {
        out[i].slow = margin > 0;
        out[i].margin = margin;
        out[i].excess_per_step_ns = views[i].wire_ns - peers_ns;
      }
      ++k;
    }
  }
  return out;
}

}  // namespace culprit
