// Prints one proxy op in the example plugin's layout (see trace_out.hpp).
#include <cmath>

#include "mock/sim_internal.hpp"
#include "mock/trace_out.hpp"

namespace culprit::mock {

void print_proxy_op(Out& o, const ProxyOpPrint& p, int64_t& op_id, int64_t& step_id) {
  const SimProxyOp& op = *p.op;
  const SimProxyOp* old = p.old;
  auto us = [&](double t_ns) { return (t_ns + p.origin) / 1000.0; };
  auto reached = [&](double t) { return t < p.kill; };
  const bool is_send = op.is_send;
  const char* sched_name = is_send ? "ScheduleSend" : "ScheduleRecv";
  const char* progr_name = is_send ? "ProgressSend" : "ProgressRecv";
  auto op_args = [&]() {
    o.lit(", \"args\": {\"Channel\": ");
    o.i64(p.channel);
    o.lit(", \"Peer\": ");
    o.i64(p.peer);
    o.lit(", \"Steps\": ");
    o.i64(op.n_steps);
    o.lit(", \"ChunkSize\": ");
    o.u64(op.chunk_bytes);
    o.lit(", \"transSize\": ");
    o.u64(p.trans);
    o.end_args_line();
  };
  const double progr = reached(op.progress_ns) ? op.progress_ns : op.sched_ns;
  o.head(sched_name, "PROXY", true, op_id, p.pid, us(op.sched_ns));
  op_args();
  o.head(sched_name, "PROXY", false, op_id, p.pid, us(progr));
  o.end_line();
  o.head(progr_name, "PROXY", true, op_id, p.pid, us(progr));
  op_args();

  // Steps started before the dump: a prefix (postings are in step order).
  int started = 0;
  while (started < op.n_steps && reached(op.steps[started].t0)) ++started;
  for (int slot = 0; slot < kStepSlots; ++slot) {
    SimStep st;
    bool have = false;
    if (slot < started) {
      const int k = slot + kStepSlots * ((started - 1 - slot) / kStepSlots);
      st = op.steps[k];
      // Fields never reached keep the slot's stale content.
      const SimStep* prevocc = nullptr;
      SimStep tmp;
      if (k >= kStepSlots) {
        prevocc = &op.steps[k - kStepSlots];
      } else if (old && slot < old->n_steps) {
        const int ok = slot + kStepSlots * ((old->n_steps - 1 - slot) / kStepSlots);
        prevocc = &old->steps[ok];
      }
      if (!prevocc) {
        tmp = SimStep{0, -p.origin, -p.origin, -p.origin, -p.origin};  // prints 0.000000
        prevocc = &tmp;
      }
      if (!reached(st.t1)) st.t1 = prevocc->t1;
      if (!reached(st.t2)) st.t2 = prevocc->t2;
      if (!reached(st.t3)) st.t3 = prevocc->t3;
      have = true;
    } else if (old && slot < old->n_steps) {
      // Never started in this op: the previous occupant's step is still there.
      const int ok = slot + kStepSlots * ((old->n_steps - 1 - slot) / kStepSlots);
      st = old->steps[ok];
      have = true;
    }
    if (!have) continue;
    const char* names[3] = {is_send ? "SendGpuWait" : "RecvWait", is_send ? "SendPeerWait" : "RecvFlushWait",
                            is_send ? "SendWait" : "RecvGpuWait"};
    const double ts[4] = {st.t0, st.t1, st.t2, st.t3};
    for (int ph = 0; ph < 3; ++ph) {
      o.head(names[ph], "NET", true, step_id, p.pid, us(ts[ph]));
      o.lit(", \"args\": {\"Step\": ");
      o.i64(st.step);
      o.end_args_line();
      o.head(names[ph], "NET", false, step_id, p.pid, us(ts[ph + 1]));
      o.end_line();
    }
    ++step_id;
  }
  double op_end = op.end_ns;
  if (!reached(op_end)) op_end = old && std::isfinite(old->end_ns) ? old->end_ns : -p.origin;
  o.head(progr_name, "PROXY", false, op_id, p.pid, us(op_end));
  o.end_line();
  ++op_id;
}

}  // namespace culprit::mock
