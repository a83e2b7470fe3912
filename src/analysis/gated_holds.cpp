#include "analysis/gated_holds.hpp"

namespace culprit {
namespace {

std::map<std::pair<uint32_t, uint64_t>, double> per_gated_step(const Observations& obs,
                                                               uint64_t CommRankFixed::*sum_ns) {
  std::map<std::pair<uint32_t, uint64_t>, double> out;
  for (const GlobalCommRank& r : obs.comm_ranks)
    if (r.gated_steps >= static_cast<uint64_t>(kSlotsPerConnection))
      out[{r.process, r.comm_hash}] = static_cast<double>(r.*sum_ns) / static_cast<double>(r.gated_steps);
  return out;
}

}  // namespace

std::map<std::pair<uint32_t, uint64_t>, double> gated_own_time_per_step(const Observations& obs) {
  return per_gated_step(obs, &CommRankFixed::gated_own_sum_ns);
}

std::map<std::pair<uint32_t, uint64_t>, double> gated_work_per_step(const Observations& obs) {
  return per_gated_step(obs, &CommRankFixed::gated_work_sum_ns);
}

}  // namespace culprit
