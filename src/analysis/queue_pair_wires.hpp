// Slow-wire evidence from queue-pair times (probing's nccl.net_qp, FORMATS.md §3;
// docs/attribution.md, "The idle-send test").
//
// A send work request that finds its queue pair idle takes the wire's own time: latency, one
// transfer of its length and the acknowledgement. One posted while an earlier send is still in
// flight also waits for that one, and how often that happens follows the traffic (a wire that
// paces its communicator always has sends queued; one paced by others seldom). So a queue
// pair's wire is measured by its idle full-size sends alone, as the mean log of their
// durations, and judged against the other queue pairs of the same work-request length (one
// chunk size: one communicator family) beyond their spread (place_peers.hpp, with links'
// prior spread of 10 %) plus its mean's own variance from its sends' jitter, Bonferroni over
// every process judged at `false_alarm` per job. A process with several queue pairs of one
// length is judged by its slowest.
//
// What it cannot tell apart: a slow wire from a NIC busy with other queue pairs while the
// judged one was idle (the simulator gives each connection its own wire), nor whose wire it
// is: a queue pair does not name its far end, so the process's slowest outbound connection
// (the longest SendWait per step) stands in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

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
  double excess_ns = 0;          // its idle sends' time beyond its peers' typical one, over all its sends
  std::optional<uint32_t> peer;  // process at the far end of its slowest outbound connection, if any
  double margin = 0;             // its departure's t over the critical value
};

// Fewest idle full-size sends that measure a queue pair's wire: fewer are a draw or two of
// its jitter, whose mean stands out by chance.
inline constexpr uint64_t kMinIdleSends = 4;

// Processes >= n_processes are skipped.
std::vector<SlowQueuePair> slow_queue_pairs(std::span<const QpObservation> qps,
                                            std::span<const OutboundSendWait> sends, size_t n_processes,
                                            double false_alarm = 1e-3);

}  // namespace culprit
