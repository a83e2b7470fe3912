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
#include <cstring>

#include "mock/sim_internal.hpp"
#include "mock/trace_out.hpp"

namespace culprit::mock {

std::vector<RenderedFile> Simulation::Impl::render_rank_flow(int r) const {
  const Flow& F = flow;
  const SimProcess& pr = procs[r];
  const int64_t pid = pr.pid;
  const double origin = origin_ns[r];
  const uint64_t gclk = node_clock[pr.node];
  const double kill = kill_ns;
  auto us = [&](double t_ns) { return (t_ns + origin) / 1000.0; };
  auto reached = [&](double t) { return t < kill; };  // kill is +inf unless hang
  auto clk = [&](double t_ns) { return gclk + uint64_t(std::llround(t_ns)); };
  const bool groups = sc.layout == "2.27";

  // Identity of an op inside its operation, for the plugin's pool slots: collectives keep
  // ops per (channel, direction, index), p2p one op per channel.
  auto slot_of = [&](int oi) {
    const SimProxyOp& op = ops[oi];
    const FlowTask& t = F.tasks[op.task];
    int idx = 0;
    if (!op.is_p2p)
      for (int q : t.ops) {
        if (q == oi) break;
        if (ops[q].channel == op.channel && ops[q].is_send == op.is_send) ++idx;
      }
    return std::make_tuple(op.channel, op.is_p2p ? -1 : int(op.is_send), idx);
  };
  auto op_in = [&](int task, const std::tuple<int, int, int>& slot) -> const SimProxyOp* {
    if (task < 0) return nullptr;
    for (int q : F.tasks[task].ops)
      if (slot_of(q) == slot) return &ops[q];
    return nullptr;
  };

  int64_t group_id = 0, coll_id = 0, p2p_id = 0, op_id = 0, step_id = 0;
  const int64_t kernel_id = 0;  // the plugin never increments its KernelCh counter
  std::vector<RenderedFile> files;
  for (int m = int(F.comms.size()) - 1; m >= 0; --m) {
    const SimComm& comm = F.comms[m].info;
    int crank = -1;
    for (size_t i = 0; i < comm.ranks.size(); ++i)
      if (comm.ranks[i] == r) crank = int(i);
    if (crank < 0) continue;

    std::vector<int> mine;
    size_t n_ops_here = 0;
    for (int ti : F.stream[r])
      if (F.tasks[ti].comm == m) {
        mine.push_back(ti);
        n_ops_here += F.tasks[ti].ops.size();
      }
    Out o(4096 + mine.size() * 1500 + n_ops_here * (600 + 16 * 6 * 110));
    o.lit("[\n");
    std::vector<int> pool[2];  // the file's operations per kind (collective, p2p), in order
    for (int ti : mine) {
      const FlowTask& T = F.tasks[ti];
      if (!T.active) continue;  // the host never reached it
      const int kind = T.kind == 0 ? 0 : 1;
      const size_t pos = pool[kind].size();
      pool[kind].push_back(ti);
      const int old_task = pos >= size_t(kCollPool) ? pool[kind][pos - kCollPool] : -1;
      const SimCollective& col = colls[ti];
      const bool done = reached(col.end_ns);
      const double grp_lead = 500 + 1500 * unit(mix(sc.seed, uint64_t(ti), 0x6772706cull));
      const double submit = col.enqueue_ns + 3000 + 4000 * unit(mix(sc.seed, uint64_t(ti), 0x7375626dull));
      const double coll_end = done ? col.end_ns : submit;

      if (groups) {
        o.head("Group", "GROUP", true, group_id, pid, us(col.enqueue_ns - grp_lead));
        o.lit(", \"args\": {\"groupId\": ");
        o.i64(group_id);
        o.end_args_line();
      }
      const char* name = T.kind == 0 ? "AllReduce" : (T.kind == 1 ? "Send" : "Recv");
      if (T.kind == 0) {
        o.head(name, "COLL", true, coll_id, pid, us(col.enqueue_ns));
        o.lit(", \"args\": {\"SeqNum\": ");
        o.i64(T.seq);
        o.lit(", \"CommHash\": ");
        o.u64(comm.hash);
        o.lit(", \"Rank\": ");
        o.i64(crank);
        o.lit(", \"Count\": ");
        o.u64(T.bytes / 4);
        o.lit(", \"Datatype\": \"ncclFloat32\", \"Algorithm\": \"");
        o.lit(F.comms[m].algorithm);
        o.lit("\", \"Protocol\": \"SIMPLE\", \"nChannels\": ");
        o.i64(int64_t(T.channels.size()));
        o.end_args_line();
      } else {
        o.head(name, "P2P", true, p2p_id, pid, us(col.enqueue_ns));
        o.lit(", \"args\": {\"CommHash\": ");
        o.u64(comm.hash);
        o.lit(", \"Rank\": ");
        o.i64(crank);
        o.lit(", \"Peer\": ");
        o.i64(T.peer);
        o.lit(", \"Count\": ");
        o.u64(T.bytes / 2);
        o.lit(", \"Datatype\": \"ncclBfloat16\", \"nChannels\": ");
        o.i64(int64_t(T.channels.size()));
        o.end_args_line();
      }

      for (size_t ci = 0; ci < T.channels.size(); ++ci) {
        const int channel = T.channels[ci];
        const double kstart = T.ch_start[ci];
        const bool kstarted = reached(kstart);
        const double old_cend = old_task >= 0 && ci < colls[old_task].channel_end_ns.size()
                                    ? colls[old_task].channel_end_ns[ci]
                                    : -origin;
        if (kstarted) {
          const double poll = p.poll * unit(mix(sc.seed, uint64_t(ti), ci, 0x6b62ull));
          o.head("KernelCh", "GPU", true, kernel_id, pid, us(kstart + poll));
          o.lit(", \"args\": {\"Channel\": ");
          o.i64(channel);
          o.lit(", \"StartGpuClk\": ");
          o.u64(clk(kstart));
          o.lit(", \"StopGpuClk\": ");
          // Stale stop clock of the pool slot's previous operation when never stopped.
          const double cend = col.channel_end_ns[ci];
          uint64_t stop_clk = 0;
          if (reached(cend)) stop_clk = clk(cend);
          else if (old_task >= 0 && std::isfinite(old_cend)) stop_clk = clk(old_cend);
          o.u64(stop_clk);
          o.end_args_line();
        }

        for (int oi : T.ops) {
          const SimProxyOp& op = ops[oi];
          if (op.channel != channel) continue;
          if (!reached(op.sched_ns)) continue;
          const auto slot = slot_of(oi);
          const SimProxyOp* old = op_in(old_task, slot);  // previous occupant of the pool slot
          // transSize: accumulated over every use of this pool slot (never reset).
          uint64_t trans = 0;
          for (size_t q = pos + 1; q-- > 0;) {
            if ((pos - q) % size_t(kCollPool) != 0) continue;
            const SimProxyOp* occ = q == pos ? &op : op_in(pool[kind][q], slot);
            if (!occ) continue;
            for (const SimStep& st : occ->steps)
              if (reached(occ->is_send ? st.t2 : st.t1)) trans += occ->chunk_bytes;
          }
          print_proxy_op(o, {&op, old, op.channel, op.comm_peer, trans, pid, origin, kill}, op_id, step_id);
        }

        if (kstarted) {
          const double cend = col.channel_end_ns[ci];
          double ets;
          if (reached(cend)) ets = cend + p.poll * unit(mix(sc.seed, uint64_t(ti), ci, 0x6b65ull));
          else ets = old_task >= 0 && std::isfinite(old_cend) ? old_cend : -origin;
          o.head("KernelCh", "GPU", false, kernel_id, pid, us(ets));
          o.end_line();
        }
      }

      if (T.kind == 0) {
        o.head(name, "COLL", false, coll_id, pid, us(coll_end));
        o.end_line();
        ++coll_id;
      } else {
        o.head(name, "P2P", false, p2p_id, pid, us(coll_end));
        o.end_line();
        ++p2p_id;
      }
      if (groups) {
        o.head("Group", "GROUP", false, group_id, pid, us(done ? coll_end : submit + 200));
        o.end_line();
        ++group_id;
      }
    }
    o.lit("{}]\n");
    RenderedFile f;
    f.name = "nccl_prof_" + std::to_string(comm.hash) + "_" + std::to_string(crank) + ".json";
    f.content = o.take();
    files.push_back(std::move(f));
  }
  return files;
}

}  // namespace culprit::mock
