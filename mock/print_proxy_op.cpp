// Prints one proxy op in the example plugin's layout (see trace_out.hpp).
#include <cmath>

#include "mock/sim_internal.hpp"
#include "mock/trace_out.hpp"

namespace culprit::mock {

namespace {

// The last step of `slot` in the first `count` steps (the one the plugin's slot still holds).
int newest_in_slot(int slot, int count) { return slot + kStepSlots * ((count - 1 - slot) / kStepSlots); }

// What step slot `slot` of the op shows at the dump: its newest started step, fields never
// reached keeping the slot's stale content (the op's own earlier step, or the previous
// occupant's, or zeros); or, where the op never started a step there, the previous
// occupant's step. False: the slot was never written.
bool slot_content(const ProxyOpPrint& p, int slot, SimStep& st) {
  const StepSummary& steps = p.op->steps;
  const StepSummary* old = p.old ? &p.old->steps : nullptr;
  auto reached = [&](double t) { return t < p.kill; };
  const int started = steps.started;  // postings are in step order: a prefix
  if (slot < started) {
    const int k = newest_in_slot(slot, started);
    st = steps.step(k);
    SimStep stale{0, -p.origin, -p.origin, -p.origin, -p.origin};  // prints 0.000000
    if (k >= kStepSlots) stale = steps.step(k - kStepSlots);
    else if (old && slot < old->n_steps) stale = old->step(newest_in_slot(slot, old->n_steps));
    if (!reached(st.t1)) st.t1 = stale.t1;
    if (!reached(st.t2)) st.t2 = stale.t2;
    if (!reached(st.t3)) st.t3 = stale.t3;
    return true;
  }
  if (old && slot < old->n_steps) {
    st = old->step(newest_in_slot(slot, old->n_steps));
    return true;
  }
  return false;
}

}  // namespace

void print_proxy_op(Out& o, const ProxyOpPrint& p, int64_t& op_id, int64_t& step_id) {
  const SimProxyOp& op = p.op->op;
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
  o.end_event(sched_name, "PROXY", op_id, p.pid, us(progr));
  o.head(progr_name, "PROXY", true, op_id, p.pid, us(progr));
  op_args();

  const char* names[3] = {is_send ? "SendGpuWait" : "RecvWait", is_send ? "SendPeerWait" : "RecvFlushWait",
                          is_send ? "SendWait" : "RecvGpuWait"};
  for (int slot = 0; slot < kStepSlots; ++slot) {
    SimStep st;
    if (!slot_content(p, slot, st)) continue;
    const double ts[4] = {st.t0, st.t1, st.t2, st.t3};
    for (int ph = 0; ph < 3; ++ph) {
      o.head(names[ph], "NET", true, step_id, p.pid, us(ts[ph]));
      o.lit(", \"args\": {\"Step\": ");
      o.i64(st.step);
      o.end_args_line();
      o.end_event(names[ph], "NET", step_id, p.pid, us(ts[ph + 1]));
    }
    ++step_id;
  }
  double op_end = op.end_ns;
  if (!reached(op_end)) op_end = p.old && std::isfinite(p.old->op.end_ns) ? p.old->op.end_ns : -p.origin;
  o.end_event(progr_name, "PROXY", op_id, p.pid, us(op_end));
  ++op_id;
}

}  // namespace culprit::mock
