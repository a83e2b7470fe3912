#include "analysis/own_work_stragglers.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "analysis/robust_stats.hpp"

namespace culprit {
namespace {

// A rank's departure is the mean of its gaps' departures without the fifth at each end: a
// one-off spike among five or more gaps is left out, and the noise of the estimate is close
// to a mean's (its variance is at most 1.14 times a mean's at normal noise for 2 to 40 gaps,
// simulated; a median's is 1.2-1.5 times).
constexpr double kTrimmedShare = 0.2;
constexpr double kTrimmedMeanEfficiency = 1.068;  // sqrt(1.14)
// A role of fewer ranks has no typical gap that one straggler cannot move: its departures
// are from the other rank, and stay out of the pool that measures the spread between GPUs.
constexpr size_t kMinPool = 3;
// With no spread measurable (fewer than two other GPUs in the pool) and no prior configured
// (prior_df 0), only a GPU this many times slower than its peer is named.
constexpr double kUnmeasuredRatio = 1.5;

// A rank's departure from the typical gaps of its role, and the variance of that departure
// due to noise; or a process's, from its ranks' (combined_by_process).
struct Departure {
  uint32_t process = 0;
  std::vector<const GapObservation*> ranks;  // whose gaps it is made of
  double log_excess = 0;
  // The noise of that departure (gap by gap it carries the reference's noise too), and the
  // degrees of freedom of its estimate; 0 where only sums are known.
  double noise_var = 0, noise_df = 1;
  // Its role has enough members to measure the job's spread. Where it has not (two ranks),
  // the departure is from the other rank, `partner`, whose own speed it carries too.
  bool in_pool = false;
  uint32_t partner = 0;
};

// The ranks of a role that have one gap, and the typical value of that gap: the median over
// all of them, which one straggler cannot move from three ranks on (the median of the others
// could: with three ranks it would be halfway to the straggler). The same for every rank, so
// it is computed once per gap, not once per rank and gap.
struct SameGap {
  std::vector<std::pair<const GapObservation*, double>> ranks;
  double median = 0;  // of all ranks' log gaps, where there are three or more
};

// The mean of `values` without the kTrimmedShare smallest and largest (reorders them).
double trimmed_mean(std::vector<double>& values) {
  std::sort(values.begin(), values.end());
  const size_t cut = static_cast<size_t>(kTrimmedShare * static_cast<double>(values.size()));
  double sum = 0;
  for (size_t k = cut; k < values.size() - cut; ++k) sum += values[k];
  return sum / static_cast<double>(values.size() - 2 * cut);
}

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
    double typical = 0, count = 0;  // the trimmed mean of its departures, over `count` gaps
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
    paired[i] = {trimmed_mean(rel), static_cast<double>(rel.size())};
  }
  // The typical mean gap of the role: of all ranks from three on (the same for every rank).
  double typical_of_all = 0;
  if (mean_logs.size() >= 3) {
    values = mean_logs;
    typical_of_all = median_of(values);
  }
  const double role_df = std::max(1.0, kMedianScaleEfficiency * static_cast<double>(differences.size()));
  const double role_sigma = kPairToSigma * median_of(differences);
  for (size_t i = 0; i < members.size(); ++i) {
    Departure d;
    d.process = members[i]->process;
    d.ranks = {members[i]};
    d.in_pool = members.size() >= kMinPool;
    if (members.size() == 2) d.partner = members[1 - i]->process;
    if (paired[i].count > 0) {
      d.log_excess = paired[i].typical;
      const double se = kTrimmedMeanEfficiency * role_sigma / std::sqrt(paired[i].count);
      d.noise_var = se * se;
      d.noise_df = role_df;
    } else {  // sums only: the mean gap against the typical mean (as above)
      d.log_excess = mean_logs[i] - typical_mean_log(mean_logs, i, typical_of_all);
    }
    out.push_back(d);
  }
}

// One departure of a process from its departures in several roles of the pool (a GPU in a
// world and a data-parallel communicator): the gaps before either are its own work, at its
// one speed, with independent noise, so together they measure that speed more precisely than
// either, and the GPU is one test, not one per communicator. Weighted by their noise (equally
// where only sums are known); the degrees of freedom of the combined noise by
// Welch-Satterthwaite.
Departure combined(const std::vector<const Departure*>& parts) {
  Departure c;
  c.process = parts.front()->process;
  c.in_pool = parts.front()->in_pool;
  c.partner = parts.front()->partner;
  bool weighed = true;
  for (const Departure* d : parts) weighed = weighed && d->noise_var > 0;
  std::vector<double> weights;
  double weight_sum = 0, sum = 0;
  for (const Departure* d : parts) {
    weights.push_back(weighed ? 1 / d->noise_var : 1.0);
    weight_sum += weights.back();
    sum += weights.back() * d->log_excess;
    c.ranks.insert(c.ranks.end(), d->ranks.begin(), d->ranks.end());
  }
  c.log_excess = sum / weight_sum;
  std::vector<PooledVariance> shares;  // each part's noise in the weighted mean
  for (size_t k = 0; k < parts.size(); ++k) {
    const double w = weights[k] / weight_sum;
    shares.push_back({w * w * parts[k]->noise_var, parts[k]->noise_df});
    c.noise_var += shares.back().variance;
  }
  c.noise_df = c.noise_var > 0 ? welch_satterthwaite_df(c.noise_var, shares) : 1;
  return c;
}

