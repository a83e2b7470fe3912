#include "analysis/queue_pair_wires.hpp"

#include <algorithm>

namespace culprit {
namespace {

double bytes_per_second(const QpObservation& q) {
  return static_cast<double>(q.bytes) * 1e9 / static_cast<double>(q.sum_ns);
}

std::optional<uint32_t> slowest_outbound_peer(uint32_t process, std::span<const OutboundSendWait> sends) {
  std::optional<uint32_t> peer;
  double worst = -1;
  for (const OutboundSendWait& s : sends)
    if (s.src == process && s.send_wait_per_step_ns > worst) {
      worst = s.send_wait_per_step_ns;
      peer = s.dst;
    }
  return peer;
}

}  // namespace

std::vector<SlowQueuePair> slow_queue_pairs(std::span<const QpObservation> qps,
                                            std::span<const OutboundSendWait> sends, size_t n_processes,
                                            const AttributionConfig& cfg) {
  std::vector<double> rates;
  for (const QpObservation& q : qps)
    if (q.bytes && q.sum_ns) rates.push_back(bytes_per_second(q));
  Robust base = robust_of(rates);
  std::vector<SlowQueuePair> slow;
  if (base.n < 3 || base.median <= 0) return slow;
  for (const QpObservation& q : qps) {
    if (!q.bytes || !q.sum_ns || q.process >= n_processes) continue;
    if (bytes_per_second(q) * cfg.qp_slow_ratio > base.median) continue;  // not slow enough
    double excess_ns = static_cast<double>(q.sum_ns) - static_cast<double>(q.bytes) * 1e9 / base.median;
    const Excess beyond_floor = beyond_guard(excess_ns, cfg.abs_floor_ns * static_cast<double>(q.count));
    if (beyond_floor.margin <= 0) continue;
    // The ratio guard on time per byte, against the job's.
    const double per_byte = 1 / bytes_per_second(q), job_per_byte = 1 / base.median;
    const double margin = std::min(beyond_floor.margin, ratio_margin(per_byte, job_per_byte, cfg.qp_slow_ratio));
    slow.push_back({q.process, excess_ns, slowest_outbound_peer(q.process, sends), margin});
  }
  return slow;
}

}  // namespace culprit
