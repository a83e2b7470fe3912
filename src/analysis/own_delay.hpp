// Evidence pass: each GPU's own delay, the time it added by itself, from kernel clocks where
// the input has them (the gaps between its kernels; else kernel starts against its node's
// GPUs) and, without kernel clocks, from receive ops shorter than its peers' (a rank that
// posts them late). docs/attribution.md, section 2.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/edge_stats.hpp"
#include "analysis/observations.hpp"

namespace culprit {

struct OwnDelay {
  std::vector<double> late_ns;       // per process: its own delay over the window (0: none found)
  std::vector<double> margin;        // per process, where late: how far it cleared its test's guards
  std::vector<bool> work_measured;   // per process: its kernel gaps are known
  bool have_gaps = false;            // some GPU's gaps were compared with peers
  std::vector<std::string> diagnostics;  // one line per GPU the gap test judged

  // Kernel clocks measure every process's own work: the signals for inputs without them
  // have nothing to judge.
  bool all_work_measured() const {
    return std::all_of(work_measured.begin(), work_measured.end(), [](bool m) { return m; });
  }
};

// procs: every process (placeholders included), for the diagnostics' names; n_ranks: size of
// each communicator; baselines: per communicator (their op length scales the fallbacks).
OwnDelay measure_own_delay(const Observations& obs, const std::vector<GlobalProcess>& procs,
                           const std::map<uint64_t, int32_t>& n_ranks,
                           const std::map<uint64_t, CommBaseline>& baselines, const AttributionConfig& config);

}  // namespace culprit