// A departure from the other rank of a two-rank role (a data-parallel pair) compares a GPU
// with one other GPU. Where both have a departure in the pool, the pair's plus the partner's
// is one more measurement of the GPU's own departure from the pool (the partner's speed
// cancels), with the noise of both and none of the GPU's pool departure, so it joins that
// departure. Where the GPU has none in the pool, the pair's is judged on its own; where only
// the partner has none, it is a second, weaker test of what the pool already judges, and
// would only cost the family-wise bound a test. A GPU outside the pool that shares two-rank
// roles with the same partner in several communicators (a job of two GPUs in a world and a
// data-parallel communicator) compares the same two speeds in each, with independent noise:
// those departures are one test, combined as the pool's are.
std::vector<Departure> combined_by_process(const std::vector<Departure>& departures) {
  std::map<uint32_t, std::vector<const Departure*>> pooled;
  for (const Departure& d : departures)
    if (d.in_pool) pooled[d.process].push_back(&d);
  std::map<uint32_t, Departure> pool_departure;  // per process, from its pool roles alone
  for (const auto& [process, parts] : pooled)
    pool_departure.emplace(process, parts.size() == 1 ? *parts.front() : combined(parts));
  std::vector<Departure> out, bridged;
  std::map<std::pair<uint32_t, uint32_t>, std::vector<const Departure*>> paired;  // (process, partner)
  for (const Departure& d : departures) {
    if (d.in_pool) continue;
    auto own = pool_departure.find(d.process), partner = pool_departure.find(d.partner);
    if (own == pool_departure.end()) {
      paired[{d.process, d.partner}].push_back(&d);
    } else if (partner != pool_departure.end() && d.noise_var > 0 && partner->second.noise_var > 0) {
      Departure b = d;
      b.in_pool = true;
      b.log_excess = d.log_excess + partner->second.log_excess;
      b.noise_var = d.noise_var + partner->second.noise_var;
      const PooledVariance both[] = {{d.noise_var, d.noise_df}, {partner->second.noise_var, partner->second.noise_df}};
      b.noise_df = welch_satterthwaite_df(b.noise_var, both);
      bridged.push_back(b);
    }
  }
  for (const Departure& b : bridged) pooled[b.process].push_back(&b);
  for (const auto& [process, parts] : pooled) out.push_back(parts.size() == 1 ? *parts.front() : combined(parts));
  for (const auto& [pair, parts] : paired) out.push_back(parts.size() == 1 ? *parts.front() : combined(parts));
  return out;
}

std::vector<Departure> departures_of(const std::vector<GapObservation>& ranks) {
  std::map<uint64_t, std::vector<const GapObservation*>> roles;
  for (const GapObservation& r : ranks) roles[r.role].push_back(&r);
  std::vector<Departure> out;
  for (const auto& [role, members] : roles)
    if (members.size() >= 2) judge_role(members, out);  // alone: nobody does the same work
  return combined_by_process(out);
}

// What a judged rank's departure is measured against: the departures of every other GPU of
// the job (every role of at least kMinPool ranks), leaving out those of the judged process (a
// process may hold several communicator ranks): a straggler is not part of its own yardstick.
// The others' departures spread by the static spread between healthy GPUs plus their own
// noise, so their variance measures both at once; one's own noise replaces theirs where it
// differs (fewer gaps). The measured spread is combined with what is known of GPUs before
// looking (the conjugate update of a variance: prior_df pseudo-observations of prior_sigma), so
// that a job of four GPUs, whose spread cannot be measured, is neither blind nor
// trigger-happy.
struct Yardstick {
  double center = 0;        // the others' median departure
  double center_var = 0;    // its sampling variance
  double measured = 0;      // the others' variance (clipped at 4 deviations)
  double measured_df = 0;   // its degrees of freedom: the other processes, less one
  double noise_mean = 0;    // the others' mean noise variance
  bool unmeasured = false;  // too few others and no prior: only a ratio can be judged
};

Yardstick yardstick_without(const std::vector<Departure>& departures, uint32_t judged, const StragglerConfig& config) {
  std::vector<double> pool;  // one departure per other GPU (combined_by_process)
  Yardstick y;
  for (const Departure& d : departures)
    if (d.in_pool && d.process != judged) {
      pool.push_back(d.log_excess);
      y.noise_mean += d.noise_var;
    }
  if (pool.size() < 2) {
    y.unmeasured = config.prior_df <= 0;
    y.noise_mean = 0;
    return y;
  }
  y.noise_mean /= static_cast<double>(pool.size());
  std::vector<double> scratch = pool;
  y.center = median_of(scratch);
  for (double& v : pool) v -= y.center;
  y.measured = clipped_variance_of(pool);
  y.measured_df = static_cast<double>(pool.size() - 1);
  y.center_var = kMedianEfficiency * kMedianEfficiency * y.measured / static_cast<double>(pool.size());
  return y;
}

