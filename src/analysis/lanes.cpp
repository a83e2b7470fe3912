#include "analysis/lanes.hpp"

namespace culprit {

Lanes::Lanes(const Observations& obs, const std::vector<EdgeFacts>& facts, const ProcessContext& context)
    : observations_(obs), facts_(facts), context_(context) {
  for (size_t i = 0; i < facts.size(); ++i) {
    if (facts[i].src == facts[i].dst) continue;
    const EdgeKey& k = obs.edges[i].key;
    outbound_[{context.host_of(facts[i].src), k.comm_hash, k.channel}].push_back(i);
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

bool Lanes::backpressured(const Lane& lane, const AttributionConfig& cfg, std::optional<uint32_t> receiver) const {
  for (size_t i : exits(lane)) {
    const EdgeFacts& o = facts_[i];
    if (o.no_credit || o.slow_link) return true;
    bool gpu_ahead = o.view.has_send && o.view.step_ns[kSendGpuWait] < cfg.rel_floor * o.view.send_cycle_ns;
    if (gpu_ahead && !(receiver && beyond_waits_on(i, *receiver))) return true;
  }
  return false;
}

bool Lanes::beyond_waits_on(size_t exit, uint32_t receiver) const {
  for (size_t next : exits(entry_of(exit)))
    if (facts_[next].dst == receiver && facts_[next].no_credit) return true;
  return false;
}

}  // namespace culprit
