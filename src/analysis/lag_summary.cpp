#include "analysis/lag_summary.hpp"

#include <algorithm>
#include <cmath>

#include "analysis/robust_stats.hpp"

namespace culprit {

namespace {

constexpr double kTail = 1e-3;
constexpr uint32_t kMinSamples = 3;

}  // namespace

LagSummary summarize(double sum, double sq_sum, uint32_t n) {
  LagSummary s;
  s.samples = n;
  if (n == 0) return s;
  s.mean = sum / n;
  const double variance = n > 1 ? std::max(0.0, (sq_sum - sum * sum / n) / (n - 1)) : 0.0;
  s.se = std::sqrt(variance / n);
  return s;
}

LagSummary entry_lags_of(const Observations& obs, uint32_t process, const std::set<uint64_t>& comms) {
  double sum = 0, sq = 0;
  uint32_t n = 0;
  for (const GlobalCommRank& c : obs.comm_ranks) {
    if (c.process != process || !comms.count(c.comm_hash)) continue;
    sum += c.entry_lag_sum;
    sq += c.entry_lag_sq_sum;
    n += c.entry_lag_samples;
  }
  return summarize(sum, sq, n);
}

bool significantly_below(const LagSummary& s, double bound) {
  return s.samples >= kMinSamples && s.mean + critical_t(s.samples - 1, kTail) * s.se < bound;
}

bool significantly_above(const LagSummary& s, double bound) {
  return s.samples >= kMinSamples && s.mean - critical_t(s.samples - 1, kTail) * s.se > bound;
}

}  // namespace culprit
