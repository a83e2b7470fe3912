// Slow-wire evidence from queue-pair wire times (probing's nccl.net_qp, FORMATS.md §3): a
// queue pair that moves its bytes at well under the job's typical wire speed
// (qp_slow_ratio) is a slow wire or NIC at its process. The excess is the time it took
// beyond what the job's median bytes per second would have needed, and must be above
// abs_floor_ns per work request. The far end is the process's slowest outbound connection
// (the longest SendWait per step): the queue pair itself does not say whom it talks to.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "analysis/edge_stats.hpp"
#include "analysis/observations.hpp"

namespace culprit {

// A connection's send half as the queue-pair rule needs it.
struct OutboundSendWait {
  uint32_t src = 0;
  uint32_t dst = 0;
  double send_wait_per_step_ns = 0;
};

struct SlowQueuePair {
  uint32_t process = 0;
  double excess_ns = 0;
  std::optional<uint32_t> peer;  // process at the far end of its slowest outbound connection, if any
  double margin = 0;             // how many times the tighter of its guards (ratio, floor) it clears
};

// Needs at least three timed queue pairs for a baseline; processes >= n_processes are skipped.
std::vector<SlowQueuePair> slow_queue_pairs(std::span<const QpObservation> qps,
                                            std::span<const OutboundSendWait> sends, size_t n_processes,
                                            const AttributionConfig& config);

}  // namespace culprit
