#include "analysis/blame.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "analysis/score.hpp"

namespace culprit {
namespace {

struct RootTotals {
  double blame_ns = 0;
  double cost_ns = 0;  // victims' time inside NCCL beyond the root's own
  uint32_t victims = 0;
};

std::vector<ProcessRow> process_rows(const BlameInputs& in) {
  std::vector<ProcessRow> rows(in.context.size());
  for (uint32_t p = 0; p < rows.size(); ++p) {
    const GlobalProcess& proc = in.context.processes()[p];
    ProcessRow& row = rows[p];
    row.process_id = p;
    row.host = proc.host;
    row.pid = proc.pid;
    row.rank = proc.rank;
    row.label = proc.label;
    row.wait_ns = static_cast<uint64_t>(in.graph.wait_ns[p]);
  }
  return rows;
}

// Marks the victims, records their chains and sums what each root's victims cost.
std::map<uint32_t, RootTotals> assign_victims(const BlameInputs& in, const std::vector<double>& busy, Blame& out) {
  std::map<uint32_t, RootTotals> totals;
  const std::set<uint32_t> root_set(in.roots.begin(), in.roots.end());
  for (uint32_t p = 0; p < out.processes.size(); ++p) {
    int64_t attributed = in.graph.attributed_root[p];
    if (attributed < 0 || !root_set.count(static_cast<uint32_t>(attributed)) || attributed == static_cast<int64_t>(p)) continue;
    auto r = static_cast<uint32_t>(attributed);
    ProcessRow& row = out.processes[p];
    row.role = "victim";
    row.attributed_root = r;
    const std::vector<uint32_t> chain = chain_of(in.graph, p);
    row.chain_depth = static_cast<int32_t>(chain.size()) - 1;
    totals[r].blame_ns += in.graph.wait_ns[p];
    if (busy[r] > 0 && busy[p] > 0) totals[r].cost_ns += std::max(0.0, busy[p] - busy[r]);
    totals[r].victims += 1;
    for (uint32_t hop = 0; hop < chain.size(); ++hop) out.chains.push_back({p, hop, chain[hop]});
  }
  for (uint32_t r : in.roots) totals[r].blame_ns += in.evidence[r].ns;  // its direct excess
  return totals;
}

double job_share_of(const Evidence& e, const RootTotals& t, double own_busy, double job_busy, size_t n) {
  if (e.stopped) return n > 0 ? static_cast<double>(t.victims + 1) / static_cast<double>(n) : 0;
  if (e.culprit_class == CulpritClass::kGpuProducer && own_busy > 0 && job_busy > 0)
    return std::min(1.0, t.cost_ns / job_busy);
  return std::numeric_limits<double>::quiet_NaN();  // not measurable (blame.hpp)
}

}  // namespace

Blame blame_roots(const BlameInputs& in) {
  Blame out;
  out.processes = process_rows(in);
  const size_t n = out.processes.size();
  std::vector<double> busy(n, 0.0);  // each process's time inside NCCL (kernel durations)
  for (const GlobalCommRank& c : in.observations.comm_ranks) busy[c.process] += static_cast<double>(c.busy_sum_ns);
  double job_busy = 0;
  for (double b : busy) job_busy += b;
  std::map<uint32_t, RootTotals> totals = assign_victims(in, busy, out);
  double total_blame = 0;
  for (uint32_t r : in.roots) total_blame += totals[r].blame_ns;
  for (uint32_t r : in.roots) {
    const Evidence& e = in.evidence[r];
    const RootTotals& t = totals[r];
    ProcessRow& row = out.processes[r];
    row.role = "culprit";
    row.culprit_class = name_of(e.culprit_class);
    row.attributed_root = r;
    row.blame_ns = static_cast<uint64_t>(t.blame_ns);
    row.score = calibrated_score(e);
    CulpritRow c;
    c.process_id = r;
    c.host = row.host;
    c.pid = row.pid;
    c.culprit_class = row.culprit_class;
    c.peer_process_id = e.peer ? static_cast<int64_t>(*e.peer) : -1;
    c.blame_ns = row.blame_ns;
    c.blame_share = total_blame > 0 ? t.blame_ns / total_blame : 0;
    c.job_share = job_share_of(e, t, busy[r], job_busy, n);
    c.victims = t.victims;
    c.margin = e.margin;
    c.score = row.score;
    out.culprits.push_back(c);
  }
  // A stopped rank stops the whole job, whatever a straggler costs beside it: hangs first.
  std::sort(out.culprits.begin(), out.culprits.end(), [](const CulpritRow& a, const CulpritRow& b) {
    const bool a_hang = a.culprit_class == "hang", b_hang = b.culprit_class == "hang";
    if (a_hang != b_hang) return a_hang;
    return a.blame_ns != b.blame_ns ? a.blame_ns > b.blame_ns : a.process_id < b.process_id;
  });
  return out;
}

}  // namespace culprit
