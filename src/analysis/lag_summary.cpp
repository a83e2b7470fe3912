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

double noise_at_tail(const LagSummary& s) { return critical_t(s.samples - 1, kTail) * s.se; }

bool significantly_below(const LagSummary& s, double bound) {
  return s.samples >= kMinSamples && s.mean + noise_at_tail(s) < bound;
}

bool significantly_above(const LagSummary& s, double bound) {
  return s.samples >= kMinSamples && s.mean - noise_at_tail(s) > bound;
}

}  // namespace culprit
