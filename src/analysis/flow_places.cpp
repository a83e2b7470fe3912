#include "analysis/flow_places.hpp"

#include <algorithm>
#include <tuple>

namespace culprit {

std::map<std::pair<uint64_t, int32_t>, FlowPlace> flow_places(const Observations& obs) {
  std::map<std::pair<uint64_t, int32_t>, FlowPlace> place;
  std::map<std::tuple<uint64_t, int32_t, int32_t>, std::pair<int, int>> on_channel;  // (comm, rank, channel)
  for (const EdgeSummary& e : obs.edges) {
    if (e.key.src_rank == e.key.dst_rank) continue;
    ++place[{e.key.comm_hash, e.key.dst_rank}].receives;
    ++place[{e.key.comm_hash, e.key.src_rank}].sends;
    ++on_channel[{e.key.comm_hash, e.key.dst_rank, e.key.channel}].first;
    ++on_channel[{e.key.comm_hash, e.key.src_rank, e.key.channel}].second;
  }
  for (const auto& [key, counts] : on_channel)
    place[{std::get<0>(key), std::get<1>(key)}].per_channel.push_back(counts);
  for (auto& [key, p] : place) std::sort(p.per_channel.begin(), p.per_channel.end());
  return place;
}

std::map<uint32_t, PipelineStage> pipeline_stages(const Observations& obs, const std::map<uint64_t, int32_t>& n_ranks) {
  std::map<uint32_t, PipelineStage> stages;
  for (const GlobalCommRank& c : obs.comm_ranks)
    if (!c.has_collective) stages[c.process].emplace_back(n_ranks.at(c.comm_hash), c.rank);
  for (auto& [process, stage] : stages) std::sort(stage.begin(), stage.end());
  return stages;
}

}  // namespace culprit
