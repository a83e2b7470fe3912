#include "analysis/queue_pair_wires.hpp"

#include <algorithm>
#include <limits>

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
    if (excess_ns <= cfg.abs_floor_ns * static_cast<double>(q.count)) continue;
    // Time per byte against the job's: (ratio - 1) of it above is what the ratio guard asks.
    const double ratio_margin = (base.median / bytes_per_second(q) - 1) / (cfg.qp_slow_ratio - 1);
    const double floor_ns = cfg.abs_floor_ns * static_cast<double>(q.count);
    const double floor_margin = floor_ns > 0 ? excess_ns / floor_ns : std::numeric_limits<double>::infinity();
    slow.push_back(
        {q.process, excess_ns, slowest_outbound_peer(q.process, sends), std::min(ratio_margin, floor_margin)});
  }
  return slow;
}

}  // namespace culprit
