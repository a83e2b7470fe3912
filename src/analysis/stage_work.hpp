// Signal: a pipeline stage whose own work over the window is larger than that of the stages
// it does the same job as (kernel clocks: the sum of its gaps between NCCL kernels).
//
// Physics: a stage computes between its send/recv calls and waits inside them, so the sum of
// its gaps is its own work, whatever its neighbours do; a slow GPU's is larger in proportion,
// its victims' is not. The number and kind of gaps differ by place (the first stage has half
// the calls of a middle one for the same work), so the totals are compared, not single gaps:
// with the same stage of the other pipelines where the job replicates its pipeline (data
// parallel), else, in a single pipeline, with every other stage (a balanced pipeline: what it
// cannot tell apart is a stage that is heavier by design). Healthy GPUs differ a little for
// good, so the departures (in logs) are judged against their spread measured over the whole
// job, combined with a prior for jobs too small to measure it, at a Student t critical value
// for a family-wise false alarm rate, as the gap test of collectives (own_work_stragglers.hpp):
// a persistent 20 % straggler stands out among 16 GPUs that differ by 3 %, and is not named
// where healthy GPUs differ by 10 %. docs/attribution.md, section 2.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "analysis/own_work_stragglers.hpp"

namespace culprit {

// One pipeline stage's own work over the window.
struct StageWork {
  uint32_t process = 0;
  std::vector<std::pair<int32_t, int32_t>> role;  // (size, rank) in each of its send/recv communicators
  double work_ns = 0;     // the sum of its gaps
  double gaps = 0;        // how many
  double period_ns = 0;   // the sum of their periods (previous kernel start to this one)
};

// The stages whose work is significantly larger than their references' (a process at most
// once). `judged`, when given, receives every stage slower than its reference that matters
// (significant or not), for the diagnostics.
std::vector<OwnWorkStraggler> slow_stages(const std::vector<StageWork>& stages, const StragglerConfig& config = {},
                                          std::vector<OwnWorkStraggler>* judged = nullptr);

}  // namespace culprit
