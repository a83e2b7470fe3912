// libFuzzer target: probing's JSON export reader (nccl.proxy_ops, net_qp, inflight_ops,
// coll_perf rows through the shared row model).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "io/probing_json_reader.hpp"

using namespace culprit;

namespace {
void check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  LocalData d;
  read_probing_json_buffer(text, "fuzz.json", "fuzzhost", d);
  check(d.inputs.size() == 1);
  const InputReport& in = d.inputs[0];
  check(in.format == "probing-json");
  uint64_t qp_rows = 0;
  for (const QpStat& q : d.qp_stats) {
    check(q.count > 0 && q.process < d.processes.size() && q.min_ns <= q.max_ns);
    qp_rows += q.count;
  }
  check(in.records == d.ops.size() + qp_rows + d.kernel_starts.size() + d.inflight.size());
  uint64_t reasons = 0;
  for (const auto& [why, n] : in.reject_reasons) {
    check(!why.empty() && why.size() < 96 && n > 0);
    reasons += n;
  }
  check(reasons == in.rejected);
  check(in.records > 0 || !in.error.empty());
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
  return 0;
}
