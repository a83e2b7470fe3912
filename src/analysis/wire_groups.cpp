#include "analysis/wire_groups.hpp"

#include <cmath>
#include <cstdint>
#include <map>
#include <tuple>

#include "analysis/robust_stats.hpp"

namespace culprit {
namespace {

constexpr int64_t kNoChunk = -1;

// Per communicator: its chunk bin, round(2 log2(median bytes per send step)).
std::map<uint64_t, int64_t> chunk_bins(const std::vector<EdgeView>& views) {
  std::map<uint64_t, std::vector<double>> chunks;
  for (const EdgeView& v : views)
    if (v.edge->send_steps > 0 && v.edge->send_bytes > 0)
      chunks[v.edge->key.comm_hash].push_back(static_cast<double>(v.edge->send_bytes) /
                                              static_cast<double>(v.edge->send_steps));
  std::map<uint64_t, int64_t> bins;
  for (auto& [comm, sizes] : chunks) bins[comm] = std::llround(2 * std::log2(median_in_place(sizes)));
  return bins;
}

}  // namespace

WireGroups wire_groups_of(const ProcessContext& context, const std::vector<EdgeView>& views) {
  const std::map<uint64_t, int64_t> bins = chunk_bins(views);
  WireGroups groups;
  std::map<std::tuple<bool, int32_t, int64_t>, uint64_t> first_of_kind;
  for (const auto& [comm, size] : context.n_ranks()) {
    auto bin = bins.find(comm);
    const auto key = std::make_tuple(context.is_collective(comm), size, bin == bins.end() ? kNoChunk : bin->second);
    groups[comm] = first_of_kind.emplace(key, comm).first->second;
  }
  return groups;
}

}  // namespace culprit
