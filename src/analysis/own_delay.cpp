#include "analysis/own_delay.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <utility>

#include "analysis/flow_places.hpp"
#include "analysis/own_work_stragglers.hpp"
#include "analysis/stage_work.hpp"

namespace culprit {
namespace {

using Role = PipelineStage;  // (size, rank) in each send/recv communicator (flow_places.hpp)

// What the tests found, per process: own delay and margin (OwnDelay's late_ns and margin).
struct Late {
  std::vector<double>& ns;
  std::vector<double>& margin;
};

// Per process: its gaps summed over its communicator ranks, and its role. GPUs are compared
// with GPUs that do the same job: in collectives every rank does the same work between calls,
// but a pipeline stage's work between two NCCL calls depends on where it sits (the first stage
// has half the calls of a middle one for the same work). A GPU's role is its place in its p2p
// communicators; GPUs without p2p share one role.
struct GapTotals {
  std::vector<double> gap_sum, period_sum, gap_count;
  std::vector<Role> role;
  std::map<Role, std::vector<uint32_t>> peers_by_role;
  // A GPU of collectives only with fewer than two others of its kind in a job of pipeline
  // stages is judged by the share of its time it spends on its own work, against every GPU's
  // share (stages are judged by their work, stage_work.hpp).
  std::vector<bool> alone;
  bool any_alone = false;
};

GapTotals gap_totals(const Observations& obs, size_t n, const std::map<uint64_t, int32_t>& n_ranks,
                     std::vector<bool>& measured) {
  GapTotals t;
  t.gap_sum.assign(n, 0.0);
  t.period_sum.assign(n, 0.0);
  t.gap_count.assign(n, 0.0);
  t.role.assign(n, {});
  t.alone.assign(n, false);
  for (const GlobalCommRank& c : obs.comm_ranks) {
    t.gap_sum[c.process] += static_cast<double>(c.gap_sum_ns);
    t.period_sum[c.process] += static_cast<double>(c.gap_period_sum_ns);
    t.gap_count[c.process] += c.gap_samples;
  }
  for (auto& [process, stage] : pipeline_stages(obs, n_ranks)) t.role[process] = std::move(stage);
  for (uint32_t p = 0; p < n; ++p) {
    if (t.gap_count[p] == 0 || t.period_sum[p] <= 0) continue;
    measured[p] = true;
    t.peers_by_role[t.role[p]].push_back(p);
  }
  for (const auto& [key, members] : t.peers_by_role)
    if (key.empty() && members.size() < 3 && t.peers_by_role.size() > 1)
      for (uint32_t p : members) t.any_alone = t.alone[p] = true;
  return t;
}

// A GPU found late by `ns` with `margin` over its guards (it may be found in several tests or
// communicators: the delays add, the strongest margin stands).
void record_late(Late& late, uint32_t process, double ns, double margin) {
  late.ns[process] += ns;
  late.margin[process] = std::max(late.margin[process], margin);
}

std::string gap_diagnostic(const std::vector<GlobalProcess>& procs, const OwnWorkStraggler& s, const char* what) {
  return std::string(what) + " " + procs[s.process].host + ":" + std::to_string(procs[s.process].pid) + " t " +
         std::to_string(s.t) + " of " + std::to_string(s.critical_t) + ", excess " + std::to_string(s.excess_ns) +
         " ns";
}

// Pipeline stages (GPUs with send/recv roles): each stage's own work over the window against
// the stages it does the same job as (stage_work.hpp).
bool judge_pipeline_stages(const GapTotals& t, const std::vector<bool>& measured,
                           const std::vector<GlobalProcess>& procs, Late late, std::vector<std::string>& diagnostics) {
  std::vector<StageWork> stages;
  for (uint32_t p = 0; p < t.gap_sum.size(); ++p)
    if (measured[p] && !t.role[p].empty())
      stages.push_back({p, t.role[p], t.gap_sum[p], t.gap_count[p], t.period_sum[p]});
  if (stages.size() < 2) return false;
  std::vector<OwnWorkStraggler> judged;
  for (const OwnWorkStraggler& s : slow_stages(stages, {}, &judged))
    record_late(late, s.process, s.excess_ns, s.margin);
  for (const OwnWorkStraggler& s : judged) diagnostics.push_back(gap_diagnostic(procs, s, "stage work"));
  return true;
}

// GPUs of collectives only: each communicator rank's gaps against its peers', gap by gap
// (own_work_stragglers.hpp).
bool judge_collective_gaps(const Observations& obs, const GapTotals& t, const std::vector<bool>& measured,
                           const std::vector<GlobalProcess>& procs, Late late, std::vector<std::string>& diagnostics) {
  std::vector<GapObservation> gap_ranks;
  for (const GlobalCommRank& c : obs.comm_ranks) {
    if (c.gap_samples == 0 || c.gap_period_sum_ns == 0 || t.alone[c.process] || !measured[c.process] ||
        !t.role[c.process].empty() || !c.has_collective)
      continue;
    GapObservation g;
    g.process = c.process;
    g.role = c.comm_hash;  // a collective's ranks all do the same work
    g.samples = c.gap_samples;
    g.mean_gap_ns = static_cast<double>(c.gap_sum_ns) / c.gap_samples;
    g.mean_period_ns = static_cast<double>(c.gap_period_sum_ns) / c.gap_samples;
    g.gaps = c.gaps;
    gap_ranks.push_back(g);
  }
  std::map<uint64_t, size_t> role_size;
  for (const GapObservation& g : gap_ranks) ++role_size[g.role];
  bool compared = false;
  for (const auto& [r, size] : role_size) compared = compared || size >= 2;
  std::vector<OwnWorkStraggler> judged;
  for (const OwnWorkStraggler& s : own_work_stragglers(gap_ranks, {}, &judged))
    record_late(late, s.process, s.excess_ns, s.margin);
  for (const OwnWorkStraggler& s : judged) diagnostics.push_back(gap_diagnostic(procs, s, "gaps"));
  return compared;
}

// GPUs of collectives alone in their role (a job of pipeline stages): the share of their time
// on their own work against every GPU's share, which must exceed the reference (the median,
// of the others where there are few) by mad_k robust deviations and by gap_rel_floor of it.
bool judge_alone(const GapTotals& t, const AttributionConfig& cfg, Late late) {
  std::vector<uint32_t> everyone;
  for (const auto& [key, members] : t.peers_by_role) everyone.insert(everyone.end(), members.begin(), members.end());
  std::vector<double> shares;
  for (uint32_t p : everyone) shares.push_back(t.gap_sum[p] / t.period_sum[p]);
  const Robust base = robust_of(shares);
  if (base.n < 2) return false;
  const bool small = base.n < kMinRobustSample;
  const double spread = small ? 0.0 : cfg.mad_k * base.sigma;
  for (size_t i = 0; i < everyone.size(); ++i) {
    const uint32_t p = everyone[i];
    if (!t.alone[p]) continue;
    double reference = base.median;
    if (small) {  // the quickest alone would make ordinary speed differences look like stragglers
      std::vector<double> others = shares;
      others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
      reference = robust_of(others).median;
    }
    const double excess = shares[i] - reference;
    const double excess_ns = excess * t.period_sum[p];
    const double share_margin = beyond_guard(excess, std::max(spread, cfg.gap_rel_floor * reference)).margin;
    const double time_margin = beyond_guard(excess_ns, cfg.kernel_abs_floor_ns * t.gap_count[p]).margin;
    if (share_margin > 0 && time_margin > 0) {
      late.ns[p] = excess_ns;
      late.margin[p] = std::min(share_margin, time_margin);
    }
  }
  return true;
}

// Without StopGpuClk: a kernel's start against the median of its node's GPUs in the same
// collective.
void kernel_start_fallback(const Observations& obs, const std::function<double(const Robust&)>& guard_of,
                           Late late) {
  std::vector<double> means;
  for (const GlobalCommRank& c : obs.comm_ranks)
    if (c.kernel_samples) means.push_back(static_cast<double>(c.kernel_late_sum_ns) / c.kernel_samples);
  Robust base = robust_of(means);
  double guard = guard_of(base);
  for (const GlobalCommRank& c : obs.comm_ranks) {
    if (!c.kernel_samples) continue;
    double mean = static_cast<double>(c.kernel_late_sum_ns) / c.kernel_samples;
    const Excess x = beyond_guard(mean - base.median, guard);
    if (x.margin > 0) record_late(late, c.process, x.ns * c.kernel_samples, x.margin);
  }
}

// The communicators whose ranks with receive ops all hold the same place in the data flow
// (flow_places.hpp): in a ring every rank receives on each channel alike, in a tree a leaf, an
// interior node and the root do not.
std::set<uint64_t> communicators_of_equal_places(const Observations& obs) {
  const std::map<std::pair<uint64_t, int32_t>, FlowPlace> place = flow_places(obs);
  std::map<uint64_t, std::set<FlowPlace>> places;
  for (const GlobalCommRank& c : obs.comm_ranks) {
    if (!c.op_samples) continue;
    auto it = place.find({c.comm_hash, c.rank});
    places[c.comm_hash].insert(it == place.end() ? FlowPlace{} : it->second.counts());
  }
  std::set<uint64_t> equal;
  for (const auto& [comm, kinds] : places)
    if (kinds.size() == 1) equal.insert(comm);
  return equal;
}

// Late arrival seen on the proxy's own clock, only without kernel clocks (KernelCh not
// recorded). Every rank's receive ops end when the collective's data has gone round; a rank
// that posts them late has the shortest ops. That holds among ranks that play the same part
// (a ring's); in trees and pipelines op lengths differ by position (a tree's root receives
// its children's data, a leaf its parent's after the root's), so communicators whose ranks
// hold different places in the data flow are not judged: the shortest ops there belonged to
// a healthy GPU placed where the data arrives first.
void short_ops_fallback(const Observations& obs, const std::function<double(const Robust&)>& guard_of, Late late) {
  const std::set<uint64_t> comparable = communicators_of_equal_places(obs);
  std::map<uint64_t, std::vector<const GlobalCommRank*>> by_comm;
  for (const GlobalCommRank& c : obs.comm_ranks)
    if (c.op_samples && comparable.count(c.comm_hash)) by_comm[c.comm_hash].push_back(&c);
  for (const auto& [comm, members] : by_comm) {
    std::vector<double> means;
    for (const GlobalCommRank* c : members) means.push_back(static_cast<double>(c->op_time_sum_ns) / c->op_samples);
    Robust base = robust_of(means);
    if (base.n < kMinRobustSample) continue;  // op lengths of a few ranks differ by role
    double guard = guard_of(base);
    for (const GlobalCommRank* c : members) {
      const Excess shorter = beyond_guard(base.median - static_cast<double>(c->op_time_sum_ns) / c->op_samples, guard);
      if (shorter.margin > 0) record_late(late, c->process, shorter.ns * c->op_samples, shorter.margin);
    }
  }
}

}  // namespace

OwnDelay measure_own_delay(const Observations& obs, const std::vector<GlobalProcess>& procs,
                           const std::map<uint64_t, int32_t>& n_ranks,
                           const std::map<uint64_t, CommBaseline>& baselines, const AttributionConfig& cfg) {
  const size_t n = procs.size();
  OwnDelay out;
  out.late_ns.assign(n, 0.0);
  out.margin.assign(n, 0.0);
  out.work_measured.assign(n, false);
  Late late{out.late_ns, out.margin};
  // Scale of the fallbacks: the median collective duration seen by the proxies (receive ops
  // last as long as the collective), else the median proxy op.
  double collective_ns = 0;
  {
    std::vector<double> op_means;
    for (const GlobalCommRank& c : obs.comm_ranks)
      if (c.op_samples) op_means.push_back(static_cast<double>(c.op_time_sum_ns) / c.op_samples);
    collective_ns = robust_of(op_means).median;
    for (const auto& [comm, b] : baselines) collective_ns = std::max(collective_ns, b.op_ns);
  }
  auto guard_of = [&](const Robust& base) {
    double spread = base.n < kMinRobustSample ? 0.0 : cfg.mad_k * base.sigma;
    return std::max({spread, cfg.kernel_rel_floor * collective_ns, cfg.kernel_abs_floor_ns});
  };
  // Preferred: the gaps between a GPU's kernels, the time it spent on its own work:
  // comparable across nodes, blind to victims that merely finished the previous call late.
  const GapTotals totals = gap_totals(obs, n, n_ranks, out.work_measured);
  out.have_gaps = judge_pipeline_stages(totals, out.work_measured, procs, late, out.diagnostics);
  out.have_gaps = judge_collective_gaps(obs, totals, out.work_measured, procs, late, out.diagnostics) || out.have_gaps;
  if (totals.any_alone) out.have_gaps = judge_alone(totals, cfg, late) || out.have_gaps;
  if (!out.have_gaps) {
    kernel_start_fallback(obs, guard_of, late);
    short_ops_fallback(obs, guard_of, late);
  }
  return out;
}

}  // namespace culprit
