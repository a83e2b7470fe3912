#include "analysis/stage_work.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "analysis/edge_stats.hpp"
#include "analysis/robust_stats.hpp"

namespace culprit {
namespace {

// A stage's departure from its group's typical work, in logs, scaled to one GPU's spread.
struct Departure {
  const StageWork* stage = nullptr;
  double log_excess = 0;  // log(work) - log(reference)
  double excess_ns = 0;   // its work beyond the reference's, over its gaps
  double scaled = 0;      // log_excess over its standard deviation in units of one GPU's
  std::optional<size_t> partner;  // in a pair, the other member's departure (its mirror)
};

// How a group's members are measured. Replicas of one role make the same calls, so their
// work per gap is compared: a replica that got less far (a pipeline stopped by a hang) is
// not thereby faster. Stages of one pipeline make different calls (the first stage half as
// many as a middle one) but move in step, so their total work over the window is compared.
enum class Measure { kPerGap, kTotal };

// The variance of a departure, in units of one GPU's: from the other draw of a pair, 2; from
// the median of n normal draws that includes it, for the members other than the median one
// (which departs by exactly 0 and is left out of the spread), 1 + 0.55 / n for odd n and
// 1 - (0.5 + 1.2 / n) / n for even n (fits to simulated draws, within 1 % from n = 3 on).
double departure_variance(size_t size) {
  const double n = static_cast<double>(size);
  if (size == 2) return 2.0;
  return size % 2 == 1 ? 1 + 0.55 / n : 1 - (0.5 + 1.2 / n) / n;
}

double measure_of(const StageWork& s, Measure m) { return m == Measure::kPerGap ? s.work_ns / s.gaps : s.work_ns; }

// The stages of one group against its typical work: the median log work of the group, which
// one straggler cannot move from three stages on (the median of the others could: with three
// stages it would be halfway to the straggler); with two, the other one.
void compare_within(const std::vector<const StageWork*>& group, Measure m, std::vector<Departure>& out, double& df) {
  if (group.size() < 2) return;
  df += static_cast<double>(group.size() - 1);
  std::vector<double> logs;
  for (const StageWork* s : group) logs.push_back(std::log(measure_of(*s, m)));
  const double median = median_of(logs);
  const double sd = std::sqrt(departure_variance(group.size()));
  const size_t first = out.size();
  for (size_t i = 0; i < group.size(); ++i) {
    const StageWork& s = *group[i];
    Departure d;
    d.stage = &s;
    if (group.size() == 2) d.partner = first + 1 - i;
    const double reference = group.size() == 2 ? logs[1 - i] : median;
    d.log_excess = logs[i] - reference;
    d.excess_ns = s.work_ns * (1 - std::exp(-d.log_excess));
    d.scaled = d.log_excess / sd;
    out.push_back(d);
  }
}

// Stages are compared with their replicas (the same role in the other pipelines); stages
// without one with each other. df: the degrees of freedom the departures give the spread, one
// less than the members of each group.
std::vector<Departure> departures_of(const std::vector<StageWork>& stages, double& df) {
  std::map<std::vector<std::pair<int32_t, int32_t>>, std::vector<const StageWork*>> roles;
  for (const StageWork& s : stages)
    if (s.work_ns > 0 && s.gaps > 0) roles[s.role].push_back(&s);
  std::vector<const StageWork*> single;
  std::vector<Departure> out;
  df = 0;
  for (const auto& [role, members] : roles) {
    if (members.size() == 1) single.push_back(members.front());
    else compare_within(members, Measure::kPerGap, out, df);
  }
  compare_within(single, Measure::kTotal, out, df);
  return out;
}

// The spread between healthy GPUs (variance of log work), against which one departure is
// judged: the mean square of the other scaled departures, combined with the prior. A stage is
// no part of its own yardstick, nor is its pair's other member (its mirror): a straggler
// among a dozen would otherwise widen it enough to hide (measured: a 1.4x stage among eight
// pairs at t 3.0 instead of 5.4). Other stragglers are left out by a clip at 4 deviations
// of the job's clipped estimate (robust_stats.hpp). Fewer than kMinRobustSample departures
// measure nothing robustly, so the prior alone judges them. A group's median member departs
// by exactly 0 and is left out.
class Spread {
 public:
  Spread(const std::vector<Departure>& departures, double df, const StragglerConfig& config)
      : departures_(departures), df_(df), config_(config), kept_(departures.size(), false) {
    std::vector<double> pool;
    for (const Departure& d : departures)
      if (d.log_excess != 0) pool.push_back(d.scaled);
    if (pool.size() < kMinRobustSample) return;
    const double job = clipped_variance_of(pool);
    std::set<size_t> clipped_comparisons;  // a pair is one comparison, named by its first member
    for (size_t i = 0; i < departures.size(); ++i) {
      const double z = departures[i].scaled;
      if (departures[i].log_excess == 0) continue;
      if (z * z >= kClipDeviations * kClipDeviations * job) {
        clipped_comparisons.insert(departures[i].partner ? std::min(i, *departures[i].partner) : i);
        continue;
      }
      kept_[i] = true;
      sum_ += z * z;
      ++kept_count_;
    }
    df_ -= static_cast<double>(clipped_comparisons.size());
  }

