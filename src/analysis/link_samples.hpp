// The statistics shared by the tests that judge a link against the other links of its wire
// group (saturated_wires.hpp, busy_wire_peers.hpp): each link is one sample (its channels
// share its NICs and route), measured in logs (links differ by a factor, not by nanoseconds).
//
//   - a link's value: the median over its channels of the log of a per-view time;
//   - its noise: the spread of a link's channels around their median, pooled over the group's
//     links, over the square root of its channel count;
//   - its margin: its departure from the group's reference over the spread between healthy
//     links (a measured variance combined with a prior, for groups of few links), against a
//     Student t critical value at a family-wise false alarm rate, and bounded by the floors: a
//     link less than min_ratio slower cannot cost the job much, and an excess below
//     abs_floor_ns per step is noise of the clock.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <tuple>
#include <vector>

#include "analysis/edge_stats.hpp"
#include "analysis/robust_stats.hpp"

namespace culprit {

struct LinkPeerConfig {
  double false_alarm = 1e-3;  // chance that a healthy job shows any slow link
  double prior_sigma = 0.1;   // links of one model differ by a few percent, cables and ports more
  double prior_df = 4;
  double min_ratio = 1.05;    // slower than this times its peers to matter
  double abs_floor_ns = 2000.0;  // excess per step, as AttributionConfig::abs_floor_ns
  // Judge each link against the others only (their median and spread), not against all links
  // of its group with itself among them (the chi-square median is robust to one outlier, but
  // in a group whose healthy links fall in two clusters, as a ring's two directions do, the
  // judged link moves it by a place).
  bool leave_judged_out = false;
};

// Links needed to measure their spread between each other.
inline constexpr size_t kMinLinks = 3;

// One link (communicator, sender, receiver) and its channels' views.
struct LinkSample {
  std::vector<size_t> views;
  double log_value = 0;  // median over its channels of the log of the judged time
  double noise_var = 0;  // of that median
};

using LinkKey = std::tuple<uint64_t, int32_t, int32_t>;
using LinksOfGroup = std::map<LinkKey, LinkSample>;

// The judged time of a view; views where it is not positive are left out.
using ViewTime = std::function<double(const EdgeView&)>;

// The links of each wire group (edge_stats.hpp) with a positive `time`, measured: their log
// values and noise.
std::map<uint64_t, LinksOfGroup> measured_links_of(const std::vector<EdgeView>& views, const WireGroups& groups,
                                                   const ViewTime& time);

// The links of one group against each other: the reference (the median of their log values)
// and each link's margin (in the group's order): its departure from the median, against the
// spread between links (the chi-square median of their departures) combined with the prior;
// with config.leave_judged_out, against the other links' median and spread.
struct GroupMargins {
  double reference = 0;
  std::vector<double> margin;
};
GroupMargins judge_links_of_group(const LinksOfGroup& links, double tail, const LinkPeerConfig& config);

// The margin of a link whose log value departs from its peers' reference by `departure`,
// with `noise_var` of its own, against the spread `between` of healthy links: t over the
// critical value at `tail`, bounded by the floors (`value_ns`: the link's time). 0 where it
// does not clear them all.
double link_t_margin(double departure, double noise_var, const PooledVariance& between, double tail,
                     double value_ns, const LinkPeerConfig& config);

}  // namespace culprit
