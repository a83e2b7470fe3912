#include "analysis/chain_order.hpp"

#include <cmath>
#include <cstdint>
#include <string>

namespace culprit {

namespace {

// A GPU that swapped places with its neighbour in one collective of four or more still reads
// its place; one whose place varies more belongs to no single chain.
constexpr double kPlaceSlack = 0.25;
constexpr uint32_t kMinSamples = 3;
constexpr uint32_t kUnplaced = UINT32_MAX;

}  // namespace

std::vector<uint32_t> chain_order_of(const Observations& obs, const ProcessContext& context, uint32_t member,
                                     uint64_t comm) {
  const std::string& host = context.host_of(member);
  std::vector<const GlobalCommRank*> gpus;
  for (const GlobalCommRank& c : obs.comm_ranks)
    if (c.comm_hash == comm && context.host_of(c.process) == host) gpus.push_back(&c);
  std::vector<uint32_t> order(gpus.size(), kUnplaced);
  for (const GlobalCommRank* c : gpus) {
    if (c->chain_place_samples < kMinSamples) return {};
    const double mean = c->chain_place_sum / c->chain_place_samples;
    const double place = std::round(mean);
    if (std::fabs(mean - place) > kPlaceSlack || place < 0 || place >= static_cast<double>(order.size())) return {};
    uint32_t& slot = order[static_cast<size_t>(place)];
    if (slot != kUnplaced) return {};
    slot = c->process;
  }
  return order;
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
