// The node-local half of the pipeline: agree on the sequence window, reduce the records to
// connection summaries, measure kernel lateness within the node.
#pragma once

#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "io/local_data.hpp"
#include "pipeline/exchange.hpp"
#include "reduce/edge_reduce.hpp"

namespace culprit {

// Collective: the newest collective sequence of every communicator across all nodes, turned
// into windows of `seq_window` sequences (sorted by comm_hash).
std::vector<CommWindow> agree_windows(Communicator& comm, const LocalData& data, int seq_window);

// Kernel timing per (communicator, rank): each GPU's kernel start against the median of
// the GPUs of its node in the same collective, and the gap since its previous collective
// ended, both summed over the window.
void measure_kernel_lateness(const LocalData& data, const std::vector<CommWindow>& windows,
                             std::vector<GlobalCommRank>& ranks);

struct LocalStageResult {
  NodeSummary summary;
  std::string reduce_path;  // cpu | cuda
  std::string reduce_note;  // why CUDA was not used, when relevant
};

// Collective receive-op durations per (communicator, rank) within the window.
void measure_op_times(const LocalData& data, const std::vector<CommWindow>& windows,
                      std::vector<GlobalCommRank>& ranks);

// Time inside NCCL operations per (communicator, rank) within the window: kernel durations
// where kernel records exist, else per operation the span of its proxy ops.
void measure_busy_time(const LocalData& data, const std::vector<CommWindow>& windows,
                       std::vector<GlobalCommRank>& ranks);

LocalStageResult run_local_stage(const LocalData& data, const std::vector<CommWindow>& windows,
                                 ReducePath path);

}  // namespace culprit