  PooledVariance excluding(size_t i) const {
    double sum = sum_, count = static_cast<double>(kept_count_), df = df_;
    for (std::optional<size_t> j : {std::optional<size_t>(i), departures_[i].partner})
      if (j && kept_[*j]) {
        sum -= departures_[*j].scaled * departures_[*j].scaled;
        count -= 1;
      }
    if (kept_[i]) df -= 1;  // its own comparison (a pair is one), unless clipped already
    if (count < static_cast<double>(kMinRobustSample) || df < 1)
      return with_prior(0, 0, config_.prior_sigma, config_.prior_df);
    return with_prior(sum / count / kClippedMeanSquare, df, config_.prior_sigma, config_.prior_df);
  }

 private:
  const std::vector<Departure>& departures_;
  double df_;  // of the comparisons left after the clip
  const StragglerConfig& config_;
  std::vector<bool> kept_;
  double sum_ = 0;
  size_t kept_count_ = 0;
};

}  // namespace

std::vector<OwnWorkStraggler> slow_stages(const std::vector<StageWork>& stages, const StragglerConfig& config,
                                          std::vector<OwnWorkStraggler>* judged) {
  double df = 0;
  const std::vector<Departure> departures = departures_of(stages, df);
  const Spread spreads(departures, df, config);
  // One test per independent departure: a pair's two are one comparison, and a group's
  // median member departs from nobody (the degrees of freedom count exactly these).
  const double tail = config.false_alarm / std::max(1.0, df);
  std::vector<OwnWorkStraggler> out;
  for (size_t i = 0; i < departures.size(); ++i) {
    const Departure& d = departures[i];
    const StageWork& s = *d.stage;
    if (d.log_excess <= 0) continue;
    if (d.excess_ns / s.gaps < config.min_excess_ns || d.excess_ns < config.min_share * s.period_ns) continue;
    const PooledVariance spread = spreads.excluding(i);
    if (spread.df <= 0) continue;
    OwnWorkStraggler v;
    v.process = s.process;
    v.excess_ns = d.excess_ns;
    v.t = spread.variance > 0 ? d.scaled / std::sqrt(spread.variance) : std::numeric_limits<double>::infinity();
    v.critical_t = critical_t(spread.df, tail);
    v.margin = straggler_margin(v, d.excess_ns / s.gaps, s.period_ns / s.gaps, config);
    if (judged) judged->push_back(v);
    if (v.t > v.critical_t) out.push_back(v);
  }
  return out;
}

}  // namespace culprit
