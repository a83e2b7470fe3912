#include "analysis/lanes.hpp"

#include <algorithm>
#include <limits>

namespace culprit {

Lanes::Lanes(const Observations& obs, const std::vector<EdgeFacts>& facts, const ProcessContext& context)
    : observations_(obs), facts_(facts), context_(context) {
  for (size_t i = 0; i < facts.size(); ++i) {
    if (facts[i].src == facts[i].dst) continue;
    const EdgeKey& k = obs.edges[i].key;
    outbound_[{context.host_of(facts[i].src), k.comm_hash, k.channel}].push_back(i);
    const std::string &from = context.host_of(facts[i].src), &to = context.host_of(facts[i].dst);
    if (from == to) continue;  // a connection inside one node joins it to no other
    neighbours_[{from, k.comm_hash, k.channel}].insert(to);
    neighbours_[{to, k.comm_hash, k.channel}].insert(from);
  }
}

Lane Lanes::entry_of(size_t i) const {
  const EdgeKey& k = observations_.edges[i].key;
  return {context_.host_of(facts_[i].dst), k.comm_hash, k.channel};
}

const std::vector<size_t>& Lanes::exits(const Lane& lane) const {
  static const std::vector<size_t> kNone;
  auto it = outbound_.find(lane);
  return it == outbound_.end() ? kNone : it->second;
}

std::vector<size_t> Lanes::onward_exits(size_t connection) const {
  const Lane lane = entry_of(connection);
  const std::vector<size_t>& all = exits(lane);
  auto neighbours = neighbours_.find(lane);
  if (neighbours == neighbours_.end() || neighbours->second.size() < 2) return all;
  const std::string& came_from = context_.host_of(facts_[connection].src);
  std::vector<size_t> onward;
  for (size_t i : all)
    if (context_.host_of(facts_[i].dst) != came_from) onward.push_back(i);
  return onward;
}

bool Lanes::backpressured(const Lane& lane, const AttributionConfig& cfg, std::optional<uint32_t> receiver) const {
  return held_beyond(exits(lane), cfg, receiver);
}

bool Lanes::backpressured(size_t connection, const AttributionConfig& cfg) const {
  return held_beyond(onward_exits(connection), cfg, facts_[connection].dst,
                     facts_[connection].view.step_ns[kRecvGpuWait]);
}

bool Lanes::node_backpressured(const std::string& host, uint64_t comm, uint32_t process,
                               const AttributionConfig& cfg) const {
  for (auto it = outbound_.lower_bound({host, comm, std::numeric_limits<int32_t>::min()});
       it != outbound_.end() && std::get<0>(it->first) == host && std::get<1>(it->first) == comm; ++it) {
    std::vector<size_t> others;
    for (size_t i : it->second)
      if (facts_[i].src != process) others.push_back(i);
    if (held_beyond(others, cfg, process)) return true;
  }
  return false;
}

double Lanes::onward_hold_ns(size_t connection) const {
  double hold = 0;
  for (size_t i : onward_exits(connection)) {
    const EdgeView& v = facts_[i].view;
    if (v.has_send) hold = std::max(hold, v.step_ns[kSendPeerWait] + v.step_ns[kSendWait]);
  }
  return hold;
}

bool Lanes::held_beyond(const std::vector<size_t>& exits, const AttributionConfig& cfg,
                        std::optional<uint32_t> receiver, double receiver_hold_ns) const {
  for (size_t i : exits) {
    const EdgeFacts& o = facts_[i];
    if (o.no_credit || o.slow_link) return true;
    if (data_ready_at_once(o.view, cfg) &&
        !(receiver && beyond_waits_on(i, *receiver) && receiver_hold_ns > o.view.step_ns[kSendWait]))
      return true;
  }
  return false;
}

bool Lanes::delivered_past_receiver(size_t connection, const AttributionConfig& cfg) const {
  const uint32_t receiver = facts_[connection].dst;
  for (size_t i : onward_exits(connection))
    if (facts_[i].src != receiver && data_ready_at_once(facts_[i].view, cfg)) return true;
  return false;
}

bool Lanes::beyond_waits_on(size_t exit, uint32_t receiver) const {
  for (size_t next : exits(entry_of(exit)))
    if (facts_[next].dst == receiver && facts_[next].no_credit) return true;
  return false;
}

}  // namespace culprit
