#include "plugin/event_handlers.hpp"

#include <strings.h>

#include <atomic>
#include <cstdint>

#include "plugin/plugin_clock.hpp"
#include "plugin/plugin_state.hpp"
#include "plugin/step_phases.hpp"

namespace culprit::plugin {

using namespace culprit::shard;

namespace {

IgnoredHandle g_ignored;

inline void atomic_max(uint64_t* p, uint64_t v) {
  std::atomic_ref<uint64_t> a(*p);
  uint64_t cur = a.load(std::memory_order_relaxed);
  while (cur < v && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

inline void atomic_min_nonzero(uint64_t* p, uint64_t v) {
  std::atomic_ref<uint64_t> a(*p);
  uint64_t cur = a.load(std::memory_order_relaxed);
  while ((cur == 0 || v < cur) && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

// Published when the view changes: a state of the shown step, a step that stops, the first
// step to open. Only this op's thread writes its entry.
void refresh_inflight(OpState* op) {
  show_oldest_open_step(op);
  ShardWriter::publish(&g.shard.inflight[op->index], op->rec);
}

// ---- collectives and p2p calls ----------------------------------------------------------------

// NCCL names its tree algorithm "Tree" (NVLS_TREE and the CollNet chain are other algorithms):
// its GPUs of a node stop in their order along the node's chain, which the analysis reads.
bool names_tree(const char* algo) { return algo != nullptr && strcasecmp(algo, "tree") == 0; }

void* start_task(CommCtx* c, int rank, bool p2p, uint64_t seq, int peer, bool tree = false) {
  TaskState* t = g.pools.alloc_task();
  if (t == nullptr) {
    g.shard.count(&Header::dropped_tasks);
    return nullptr;
  }
  const uint64_t now = now_ns();
  if (rank < 0) rank = c->rank;
  void* ticket = g.pools.issue_task(t, c->comm_hash, c->slot, rank, seq, p2p, now);
  CollEntry e{};
  e.comm_hash = c->comm_hash;
  e.seq = seq;
  e.start_ns = now;
  e.rank = rank;
  e.flags = (p2p ? (kCollValid | kCollP2p) : kCollValid) | (tree ? uint32_t{kCollTree} : 0u);
  e.peer = peer;
  e.comm_slot = c->slot;
  ShardWriter::publish(&g.shard.colls[t->index], e);
  if (!p2p) {
    CommEntry& ce = g.shard.comms[c->slot];
    atomic_max(&ce.newest_seq_plus1, seq + 1);
    std::atomic_ref<uint64_t>(ce.collectives).fetch_add(1, std::memory_order_relaxed);
  }
  g.shard.count(&Header::colls_started);
  g.shard.heartbeat(now);
  return ticket;
}

// p2p has no sequence number: the k-th Send to (Recv from) a peer pairs with the peer's k-th
// Recv from (Send to) us.
uint64_t next_p2p_ordinal(CommCtx* c, int peer, bool send) {
  if (c->p2p_counters == nullptr) return 0;
  uint64_t key = static_cast<uint64_t>(static_cast<uint32_t>(peer)) * 2 + (send ? 0 : 1);
  return c->p2p_counters[key % c->p2p_counters_n].fetch_add(1, std::memory_order_relaxed);
}

// A task stopped, or an op holding it ended at `end_ns` (0: no end to note).
void release_task(uint32_t index, uint32_t gen, uint64_t end_ns) {
  if (index >= g.pools.coll_cap) return;
  if (end_ns && g.pools.task_current(index, gen)) atomic_max(&g.shard.colls[index].last_op_end_ns, end_ns);
  g.pools.tasks[index].refs.fetch_sub(1, std::memory_order_release);
}

// ---- ProxyOps ---------------------------------------------------------------------------------

void reset_op(OpState* op, CommCtx* c, int rank, const ncp_proxy_op& d, uint64_t now) {
  OpRecord& r = op->rec;
  r = OpRecord{};
  r.op_id = g.pools.next_op_id.fetch_add(1, std::memory_order_relaxed);
  r.index = r.op_id;
  r.flags = kOpInFlight | (d.is_send ? kOpSend : 0);
  r.rank = rank >= 0 ? rank : c->rank;
  r.peer = d.peer;
  r.channel = d.channel_id;
  r.n_steps = d.n_steps > 0 ? static_cast<uint32_t>(d.n_steps) : 0;
  r.chunk_bytes = d.chunk_size > 0 ? static_cast<uint32_t>(d.chunk_size) : 0;
  r.start_ns = now;
  r.phase_since_ns = now;
  r.cur_phase = -1;
  r.comm_hash = c->comm_hash;
  r.comm_slot = c->slot;
  op->task = UINT32_MAX;
  op->view_slot = -1;
  op->open = 0;
  op->wire_covered_ns = 0;
  for (StepState& s : op->steps) s.active = 0;
}

// Ties an op to its collective: PXN ops (run for another process) have no usable parent.
void link_op_to_task(OpState* op, void* parent, const ncp_proxy_op& d) {
  OpRecord& r = op->rec;
  if (d.pid != g.pid) {
    // PXN: run for another process; its parent pointer belongs to that process.
    r.flags |= kOpPxn;
    g.shard.count(&Header::pxn_ops);
  } else if (TaskView v; g.pools.task_view(parent, &v)) {
    // NCCL stops the collective's event right after handing its ops to the proxy, so the
    // task may be released already; the op's reference keeps its slot from being reused
    // while the op runs, and a ticket that went stale in between is never read.
    g.pools.tasks[v.index].refs.fetch_add(1, std::memory_order_acq_rel);
    op->task = v.index;
    op->task_gen = v.gen;
    r.comm_hash = v.comm_hash;
    r.comm_slot = v.comm_slot;
    r.seq = v.seq;
    r.flags |= kOpSeqKnown | (v.p2p ? kOpP2p : 0);
  } else {
    g.shard.count(&Header::orphan_ops);
  }
}

void* start_proxy_op(CommCtx* c, void* parent, int rank, const ncp_proxy_op& d) {
  OpState* op = g.pools.alloc_op();
  if (op == nullptr) {
    g.shard.count(&Header::dropped_ops);
    return nullptr;
  }
  reset_op(op, c, rank, d, now_ns());
  link_op_to_task(op, parent, d);
  g.shard.count(&Header::ops_started);
  ShardWriter::publish(&g.shard.inflight[op->index], op->rec);
  return op;
}

// Steps still open when their op stops (NCCL stops every step first) are not measured.
void drop_open_steps(OpState* op) {
  for (StepState& s : op->steps) {
    if (s.active) {
      s.active = 0;
      --op->open;
      g.shard.count(&Header::dropped_steps);
    }
  }
}

void stop_proxy_op(OpState* op) {
  const uint64_t now = now_ns();
  drop_open_steps(op);
  OpRecord& r = op->rec;
  r.end_ns = now;
  r.flags &= static_cast<uint16_t>(~kOpInFlight);
  r.cur_phase = -1;
  r.open_steps = 0;
  g.shard.append_completed(r);
  OpRecord cleared{};
  cleared.index = r.op_id;  // same op_id, not in flight: the reader knows it moved on
  cleared.op_id = r.op_id;
  ShardWriter::publish(&g.shard.inflight[op->index], cleared);
  release_task(op->task, op->task_gen, now);
  op->task = UINT32_MAX;
  g.shard.heartbeat(now);
  op->busy.store(0, std::memory_order_release);
}

// ---- ProxySteps and KernelCh events ------------------------------------------------------------

// When the kernel that consumes a receive op's steps started on its channel, as the proxy saw
// it (0: a send, not seen yet, or no task to ask).
uint64_t kernel_start_of(const OpState& op) {
  const int channel = op.rec.channel;
  if ((op.rec.flags & kOpSend) || channel < 0 || channel >= kKernelChannels) return 0;
  if (op.task == UINT32_MAX || !g.pools.task_current(op.task, op.task_gen)) return 0;
  const TaskState& t = g.pools.tasks[op.task];
  const uint64_t start = t.kernel_start_ns[channel].load(std::memory_order_relaxed);
  return start >= std::atomic_ref<const uint64_t>(t.issued_ns).load(std::memory_order_relaxed) ? start : 0;
}

void* start_step(void* parent, int step) {
  OpState* op = g.pools.op_of(parent);
  if (op == nullptr || op->busy.load(std::memory_order_relaxed) == 0) return nullptr;
  const uint64_t now = now_ns();
  StepState* s = &op->steps[static_cast<unsigned>(step) % kStepSlots];
  if (s->active) {  // its slot is still open: NCCL reused it; the old step cannot finish now
    s->active = 0;
    --op->open;
    g.shard.count(&Header::dropped_steps);
  }
  s->step = step;
  s->mask = 0;
  s->trans = 0;
  s->start_ns = now;
  s->active = 1;
  if (op->open++ == 0 || op->view_slot == s->slot) refresh_inflight(op);
  return s;
}

void record_step_state(StepState* s, ncp_state_t state, const ncp_state_args_v4* args) {
  int p = phase_of_state(state);
  if (p < 0 || !s->active) return;
  OpState* op = &g.pools.ops[s->op_index];
  const uint8_t bit = static_cast<uint8_t>(1u << p);
  if (args != nullptr && args->proxy_step.trans_size > s->trans) s->trans = args->proxy_step.trans_size;
  if (s->mask & bit) return;  // a retried state: the first entry counts
  s->ts[p] = now_ns();
  s->mask |= bit;
  if (op->view_slot == s->slot) refresh_inflight(op);
}

void* kernel_start(void* parent, int channel, uint64_t p_timer) {
  TaskView v;
  if (!g.pools.task_view(parent, &v)) return &g_ignored;
  if (p_timer != 0) atomic_min_nonzero(&g.shard.colls[v.index].kernel_start_clk, p_timer);
  if (channel >= 0 && channel < kKernelChannels) {
    // The first start seen counts; one before the task's issue is an earlier occupant's.
    TaskState& t = g.pools.tasks[v.index];
    const uint64_t issued = std::atomic_ref<uint64_t>(t.issued_ns).load(std::memory_order_relaxed);
    uint64_t seen = t.kernel_start_ns[channel].load(std::memory_order_relaxed);
    const uint64_t now = now_ns();
    while (seen < issued && !t.kernel_start_ns[channel].compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
    }
  }
  KernelHandle* k = g.pools.alloc_kernel(v);
  return k != nullptr ? static_cast<void*>(k) : &g_ignored;  // without one its stop clock is lost
}

template <class D>
void start_any_event(void* context, void** handle, D* d) {
  *handle = nullptr;
  if (d == nullptr || !recording()) return;
  CommCtx* c = g.pools.ctx_of(context);
  if (c == nullptr) return;
  switch (static_cast<uint64_t>(d->type)) {
    case NCP_EV_COLL:
      *handle = start_task(c, d->rank, false, d->u.coll.seq_number, -1, names_tree(d->u.coll.algo));
      break;
    case NCP_EV_P2P: {
      const bool send = d->u.p2p.func != nullptr && d->u.p2p.func[0] == 'S';
      *handle = start_task(c, d->rank, true, next_p2p_ordinal(c, d->u.p2p.peer, send), d->u.p2p.peer);
      break;
    }
    case NCP_EV_PROXY_OP:
      *handle = start_proxy_op(c, d->parent_obj, d->rank, d->u.proxy_op);
      break;
    case NCP_EV_PROXY_STEP:
      *handle = start_step(d->parent_obj, d->u.proxy_step.step);
      break;
    case NCP_EV_KERNEL_CH:
      *handle = kernel_start(d->parent_obj, d->u.kernel_ch.channel_id, d->u.kernel_ch.p_timer);
      break;
    default:
      break;  // Group, API, ProxyCtrl, NetPlugin, CE events: not recorded
  }
}

}  // namespace

void start_event(void* context, void** handle, ncp_descr_v4* d) { start_any_event(context, handle, d); }
void start_event(void* context, void** handle, ncp_descr_v5* d) { start_any_event(context, handle, d); }
void start_event(void* context, void** handle, ncp_descr_v6* d) { start_any_event(context, handle, d); }

void stop_event(void* handle) {
  if (handle == nullptr || !recording()) return;
  if (StepState* s = g.pools.step_of(handle)) {
    OpState* op = &g.pools.ops[s->op_index];
    if (!s->active || op->busy.load(std::memory_order_relaxed) == 0) return;
    finish_step(op, s, now_ns(), kernel_start_of(*op));
    refresh_inflight(op);
  } else if (OpState* op = g.pools.op_of(handle)) {
    if (op->busy.load(std::memory_order_relaxed) == 0) return;
    stop_proxy_op(op);
  } else if (TaskView v; g.pools.task_view(handle, &v)) {
    TaskState& t = g.pools.tasks[v.index];
    if (t.refs.load(std::memory_order_relaxed) > 0) t.refs.fetch_sub(1, std::memory_order_release);
  } else if (KernelHandle* k = g.pools.kernel_of(handle)) {
    k->busy.store(0, std::memory_order_release);
  }
}

void record_event_state(void* handle, ncp_state_t state, const ncp_state_args_v4* args) {
  if (handle == nullptr || !recording()) return;
  if (StepState* s = g.pools.step_of(handle)) {
    record_step_state(s, state, args);
  } else if (OpState* op = g.pools.op_of(handle)) {
    if (state == NCP_STATE_PROXY_OP_IN_PROGRESS && op->rec.progress_ns == 0) {
      op->rec.progress_ns = now_ns();
      ShardWriter::publish(&g.shard.inflight[op->index], op->rec);
    }
  } else if (KernelHandle* k = g.pools.kernel_of(handle)) {
    if (state == NCP_STATE_KERNEL_CH_STOP && args != nullptr && args->kernel_ch.p_timer != 0 &&
        k->busy.load(std::memory_order_relaxed) != 0 && g.pools.task_current(k->task, k->task_gen))
      atomic_max(&g.shard.colls[k->task].kernel_stop_clk, args->kernel_ch.p_timer);
  }
}

}  // namespace culprit::plugin
