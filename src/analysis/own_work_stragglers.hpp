// Signal: a GPU whose own work between its NCCL kernels is persistently longer than its
// peers' (kernel clocks: the gap from one kernel's stop to the next one's start).
//
// Physics: in a collective every rank does the same work between two calls, so a straggler's
// gaps are longer every time, while its victims' gaps are not (they wait inside the kernel,
// not before it). Noise makes single gaps differ; hardware makes GPUs differ a little for
// good. So each gap is compared, in logs, with the same gap (same key: the collective's
// sequence) of the rank's role peers, so that gaps of different kinds are compared like with
// like, and a rank is judged by the mean of those departures without the fifth at each end
// (a one-off spike among five or more gaps is left out), against both:
//   - the noise of that mean, from the spread of the departures over the window, measured
//     on the whole role (standard error ~ 1.07 sigma / sqrt(samples): significance grows
//     with the number of sequences, so a persistent 10 % straggler stands out where a one-off
//     spike does not);
//   - the static spread between healthy GPUs: the other GPUs' departures (the judged GPU's
//     left out), whose variance holds that spread and their own noise (clipped at 4
//     deviations, robust to the other stragglers), combined with a prior for jobs too small
//     to measure it.
// The threshold is a Student t critical value at a family-wise false alarm rate. Its degrees
// of freedom are what the yardstick is really worth: one per other GPU (not per gap: the
// spread between GPUs is measured by the GPUs), the noise estimate at the efficiency of a
// median, the prior's pseudo-observations (Welch-Satterthwaite). So a small job with few GPUs
// to compare needs a larger departure than a large one, nothing is tuned to a fault size, and
// healthy jobs raise about the design rate of alarms (measured by simulation, the unit test).
// A straggler must also matter: its extra time per period at least min_share of the period
// (docs/attribution.md).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "analysis/observations.hpp"

namespace culprit {

// One communicator rank's gaps. Ranks of one role (the attribution uses one per collective
// communicator) do the same work and are compared with each other.
struct GapObservation {
  uint32_t process = 0;
  uint64_t role = 0;
  std::span<const GapSample> gaps;  // its single gaps; empty where only the sums are known
  double samples = 0;         // gaps measured (the sums' count)
  double mean_gap_ns = 0;
  double mean_period_ns = 0;  // previous kernel start to this one
};

struct StragglerConfig {
  double false_alarm = 1e-3;  // chance that a healthy job shows any straggler
  double min_share = 0.01;    // extra own time per period, as a share of the period
  double min_excess_ns = 20000.0;  // per gap: below this no GPU is late enough to matter
  // What is known of healthy GPUs of one model before looking: their sustained speeds differ
  // by one to a few percent (clocks under power and thermal limits). Weighted as prior_df
  // observations against the spread measured on the job.
  double prior_sigma = 0.05;
  double prior_df = 4;
};

struct OwnWorkStraggler {
  uint32_t process = 0;
  double excess_ns = 0;   // its own time beyond its peers' typical, summed over its gaps
  double t = 0;           // departure in units of its uncertainty
  double critical_t = 0;  // what it had to clear
  // How many times the tightest of its guards it clears: t against its critical value, its
  // excess per gap against min_excess_ns and min_share of its period (the score, blame.hpp).
  double margin = 0;
};

// The margin of a judged straggler: `t` over `critical_t`, bounded by its excess per gap over
// the floors of `config` (period_ns: the mean period of its gaps).
double straggler_margin(const OwnWorkStraggler& s, double excess_per_gap_ns, double period_ns,
                        const StragglerConfig& config);

// GPUs that are stragglers. A GPU's departures in every role of three or more ranks are
// combined into one (its gaps before either are its own work at its one speed); one from the
// other rank of a two-rank role is judged only for a GPU without such a departure (one per
// two-rank role it holds).
// `judged`, when given, receives every rank slower than its role that matters (significant
// or not), for the diagnostics of whoever audits a verdict.
std::vector<OwnWorkStraggler> own_work_stragglers(const std::vector<GapObservation>& ranks,
                                                  const StragglerConfig& config = {},
                                                  std::vector<OwnWorkStraggler>* judged = nullptr);

}  // namespace culprit
