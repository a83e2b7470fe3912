#include "analysis/chain_order.hpp"

#include <cstdint>
#include <string>

namespace culprit {

namespace {

constexpr uint32_t kMinSamples = 3;

}  // namespace

std::vector<uint32_t> chain_from(const Observations& obs, const ProcessContext& context, uint32_t member,
                                 uint64_t comm) {
  for (const GlobalCommRank& c : obs.comm_ranks) {
    if (c.process != member || c.comm_hash != comm || c.chain_length == 0) continue;
    std::vector<uint32_t> chain;
    for (size_t i = 0; i < c.chain_length && i < kMaxChainGpus; ++i) {
      auto p = context.rank_map().find({comm, c.chain_from[i]});
      if (p == context.rank_map().end()) return {};
      chain.push_back(p->second);
    }
    return chain;
  }
  return {};
}

std::optional<uint32_t> last_to_stop(const Observations& obs, const ProcessContext& context, uint32_t member,
                                     uint64_t comm) {
  const std::string& host = context.host_of(member);
  for (const GlobalCommRank& c : obs.comm_ranks)
    if (c.comm_hash == comm && context.host_of(c.process) == host && c.last_stop_samples >= kMinSamples &&
        c.last_stops == c.last_stop_samples)
      return c.process;
  return std::nullopt;
}

}  // namespace culprit
