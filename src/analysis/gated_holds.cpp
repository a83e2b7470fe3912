#include "analysis/gated_holds.hpp"

namespace culprit {

std::map<std::pair<uint32_t, uint64_t>, double> gated_own_time_per_step(const Observations& obs) {
  std::map<std::pair<uint32_t, uint64_t>, double> own;
  for (const GlobalCommRank& r : obs.comm_ranks)
    if (r.gated_steps >= static_cast<uint64_t>(kSlotsPerConnection))
      own[{r.process, r.comm_hash}] =
          static_cast<double>(r.gated_own_sum_ns) / static_cast<double>(r.gated_steps);
  return own;
}

}  // namespace culprit
