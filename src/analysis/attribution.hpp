// Attribution on rank 0: from the merged observations to the verdict (DESIGN.md,
// "Attribution"; the method and its thresholds are explained in docs/attribution.md).
#pragma once

#include <vector>

#include "analysis/edge_stats.hpp"
#include "core/results.hpp"
#include "analysis/observations.hpp"

namespace culprit {

struct Attribution {
  std::vector<ProcessRow> processes;
  std::vector<CommRankRow> comm_ranks;
  std::vector<EdgeRow> edges;
  std::vector<CulpritRow> culprits;  // most blame first
  std::vector<ChainRow> chains;
  std::vector<std::string> notes;    // e.g. connections with a missing half
  // Communicator ranks that appear only as somebody's peer: no input holds a record of
  // theirs, so their node's data is missing (the results are then partial).
  size_t ranks_without_data = 0;
  std::vector<std::string> evidence; // one line per process with self evidence (diagnostics)
};

Attribution attribute(const Observations& observations, const AttributionConfig& config = {});

}  // namespace culprit
