#include "analysis/receiver_peers.hpp"

#include <algorithm>
#include <limits>

#include "analysis/robust_stats.hpp"

namespace culprit {
namespace {

const int kReceiverPhases[] = {kSendPeerWait, kRecvFlushWait, kRecvGpuWait};

bool has_half_of(const EdgeView& v, int phase) { return phase == kSendPeerWait ? v.has_send : v.has_recv; }

// A phase per step as the receiver is judged by it: its consumption without its worst receive
// op (receiver_peers.hpp), the others whole.
double judged_step_ns(const EdgeView& v, int phase) {
  return phase == kRecvGpuWait ? v.consume_typical_ns : v.step_ns[phase];
}

constexpr int32_t kNoPeer = -1, kSeveralPeers = -2;

// Records `peer` as one of a sending channel end's peers: the only one so far, or several.
void note_only_peer(int32_t& only, int32_t peer) {
  if (only == kNoPeer) only = peer;
  else if (only != peer) only = kSeveralPeers;
}

}  // namespace

ReceiverPeers::ReceiverPeers(const std::vector<EdgeView>& views, const AttributionConfig& config,
                             const std::map<uint64_t, int32_t>& p2p_sizes, const WireGroups& wire_groups)
    : config_(config), p2p_sizes_(p2p_sizes), wire_groups_(wire_groups) {
  for (const EdgeView& v : views) {
    const EdgeKey& k = v.edge->key;
    ++fan_in_[{k.comm_hash, k.dst_rank, k.channel}];  // a connection recorded by its sender counts too
    if (v.has_recv) {
      inputs_of_[{k.comm_hash, k.dst_rank, k.channel}].push_back(&v);
      const double hold = judged_step_ns(v, kRecvGpuWait);
      auto [quickest, first] = quickest_hold_.try_emplace({k.comm_hash, k.dst_rank}, hold);
      if (!first) quickest->second = std::min(quickest->second, hold);
    }
    if (v.has_send) {
      double& blocked = output_blocked_[{k.comm_hash, k.src_rank, k.channel}];
      blocked = std::max(blocked, v.step_ns[kSendPeerWait]);
    }
    note_only_peer(only_output_.try_emplace({k.comm_hash, k.src_rank, k.channel}, kNoPeer).first->second, k.dst_rank);
  }
  for (const EdgeView& v : views) {
    const EdgeKey& k = v.edge->key;
    for (int p : kReceiverPhases)
      if (has_half_of(v, p)) {
        Group& g = groups_[kind_of(k)][p];
        g.members.emplace_back(judged_step_ns(v, p), std::make_pair(k.comm_hash, k.dst_rank));
        if (p == kRecvGpuWait) g.unblocked.emplace_back(unexplained_hold(v), std::make_pair(k.comm_hash, k.dst_rank));
      }
  }
  std::map<uint64_t, std::vector<double>> quickest_by_comm;
  for (const auto& [receiver, hold] : quickest_hold_) quickest_by_comm[receiver.first].push_back(hold);
  for (auto& [comm, holds] : quickest_by_comm) typical_quickest_hold_[comm] = median_of(holds);
  for (const EdgeView& v : views)
    if (v.has_recv && v.consume_min_ns)
      groups_[kind_of(v.edge->key)][kRecvGpuWait].shortest.emplace_back(
          *v.consume_min_ns, std::make_pair(v.edge->key.comm_hash, v.edge->key.dst_rank));
  for (auto& [kind, by_phase] : groups_)
    for (auto& [phase, group] : by_phase) {
      for (const auto& [value, receiver] : group.members) {
        group.sorted.push_back(value);
        ++group.inputs[receiver];
      }
      std::sort(group.sorted.begin(), group.sorted.end());
    }
}

bool ReceiverPeers::may_stand_out(const Group& group, const Receiver& receiver, double value, double floor) {
  auto own = group.inputs.find(receiver);
  const size_t n = group.sorted.size(), others = own == group.inputs.end() ? n : n - own->second;
  if (others < kMinRobustSample) return true;  // judged against the loudest other: not screened
  // The k-th smallest of a subset is at least the k-th smallest of the whole.
  const double median_bound = (group.sorted[(others - 1) / 2] + group.sorted[others / 2]) / 2;
  return value - median_bound > floor;
}

const Robust& ReceiverPeers::others_of(const Values& values, std::map<Receiver, Robust>& cache,
                                       const Receiver& receiver) {
  auto cached = cache.find(receiver);
  if (cached != cache.end()) return cached->second;
  std::vector<double> others;
  others.reserve(values.size());
  for (const auto& [value, other] : values)
    if (other != receiver) others.push_back(value);
  return cache[receiver] = robust_of(std::move(others));
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

Excess ReceiverPeers::anomaly(const EdgeView& view, int phase, double cycle_ns, bool every_step_guard) const {
  const bool combines = combining(view.edge->key);
  auto kind = groups_.find(kind_of(view.edge->key));
  if (kind == groups_.end()) return {};
  auto group = kind->second.find(phase);
  if (group == kind->second.end()) return {};
  const Group& g = group->second;
  const Receiver receiver{view.edge->key.comm_hash, view.edge->key.dst_rank};
  if (!has_half_of(view, phase)) return {};
  const double scale = phase == kRecvFlushWait ? cycle_ns : cycle_ns * config_.credit_rel_floor / config_.rel_floor;
  const double floor = std::max(config_.rel_floor * scale, config_.abs_floor_ns);
  const double quick_floor = std::max(config_.rel_floor * cycle_ns, config_.abs_floor_ns);
  // A receiver that sends its input's data back to that input's sender alone, and consumes its
  // quickest input as fast as the communicator's receivers typically consume theirs, holds
  // this one for its own output's credit (receiver_peers.hpp): that much is no consumption.
  const double value = phase == kRecvGpuWait && held_for_returned_data(view, quick_floor)
                           ? std::min(held_value(view, phase, combines), unblocked_hold(view))
                           : held_value(view, phase, combines);
  if (!may_stand_out(g, receiver, value, floor)) return {};
  // Slow consumption must be so in every step: a second guard, and the margin is the tighter.
  const double every_step = every_step_guard && phase == kRecvGpuWait && !g.shortest.empty()
                                ? every_step_margin(view, others_of(g.shortest, g.shortest_without, receiver), cycle_ns)
                                : std::numeric_limits<double>::infinity();
  if (every_step == 0) return {};
  // Few peers: each is a bar the hold must clear, and what its blocked output or a later
  // sibling input explains is no bar for consumption, nor counts in the judged hold
  // (receiver_peers.hpp; `value` is at least unexplained_hold).
  const Robust& base = others_of(g.members, g.base_without, receiver);
  Excess excess = phase == kRecvGpuWait && base.n < kMinRobustSample
                      ? excess_over_peers(unexplained_hold(view),
                                          others_of(g.unblocked, g.unblocked_without, receiver), scale)
                      : excess_over_peers(value, base, scale);
  excess.margin = std::min(excess.margin, every_step);
  return excess;
}

bool ReceiverPeers::held_for_returned_data(const EdgeView& view, double floor) const {
  const EdgeKey& k = view.edge->key;
  if (!returns_to_sender(k)) return false;
  auto quickest = quickest_hold_.find({k.comm_hash, k.dst_rank});
  if (quickest == quickest_hold_.end()) return false;
  auto typical = typical_quickest_hold_.find(k.comm_hash);
  return quickest->second - typical->second <= floor;
}

bool ReceiverPeers::returns_to_sender(const EdgeKey& key) const {
  if (p2p_sizes_.count(key.comm_hash)) return false;  // a stage's send and receive are separate calls
  // Its one input is this connection (fan_in_ counts it), and its one output goes back.
  auto inputs = fan_in_.find({key.comm_hash, key.dst_rank, key.channel});
  auto output = only_output_.find({key.comm_hash, key.dst_rank, key.channel});
  return inputs != fan_in_.end() && inputs->second == 1 && output != only_output_.end() &&
         output->second == key.src_rank;
}

double ReceiverPeers::unblocked_hold(const EdgeView& view) const {
  const EdgeKey& k = view.edge->key;
  auto blocked = output_blocked_.find({k.comm_hash, k.dst_rank, k.channel});
  const double hold = judged_step_ns(view, kRecvGpuWait);
  return blocked == output_blocked_.end() ? hold : std::max(0.0, hold - blocked->second);
}

double ReceiverPeers::unexplained_hold(const EdgeView& view) const {
  return std::min(held_value(view, kRecvGpuWait, combining(view.edge->key)), unblocked_hold(view));
}

double ReceiverPeers::held_value(const EdgeView& view, int phase, bool combines) const {
  const double value = judged_step_ns(view, phase);
  return phase != kRecvFlushWait && combines ? std::max(0.0, value - sibling_wait(view)) : value;
}

Excess ReceiverPeers::excess_over_peers(double value, const Robust& base, double scale) const {
  if (base.n >= kMinRobustSample) {
    const Excess excess = significant_excess(value, base, scale, config_);
    return excess.ns > 0 ? excess : Excess{};  // held buffers below the peers' say nothing
  }
  const double others = base.n > 0 ? base.maximum : 0.0;
  return beyond_guard(value - others, std::max(config_.rel_floor * scale, config_.abs_floor_ns));
}

}  // namespace culprit
