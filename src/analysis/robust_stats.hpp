// Statistics shared by the signals that judge one member against its peers: robust centres,
// the spread between healthy members, and critical values (docs/attribution.md).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace culprit {

// The median (the mean of the two middle values for an even count; 0 when empty).
// median_in_place reorders its argument.
double median_in_place(std::vector<double>& values);
inline double median_of(std::vector<double> values) { return median_in_place(values); }

// The variance b between healthy members, from departures d_i drawn from N(0, b + noise_i):
// the value at which the median of d_i^2 / (b + noise_i) is the median of a chi-square with
// one degree of freedom. Robust to the outliers among the departures, right however unequal
// their noise.
double between_variance_of(const std::vector<double>& departures, const std::vector<double>& noise);

// The variance of departures drawn from N(0, v) where a few are outliers: the mean square of
// those within 4 deviations, corrected for the clipping, starting from the chi-square
// median and iterated. More efficient than the median alone (a dozen departures measure the
// spread to about +-21 %, not +-30 %), and a straggler stays out of its own yardstick.
// `clipped`, when given, receives how many were left out. A clip that would keep fewer than
// `min_kept` departures is not made (the mean square of all of them is returned): a deviation
// measured from one or two draws cannot tell a straggler from a healthy draw.
double clipped_variance_of(const std::vector<double>& departures, size_t* clipped = nullptr, size_t min_kept = 0);
// The clip, in deviations, and E[z^2 | |z| < clip] for a standard normal, which corrects a
// mean square of the draws kept.
inline constexpr double kClipDeviations = 4.0;
inline constexpr double kClippedMeanSquare = 0.99893;

// The standard error of a median of normal draws over a mean's: about sqrt(pi / 2).
inline constexpr double kMedianEfficiency = 1.2533;
// A normal noise's sigma from the median absolute difference of two of its draws:
// 1 / (sqrt(2) x 0.6745).
inline constexpr double kPairToSigma = 1.0483;
// A scale measured by a median of absolute values is worth this share of as many squares (its
// asymptotic efficiency): the degrees of freedom such an estimate really has.
inline constexpr double kMedianScaleEfficiency = 0.37;

// A measured variance (with df degrees of freedom) combined with prior_df pseudo-observations
// of prior_sigma (the conjugate update); returns the variance and its degrees of freedom.
struct PooledVariance {
  double variance = 0;
  double df = 0;
};
PooledVariance with_prior(double measured, double df, double prior_sigma, double prior_df);

// The degrees of freedom of an estimate `total` made of estimated variances, each with its
// own degrees of freedom (Welch-Satterthwaite: total^2 / sum(variance^2 / df)); 1e6 (known)
// where no term is uncertain. Terms of no degrees of freedom count as one.
double welch_satterthwaite_df(double total, std::span<const PooledVariance> terms);

// The one-sided Student t critical value for a tail probability.
double critical_t(double df, double tail);

}  // namespace culprit
