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

namespace {

// One process's records in the ring engine's shape: its collective of every seq, its proxy ops
// by (seq, channel, direction).
class RingRankRecords {
 public:
  RingRankRecords(const NodeTimeline& t, int rank, int seqs, int channels)
      : seqs_(seqs), C_(channels), coll_(size_t(seqs), nullptr), op_(size_t(seqs) * channels * 2, nullptr) {
    for (const OperationRecord& rec : t.operations)
      if (rec.col.rank == rank && rec.col.seq < seqs) coll_[size_t(rec.col.seq)] = &rec;
    for (const ProxyOpRecord& rec : t.proxy_ops)
      if (rec.op.rank == rank && rec.op.seq < seqs) {
        op_[slot(rec.op.seq, rec.op.channel, rec.op.is_send)] = &rec;
        ++n_ops_;
      }
  }
  const SimCollective* coll(int s) const { return s >= 0 && s < seqs_ && coll_[size_t(s)] ? &coll_[size_t(s)]->col : nullptr; }
  const ProxyOpRecord* op(int s, int c, int is_send) const { return s >= 0 && s < seqs_ ? op_[slot(s, c, is_send)] : nullptr; }
  size_t n_ops() const { return n_ops_; }
  // transSize: accumulated over every use of the plugin's pool slot (never reset).
  uint64_t trans_size(int s, int c, int is_send) const {
    uint64_t trans = 0;
    for (int ps = s; ps >= 0; ps -= kCollPool)
      if (const ProxyOpRecord* q = op(ps, c, is_send)) trans += uint64_t(q->steps.transferred) * q->op.chunk_bytes;
    return trans;
  }

 private:
  size_t slot(int s, int c, int is_send) const { return (size_t(s) * C_ + size_t(c)) * 2 + size_t(is_send); }
  int seqs_, C_;
  std::vector<const OperationRecord*> coll_;
  std::vector<const ProxyOpRecord*> op_;
  size_t n_ops_ = 0;
};

// The trace file of one process of the ring engine.
class RingTraceWriter {
 public:
  RingTraceWriter(const Simulation::Impl& sim, const NodeTimeline& t, int r)
      : m_(sim), recs_(t, r, sim.seqs_run, sim.C), r_(r), pid_(sim.procs[r].pid), origin_(sim.origin_ns[r]),
        gclk_(sim.node_clock[sim.procs[r].node]), kill_(sim.kill_ns),
        o_(4096 + size_t(sim.seqs_run) * (700 + 400 * sim.C) + recs_.n_ops() * (600 + 16 * 6 * 110)) {}

  std::string write() {
    o_.lit("[\n");
    for (int s = 0; s < m_.seqs_run; ++s)
      if (const SimCollective* col = recs_.coll(s)) collective(s, *col);
    o_.lit("{}]\n");
    return o_.take();
  }

 private:
  double us(double t_ns) const { return (t_ns + origin_) / 1000.0; }
  bool reached(double t) const { return t < kill_; }  // kill is +inf unless hang
  uint64_t clk(double t_ns) const { return gclk_ + uint64_t(std::llround(t_ns)); }
  double noise(int s, uint64_t what) const { return unit(mix(m_.sc.seed, s, r_, what)); }

  void collective(int s, const SimCollective& col) {
    const bool groups = m_.sc.layout == "2.27";
    const bool done = reached(col.end_ns);
    // Host-side observation delays (deterministic).
    const double grp_lead = 500 + 1500 * noise(s, 0x6772706cull);
    const double submit = col.enqueue_ns + 3000 + 4000 * noise(s, 0x7375626dull);
    const double coll_end = done ? col.end_ns : submit;
    if (groups) o_.group_begin(group_id_, pid_, us(col.enqueue_ns - grp_lead));
    o_.head("AllReduce", "COLL", true, coll_id_, pid_, us(col.enqueue_ns));
    o_.lit(", \"args\": {\"SeqNum\": ");
    o_.i64(s);
    o_.lit(", \"CommHash\": ");
    o_.u64(m_.comm_hash);
    o_.lit(", \"Rank\": ");
    o_.i64(r_);
    o_.lit(", \"Count\": ");
    o_.u64(m_.sc.bytes / 4);
    o_.lit(", \"Datatype\": \"ncclFloat32\", \"Algorithm\": \"RING\", \"Protocol\": \"");
    o_.lit(protocol_name(m_.sc.proto));
    o_.lit("\", \"nChannels\": ");
    o_.i64(m_.C);
    o_.end_args_line();
    for (int c = 0; c < m_.C; ++c) channel(s, col, c);
    o_.end_event("AllReduce", "COLL", coll_id_, pid_, us(coll_end));
    ++coll_id_;
    if (groups) {
      o_.end_event("Group", "GROUP", group_id_, pid_, us(done ? coll_end : submit + 200));
      ++group_id_;
    }
  }

  // KernelCh of channel c wrapping its proxy ops (receive first, then send). What was never
  // reached keeps the stale values of the pool slot's previous collective.
  void channel(int s, const SimCollective& col, int c) {
    const double kstart = col.kernel_start_ns + 300.0 * c + 500.0 * noise(s, 0x736b63ull + c);
    const bool kstarted = reached(kstart);
    const SimCollective* old = recs_.coll(s - kCollPool);
    const double cend = col.channel_end_ns[size_t(c)];
    if (kstarted) {
      uint64_t stop_clk = 0;
      if (reached(cend)) stop_clk = clk(cend);
      else if (old) stop_clk = clk(old->channel_end_ns[size_t(c)]);
      o_.kernel_begin(pid_, us(kstart + m_.p.poll * noise(s, 0x6b62ull + c)), c, clk(kstart), stop_clk);
    }
    for (int is_send = 0; is_send < 2; ++is_send) {
      const ProxyOpRecord* op = recs_.op(s, c, is_send);
      if (!op || !reached(op->op.sched_ns)) continue;
      print_proxy_op(o_, {op, recs_.op(s - kCollPool, c, is_send), c, op->op.peer, recs_.trans_size(s, c, is_send),
                          pid_, origin_, kill_},
                     op_id_, step_id_);
    }
    if (kstarted) {
      double ets = -origin_;
      if (reached(cend)) ets = cend + m_.p.poll * noise(s, 0x6b65ull + c);
      else if (old) ets = old->channel_end_ns[size_t(c)];
      o_.kernel_end(pid_, us(ets));
    }
  }

  const Simulation::Impl& m_;
  RingRankRecords recs_;
  const int r_;
  const int64_t pid_;
  const double origin_;
  const uint64_t gclk_;
  const double kill_;
  Out o_;
  int64_t group_id_ = 0, coll_id_ = 0, op_id_ = 0, step_id_ = 0;
};

}  // namespace

std::string Simulation::Impl::render_rank_nccl_json(const NodeTimeline& t, int r) const {
  return RingTraceWriter(*this, t, r).write();
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
