// Rendering of the simulated timeline as NCCL 2.27 example-profiler traces
// (ext-profiler/example/print_event.c of NCCL 2.27), byte for byte in the plugin's layout,
// plus the ground-truth JSON.
//
// What the plugin does and this rendering reproduces:
// - one file per process per communicator, "[" line, one event per line, "{}]" line;
// - ts in microseconds (%f) since the plugin started in that process;
// - each AllReduce inside its Group (layout=2.27), each channel's KernelCh wrapping that
//   channel's proxy ops (receive first, then send), each ProxyOp printing its 16 step slots
//   in slot order (slot = step % 16, the newest step of each slot survives);
// - per-kind id counters incremented after each trailer, except KernelCh whose counter the
//   plugin never increments (every KernelCh has id 0);
// - ProxyOp transSize accumulates over the reuse of the plugin's collective pool slot
//   (the plugin never resets it), so it grows every 16 collectives;
// - hang: steps, ops and kernels that never finished keep the stale values of the pool
//   slot's previous occupant (or 0), the collective's end is its enqueue time.
#include <cstring>

#include <nlohmann/json.hpp>

#include "mock/sim_internal.hpp"
#include "mock/trace_out.hpp"

namespace culprit::mock {

std::string Simulation::Impl::render_rank_nccl_json(int r) const {
  const SimProcess& pr = procs[r];
  const int64_t pid = pr.pid;
  const double origin = origin_ns[r];
  const uint64_t gclk = node_clock[pr.node];
  const double kill = kill_ns;
  auto us = [&](double t_ns) { return (t_ns + origin) / 1000.0; };
  auto reached = [&](double t) { return t < kill; };  // kill is +inf unless hang
  auto clk = [&](double t_ns) { return gclk + uint64_t(std::llround(t_ns)); };

  size_t n_ops_here = 0;
  for (int s = 0; s < seqs_run; ++s)
    for (int c = 0; c < C; ++c)
      for (int is_send = 0; is_send < 2; ++is_send) n_ops_here += op_at(s, r, c, is_send) >= 0;
  Out o(4096 + size_t(seqs_run) * (700 + 400 * C) + n_ops_here * (600 + 16 * 6 * 110));
  o.lit("[\n");

  int64_t group_id = 0, coll_id = 0, op_id = 0, step_id = 0;
  const int64_t kernel_id = 0;  // the plugin never increments its KernelCh counter
  const bool groups = sc.layout == "2.27";

  for (int s = 0; s < seqs_run; ++s) {
    const int ci = coll_at(s, r);
    if (ci < 0) continue;
    const SimCollective& col = colls[ci];
    const bool done = reached(col.end_ns);
    // Host-side observation delays (deterministic).
    const double grp_lead = 500 + 1500 * unit(mix(sc.seed, s, r, 0x6772706cull));
    const double submit = col.enqueue_ns + 3000 + 4000 * unit(mix(sc.seed, s, r, 0x7375626dull));
    const double coll_end = done ? col.end_ns : submit;

    if (groups) {
      o.head("Group", "GROUP", true, group_id, pid, us(col.enqueue_ns - grp_lead));
      o.lit(", \"args\": {\"groupId\": ");
      o.i64(group_id);
      o.end_args_line();
    }
    o.head("AllReduce", "COLL", true, coll_id, pid, us(col.enqueue_ns));
    o.lit(", \"args\": {\"SeqNum\": ");
    o.i64(s);
    o.lit(", \"CommHash\": ");
    o.u64(comm_hash);
    o.lit(", \"Rank\": ");
    o.i64(r);
    o.lit(", \"Count\": ");
    o.u64(sc.bytes / 4);
    o.lit(", \"Datatype\": \"ncclFloat32\", \"Algorithm\": \"RING\", \"Protocol\": \"SIMPLE\", \"nChannels\": ");
    o.i64(C);
    o.end_args_line();

    for (int c = 0; c < C; ++c) {
      const double kstart = col.kernel_start_ns + 300.0 * c + 500.0 * unit(mix(sc.seed, s, r, 0x736b63ull + c));
      const bool kstarted = reached(kstart);
      if (kstarted) {
        const double poll = p.poll * unit(mix(sc.seed, s, r, 0x6b62ull + c));
        o.head("KernelCh", "GPU", true, kernel_id, pid, us(kstart + poll));
        o.lit(", \"args\": {\"Channel\": ");
        o.i64(c);
        o.lit(", \"StartGpuClk\": ");
        o.u64(clk(kstart));
        o.lit(", \"StopGpuClk\": ");
        // Stale stop clock of the pool slot's previous collective when never stopped.
        double cend = col.channel_end_ns[c];
        uint64_t stop_clk = 0;
        if (reached(cend)) {
          stop_clk = clk(cend);
        } else {
          int pc = coll_at(s - kCollPool, r);
          if (pc >= 0) stop_clk = clk(colls[pc].channel_end_ns[c]);
        }
        o.u64(stop_clk);
        o.end_args_line();
      }

      for (int is_send = 0; is_send < 2; ++is_send) {
        const int oi = op_at(s, r, c, is_send);
        if (oi < 0) continue;
        const SimProxyOp& op = ops[oi];
        if (!reached(op.sched_ns)) continue;
        const SimProxyOp* old = nullptr;  // previous occupant of this plugin pool slot
        {
          int po = op_at(s - kCollPool, r, c, is_send);
          if (po >= 0) old = &ops[po];
        }
        // transSize: accumulated over every use of this pool slot (never reset).
        uint64_t trans = 0;
        for (int ps = s; ps >= 0; ps -= kCollPool) {
          int qi = op_at(ps, r, c, is_send);
          if (qi < 0) continue;
          const SimProxyOp& q = ops[qi];
          for (const SimStep& st : q.steps)
            if (reached(is_send ? st.t2 : st.t1)) trans += q.chunk_bytes;
        }
        print_proxy_op(o, {&op, old, c, op.peer, trans, pid, origin, kill}, op_id, step_id);
      }

      if (kstarted) {
        double cend = col.channel_end_ns[c];
        double ets;
        if (reached(cend)) {
          ets = cend + p.poll * unit(mix(sc.seed, s, r, 0x6b65ull + c));
        } else {
          int pc = coll_at(s - kCollPool, r);
          ets = pc >= 0 ? colls[pc].channel_end_ns[c] : -origin;
        }
        o.head("KernelCh", "GPU", false, kernel_id, pid, us(ets));
        o.end_line();
      }
    }

    o.head("AllReduce", "COLL", false, coll_id, pid, us(coll_end));
    o.end_line();
    ++coll_id;
    if (groups) {
      o.head("Group", "GROUP", false, group_id, pid, us(done ? coll_end : submit + 200));
      o.end_line();
      ++group_id;
    }
  }
  o.lit("{}]\n");
  return o.take();
}

std::string ground_truth_json(const GroundTruth& truth, const std::vector<SimProcess>& procs) {
  using nlohmann::json;
  auto proc = [&](int r) -> const SimProcess* {
    for (const auto& p : procs)
      if (p.global_rank == r) return &p;
    return nullptr;
  };
  json j;
  j["spec"] = truth.spec;
  j["comm_hash"] = truth.comm_hash;
  json roots = json::array();
  for (const auto& root : truth.roots) {
    json x;
    x["class"] = root.culprit_class;
    x["rank"] = root.rank;
    const SimProcess* a = proc(root.rank);
    x["host"] = a ? a->host : "";
    x["pid"] = a ? a->pid : -1;
    x["peer_rank"] = root.peer;
    const SimProcess* b = root.peer >= 0 ? proc(root.peer) : nullptr;
    x["peer_host"] = b ? b->host : "";
    x["peer_pid"] = b ? b->pid : -1;
    x["slowdown_alone"] = root.slowdown_alone;
    roots.push_back(x);
  }
  j["roots"] = roots;
  j["job_ns"] = truth.job_ns;
  j["healthy_job_ns"] = truth.healthy_job_ns;
  j["slowdown"] = truth.slowdown;
  json ps = json::array();
  for (const auto& p : procs) ps.push_back({{"rank", p.global_rank}, {"host", p.host}, {"pid", p.pid}});
  j["processes"] = ps;
  json cs = json::array();
  for (const auto& c : truth.comms)
    cs.push_back({{"hash", c.hash}, {"name", c.name}, {"algorithm", c.algorithm}, {"ranks", c.ranks}});
  j["comms"] = cs;
  return j.dump(2);
}

}  // namespace culprit::mock
