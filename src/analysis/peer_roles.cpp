#include "analysis/peer_roles.hpp"

#include "analysis/wire_groups.hpp"

namespace culprit {

PeerRoles::PeerRoles(const ProcessContext& context, const Observations& obs)
    : places_(flow_places(obs)), families_(replica_groups_of(context, obs)) {
  std::map<PipelineStage, uint32_t> numbers{{{}, 0}};  // no stage: 0
  for (const auto& [process, stage] : pipeline_stages(obs, context.n_ranks()))
    stage_of_[process] = numbers.emplace(stage, static_cast<uint32_t>(numbers.size())).first->second;
}

std::optional<PeerRole> PeerRoles::of(uint32_t process, uint64_t comm_hash, int32_t rank) const {
  auto place = places_.find({comm_hash, rank});
  auto family = families_.find(comm_hash);
  if (place == places_.end() || family == families_.end()) return std::nullopt;
  auto stage = stage_of_.find(process);
  return PeerRole{family->second, place->second, stage == stage_of_.end() ? 0 : stage->second};
}

std::optional<PeerFigure> PeerRoles::figure(uint32_t process, uint64_t comm_hash, int32_t rank, double value) const {
  const std::optional<PeerRole> role = of(process, comm_hash, rank);
  if (!role) return std::nullopt;
  return PeerFigure{process, comm_hash, role->family, role->place, role->stage, value, {}, 0};
}

}  // namespace culprit