// A departure against its yardstick: t and its critical value at the tail probability.
void judge_against(const Departure& d, const Yardstick& y, const StragglerConfig& config, double tail,
                   OwnWorkStraggler& s) {
  if (y.unmeasured) {
    s.critical_t = std::log(kUnmeasuredRatio);
    s.t = d.log_excess;  // no spread to scale by: the ratio itself is judged
    return;
  }
  // The between-GPU spread: what the others show beyond their noise, combined with the prior
  // (the conjugate update of a variance).
  const double between_measured = std::max(0.0, y.measured - y.noise_mean);
  const PooledVariance between = with_prior(between_measured, y.measured_df, config.prior_sigma, config.prior_df);
  // A departure from one other rank differs by two GPUs' speeds (its noise, measured on such
  // departures, holds both ranks' already); one from the pool's typical gap by one.
  const double speeds = d.in_pool ? 1.0 : 2.0;
  const double center = d.in_pool ? y.center : 0.0;
  const double center_var = d.in_pool ? y.center_var : 0.0;
  const double var = d.noise_var + speeds * between.variance + center_var;
  // Its degrees of freedom (Welch-Satterthwaite over the estimates it is made of, each one's
  // sampling variance taken at the pooled values): the others' whole variance, noise included,
  // with one degree per other GPU (where noise dominates, the difference between it and the
  // noise is what is uncertain); the prior's pseudo-observations; and what is left of the own
  // noise estimate beyond the others' (the same estimate where the gaps are as many).
  const double weight = y.measured_df / std::max(1e-12, y.measured_df + config.prior_df);
  const double measured_part = speeds * weight * (between.variance + y.noise_mean);
  const double prior_part = speeds * (1 - weight) * between.variance;
  const double own_part = std::max(0.0, d.noise_var - speeds * weight * y.noise_mean);
  std::vector<PooledVariance> parts = {{own_part, d.noise_df}};
  if (y.measured_df > 0) parts.push_back({measured_part, y.measured_df});
  if (config.prior_df > 0) parts.push_back({prior_part, config.prior_df});
  s.critical_t = critical_t(welch_satterthwaite_df(var, parts), tail);
  const double departure = d.log_excess - center;
  s.t = var > 0 ? departure / std::sqrt(var) : std::numeric_limits<double>::infinity();
}

// The yardstick each judged process is measured against. Leaving one process out changes the
// spread of a large pool by less than one place in it, so past kLeaveOneOutPool departures one
// yardstick over all of them serves every process (linear, not quadratic, in the job's size).
constexpr size_t kLeaveOneOutPool = 256;
class Yardsticks {
 public:
  Yardsticks(const std::vector<Departure>& departures, const StragglerConfig& config)
      : departures_(departures), config_(config) {
    size_t pooled = 0;
    for (const Departure& d : departures) pooled += d.in_pool ? 1 : 0;
    leave_one_out_ = pooled <= kLeaveOneOutPool;
    if (!leave_one_out_) everyone_ = yardstick_without(departures, kNobody, config);
  }
  const Yardstick& without(uint32_t process) {
    if (!leave_one_out_) return everyone_;
    auto it = cache_.find(process);
    if (it == cache_.end()) it = cache_.emplace(process, yardstick_without(departures_, process, config_)).first;
    return it->second;
  }

 private:
  static constexpr uint32_t kNobody = std::numeric_limits<uint32_t>::max();
  const std::vector<Departure>& departures_;
  const StragglerConfig& config_;
  bool leave_one_out_ = false;
  Yardstick everyone_;
  std::map<uint32_t, Yardstick> cache_;
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
  Yardsticks yardsticks(departures, config);
  const double tail = config.false_alarm / static_cast<double>(std::max<size_t>(1, departures.size()));
  std::vector<OwnWorkStraggler> out;
  for (const Departure& d : departures) {
    if (d.log_excess <= 0) continue;
    // Its extra own time over all its ranks' gaps, and per gap and period on average.
    double excess_ns = 0, gaps = 0, period_ns = 0;
    for (const GapObservation* r : d.ranks) {
      excess_ns += r->mean_gap_ns * (1 - std::exp(-d.log_excess)) * r->samples;
      gaps += r->samples;
      period_ns += r->mean_period_ns * r->samples;
    }
    if (gaps <= 0) continue;
    const double excess_per_gap = excess_ns / gaps, period_per_gap = period_ns / gaps;
    if (excess_per_gap < config.min_excess_ns || excess_per_gap < config.min_share * period_per_gap) continue;
    OwnWorkStraggler s;
    s.process = d.process;
    s.excess_ns = excess_ns;
    judge_against(d, yardsticks.without(d.process), config, tail, s);
    s.margin = straggler_margin(s, excess_per_gap, period_per_gap, config);
    if (judged) judged->push_back(s);
    if (s.t > s.critical_t) out.push_back(s);
  }
  return out;
}

}  // namespace culprit
