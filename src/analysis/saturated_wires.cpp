#include "analysis/saturated_wires.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

#include "analysis/robust_stats.hpp"

namespace culprit {
namespace {

constexpr double kMadToSigma = 1.4826;
constexpr double kMedianEfficiency = 1.2533;  // the standard error of a median over a mean's

// One link (communicator, sender, receiver) and its saturated channels.
struct Link {
  std::vector<size_t> views;
  double log_transfer = 0;  // median over its channels of the log busy time per step
  double noise_var = 0;     // of that median
};

using LinksOfGroup = std::map<std::tuple<uint64_t, int32_t, int32_t>, Link>;

// The saturated links of each wire group (edge_stats.hpp).
std::map<uint64_t, LinksOfGroup> saturated_links_of(const std::vector<EdgeView>& views, const WireGroups& groups) {
  std::map<uint64_t, LinksOfGroup> out;
  for (size_t i = 0; i < views.size(); ++i) {
    const EdgeView& v = views[i];
    if (!(v.wire_ns > 0) || !v.wire_saturated) continue;
    const EdgeKey& k = v.edge->key;
    out[wire_group_of(k.comm_hash, groups)][{k.comm_hash, k.src_rank, k.dst_rank}].views.push_back(i);
  }
  return out;
}

// Each link's median log transfer time and its noise: the channels' spread around their
// link's median, pooled over the group (a link has a handful of channels at most).
void measure_links(LinksOfGroup& links, const std::vector<EdgeView>& views) {
  std::vector<double> deviations, logs;
  for (auto& [key, link] : links) {
    logs.clear();
    for (size_t i : link.views) logs.push_back(std::log(views[i].wire_ns));
    link.log_transfer = median_of(logs);
    if (logs.size() >= 2)
      for (double l : logs) deviations.push_back(std::fabs(l - link.log_transfer));
  }
  const double sigma = deviations.empty() ? 0.0 : kMadToSigma * median_of(deviations);
  for (auto& [key, link] : links) {
    const size_t n = link.views.size();
    // A median of one or two channels is their mean.
    const double se = (n <= 2 ? 1.0 : kMedianEfficiency) * sigma / std::sqrt(static_cast<double>(n));
    link.noise_var = se * se;
  }
}

// The margin of a link against its saturated peers: t over its critical value, bounded by the
// floors. 0 where it does not clear them all.
double t_margin(const Link& link, double reference, const PooledVariance& between, double tail,
                double transfer_ns, const SaturatedWireConfig& config) {
  const double departure = link.log_transfer - reference;
  if (departure <= 0) return 0;
  const double var = link.noise_var + between.variance;
  if (!(var > 0)) return 0;
  // Welch-Satterthwaite, the noise counted as known (measured on every channel of the
  // group), the spread between links with the degrees of freedom of its estimate.
  const double df = between.variance > 0 && between.df > 0
                        ? var * var / (between.variance * between.variance / between.df)
                        : 1;
  const double t = departure / std::sqrt(var);
  const double excess_ns = transfer_ns * (1 - std::exp(-departure));
  const double margin = std::min({t / critical_t(df, tail), excess_ns / config.abs_floor_ns,
                                 std::expm1(departure) / (config.min_ratio - 1)});
  return margin > 1 ? margin : 0;
}

// The saturated links of one wire group against each other.
void judge_links(const LinksOfGroup& links, const std::vector<EdgeView>& views, double tail,
                 const SaturatedWireConfig& config, std::vector<SaturatedWireJudgement>& out) {
  std::vector<double> logs, departures, noise;
  for (const auto& [key, link] : links) logs.push_back(link.log_transfer);
  const double reference = median_of(logs);
  for (const auto& [key, link] : links) {
    departures.push_back(link.log_transfer - reference);
    noise.push_back(link.noise_var);
  }
  const PooledVariance between = with_prior(between_variance_of(departures, noise),
                                            static_cast<double>(links.size() - 1), config.prior_sigma, config.prior_df);
  const double peers_ns = std::exp(reference);
  for (const auto& [key, link] : links) {
    const double margin = t_margin(link, reference, between, tail, std::exp(link.log_transfer), config);
    for (size_t i : link.views) {
      SaturatedWireJudgement& j = out[i];
      j.judged = true;
      j.slow = margin > 0;
      j.margin = margin;
      j.excess_per_step_ns = views[i].wire_ns - peers_ns;
    }
  }
}

}  // namespace

std::vector<SaturatedWireJudgement> judge_saturated_wires(const std::vector<EdgeView>& views,
                                                          const WireGroups& groups,
                                                          const SaturatedWireConfig& config) {
  std::vector<SaturatedWireJudgement> out(views.size());
  std::map<uint64_t, LinksOfGroup> by_group = saturated_links_of(views, groups);
  std::erase_if(by_group, [](const auto& group) { return group.second.size() < kMinLinks; });
  size_t judged_links = 0;
  for (auto& [group, links] : by_group) {
    measure_links(links, views);
    judged_links += links.size();
  }
  const double tail = config.false_alarm / static_cast<double>(std::max<size_t>(1, judged_links));
  for (const auto& [group, links] : by_group) judge_links(links, views, tail, config, out);
  return out;
}

}  // namespace culprit
