// What every probing export must read as, whatever the bytes (shared by the CSV and the
// JSON fuzz targets: both readers fill LocalData through the same row model, probing_rows).
// Aborts on the first broken invariant so that libFuzzer keeps the input.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>

#include "io/local_data.hpp"

namespace culprit::fuzz {

inline void check(bool ok) {
  if (!ok) std::abort();
}

inline void check_probing_export(const LocalData& d, const std::string& format) {
  check(d.inputs.size() == 1);
  const InputReport& in = d.inputs[0];
  check(in.format == format);
  uint64_t qp_rows = 0;
  for (const QpStat& q : d.qp_stats) {
    check(q.count > 0 && q.process < d.processes.size() && q.min_ns <= q.max_ns);
    check(q.quantile_ns(0.5) <= q.max_ns && q.quantile_ns(0.99) >= q.quantile_ns(0.5));
    qp_rows += q.count;
  }
  // Every kept row is in one table, but a profiler_counters row, which names no process and is
  // kept as its rank's counts only.
  if (in.layout == "profiler_counters")
    check(d.processes.empty() && d.ops.empty() && qp_rows == 0 && d.kernel_starts.empty() && d.inflight.empty());
  else
    check(in.records == d.ops.size() + qp_rows + d.kernel_starts.size() + d.inflight.size());
  uint64_t reasons = 0;
  for (const auto& [why, n] : in.reject_reasons) {
    check(!why.empty() && why.size() < 96 && n > 0);
    reasons += n;
  }
  check(reasons == in.rejected);
  // An inflight_ops export with a header and no row is a snapshot of nothing, not an error.
  check(in.records > 0 || !in.error.empty() || in.layout == "inflight_ops");
  for (const auto& [host, rank] : d.ranks_losing_events) check(rank >= 0 && in.layout == "profiler_counters");
  check(in.error.find('\n') == std::string::npos);
  for (const std::string& note : in.notes) check(!note.empty() && note.size() < 180 && note.find('\n') == std::string::npos);
  for (const ProxyOpRecord& r : d.ops) {
    check(r.rank >= 0 && r.peer >= 0 && r.channel >= 0 && r.steps > 0);
    check(r.process < d.processes.size());
    check(!r.seq_unknown || (r.seq == 0 && !r.is_p2p));
  }
  for (const KernelStartRecord& k : d.kernel_starts)
    check(k.rank >= 0 && k.process < d.processes.size() && k.start_gpu_clk_ns < k.stop_gpu_clk_ns && k.is_p2p <= 1);
  for (const InflightRecord& f : d.inflight)
    check(f.rank >= 0 && f.process < d.processes.size() && f.channel >= -1 && f.peer >= -1 && f.is_send >= -1);
  for (const CommRankSeen& c : d.comm_ranks) check(c.process < d.processes.size() && c.rank >= 0);
}

}  // namespace culprit::fuzz
