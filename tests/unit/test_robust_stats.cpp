// The shared statistics of the peer-comparison signals (robust_stats.hpp).
#include "analysis/robust_stats.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace culprit {
namespace {

std::vector<double> normal_draws(size_t n, double sigma, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> out;
  for (size_t i = 0; i < n; ++i) {  // Box-Muller over a fully specified generator
    const double u1 = (static_cast<double>(rng()) + 1.0) / 4294967297.0;
    const double u2 = static_cast<double>(rng()) / 4294967296.0;
    out.push_back(sigma * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
  return out;
}

TEST(RobustStats, MedianOfOddEvenAndEmpty) {
  EXPECT_EQ(median_of({3, 1, 2}), 2);
  EXPECT_EQ(median_of({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median_of({}), 0);
}

TEST(RobustStats, BetweenVarianceRecoversTheSpreadAndIgnoresAnOutlier) {
  std::vector<double> d = normal_draws(400, 0.1, 7);
  const std::vector<double> no_noise(d.size(), 0.0);
  EXPECT_NEAR(std::sqrt(between_variance_of(d, no_noise)), 0.1, 0.015);
  d[0] = 5.0;  // one straggler among the departures
  EXPECT_NEAR(std::sqrt(between_variance_of(d, no_noise)), 0.1, 0.015);
}

TEST(RobustStats, ClippedVarianceLeavesOutlierOutAndIsTighterThanTheMedian) {
  // Over many small samples of 12 departures of sigma 0.1, the clipped estimate scatters less
  // than the chi-square median one (its whole point), both centred near the truth; two
  // stragglers of 10 sigma are left out of it.
  double clipped_sq = 0, median_sq = 0, clipped_mean = 0;
  const int trials = 400;
  for (int t = 0; t < trials; ++t) {
    const std::vector<double> d = normal_draws(12, 0.1, 100 + static_cast<uint32_t>(t));
    const double c = std::sqrt(clipped_variance_of(d));
    const double m = std::sqrt(between_variance_of(d, std::vector<double>(d.size(), 0.0)));
    clipped_mean += c / trials;
    clipped_sq += (c - 0.1) * (c - 0.1) / trials;
    median_sq += (m - 0.1) * (m - 0.1) / trials;
  }
  EXPECT_NEAR(clipped_mean, 0.1, 0.01);
  EXPECT_LT(std::sqrt(clipped_sq), 0.8 * std::sqrt(median_sq));  // measured: 0.021 vs 0.030
  std::vector<double> d = normal_draws(40, 0.1, 3);
  d[5] = 1.0;
  d[9] = -1.0;
  size_t left_out = 0;
  EXPECT_NEAR(std::sqrt(clipped_variance_of(d, &left_out)), 0.1, 0.025);
  EXPECT_EQ(left_out, 2u);
  EXPECT_EQ(clipped_variance_of(std::vector<double>(5, 0.0)), 0);
}

TEST(RobustStats, AClipKeepsTheFewestThatMeasureASpread) {
  // Three departures about their median: the deviation that clips the far one is measured by
  // the middle one alone. Asked to keep three, nothing is clipped and all three measure it.
  const std::vector<double> d{-29677, 265405, 0};
  size_t left_out = 9;
  EXPECT_LT(std::sqrt(clipped_variance_of(d, &left_out)), 30000);
  EXPECT_EQ(left_out, 1u);
  const double all = std::sqrt((29677.0 * 29677.0 + 265405.0 * 265405.0) / 3);
  EXPECT_NEAR(std::sqrt(clipped_variance_of(d, &left_out, 3)), all, 1);
  EXPECT_EQ(left_out, 0u);
  // Of forty, one straggler is still left out.
  std::vector<double> many = normal_draws(40, 0.1, 5);
  many[7] = 2.0;
  EXPECT_NEAR(std::sqrt(clipped_variance_of(many, &left_out, 3)), 0.1, 0.025);
  EXPECT_EQ(left_out, 1u);
}

TEST(RobustStats, ClippedVarianceOfAFigureMostlyAtItsBoundMeasuresTheRest) {
  // A figure bounded at 0 where most members sit (a GPU's lateness that no receiver waited
  // on): the departures of the others from their median are mostly exactly 0. Their spread is
  // what the rest show, not none; one outlier among the rest is still left out.
  std::vector<double> d(12, 0.0);
  const std::vector<double> rest = normal_draws(8, 0.1, 11);
  for (double r : rest) d.push_back(std::fabs(r));
  const double with_bound = std::sqrt(clipped_variance_of(d));
  EXPECT_GT(with_bound, 0.03);
  EXPECT_LT(with_bound, 0.15);
  d.push_back(5.0);
  size_t left_out = 0;
  EXPECT_NEAR(std::sqrt(clipped_variance_of(d, &left_out)), with_bound, 0.01);
  EXPECT_EQ(left_out, 1u);
}

TEST(RobustStats, BetweenVarianceSubtractsUnequalNoise) {
  // Departures with spread sqrt(0.01 + v_i) for two very different noise levels: b is 0.01.
  std::vector<double> d, v;
  const std::vector<double> z = normal_draws(2000, 1.0, 11);
  for (size_t i = 0; i < z.size(); ++i) {
    const double noise = i % 2 ? 0.04 : 0.0001;
    d.push_back(z[i] * std::sqrt(0.01 + noise));
    v.push_back(noise);
  }
  EXPECT_NEAR(between_variance_of(d, v), 0.01, 0.004);
  // Noise that explains everything leaves nothing between.
  std::vector<double> big(v.size(), 1.0);
  EXPECT_EQ(between_variance_of(d, big), 0);
}

TEST(RobustStats, PriorWeighsAsPseudoObservations) {
  const PooledVariance none = with_prior(0.0, 4, 0.05, 4);  // measured 0 on 4 df, prior 0.05 on 4
  EXPECT_NEAR(none.variance, 0.0025 / 2, 1e-12);
  EXPECT_EQ(none.df, 8);
  EXPECT_NEAR(with_prior(0.04, 1000, 0.05, 4).variance, 0.04, 0.001);  // the data dominate
  EXPECT_EQ(with_prior(0.3, 0, 0, 0).variance, 0.3);
}

TEST(RobustStats, WelchSatterthwaiteCountsTheDegreesOfASumOfEstimates) {
  // Two equal variances on 10 degrees each: their sum is worth 20.
  const PooledVariance equal[] = {{1.0, 10}, {1.0, 10}};
  EXPECT_NEAR(welch_satterthwaite_df(2.0, equal), 20.0, 1e-12);
  // A dominant term on 4 degrees drags the sum down to about its own.
  const PooledVariance uneven[] = {{9.0, 4}, {1.0, 1000}};
  EXPECT_NEAR(welch_satterthwaite_df(10.0, uneven), 100.0 / (81.0 / 4 + 1.0 / 1000), 1e-9);
  // Nothing uncertain: known.
  const PooledVariance none[] = {{0.0, 5}};
  EXPECT_EQ(welch_satterthwaite_df(1.0, none), 1e6);
}

TEST(RobustStats, CriticalValuesOfStudentT) {
  EXPECT_NEAR(critical_t(10, 0.025), 2.228, 0.001);
  EXPECT_NEAR(critical_t(1e6, 0.05), 1.645, 0.001);
  EXPECT_GT(critical_t(3, 1e-4), critical_t(30, 1e-4));  // fewer degrees of freedom: more caution
}

}  // namespace
}  // namespace culprit
