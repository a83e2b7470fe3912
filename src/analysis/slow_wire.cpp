#include "analysis/slow_wire.hpp"

#include <algorithm>
#include <tuple>
#include <utility>

namespace culprit {
namespace {

// A value well above its baseline: beyond the guard (abs_floor_ns, and mad_k robust
// deviations where there are enough connections to measure them) and by link_ratio x the low
// reference, or, where the deviations are measured, by rel_floor of it (a quarter of a
// transfer: their spread then says what noise does, the ratio is only needed without it).
// Returns how many times the tighter of the two guards (the deviations, the ratio) the excess
// is, 0 where it is not above both.
double margin_above(double value, const Robust& base, const AttributionConfig& cfg) {
  const bool measured = base.n >= kMinRobustSample;
  const double reference = low_reference(base);
  const double excess = value - reference;
  const double guard = std::max(cfg.abs_floor_ns, measured ? cfg.mad_k * base.sigma : 0.0);
  const double ratio = measured ? 1 + cfg.rel_floor : cfg.link_ratio;
  if (!(value > ratio * reference)) return 0;
  return std::min(beyond_guard(excess, guard).margin, ratio_margin(value, reference, ratio));
}

}  // namespace

WireJudgement judge_wire(const EdgeView& v, const CommBaseline& base, const AttributionConfig& cfg) {
  WireJudgement j;
  j.excess_per_step_ns = v.step_ns[kSendWait] - low_reference(base.phase[kSendWait]);
  if (v.wire_ns > 0 && base.wire.n >= 2 && v.send_wait_min_ns > 0) {
    j.margin = std::min(margin_above(v.wire_ns, base.wire, cfg),
                        margin_above(v.send_wait_min_ns, base.send_wait_min, cfg));
    j.slow = j.margin > 0;
    j.excess_per_step_ns = std::max(j.excess_per_step_ns, v.wire_ns - low_reference(base.wire));
    return j;
  }
  const Robust& send_wait = base.phase[kSendWait];
  double per_send = v.step_ns[kSendWait] / cfg.nccl_steps;
  double guard = std::max(cfg.abs_floor_ns, send_wait.n < kMinRobustSample ? 0.0 : cfg.mad_k * send_wait.sigma);
  const double reference = low_reference(send_wait);
  j.slow = v.has_send && per_send > cfg.link_ratio * reference && j.excess_per_step_ns > guard;
  if (j.slow)
    j.margin = std::min(beyond_guard(j.excess_per_step_ns, guard).margin,
                        ratio_margin(per_send, reference, cfg.link_ratio));
  return j;
}

std::vector<WireJudgement> judge_wires_by_link(const std::vector<EdgeView>& views,
                                               const std::map<uint64_t, CommBaseline>& baselines,
                                               const AttributionConfig& config) {
  std::vector<WireJudgement> out(views.size());
  // Per link: its channels judged slow (with a margin), and all its channels judged.
  std::map<std::tuple<uint64_t, int32_t, int32_t>, std::pair<size_t, size_t>> slow_of_link;
  for (size_t i = 0; i < views.size(); ++i) {
    const EdgeKey& k = views[i].edge->key;
    auto base = baselines.find(k.comm_hash);
    if (base == baselines.end()) continue;
    out[i] = judge_wire(views[i], base->second, config);
    auto& [slow, judged] = slow_of_link[{k.comm_hash, k.src_rank, k.dst_rank}];
    slow += out[i].slow && out[i].margin > 0 ? 1 : 0;
    ++judged;
  }
  for (size_t i = 0; i < views.size(); ++i) {
    const EdgeKey& k = views[i].edge->key;
    auto link = slow_of_link.find({k.comm_hash, k.src_rank, k.dst_rank});
    if (link == slow_of_link.end() || most_channels(link->second.first, link->second.second)) continue;
    out[i].slow = false;
    out[i].margin = 0;
  }
  return out;
}

}  // namespace culprit
