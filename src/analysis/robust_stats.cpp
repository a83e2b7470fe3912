#include "analysis/robust_stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <boost/math/distributions/students_t.hpp>

namespace culprit {

double median_in_place(std::vector<double>& v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  return (*std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid)) + upper) / 2;
}

double between_variance_of(const std::vector<double>& departures, const std::vector<double>& noise) {
  constexpr double kChiSquare1Median = 0.45494;
  auto median_ratio = [&](double b) {
    std::vector<double> ratios;
    ratios.reserve(departures.size());
    for (size_t i = 0; i < departures.size(); ++i) {
      const double var = b + noise[i];
      ratios.push_back(var > 0 ? departures[i] * departures[i] / var : std::numeric_limits<double>::infinity());
    }
    return median_in_place(ratios);
  };
  if (median_ratio(0) <= kChiSquare1Median) return 0;
  double lo = 0, hi = 0;
  for (double d : departures) hi = std::max(hi, d * d);
  hi = std::max(hi, 1e-12) / kChiSquare1Median;  // the ratio is below the median there
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (median_ratio(mid) > kChiSquare1Median ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

double clipped_variance_of(const std::vector<double>& departures, size_t* clipped, size_t min_kept) {
  // Clipped at 4 deviations: a normal draw lies beyond once in 16,000, so only stragglers
  // are left out. A tighter clip (3) feeds on itself: an estimate that starts low clips
  // healthy draws and ends lower, which made healthy GPUs of 3-4 sigma look significant.
  // kClippedMeanSquare = 1 - 2 c phi(c) / (2 Phi(c) - 1) at c = 4.
  const std::vector<double> none(departures.size(), 0.0);
  double variance = between_variance_of(departures, none);
  // Half of them or more exactly at the center (a figure bounded where most members sit at
  // the bound, as a wait no one was kept in): their median measures no spread at all, whatever
  // the others show. The spread of those off the center starts instead (as robust to an
  // outlier among them); the clipping below counts every departure.
  const auto at_center = static_cast<size_t>(std::count(departures.begin(), departures.end(), 0.0));
  if (2 * at_center >= departures.size() && at_center < departures.size()) {
    std::vector<double> off_center;
    for (double d : departures)
      if (d != 0) off_center.push_back(d);
    variance = between_variance_of(off_center, std::vector<double>(off_center.size(), 0.0));
  }
  size_t left_out = 0;
  for (int iteration = 0; iteration < 5 && variance > 0; ++iteration) {
    const double bound = kClipDeviations * kClipDeviations * variance;
    double sum = 0;
    size_t kept = 0;
    for (double d : departures)
      if (d * d < bound) {
        sum += d * d;
        ++kept;
      }
    left_out = departures.size() - kept;
    if (kept == 0) break;
    variance = sum / static_cast<double>(kept) / kClippedMeanSquare;
  }
  if (left_out > 0 && departures.size() - left_out < min_kept) {
    double sum = 0;
    for (double d : departures) sum += d * d;
    variance = sum / static_cast<double>(departures.size());
    left_out = 0;
  }
  if (clipped) *clipped = left_out;
  return variance;
}

PooledVariance with_prior(double measured, double df, double prior_sigma, double prior_df) {
  const double total = std::max(0.0, df) + std::max(0.0, prior_df);
  if (total <= 0) return {measured, 0};
  return {(prior_df * prior_sigma * prior_sigma + df * measured) / total, total};
}

double welch_satterthwaite_df(double total, std::span<const PooledVariance> terms) {
  double denominator = 0;
  for (const PooledVariance& term : terms) denominator += term.variance * term.variance / std::max(1.0, term.df);
  return denominator > 0 ? total * total / denominator : 1e6;
}

double critical_t(double df, double tail) {
  df = std::clamp(df, 1.0, 1e6);
  boost::math::students_t dist(df);
  return boost::math::quantile(boost::math::complement(dist, tail));
}

}  // namespace culprit
