#include "analysis/saturated_wires.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/bottleneck_wires.hpp"

namespace culprit {
namespace {

// The saturated links of one wire group against each other.
void judge_links(const LinksOfGroup& links, const std::vector<EdgeView>& views, double tail,
                 const LinkPeerConfig& config, std::vector<SaturatedWireJudgement>& out) {
  const GroupMargins judged = judge_links_of_group(links, tail, config);
  const double peers_ns = std::exp(judged.reference);
  size_t k = 0;
  for (const auto& [key, link] : links) {
    for (size_t i : link.views) {
      SaturatedWireJudgement& j = out[i];
      j.judged = true;
      j.slow = judged.margin[k] > 0;
      j.margin = judged.margin[k];
      j.excess_per_step_ns = views[i].wire_ns - peers_ns;
    }
    ++k;
  }
}

}  // namespace

std::vector<SaturatedWireJudgement> judge_saturated_wires(const std::vector<EdgeView>& views,
                                                          const WireGroups& groups,
                                                          const LinkPeerConfig& config) {
  std::vector<SaturatedWireJudgement> out(views.size());
  // A saturated wire's busy time per step is one chunk's transfer, free of latency.
  std::map<uint64_t, LinksOfGroup> by_group =
      measured_links_of(views, groups, [](const EdgeView& v) { return v.wire_saturated ? v.wire_ns : 0.0; });
  // Groups with too few saturated links to compare them with each other: those links are the
  // bottlenecks of their flows, judged against their group's unsaturated links where there are
  // any (bottleneck_wires.hpp).
  const std::map<uint64_t, LinksOfGroup> unsaturated =
      measured_links_of(views, groups, [](const EdgeView& v) { return v.wire_saturated ? 0.0 : v.wire_ns; });
  std::map<uint64_t, LinksOfGroup> bottlenecks;
  for (auto it = by_group.begin(); it != by_group.end();) {
    if (it->second.size() >= kMinLinks) {
      ++it;
      continue;
    }
    auto peers = unsaturated.find(it->first);
    if (peers != unsaturated.end() && peers->second.size() >= kMinBottleneckPeers) bottlenecks.insert(*it);
    it = by_group.erase(it);
  }
  size_t judged_links = 0;
  for (const auto& [group, links] : by_group) judged_links += links.size();
  for (const auto& [group, links] : bottlenecks) judged_links += links.size();
  const double tail = config.false_alarm / static_cast<double>(std::max<size_t>(1, judged_links));
  for (const auto& [group, links] : by_group) judge_links(links, views, tail, config, out);
  for (const auto& [group, links] : bottlenecks)
    judge_bottleneck_links(links, unsaturated.at(group), views, tail, config, out);
  return out;
}

}  // namespace culprit
