#include "analysis/flow_places.hpp"

#include <algorithm>

namespace culprit {

std::map<std::pair<uint64_t, int32_t>, FlowPlace> flow_places(const Observations& obs) {
  std::map<std::pair<uint64_t, int32_t>, FlowPlace> place;
  for (const EdgeSummary& e : obs.edges) {
    if (e.key.src_rank == e.key.dst_rank) continue;
    ++place[{e.key.comm_hash, e.key.dst_rank}].receives;
    ++place[{e.key.comm_hash, e.key.src_rank}].sends;
  }
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
