#include "analysis/own_work_stragglers.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "analysis/robust_stats.hpp"

namespace culprit {
namespace {

// The standard error of a median is about sqrt(pi/2) times that of a mean.
constexpr double kMedianEfficiency = 1.2533;
constexpr double kPairToSigma = 1.0483;  // 1 / (sqrt(2) x 0.6745)
// Fewer departures than this measure no spread between GPUs.
constexpr size_t kMinPool = 3;
// With no spread measurable (fewer than kMinPool ranks to compare) and no prior configured
// (prior_df 0), only a GPU this many times slower than its peer is named.
constexpr double kUnmeasuredRatio = 1.5;

// A rank's departure from the typical gaps of its role, and the variance of that departure
// due to noise.
struct Departure {
  const GapObservation* rank = nullptr;
  double log_excess = 0;
  // The noise of that departure (gap by gap it carries the reference's noise too), and the
  // degrees of freedom of its estimate; 0 where only sums are known.
  double noise_var = 0, noise_df = 1;
  bool in_pool = false;  // its role has enough members to measure the job's spread
};

// The ranks of a role that have one gap, and the typical value of that gap: the median over
// all of them, which one straggler cannot move from three ranks on (the median of the others
// could: with three ranks it would be halfway to the straggler). The same for every rank, so
// it is computed once per gap, not once per rank and gap.
struct SameGap {
  std::vector<std::pair<const GapObservation*, double>> ranks;
  double median = 0;  // of all ranks' log gaps, where there are three or more
};

// A rank's departures, gap by gap, from the typical same gap of its role (with two ranks,
// from the other one).
std::vector<double> paired_departures(const GapObservation& r, const std::map<uint64_t, SameGap>& by_key) {
  std::vector<double> out;
  for (const GapSample& g : r.gaps) {
    auto it = by_key.find(g.key);
    if (it == by_key.end() || it->second.ranks.size() < 2) continue;
    const SameGap& same = it->second;
    if (same.ranks.size() >= 3) {
      out.push_back(g.log_ns - same.median);
      continue;
    }
    const auto& other = same.ranks[0].first == &r ? same.ranks[1] : same.ranks[0];
    out.push_back(g.log_ns - other.second);
  }
  return out;
}

// What rank i's mean gap is compared with: the median of all ranks' from three on, else the
// other rank's.
double typical_mean_log(const std::vector<double>& mean_logs, size_t i, double typical_of_all) {
  if (mean_logs.size() >= 3) return typical_of_all;
  return mean_logs[mean_logs.size() - 1 - i];  // two ranks: the other one
}

// The departures of one role's ranks. The spread of single departures is the same random
// process for every GPU of a role, straggler or not (a slower GPU is slower every time), so
// it is measured on all of them together (below), with the degrees of freedom of all their
// samples: a handful of gaps alone say little about their own noise.
void judge_role(const std::vector<const GapObservation*>& members, std::vector<Departure>& out) {
  std::map<uint64_t, SameGap> by_key;
  for (const GapObservation* r : members)
    for (const GapSample& g : r->gaps) by_key[g.key].ranks.emplace_back(r, g.log_ns);
  std::vector<double> values;
  for (auto& [key, same] : by_key) {
    if (same.ranks.size() < 3) continue;
    values.clear();
    for (const auto& [who, log_ns] : same.ranks) values.push_back(log_ns);
    same.median = median_of(values);
  }
  std::vector<double> mean_logs;
  for (const GapObservation* r : members) mean_logs.push_back(std::log(std::max(1.0, r->mean_gap_ns)));
  struct Paired {
    double median = 0, count = 0;
  };
  std::vector<Paired> paired(members.size());
  // Differences of successive departures of one rank: its own offset cancels, so their
  // median measures the noise without a biased small-sample centre (sigma = 1.0483 x the
  // median absolute difference of two normal draws), and a slow drift cancels too.
  std::vector<double> differences;
  for (size_t i = 0; i < members.size(); ++i) {
    std::vector<double> rel = paired_departures(*members[i], by_key);
    if (rel.size() < 2) continue;
    for (size_t k = 1; k < rel.size(); ++k) differences.push_back(std::fabs(rel[k] - rel[k - 1]));
    paired[i] = {median_of(rel), static_cast<double>(rel.size())};
  }
  // The typical mean gap of the role: of all ranks from three on (the same for every rank).
  double typical_of_all = 0;
  if (mean_logs.size() >= 3) {
    values = mean_logs;
    typical_of_all = median_of(values);
  }
  const double role_df = std::max(1.0, static_cast<double>(differences.size()));
  const double role_sigma = kPairToSigma * median_of(differences);
  for (size_t i = 0; i < members.size(); ++i) {
    Departure d;
    d.rank = members[i];
    d.in_pool = members.size() >= kMinPool;
    if (paired[i].count > 0) {
      d.log_excess = paired[i].median;
      const double se = kMedianEfficiency * role_sigma / std::sqrt(paired[i].count);
      d.noise_var = se * se;
      d.noise_df = role_df;
    } else {  // sums only: the mean gap against the typical mean (as above)
      d.log_excess = mean_logs[i] - typical_mean_log(mean_logs, i, typical_of_all);
    }
    out.push_back(d);
  }
}

std::vector<Departure> departures_of(const std::vector<GapObservation>& ranks) {
  std::map<uint64_t, std::vector<const GapObservation*>> roles;
  for (const GapObservation& r : ranks) roles[r.role].push_back(&r);
  std::vector<Departure> out;
  for (const auto& [role, members] : roles)
    if (members.size() >= 2) judge_role(members, out);  // alone: nobody does the same work
  return out;
}

// The static spread between healthy GPUs (variance of log speed), and its degrees of freedom,
// from the departures of every role of at least kMinPool ranks and their noise
// (between_variance_of, robust_stats.hpp), leaving out the departures of `judged` (a process
// may hold several communicator ranks): a straggler is not part of its own yardstick. In a
// job of three GPUs in two communicators the straggler was a third of the pool, and the
// median it moved made a 1.56x GPU costing the job 25 % look like ordinary spread. The
// measurement is combined with what is known of GPUs before looking (the conjugate update of
// a variance: prior_df pseudo-observations of prior_sigma), so that a job of four GPUs, whose
// spread cannot be measured, is neither blind nor trigger-happy.
std::pair<double, double> between_gpu_variance(const std::vector<Departure>& departures, uint32_t judged,
                                               const StragglerConfig& config) {
  std::vector<double> pool, noise;
  for (const Departure& d : departures)
    if (d.in_pool && d.rank->process != judged) {
      pool.push_back(d.log_excess);
      noise.push_back(d.noise_var);
    }
  const double prior_ss = config.prior_df * config.prior_sigma * config.prior_sigma;
  if (pool.size() < kMinPool) {
    if (config.prior_df <= 0) return {std::numeric_limits<double>::quiet_NaN(), 0};
    return {prior_ss / config.prior_df, config.prior_df};
  }
  const PooledVariance pooled = with_prior(between_variance_of(pool, noise), static_cast<double>(pool.size() - 1),
                                          config.prior_sigma, config.prior_df);
  return {pooled.variance, pooled.df};
}

// The spread each judged process is measured against. Leaving one process out changes the
// chi-square median of a large pool by less than one place in it, so past kLeaveOneOutPool
// departures one estimate over all of them serves every process (linear, not quadratic, in
// the job's size).
constexpr size_t kLeaveOneOutPool = 256;
class BetweenGpuSpread {
 public:
  BetweenGpuSpread(const std::vector<Departure>& departures, const StragglerConfig& config)
      : departures_(departures), config_(config) {
    size_t pooled = 0;
    for (const Departure& d : departures) pooled += d.in_pool ? 1 : 0;
    leave_one_out_ = pooled <= kLeaveOneOutPool;
    if (!leave_one_out_) everyone_ = between_gpu_variance(departures, kNobody, config);
  }
  std::pair<double, double> without(uint32_t process) {
    if (!leave_one_out_) return everyone_;
    auto it = cache_.find(process);
    if (it == cache_.end()) it = cache_.emplace(process, between_gpu_variance(departures_, process, config_)).first;
    return it->second;
  }

