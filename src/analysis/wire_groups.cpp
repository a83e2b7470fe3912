#include "analysis/wire_groups.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>

#include "analysis/robust_stats.hpp"

namespace culprit {
namespace {

constexpr int64_t kNoChunk = -1;

// Per communicator: its chunk bin, round(2 log2(median bytes per send step)).
std::map<uint64_t, int64_t> chunk_bins(const std::vector<const EdgeSummary*>& edges) {
  std::map<uint64_t, std::vector<double>> chunks;
  for (const EdgeSummary* e : edges)
    if (e->send_steps > 0 && e->send_bytes > 0)
      chunks[e->key.comm_hash].push_back(static_cast<double>(e->send_bytes) / static_cast<double>(e->send_steps));
  std::map<uint64_t, int64_t> bins;
  for (auto& [comm, sizes] : chunks) bins[comm] = std::llround(2 * std::log2(median_in_place(sizes)));
  return bins;
}

WireGroups groups_of(const ProcessContext& context, const std::vector<const EdgeSummary*>& edges) {
  const std::map<uint64_t, int64_t> bins = chunk_bins(edges);
  WireGroups groups;
  std::map<std::tuple<bool, int32_t, int64_t>, uint64_t> first_of_kind;
  for (const auto& [comm, size] : context.n_ranks()) {
    auto bin = bins.find(comm);
    const auto key = std::make_tuple(context.is_collective(comm), size, bin == bins.end() ? kNoChunk : bin->second);
    groups[comm] = first_of_kind.emplace(key, comm).first->second;
  }
  return groups;
}

}  // namespace

WireGroups wire_groups_of(const ProcessContext& context, const std::vector<EdgeView>& views) {
  std::vector<const EdgeSummary*> edges;
  for (const EdgeView& v : views) edges.push_back(v.edge);
  return groups_of(context, edges);
}

WireGroups wire_groups_of(const ProcessContext& context, std::span<const EdgeSummary> edges) {
  std::vector<const EdgeSummary*> pointers;
  for (const EdgeSummary& e : edges) pointers.push_back(&e);
  return groups_of(context, pointers);
}

WireGroups replica_groups_of(const ProcessContext& context, const Observations& obs) {
  const WireGroups kinds = wire_groups_of(context, std::span<const EdgeSummary>(obs.edges));
  std::map<uint64_t, std::set<uint32_t>> members;
  for (const GlobalCommRank& c : obs.comm_ranks) members[c.comm_hash].insert(c.process);
  // Per kind: its groups so far, each its first communicator and the GPUs they hold.
  std::map<uint64_t, std::vector<std::pair<uint64_t, std::set<uint32_t>>>> groups_of_kind;
  WireGroups out;
  for (const auto& [comm, size] : context.n_ranks()) {
    const std::set<uint32_t>& mine = members[comm];
    auto& groups = groups_of_kind[wire_group_of(comm, kinds)];
    auto apart = [&](const auto& group) {
      return std::none_of(mine.begin(), mine.end(), [&](uint32_t p) { return group.second.count(p) > 0; });
    };
    auto group = std::find_if(groups.begin(), groups.end(), apart);
    if (group == groups.end()) group = groups.insert(groups.end(), {comm, {}});
    group->second.insert(mine.begin(), mine.end());
    out[comm] = group->first;
  }
  return out;
}

}  // namespace culprit
