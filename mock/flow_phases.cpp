// The general engine's run, one phase at a time (docs/simulator.md, "Memory"): the topology
// builds a phase's operations and connections (flow_builder.cpp), the work list computes
// everything of it that can be computed (flow.cpp), its records are handed over, and only what
// the next phase needs is carried. Nothing a phase does depends on a later one (topology.hpp),
// so once its work list is empty its times are final: a hang leaves what it blocks unknown for
// good, as it would in a run built whole.
#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>

#include "mock/flow_builder.hpp"
#include "mock/topology.hpp"

namespace culprit::mock {

namespace {
inline bool known(double x) { return !std::isnan(x); }
}  // namespace

// The communicators, and the topology's connections: slow_link faults need them before
// anything runs. They are listed from a first build of the first iteration, phase by phase,
// each phase dropped once built (every connection is used in every iteration).
void Simulation::Impl::build_flow() {
  {
    Flow dry;
    dry.stream.assign(n, {});
    FlowJob job(*this, dry, make_topology(sc), true);
    job.topology().begin(job.builder());
    for (int ph = 0; ph < job.topology().phases(); ++ph) {
      job.topology().build_phase(job.builder(), 0, ph);
      job.builder().end_phase();
      dry.clear_phase();
    }
    flow.links = job.builder().take_links();
  }
  flow.stream.assign(n, {});
  flow.job.reset(new FlowJob(*this, flow, make_topology(sc), false));
  FlowBuilder& b = flow.job->builder();
  flow.job->topology().begin(b);
  truth.comm_hash = flow.comms[0].info.hash;
  for (const auto& fc : flow.comms) comm_list.push_back(fc.info);
  // The world ring, for ring_next/ring_prev.
  if (flow.comms[0].info.name == "world" && flow.comms[0].algorithm == "RING") {
    next.assign(C, std::vector<int>(n));
    prev.assign(C, std::vector<int>(n));
    for (int c = 0; c < C; ++c) {
      const std::vector<int> order = b.ring_order(0, c);
      for (int i = 0; i < n; ++i) {
        next[c][order[i]] = order[(i + 1) % n];
        prev[c][order[(i + 1) % n]] = order[i];
      }
    }
  }
  resolve_flow_slow_links();
  truth.spec = sc.to_spec();
}

// slow_link faults: the default peer is the sender's first network connection in build order;
// a named link must be a connection of the topology.
void Simulation::Impl::resolve_flow_slow_links() {
  size_t li = 0;
  for (TruthRoot& root : truth.roots) {
    if (root.culprit_class != "network_link") continue;
    auto& [s, d, mag] = slow_links.at(li++);
    if (d < 0) {
      for (const SimLink& l : flow.links)
        if (l.src == s && l.network) {
          d = l.dst;
          break;
        }
      if (d < 0)
        throw std::invalid_argument("mock key 'fault': slow_link rank " + std::to_string(s) +
                                    " sends to no other node; name the link as slow_link:S-D");
    } else {
      if (!net_hop(s, d))
        throw std::invalid_argument("mock key 'fault': slow_link " + std::to_string(s) + "-" + std::to_string(d) +
                                    " is not a network link (same node)");
      bool used = false;
      for (const SimLink& l : flow.links) used |= l.src == s && l.dst == d;
      if (!used)
        throw std::invalid_argument("mock key 'fault': slow_link " + std::to_string(s) + "-" + std::to_string(d) +
                                    " is not a connection of this topology");
    }
    root.peer = d;
  }
}

void Simulation::Impl::simulate_flow() {
  Flow& F = flow;
  F.stream_next.assign(n, 0);
  F.prev_done.assign(n, 1);
  F.kend_prev.resize(n);
  F.enq_prev.assign(n, -kInf);
  for (int r = 0; r < n; ++r) F.kend_prev[r] = p.start_skew * unit(mix(sc.seed, r, 0x736b6577ull));
  // No host enqueues before its process started (a host that runs ahead enqueues at once).
  for (int r = 0; r < n; ++r) F.enq_prev[r] = F.kend_prev[r] - 5e3;
  bool hang = false;
  for (int r = 0; r < n; ++r) hang |= hang_seq[r] != INT_MAX;
  FlowBuilder& b = F.job->builder();
  Topology& topology = F.job->topology();
  for (int it = 0; it < sc.seqs; ++it)
    for (int ph = 0; ph < topology.phases(); ++ph) {
      topology.build_phase(b, it, ph);
      F.op_progress_known.assign(F.ops.size(), 0);
      flow_run();
      flow_finish_phase();
      if (!F.complete && !hang)
        throw std::logic_error("mock: the simulated job deadlocked without a hang fault (simulator bug)");
      b.end_phase();
      F.clear_phase();
    }
  F.job.reset();
  // The traces of a hung job are dumped a while after the last activity anywhere.
  kill_ns = F.complete ? kInf : F.last.last + p.hang_dump_after;
}

// The phase's records, final now, in the public shape (each with its whole-run index: the
// stores put them back in that order): every operation, and the proxy ops that never ended
// (the others were handed over when they did). What the next phase needs is carried.
void Simulation::Impl::flow_finish_phase() {
  Flow& F = flow;
  for (int r = 0; r < n; ++r) {
    if (F.stream[r].empty()) continue;
    const FlowTask& last_task = F.tasks[F.stream[r].back()];
    F.prev_done[r] = last_task.done;
    if (last_task.done) F.kend_prev[r] = last_task.kend;
  }
  for (size_t ti = 0; ti < F.tasks.size(); ++ti) {
    OperationRecord rec = flow_operation(int(ti));
    F.complete = F.complete && F.tasks[ti].done;
    F.last.see(rec.col);
    record_operation(std::move(rec));
  }
  for (size_t oi = 0; oi < F.ops.size(); ++oi)
    if (!F.op_recorded[oi]) flow_record_op(int(oi));
}

void Flow::clear_phase() {
  for (auto& s : stream) s.clear();
  std::fill(stream_next.begin(), stream_next.end(), 0);
  tasks.clear();
  lanes.clear();
  conns.clear();
  ops.clear();
  op_recorded.clear();
  for (auto* v : {&op_task, &op_conn, &op_prev, &op_next, &op_log}) v->clear();
  op_index.clear();
  op_prev_end.clear();
}

// Proxy op oi in the public shape (+inf where never reached), with its steps.
void Simulation::Impl::flow_record_op(int oi) {
  Flow& F = flow;
  SimProxyOp op = F.ops[oi];
  if (!known(op.progress_ns)) op.progress_ns = kInf;
  if (!known(op.end_ns)) op.end_ns = kInf;
  StepLog steps =
      F.op_log[oi] >= 0 ? std::move(F.logs[F.op_log[oi]]) : StepLog(op.n_steps, keep.timeline || keep.every_step);
  if (F.op_log[oi] >= 0) F.free_logs.push_back(F.op_log[oi]);
  F.op_log[oi] = -1;
  F.op_recorded[oi] = 1;
  F.last.see(op, steps.summary());
  record_proxy_op(std::move(op), int(F.op_index[oi]), std::move(steps));
}

// Operation ti as collectives() shows it, with what the renderers need besides.
OperationRecord Simulation::Impl::flow_operation(int ti) const {
  const Flow& F = flow;
  const FlowTask& t = F.tasks[ti];
  SimCollective col;
  col.seq = t.seq;
  col.rank = t.rank;
  col.comm_hash = F.comms[t.comm].info.hash;
  col.comm_rank = F.comm_rank_of[t.comm][t.rank];
  col.name = t.kind == 0 ? "AllReduce" : (t.kind == 1 ? "Send" : "Recv");
  col.algorithm = t.kind == 0 ? F.comms[t.comm].algorithm : "P2P";
  col.peer = t.peer;
  col.iter = t.iter;
  col.channels = t.channels;
  col.enqueue_ns = t.active ? t.enq : kInf;
  col.kernel_start_ns = t.active ? t.kstart : kInf;
  col.channel_end_ns.assign(t.channels.size(), t.active ? -kInf : kInf);
  for (int l = t.lane_begin; l < t.lane_end && t.active; ++l) {
    const FlowLane& lane = F.lanes[l];
    double& ce = col.channel_end_ns[lane.ch];
    ce = lane.next == lane.n_prims ? std::max(ce, lane.gpu_free) : kInf;
  }
  for (size_t ci = 0; ci < t.channels.size() && t.active; ++ci)
    if (col.channel_end_ns[ci] == -kInf) col.channel_end_ns[ci] = t.ch_start[ci];
  const uint64_t key = uint64_t(t.index);
  double end = kInf;
  if (t.done) {
    end = -kInf;
    for (size_t ci = 0; ci < t.channels.size(); ++ci)
      end = std::max(end, col.channel_end_ns[ci] + p.poll * unit(mix(sc.seed, key, ci, 0x6b6368ull)));
    for (int oi : t.ops) end = known(F.ops[oi].end_ns) ? std::max(end, F.ops[oi].end_ns) : kInf;
    if (std::isfinite(end)) end += 500 + 1000 * unit(mix(sc.seed, key, 0x656e64ull));
  }
  col.end_ns = end;
  OperationRecord rec;
  rec.col = std::move(col);
  rec.index = int(t.index);
  rec.comm = t.comm;
  rec.started = t.active;
  rec.channel_start_ns = t.ch_start;
  for (int oi : t.ops) rec.ops.push_back(int(F.op_index[oi]));
  return rec;
}

}  // namespace culprit::mock
