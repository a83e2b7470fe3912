#include "analysis/receiver_peers.hpp"

#include <algorithm>
#include <limits>

namespace culprit {
namespace {

const int kReceiverPhases[] = {kSendPeerWait, kRecvFlushWait, kRecvGpuWait};

bool has_half_of(const EdgeView& v, int phase) { return phase == kSendPeerWait ? v.has_send : v.has_recv; }

// For each receiver among `values`, the robust baseline of the other receivers' values.
template <typename Receiver>
std::map<Receiver, Robust> baselines_without_each(const std::vector<std::pair<double, Receiver>>& values) {
  std::map<Receiver, Robust> out;
  std::vector<double> others;
  for (const auto& [value, receiver] : values) {
    if (out.count(receiver)) continue;
    others.clear();
    for (const auto& [other_value, other] : values)
      if (other != receiver) others.push_back(other_value);
    out[receiver] = robust_of(others);
  }
  return out;
}

}  // namespace

ReceiverPeers::ReceiverPeers(const std::vector<EdgeView>& views, const AttributionConfig& config,
                             const std::map<uint64_t, int32_t>& p2p_sizes, const WireGroups& wire_groups)
    : config_(config), p2p_sizes_(p2p_sizes), wire_groups_(wire_groups) {
  for (const EdgeView& v : views) {
    const EdgeKey& k = v.edge->key;
    ++fan_in_[{k.comm_hash, k.dst_rank, k.channel}];  // a connection recorded by its sender counts too
    if (v.has_recv) inputs_of_[{k.comm_hash, k.dst_rank, k.channel}].push_back(&v);
  }
  for (const EdgeView& v : views) {
    const EdgeKey& k = v.edge->key;
    for (int p : kReceiverPhases)
      if (has_half_of(v, p))
        groups_[kind_of(k)][p].members.emplace_back(v.step_ns[p], std::make_pair(k.comm_hash, k.dst_rank));
  }
  for (const EdgeView& v : views)
    if (v.has_recv && v.consume_min_ns)
      groups_[kind_of(v.edge->key)][kRecvGpuWait].shortest.emplace_back(
          *v.consume_min_ns, std::make_pair(v.edge->key.comm_hash, v.edge->key.dst_rank));
  for (auto& [kind, by_phase] : groups_)
    for (auto& [phase, group] : by_phase) {
      group.base_without = baselines_without_each(group.members);
      group.shortest_without = baselines_without_each(group.shortest);
    }
}

ReceiverPeers::Kind ReceiverPeers::kind_of(const EdgeKey& key) const {
  const bool p2p = p2p_sizes_.count(key.comm_hash) > 0;
  return {wire_group_of(key.comm_hash, wire_groups_), p2p, !p2p && combining(key)};
}

bool ReceiverPeers::combining(const EdgeKey& key) const {
  if (p2p_sizes_.count(key.comm_hash)) return false;
  auto it = fan_in_.find({key.comm_hash, key.dst_rank, key.channel});
  return it != fan_in_.end() && it->second > 1;
}

double ReceiverPeers::sibling_wait(const EdgeView& view) const {
  double wait = 0;
  if (!view.has_recv) return wait;
  auto it = inputs_of_.find({view.edge->key.comm_hash, view.edge->key.dst_rank, view.edge->key.channel});
  if (it == inputs_of_.end()) return wait;
  for (const EdgeView* sibling : it->second)
    if (sibling->edge != view.edge) wait = std::max(wait, sibling->step_ns[kRecvWait] - view.step_ns[kRecvWait]);
  return wait;
}

double ReceiverPeers::every_step_margin(const EdgeView& view, const Robust& shortest, double cycle_ns) const {
  if (!view.consume_min_ns || shortest.n < 2) return std::numeric_limits<double>::infinity();  // unknown
  double excess = *view.consume_min_ns - low_reference(shortest);
  return beyond_guard(excess, std::max(config_.rel_floor * cycle_ns, config_.abs_floor_ns)).margin;
}

Excess ReceiverPeers::anomaly(const EdgeView& view, int phase, double cycle_ns) const {
  const bool combines = combining(view.edge->key);
  auto kind = groups_.find(kind_of(view.edge->key));
  if (kind == groups_.end()) return {};
  auto group = kind->second.find(phase);
  if (group == kind->second.end()) return {};
  const Group& g = group->second;
  const Receiver receiver{view.edge->key.comm_hash, view.edge->key.dst_rank};
  // Slow consumption must be so in every step: a second guard, and the margin is the tighter.
  const auto shortest = g.shortest_without.find(receiver);
  const double every_step = phase == kRecvGpuWait && shortest != g.shortest_without.end()
                                ? every_step_margin(view, shortest->second, cycle_ns)
                                : std::numeric_limits<double>::infinity();
  if (every_step == 0) return {};
  const auto base = g.base_without.find(receiver);
  if (base == g.base_without.end()) return {};  // the view lacks this phase's half
  Excess excess = excess_over_peers(view, base->second, phase, combines, cycle_ns);
  excess.margin = std::min(excess.margin, every_step);
  return excess;
}

Excess ReceiverPeers::excess_over_peers(const EdgeView& view, const Robust& base, int phase, bool combines,
                                        double cycle_ns) const {
  double value = view.step_ns[phase];
  if (phase != kRecvFlushWait && combines) value = std::max(0.0, value - sibling_wait(view));
  double scale = cycle_ns;
  if (phase != kRecvFlushWait) scale *= config_.credit_rel_floor / config_.rel_floor;
  if (base.n >= kMinRobustSample) return significant_excess(value, base, scale, config_);
  const double others = base.n > 0 ? base.maximum : 0.0;
  return beyond_guard(value - others, std::max(config_.rel_floor * scale, config_.abs_floor_ns));
}

}  // namespace culprit
