// Rendering of the general engine's timeline as NCCL 2.27 example-profiler traces: one file
// per process and communicator, in the same layout and with the same plugin quirks as the ring
// engine's files (render_nccl.cpp), plus what several communicators and p2p add:
// - P2P events `Send` / `Recv` (cat P2P, args CommHash, Rank, Peer, Count, Datatype,
//   nChannels), each with its KernelCh per channel and one ProxyOp per channel inside;
// - tree collectives with up to three receive and three send ops per channel, printed in the
//   order NCCL saves them (receives from the children, send to the parent, receive from the
//   parent, sends to the children);
// - the plugin's event id counters are per thread, not per communicator: the files of one
//   process continue each other's ids, in the order the communicators are finalised (the
//   sub-communicators first, the first communicator last);
// - pool slots (stale values after a hang, transSize accumulation) are per communicator and
//   per kind (collective or p2p), as the plugin keeps them per context.
#include <cmath>
#include <cstring>
#include <tuple>

#include "mock/sim_internal.hpp"
#include "mock/trace_out.hpp"

namespace culprit::mock {

namespace {

using Slot = std::tuple<int, int, int>;  // channel, direction (-1: p2p), index

// The trace files of one process of the general engine, one per communicator.
class FlowTraceWriter {
 public:
  FlowTraceWriter(const Simulation::Impl& sim, const NodeTimeline& t, int r)
      : m_(sim), t_(t), r_(r), pid_(sim.procs[r].pid), origin_(sim.origin_ns[r]),
        gclk_(sim.node_clock[sim.procs[r].node]), kill_(sim.kill_ns) {
    for (const OperationRecord& rec : t.operations)
      if (rec.col.rank == r) mine_.push_back(&rec);
  }

  // In the order the communicators are finalised: the sub-communicators first.
  std::vector<RenderedFile> write() {
    std::vector<RenderedFile> files;
    for (int m = int(m_.comm_list.size()) - 1; m >= 0; --m) {
      const int crank = m_.flow.comm_rank_of[size_t(m)][size_t(r_)];
      if (crank >= 0) files.push_back(file(m, crank));
    }
    return files;
  }

 private:
  double us(double t_ns) const { return (t_ns + origin_) / 1000.0; }
  bool reached(double t) const { return t < kill_; }  // kill is +inf unless hang
  uint64_t clk(double t_ns) const { return gclk_ + uint64_t(std::llround(t_ns)); }
  double noise(int ti, uint64_t what) const { return unit(mix(m_.sc.seed, uint64_t(ti), what)); }
  double noise(int ti, size_t ci, uint64_t what) const { return unit(mix(m_.sc.seed, uint64_t(ti), ci, what)); }

  RenderedFile file(int m, int crank) {
    std::vector<const OperationRecord*> ops_of_comm;
    size_t n_ops_here = 0;
    for (const OperationRecord* rec : mine_)
      if (rec->comm == m) {
        ops_of_comm.push_back(rec);
        n_ops_here += rec->ops.size();
      }
    Out o(4096 + ops_of_comm.size() * 1500 + n_ops_here * (600 + 16 * 6 * 110));
    o.lit("[\n");
    std::vector<const OperationRecord*> pool[2];  // the file's operations per kind (collective, p2p), in order
    for (const OperationRecord* rec : ops_of_comm) {
      if (!rec->started) continue;  // the host never reached it
      std::vector<const OperationRecord*>& slots = pool[rec->col.name == "AllReduce" ? 0 : 1];
      slots.push_back(rec);
      operation(o, m, crank, slots);
    }
    o.lit("{}]\n");
    RenderedFile f;
    f.name = "nccl_prof_" + std::to_string(m_.comm_list[size_t(m)].hash) + "_" + std::to_string(crank) + ".json";
    f.content = o.take();
    return f;
  }

  // The last operation of `pool` (its kind's operations in this file so far): Group, the COLL
  // or P2P event, each channel's KernelCh with its proxy ops.
  void operation(Out& o, int m, int crank, const std::vector<const OperationRecord*>& pool) {
    const OperationRecord& rec = *pool.back();
    const SimCollective& col = rec.col;
    const bool coll = col.name == "AllReduce", groups = m_.sc.layout == "2.27";
    const bool done = reached(col.end_ns);
    const double grp_lead = 500 + 1500 * noise(rec.index, 0x6772706cull);
    const double submit = col.enqueue_ns + 3000 + 4000 * noise(rec.index, 0x7375626dull);
    const double coll_end = done ? col.end_ns : submit;
    if (groups) o.group_begin(group_id_, pid_, us(col.enqueue_ns - grp_lead));
    int64_t& id = coll ? coll_id_ : p2p_id_;
    o.head(col.name.c_str(), coll ? "COLL" : "P2P", true, id, pid_, us(col.enqueue_ns));
    if (coll) {
      o.lit(", \"args\": {\"SeqNum\": ");
      o.i64(col.seq);
      o.lit(", \"CommHash\": ");
    } else {
      o.lit(", \"args\": {\"CommHash\": ");
    }
    o.u64(m_.comm_list[size_t(m)].hash);
    o.lit(", \"Rank\": ");
    o.i64(crank);
    if (!coll) {
      o.lit(", \"Peer\": ");
      o.i64(col.peer);
    }
    o.lit(", \"Count\": ");
    o.u64(coll ? m_.sc.bytes / 4 : m_.sc.bytes / 2);
    if (coll) {
      o.lit(", \"Datatype\": \"ncclFloat32\", \"Algorithm\": \"");
      o.lit(m_.comm_list[size_t(m)].algorithm);
      o.lit("\", \"Protocol\": \"");
      o.lit(protocol_name(m_.sc.proto));
      o.lit("\", \"nChannels\": ");
    } else {
      o.lit(", \"Datatype\": \"ncclBfloat16\", \"nChannels\": ");
    }
    o.i64(int64_t(col.channels.size()));
    o.end_args_line();
    for (size_t ci = 0; ci < col.channels.size(); ++ci) channel(o, pool, ci);
    o.end_event(col.name.c_str(), coll ? "COLL" : "P2P", id, pid_, us(coll_end));
    ++id;
    if (groups) {
      o.end_event("Group", "GROUP", group_id_, pid_, us(done ? coll_end : submit + 200));
      ++group_id_;
    }
  }

