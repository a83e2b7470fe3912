// libFuzzer target: probing's nccl.proxy_ops / nccl.net_qp CSV reader.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "io/probing_csv_reader.hpp"

using namespace culprit;

namespace {
void check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  LocalData d;
  read_probing_csv_buffer(text, "fuzz.csv", "fuzzhost", d);
  check(d.inputs.size() == 1);
  const InputReport& in = d.inputs[0];
  uint64_t qp_rows = 0;
  for (const QpStat& q : d.qp_stats) {
    check(q.count > 0 && q.process < d.processes.size() && q.min_ns <= q.max_ns);
    check(q.quantile_ns(0.5) <= q.max_ns && q.quantile_ns(0.99) >= q.quantile_ns(0.5));
    qp_rows += q.count;
  }
  check(in.records == d.ops.size() + qp_rows);
  uint64_t reasons = 0;
  for (const auto& [why, n] : in.reject_reasons) {
    check(!why.empty() && why.size() < 96 && n > 0);
    reasons += n;
  }
  check(reasons == in.rejected);
  check(in.records > 0 || !in.error.empty());
  for (const ProxyOpRecord& r : d.ops) {
    check(r.rank >= 0 && r.peer >= 0 && r.channel >= 0 && r.steps > 0);
    check(r.process < d.processes.size());
  }
  return 0;
}
