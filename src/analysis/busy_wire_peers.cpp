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

// Whether most of a link's channels (most_channels, as judge_wires_by_link asks) are each
// slower than its group's links in both times, by min_ratio. A link's value in each time is the
// median over its channels, and the two medians may come from channels in opposite states: a
// channel that finds its wire idle holds latency in its busy time, one that queues holds the
// queue in its shortest send, and a healthy link can have channels of both kinds while a slow
// one lengthens both times of every channel. (A tree+dp 4x4x8 under LL, fresh seed 11153: a
// healthy link's four idle channels at 12.3 us busy and 12.0 shortest, its four queued ones at
// 5.3 and 37.8, its group's links at 5.4 and 12.1; each median stood out, and it was named a
// slow link first, ahead of the true 4.89x one.)
bool most_channels_slow_in_both(const std::vector<size_t>& channels, const std::vector<EdgeView>& views,
                                double busy_ns, double shortest_ns, double min_ratio) {
  const size_t slow = static_cast<size_t>(std::count_if(channels.begin(), channels.end(), [&](size_t i) {
    return views[i].wire_ns > min_ratio * busy_ns && views[i].send_wait_min_ns > min_ratio * shortest_ns;
  }));
  return most_channels(slow, channels.size());
}

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
    const double peers_shortest_ns = std::exp(by_shortest.reference);
    size_t k = 0;
    for (const auto& [key, link] : links) {
      double margin = std::min(by_busy.margin[k], by_shortest.margin[k]);
      if (margin > 0 && !most_channels_slow_in_both(link.views, views, peers_ns, peers_shortest_ns, config.min_ratio))
        margin = 0;
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
