#include "analysis/bottleneck_wires.hpp"

#include <algorithm>
#include <cmath>

#include "analysis/robust_stats.hpp"

namespace culprit {
namespace {

// The sampling variance of a median of n normal draws over one draw's: pi/2 / n, an upper
// bound for the small n seen here (0.45 for three draws, against 0.52).
constexpr double kMedianVarianceFactor = 1.5708;
// Degrees of freedom of a spread taken as known (the prior as a bound).
constexpr double kKnownDf = 1e6;

// The unsaturated links' reference (median log busy time) and the spread of transfer times
// between healthy links that a departure from it is judged against (header).
struct Bound {
  double reference = 0;
  PooledVariance between;
};

Bound bound_of(const LinksOfGroup& unsaturated, const LinkPeerConfig& config) {
  std::vector<double> logs, noise;
  for (const auto& [key, link] : unsaturated) {
    logs.push_back(link.log_value);
    noise.push_back(link.noise_var);
  }
  Bound b;
  b.reference = median_of(logs);
  for (double& l : logs) l -= b.reference;
  const double measured = between_variance_of(logs, noise);
  const double prior = config.prior_sigma * config.prior_sigma;
  const double n = static_cast<double>(logs.size());
  b.between = measured > prior ? PooledVariance{measured, n - 1} : PooledVariance{prior, kKnownDf};
  b.between.variance *= 1 + kMedianVarianceFactor / n;
  return b;
}

}  // namespace

void judge_bottleneck_links(const LinksOfGroup& bottlenecks, const LinksOfGroup& unsaturated,
                            const std::vector<EdgeView>& views, double tail, const LinkPeerConfig& config,
                            std::vector<SaturatedWireJudgement>& out) {
  const Bound bound = bound_of(unsaturated, config);
  const double peers_ns = std::exp(bound.reference);
  for (const auto& [key, link] : bottlenecks) {
    const double margin = link_t_margin(link.log_value - bound.reference, link.noise_var, bound.between, tail,
                                        std::exp(link.log_value), config);
    for (size_t i : link.views) {
      SaturatedWireJudgement& j = out[i];
      j.judged = true;
      j.slow = margin > 0;
      j.margin = margin;
      j.excess_per_step_ns = views[i].wire_ns - peers_ns;
    }
  }
}

}  // namespace culprit
