#include "analysis/flow_places.hpp"

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

}  // namespace culprit
