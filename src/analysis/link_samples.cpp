#include "analysis/link_samples.hpp"

#include <algorithm>
#include <cmath>

namespace culprit {
namespace {

constexpr double kMadToSigma = 1.4826;

// Each link's median log time and its noise: the channels' spread around their link's
// median, pooled over the group (a link has a handful of channels at most).
void measure_links(LinksOfGroup& links, const std::vector<EdgeView>& views, const ViewTime& time) {
  std::vector<double> deviations, logs;
  for (auto& [key, link] : links) {
    logs.clear();
    for (size_t i : link.views) logs.push_back(std::log(time(views[i])));
    link.log_value = median_of(logs);
    if (logs.size() >= 2)
      for (double l : logs) deviations.push_back(std::fabs(l - link.log_value));
  }
  const double sigma = deviations.empty() ? 0.0 : kMadToSigma * median_of(deviations);
  for (auto& [key, link] : links) {
    const size_t n = link.views.size();
    // A median of one or two channels is their mean.
    const double se = (n <= 2 ? 1.0 : kMedianEfficiency) * sigma / std::sqrt(static_cast<double>(n));
    link.noise_var = se * se;
  }
}

// Past this many links one yardstick serves them all: one link moves a median of that many by
// less than a place, and leaving each out would make the test quadratic in the job.
constexpr size_t kLeaveOneOutLinks = 256;

// A link's peers: the reference (the median of their logs) and the spread between them.
struct Yardstick {
  double reference = 0;
  PooledVariance between;
};

// The yardstick of the links of `logs` (with their noise) other than `left_out` (none where it
// is logs.size()).
Yardstick yardstick_of(const std::vector<double>& logs, const std::vector<double>& noise, size_t left_out,
                       const LinkPeerConfig& config) {
  std::vector<double> others, others_noise;
  for (size_t k = 0; k < logs.size(); ++k)
    if (k != left_out) {
      others.push_back(logs[k]);
      others_noise.push_back(noise[k]);
    }
  Yardstick y;
  y.reference = median_of(others);
  for (double& l : others) l -= y.reference;
  y.between = with_prior(between_variance_of(others, others_noise), static_cast<double>(others.size()) - 1,
                         config.prior_sigma, config.prior_df);
  return y;
}

}  // namespace

std::map<uint64_t, LinksOfGroup> measured_links_of(const std::vector<EdgeView>& views, const WireGroups& groups,
                                                   const ViewTime& time) {
  std::map<uint64_t, LinksOfGroup> out;
  for (size_t i = 0; i < views.size(); ++i) {
    if (!(time(views[i]) > 0)) continue;
    const EdgeKey& k = views[i].edge->key;
    out[wire_group_of(k.comm_hash, groups)][{k.comm_hash, k.src_rank, k.dst_rank}].views.push_back(i);
  }
  for (auto& [group, links] : out) measure_links(links, views, time);
  return out;
}

double link_t_margin(double departure, double noise_var, const PooledVariance& between, double tail,
                     double value_ns, const LinkPeerConfig& config) {
  if (departure <= 0) return 0;
  const double var = noise_var + between.variance;
  if (!(var > 0)) return 0;
  // Welch-Satterthwaite, the noise counted as known (measured on every channel of the
  // group), the spread between links with the degrees of freedom of its estimate.
  const double df = between.variance > 0 && between.df > 0
                        ? var * var / (between.variance * between.variance / between.df)
                        : 1;
  const double t = departure / std::sqrt(var);
  const double excess_ns = value_ns * (1 - std::exp(-departure));
  const double margin = std::min({t / critical_t(df, tail), excess_ns / config.abs_floor_ns,
                                 std::expm1(departure) / (config.min_ratio - 1)});
  return margin > 1 ? margin : 0;
}

GroupMargins judge_links_of_group(const LinksOfGroup& links, double tail, const LinkPeerConfig& config) {
  std::vector<double> logs, noise;
  for (const auto& [key, link] : links) {
    logs.push_back(link.log_value);
    noise.push_back(link.noise_var);
  }
  const Yardstick all = yardstick_of(logs, noise, logs.size(), config);
  GroupMargins out{all.reference, std::vector<double>(logs.size(), 0.0)};
  const bool leave_out = config.leave_judged_out && logs.size() <= kLeaveOneOutLinks;
  for (size_t k = 0; k < logs.size(); ++k) {
    // Only a link above min_ratio x the group's median can clear the floors.
    if (!(logs[k] - all.reference > std::log(config.min_ratio))) continue;
    const Yardstick own = leave_out ? yardstick_of(logs, noise, k, config) : all;
    out.margin[k] = link_t_margin(logs[k] - own.reference, noise[k], own.between, tail, std::exp(logs[k]), config);
  }
  return out;
}

}  // namespace culprit
