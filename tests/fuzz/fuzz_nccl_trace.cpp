// libFuzzer target: the NCCL example-profiler trace reader (every layout, every defect).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "io/nccl_trace_reader.hpp"

using namespace culprit;

namespace {
void check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  LocalData d;
  read_nccl_trace_buffer(text, "fuzz.json", "fuzzhost", d);
  check(d.inputs.size() == 1);
  const InputReport& in = d.inputs[0];
  check(in.records == d.ops.size());
  uint64_t reasons = 0;
  for (const auto& [why, n] : in.reject_reasons) {
    check(!why.empty() && why.size() < 96 && n > 0);  // the exchange carries 95 characters
    reasons += n;
  }
  check(reasons == in.rejected);
  for (const ProxyOpRecord& r : d.ops) {
    check(r.steps > 0);
    check(r.rank >= 0 && r.peer >= 0 && r.channel >= 0);
    check(r.process < d.processes.size());
    check(r.end_ns >= r.start_ns);
    uint64_t total = 0;
    // The phases of a step follow each other inside the op (1 us tolerance at each joint).
    for (uint64_t p : r.phase_ns) total += p / 1024;
    check(total <= (r.end_ns - r.start_ns) / 1024 * r.steps + r.steps * 16);
  }
  for (const CommRankSeen& c : d.comm_ranks) check(c.process < d.processes.size() && c.rank >= 0);
  for (const KernelStartRecord& k : d.kernel_starts) check(k.process < d.processes.size());
  for (const P2pCallCount& c : d.p2p_calls)
    check(c.process < d.processes.size() && c.rank >= 0 && c.peer >= 0 && c.calls > 0);
  // The wire of a send lies inside its SendWait; a receive's shortest consume step inside
  // its RecvGpuWait.
  for (const ProxyOpRecord& r : d.ops)
    check(r.is_send ? (r.send_wire_busy_ns <= r.phase_ns[kSendWait] && r.send_wait_min_ns <= r.phase_ns[kSendWait] &&
                       r.wire_steps < r.steps && !r.has_recv_gpu_wait_min)
                    : (r.send_wire_busy_ns == 0 && r.wire_steps == 0 && r.send_wait_min_ns == 0 &&
                       (!r.has_recv_gpu_wait_min || r.recv_gpu_wait_min_ns <= r.phase_ns[kRecvGpuWait])));

  // Deterministic: the same bytes give the same records.
  LocalData again;
  read_nccl_trace_buffer(text, "fuzz.json", "fuzzhost", again);
  check(again.ops.size() == d.ops.size() && again.inputs[0].rejected == in.rejected);
  return 0;
}
