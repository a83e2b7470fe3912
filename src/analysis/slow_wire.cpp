#include "analysis/slow_wire.hpp"

#include <algorithm>

namespace culprit {
namespace {

// A value well above its baseline: beyond the guard (abs_floor_ns, and mad_k robust
// deviations where there are enough connections to measure them) and by link_ratio x the low
// reference, or, where the deviations are measured, by rel_floor of it (a quarter of a
// transfer: their spread then says what noise does, the ratio is only needed without it).
bool well_above(double value, const Robust& base, const AttributionConfig& cfg) {
  const bool measured = base.n >= kMinRobustSample;
  double excess = value - low_reference(base);
  double guard = std::max(cfg.abs_floor_ns, measured ? cfg.mad_k * base.sigma : 0.0);
  double ratio = measured ? 1 + cfg.rel_floor : cfg.link_ratio;
  return value > ratio * low_reference(base) && excess > guard;
}

}  // namespace

WireJudgement judge_wire(const EdgeView& v, const CommBaseline& base, const AttributionConfig& cfg) {
  WireJudgement j;
  j.excess_per_step_ns = v.step_ns[kSendWait] - low_reference(base.phase[kSendWait]);
  if (v.wire_ns > 0 && base.wire.n >= 2 && v.send_wait_min_ns > 0) {
    j.slow = well_above(v.wire_ns, base.wire, cfg) && well_above(v.send_wait_min_ns, base.send_wait_min, cfg);
    j.excess_per_step_ns = std::max(j.excess_per_step_ns, v.wire_ns - low_reference(base.wire));
    return j;
  }
  const Robust& send_wait = base.phase[kSendWait];
  double per_send = v.step_ns[kSendWait] / cfg.nccl_steps;
  double guard = std::max(cfg.abs_floor_ns, send_wait.n < kMinRobustSample ? 0.0 : cfg.mad_k * send_wait.sigma);
  j.slow = v.has_send && per_send > cfg.link_ratio * low_reference(send_wait) && j.excess_per_step_ns > guard;
  return j;
}

}  // namespace culprit
