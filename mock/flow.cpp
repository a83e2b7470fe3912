// The general engine of the simulator (docs/simulator.md, "The general engine"): double
// binary tree AllReduce, pipeline-parallel send/recv, several communicators per process, and
// the ring again (for world+dp, or engine=flow).
//
// Every process runs a stream of operations in order. An operation starts (its kernel starts)
// when the previous one on the same GPU finished plus the compute in between; its host
// enqueues it a little earlier and its proxy schedules the network ops. Inside an operation
// each channel runs one or more lanes (NCCL's thread groups): ordered primitives that receive
// steps from connections (once the data arrived and was flushed) and send steps to connections
// (once the slot is free). The physics of a connection are the ring engine's: 8 slots
// (NCCL_STEPS), receive buffers posted as the receiving GPU frees them, an isend accepted when
// the data is ready and the clear-to-send arrived, a serial wire, a serial flush, NVLink hops
// without a proxy. Values are computed as soon as their inputs are known (a work list); the
// noise is a hash of what it applies to, so the timeline does not depend on evaluation order.
// The job itself (which operations, connections, lanes) is built by a topology through
// FlowBuilder (flow_builder.cpp, topology.hpp) one phase (part of an iteration) at a time; this
// file runs the work list of one phase until nothing more can be computed (flow_phases.cpp runs
// the phases, hands their records over and carries what the next one needs).
#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>

#include "mock/sim_internal.hpp"

namespace culprit::mock {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline bool known(double x) { return !std::isnan(x); }

constexpr uint64_t kItemRank = 0, kItemLane = 1, kItemConn = 2;

}  // namespace

// ---- the work list ---------------------------------------------------------------------------

void Simulation::Impl::flow_push_lane(int l) {
  FlowLane& lane = flow.lanes[l];
  if (lane.queued) return;
  lane.queued = true;
  flow.queue.push_back((uint64_t(l) << 2) | kItemLane);
}

void Simulation::Impl::flow_push_conn(int c) {
  FlowConn& conn = flow.conns[c];
  if (conn.queued) return;
  conn.queued = true;
  flow.queue.push_back((uint64_t(c) << 2) | kItemConn);
}

void Simulation::Impl::flow_push_rank(int r) { flow.queue.push_back((uint64_t(r) << 2) | kItemRank); }

// The next operation of a rank starts once the previous one finished (plus the compute in
// between); a rank never starts the iteration it hangs at.
void Simulation::Impl::flow_activate(int r) {
  Flow& F = flow;
  int& nx = F.stream_next[r];
  if (nx >= int(F.stream[r].size())) return;
  double base = F.kend_prev[r];
  if (nx > 0) {
    const FlowTask& prev_task = F.tasks[F.stream[r][nx - 1]];
    if (!prev_task.done) return;
    base = prev_task.kend;
  } else if (!F.prev_done[r]) {
    return;  // its last operation of an earlier phase never finished
  }
  FlowTask& T = F.tasks[F.stream[r][nx]];
  if (T.iter >= hang_seq[r]) return;
  ++nx;
  T.active = true;
  const uint64_t ti = uint64_t(T.index);
  T.kstart = base + T.compute * hash_factor(mix(sc.seed, ti, 0x676170ull), sc.jitter) * gpu_factor[r];
  const double lead = p.host_lead_min + (p.host_lead_max - p.host_lead_min) * unit(mix(sc.seed, ti, 0x6c656164ull));
  const double sdel = p.sched_min + (p.sched_max - p.sched_min) * unit(mix(sc.seed, ti, 0x73646c79ull));
  T.enq = std::max(F.enq_prev[r] + 5e3, T.kstart - lead);
  F.enq_prev[r] = T.enq;
  T.sched = T.enq + sdel;
  T.ch_start.resize(T.channels.size());
  for (size_t ci = 0; ci < T.channels.size(); ++ci)
    T.ch_start[ci] = T.kstart + 300.0 * double(ci) + 500.0 * unit(mix(sc.seed, ti, ci, 0x736b63ull));
  T.lanes_left = T.lane_end - T.lane_begin;
  for (int l = T.lane_begin; l < T.lane_end; ++l) {
    FlowLane& lane = F.lanes[l];
    lane.gpu_free = T.ch_start[lane.ch];
    if (lane.n_prims == 0) --T.lanes_left;
    else flow_push_lane(l);
  }
  for (int oi : T.ops) {
    F.ops[oi].sched_ns = T.sched;
    flow_push_conn(F.op_conn[oi]);
  }
  if (T.lanes_left == 0) {
    T.done = true;
    T.kend = T.kstart;
    flow_push_rank(r);
  }
}