 private:
  static constexpr uint32_t kNobody = std::numeric_limits<uint32_t>::max();
  const std::vector<Departure>& departures_;
  const StragglerConfig& config_;
  bool leave_one_out_ = false;
  std::pair<double, double> everyone_;
  std::map<uint32_t, std::pair<double, double>> cache_;
};

}  // namespace

double straggler_margin(const OwnWorkStraggler& s, double excess_per_gap_ns, double period_ns,
                        const StragglerConfig& config) {
  double margin = s.t / s.critical_t;
  if (config.min_excess_ns > 0) margin = std::min(margin, excess_per_gap_ns / config.min_excess_ns);
  if (config.min_share * period_ns > 0) margin = std::min(margin, excess_per_gap_ns / (config.min_share * period_ns));
  return margin;
}

std::vector<OwnWorkStraggler> own_work_stragglers(const std::vector<GapObservation>& ranks,
                                                  const StragglerConfig& config,
                                                  std::vector<OwnWorkStraggler>* judged) {
  std::vector<Departure> departures = departures_of(ranks);
  BetweenGpuSpread spread(departures, config);
  const double tail = config.false_alarm / static_cast<double>(std::max<size_t>(1, departures.size()));
  std::vector<OwnWorkStraggler> out;
  for (const Departure& d : departures) {
    const GapObservation& r = *d.rank;
    if (d.log_excess <= 0) continue;
    const double excess_per_gap = r.mean_gap_ns * (1 - std::exp(-d.log_excess));
    if (excess_per_gap < config.min_excess_ns || excess_per_gap < config.min_share * r.mean_period_ns) continue;
    OwnWorkStraggler s;
    s.process = r.process;
    s.excess_ns = excess_per_gap * r.samples;
    const auto [between_var, between_df] = spread.without(r.process);
    if (std::isnan(between_var)) {
      s.critical_t = std::log(kUnmeasuredRatio);
      s.t = d.log_excess;  // no spread to scale by: the ratio itself is judged
    } else {
      const double var = d.noise_var + between_var;
      // Welch-Satterthwaite: the degrees of freedom of a sum of estimated variances.
      const double df_denominator =
          d.noise_var * d.noise_var / d.noise_df + between_var * between_var / std::max(1.0, between_df);
      const double df = df_denominator > 0 ? var * var / df_denominator : 1e6;
      s.critical_t = critical_t(df, tail);
      s.t = var > 0 ? d.log_excess / std::sqrt(var) : std::numeric_limits<double>::infinity();
    }
    s.margin = straggler_margin(s, excess_per_gap, r.mean_period_ns, config);
    if (judged) judged->push_back(s);
    if (s.t > s.critical_t) out.push_back(s);
  }
  return out;
}

}  // namespace culprit