  // Channel ci of the last operation of `pool`: KernelCh wrapping its proxy ops. What was
  // never reached keeps the stale values of the pool slot's previous operation.
  void channel(Out& o, const std::vector<const OperationRecord*>& pool, size_t ci) {
    const OperationRecord& rec = *pool.back();
    const size_t pos = pool.size() - 1;
    const OperationRecord* old = pos >= size_t(kCollPool) ? pool[pos - kCollPool] : nullptr;
    const int channel = rec.col.channels[ci];
    const double kstart = rec.channel_start_ns[ci];
    const bool kstarted = reached(kstart);
    const double old_cend = old && ci < old->col.channel_end_ns.size() ? old->col.channel_end_ns[ci] : -origin_;
    const double cend = rec.col.channel_end_ns[ci];
    if (kstarted) {
      uint64_t stop_clk = 0;
      if (reached(cend)) stop_clk = clk(cend);
      else if (old && std::isfinite(old_cend)) stop_clk = clk(old_cend);
      o.kernel_begin(pid_, us(kstart + m_.p.poll * noise(rec.index, ci, 0x6b62ull)), channel, clk(kstart), stop_clk);
    }
    for (int oi : rec.ops) {
      const ProxyOpRecord& op = *t_.proxy_op(oi);
      if (op.op.channel != channel || !reached(op.op.sched_ns)) continue;
      const Slot slot = slot_of(rec, oi);
      print_proxy_op(o, {&op, op_in(old, slot), op.op.channel, op.op.comm_peer, trans_size(pool, op, slot), pid_,
                         origin_, kill_},
                     op_id_, step_id_);
    }
    if (kstarted) {
      double ets = old && std::isfinite(old_cend) ? old_cend : -origin_;
      if (reached(cend)) ets = cend + m_.p.poll * noise(rec.index, ci, 0x6b65ull);
      o.kernel_end(pid_, us(ets));
    }
  }

  // Identity of an op inside its operation, for the plugin's pool slots: collectives keep
  // ops per (channel, direction, index), p2p one op per channel.
  Slot slot_of(const OperationRecord& rec, int oi) const {
    const SimProxyOp& op = t_.proxy_op(oi)->op;
    int idx = 0;
    if (!op.is_p2p)
      for (int q : rec.ops) {
        if (q == oi) break;
        const SimProxyOp& other = t_.proxy_op(q)->op;
        if (other.channel == op.channel && other.is_send == op.is_send) ++idx;
      }
    return Slot(op.channel, op.is_p2p ? -1 : int(op.is_send), idx);
  }
  const ProxyOpRecord* op_in(const OperationRecord* rec, const Slot& slot) const {
    if (!rec) return nullptr;
    for (int q : rec->ops)
      if (slot_of(*rec, q) == slot) return t_.proxy_op(q);
    return nullptr;
  }
  // transSize: accumulated over every use of this pool slot (never reset).
  uint64_t trans_size(const std::vector<const OperationRecord*>& pool, const ProxyOpRecord& op, const Slot& slot) const {
    uint64_t trans = 0;
    const size_t pos = pool.size() - 1;
    for (size_t q = pos + 1; q-- > 0;) {
      if ((pos - q) % size_t(kCollPool) != 0) continue;
      const ProxyOpRecord* occ = q == pos ? &op : op_in(pool[q], slot);
      if (occ) trans += uint64_t(occ->steps.transferred) * occ->op.chunk_bytes;
    }
    return trans;
  }

  const Simulation::Impl& m_;
  const NodeTimeline& t_;
  const int r_;
  const int64_t pid_;
  const double origin_;
  const uint64_t gclk_;
  const double kill_;
  std::vector<const OperationRecord*> mine_;  // the process's operations in stream order
  int64_t group_id_ = 0, coll_id_ = 0, p2p_id_ = 0, op_id_ = 0, step_id_ = 0;
};

}  // namespace

std::vector<RenderedFile> Simulation::Impl::render_rank_flow(const NodeTimeline& t, int r) const {
  return FlowTraceWriter(*this, t, r).write();
}

}  // namespace culprit::mock