double Simulation::Impl::flow_op_progress(int oi) {
  Flow& F = flow;
  SimProxyOp& op = F.ops[oi];
  if (F.op_progress_known[oi]) return op.progress_ns;
  if (!F.tasks[F.op_task[oi]].active) return kNaN;
  // The proxy progresses the op once it has it and the previous op on the same connection
  // finished (this phase's, or the end an earlier phase left).
  double pr = op.sched_ns + 1000 + 1000 * unit(mix(sc.seed, uint64_t(F.op_index[oi]), 0x70726f67ull));
  const int prev_op = F.op_prev[oi];
  const double prev_end = prev_op >= 0 ? F.ops[prev_op].end_ns : F.op_prev_end[oi];
  if (prev_op >= 0 || prev_end != -kInf) {
    if (!known(prev_end)) return kNaN;
    pr = std::max(pr, prev_end + 500);
  }
  op.progress_ns = pr;
  F.op_progress_known[oi] = 1;
  return pr;
}

StepLog& Simulation::Impl::flow_op_log(int oi) {
  Flow& F = flow;
  int& slot = F.op_log[oi];
  if (slot < 0) {
    const StepLog fresh(F.ops[oi].n_steps, keep.timeline || keep.every_step);
    if (F.free_logs.empty()) {
      slot = int(F.logs.size());
      F.logs.push_back(fresh);
    } else {
      slot = F.free_logs.back();
      F.free_logs.pop_back();
      F.logs[slot] = fresh;
    }
  }
  return F.logs[slot];
}

// An op that ended is final (its last step was sent, or received and released): it is handed
// over now, which frees its log.
void Simulation::Impl::flow_op_ended(int oi, double t) {
  flow.ops[oi].end_ns = t;
  flow_record_op(oi);
  const int nx = flow.op_next[oi];
  if (nx >= 0) flow_push_conn(flow.op_conn[nx]);
}

void Simulation::Impl::flow_run_lane(int l) {
  Flow& F = flow;
  FlowLane& L = F.lanes[l];
  L.queued = false;
  FlowTask& T = F.tasks[L.task];
  if (!T.active || L.next >= L.n_prims) return;
  const int r = T.rank;
  const double compute_base = double(T.chunk) / p.compute_bw + p.compute_fixed;
  FlowIO io[2 * kLaneConns];
  while (L.next < L.n_prims) {
    int n_in = 0, n_out = 0;
    L.prog.prim(L.next, io, n_in, n_out);
    double t = L.gpu_free;
    for (int i = 0; i < n_in; ++i) {
      const StepWindow& f = F.conns[io[i].conn].F;
      if (!f.has(io[i].step)) return;
      t = std::max(t, f[io[i].step]);
    }
    for (int i = n_in; i < n_in + n_out; ++i) {
      const FlowConn& c = F.conns[io[i].conn];
      const int k = io[i].step;
      if (k < kNcclSteps) continue;
      // Network: the GPU may write slot k once send k-8 is done (non-shared buffers).
      // NVLink: the GPU writes straight into the receiver's slot once it was freed.
      const StepWindow& gate = c.net ? c.sd : c.freed;
      if (!gate.has(k - kNcclSteps)) return;
      t = std::max(t, gate[k - kNcclSteps] + (c.net ? 0.0 : p.nvl_lat));
    }
    const uint64_t lane_key = uint64_t(L.index), pid = L.prim_base + L.next;
    const double end = t + compute_base * hash_factor(mix(sc.seed, lane_key, pid, 0x636d70ull), sc.jitter) * gpu_factor[r];
    L.gpu_free = end;
    for (int i = 0; i < n_in; ++i) {
      const int ci = io[i].conn, k = io[i].step;
      FlowConn& c = F.conns[ci];
      double fr = end;
      if (consumer_mag[r] > 0) {
        const double delay = consumer_mag[r] * double(c.wire_chunk) / p.net_bw;
        fr = std::max(fr, L.freed_prev) +
             delay * hash_factor(mix(sc.seed, lane_key, pid * 8 + uint64_t(i), 0x636f6eull), sc.jitter);
      }
      L.freed_prev = std::max(L.freed_prev, fr);
      c.freed.push(k, fr);
      if (c.recv_op >= 0) {
        flow_op_log(c.recv_op).freed(k, fr);
        if (k == c.n_steps - 1) flow_op_ended(c.recv_op, fr);
      }
      if (c.net) flow_push_conn(ci);
      else if (c.src_lane >= 0) flow_push_lane(c.src_lane);
    }
    for (int i = n_in; i < n_in + n_out; ++i) {
      const int ci = io[i].conn, k = io[i].step;
      FlowConn& c = F.conns[ci];
      if (c.net) {
        c.prod.push(k, end);
        flow_push_conn(ci);
      } else {
        const double jit = hash_factor(mix(sc.seed, uint64_t(c.index), uint64_t(k), 0x786672ull), sc.jitter);
        const double xfer = double(c.wire_chunk) / p.nvl_bw * jit;
        const double ws = std::max(end, c.wire_free);
        const double arr = ws + p.nvl_lat + xfer;
        c.wire_free = ws + xfer;
        c.sd.push(k, arr);
        c.F.push(k, arr);
        if (c.dst_lane >= 0) flow_push_lane(c.dst_lane);
      }
    }
    ++L.next;
    if (L.next == L.n_prims && --T.lanes_left == 0) {
      double ke = T.kstart;
      for (int q = T.lane_begin; q < T.lane_end; ++q) ke = std::max(ke, F.lanes[q].gpu_free);
      T.kend = ke;
      T.done = true;
      flow_push_rank(r);
    }
  }
}

// Puts the steps of a network connection on the wire, in order, as far as everything they
// depend on is known (data produced, send slot posted, receive buffer posted).
void Simulation::Impl::flow_transmit(int ci) {
  Flow& F = flow;
  FlowConn& c = F.conns[ci];
  c.queued = false;
  if (!c.net) return;
  const double bw = p.net_bw / link_factor(c.src, c.dst);
  while (c.next_tx < c.n_steps) {
    const int k = c.next_tx;
    if (!c.prod.has(k)) return;
    const double ps = flow_op_progress(c.send_op);
    if (!known(ps)) return;
    const double pr = flow_op_progress(c.recv_op);
    if (!known(pr)) return;
    double P = pr;
    if (k >= kNcclSteps) {
      if (!c.freed.has(k - kNcclSteps)) return;
      P = std::max(P, c.freed[k - kNcclSteps]);
    }
    double G = ps;
    if (k >= kNcclSteps) G = std::max(G, c.sd[k - kNcclSteps]);
    const double D = std::max(c.prod[k], G);
    const double A = std::max({D, P + p.ctrl_lat, c.A_prev});
    c.A_prev = A;
    const uint64_t key = uint64_t(c.index);
    const double xfer = double(c.wire_chunk) / bw * hash_factor(mix(sc.seed, key, uint64_t(k), 0x786672ull), sc.jitter);
    const double ws = std::max(A, c.wire_free);
    const double arr = ws + p.net_lat + xfer;
    c.wire_free = ws + xfer;
    const double sd = arr + p.ack_lat;
    const double flush = c.flushed ? p.flush : 0.0;
    const double Fk = std::max(arr, c.flush_prev) +
                      flush * hash_factor(mix(sc.seed, key, uint64_t(k), 0x666c73ull), sc.jitter) * flush_factor[c.dst];
    c.flush_prev = Fk;
    c.sd.push(k, sd);
    c.F.push(k, Fk);
    flow_op_log(c.send_op).sent(k, SimStep{k, G, D, A, sd});
    flow_op_log(c.recv_op).received(k, P, arr, Fk);
    ++c.next_tx;
    if (k == c.n_steps - 1) flow_op_ended(c.send_op, sd);
    if (c.src_lane >= 0) flow_push_lane(c.src_lane);
    if (c.dst_lane >= 0) flow_push_lane(c.dst_lane);
  }
}

// The work list of the phase: every rank first, then whatever became computable.
void Simulation::Impl::flow_run() {
  Flow& F = flow;
  for (int r = n - 1; r >= 0; --r) flow_push_rank(r);
  while (!F.queue.empty()) {
    const uint64_t item = F.queue.back();
    F.queue.pop_back();
    const int idx = int(item >> 2);
    switch (item & 3) {
      case kItemRank: flow_activate(idx); break;
      case kItemLane: flow_run_lane(idx); break;
      default: flow_transmit(idx); break;
    }
  }
}

void StepWindow::out_of_window(int k) const {
  throw std::logic_error("mock: step " + std::to_string(k) +
                         " of a connection read out of order or out of its window (simulator bug)");
}

}  // namespace culprit::mock
