#include "mock/render_probing.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>

#include "mock/records.hpp"
#include "mock/sim_internal.hpp"

namespace culprit::mock {
namespace {

// Simulation time 0 as UNIX epoch nanoseconds (a fixed date: outputs stay reproducible).
constexpr double kEpochBaseNs = 1.7640e18;

// One table of an export, written row by row as CSV or as a JSON array of objects.
class TableWriter {
 public:
  TableWriter(bool json, std::vector<std::string> columns) : json_(json), columns_(std::move(columns)) {
    if (json_) {
      out_ = "[";
    } else {
      for (size_t i = 0; i < columns_.size(); ++i) out_ += (i ? "," : "") + columns_[i];
      out_ += "\n";
    }
  }

  void begin_row() {
    cell_ = 0;
    if (json_) out_ += rows_ ? ",\n{" : "\n{";
    ++rows_;
  }
  void end_row() { out_ += json_ ? "}" : "\n"; }

  void i64(int64_t v) {
    char b[24];
    auto r = std::to_chars(b, b + sizeof b, v);
    raw(std::string(b, r.ptr));
  }
  void u64(uint64_t v) {
    char b[24];
    auto r = std::to_chars(b, b + sizeof b, v);
    raw(std::string(b, r.ptr));
  }
  void real(double v) {
    char b[32];
    auto r = std::to_chars(b, b + sizeof b, v, std::chars_format::fixed, 3);
    raw(std::string(b, r.ptr));
  }
  // An unsigned 64-bit column, as probing's converter (or the user's cast) leaves it.
  void unsigned_cell(uint64_t v, UnsignedCells how) {
    if (how == UnsignedCells::kBlank) raw(json_ ? "null" : "");
    else if (how == UnsignedCells::kCastSigned) i64(static_cast<int64_t>(v));
    else u64(v);
  }
  void text(const std::string& v) {
    bool quote = json_ || v.find(',') != std::string::npos;
    raw(quote ? "\"" + v + "\"" : v);  // the simulator's strings hold no quotes or escapes
  }

  bool empty() const { return rows_ == 0; }
  std::string finish() {
    if (json_) out_ += rows_ ? "\n]\n" : "]\n";
    return std::move(out_);
  }

 private:
  void raw(const std::string& v) {
    if (cell_ >= columns_.size()) throw std::logic_error("probing export: more cells than columns");
    if (json_) out_ += (cell_ ? ", \"" : "\"") + columns_[cell_] + "\": " + v;
    else out_ += (cell_ ? "," : "") + v;
    ++cell_;
  }

  bool json_;
  std::vector<std::string> columns_;
  std::string out_;
  size_t cell_ = 0;
  size_t rows_ = 0;
};

const std::vector<std::string> kFederation = {"_host", "_addr", "_rank", "_node_rank", "_local_rank", "_role"};

std::vector<std::string> with_tags(std::vector<std::string> columns, bool tags) {
  if (tags) columns.insert(columns.end(), kFederation.begin(), kFederation.end());
  return columns;
}

// What the rows of one process say about it besides its communicator rank.
struct ProcessTags {
  int tp = -1, pp = -1, dp = -1;  // from the process's environment in probing
  const SimProcess* process = nullptr;
};

class HostExport {
 public:
  HostExport(const Simulation& sim, const NodeTimeline& timeline, const ProbingExport& how)
      : sim_(sim), t_(timeline), how_(how) {
    for (const SimComm& c : sim.communicators()) comm_size_[c.hash] = static_cast<int>(c.ranks.size());
    const bool pipeline = sim.scenario().topology == "pipeline";
    tags_.resize(sim.processes().size());
    for (const SimProcess& p : sim.processes()) {
      ProcessTags& t = tags_[static_cast<size_t>(p.global_rank)];
      t.process = &p;
      t.tp = p.local;
      t.dp = p.node;
      t.pp = 0;
    }
    if (pipeline)  // a GPU's pipeline stage is its place in its pp communicator
      for (const SimComm& c : sim.communicators())
        if (c.name.rfind("pp", 0) == 0)
          for (size_t i = 0; i < c.ranks.size(); ++i) tags_[static_cast<size_t>(c.ranks[i])].pp = static_cast<int>(i);
    dump_ns_ = sim.dump_time_ns();
  }

  std::vector<RenderedFile> files() const {
    std::vector<RenderedFile> out;
    const std::string ext = how_.json ? ".json" : ".csv";
    if (how_.proxy_ops) out.push_back({"proxy_ops" + ext, proxy_ops()});
    if (how_.coll_perf) out.push_back({"coll_perf" + ext, coll_perf()});
    if (how_.net_qp) out.push_back({"net_qp" + ext, net_qp()});
    if (how_.inflight_ops) {
      std::string inflight = inflight_ops();
      if (!inflight.empty()) out.push_back({"inflight_ops" + ext, std::move(inflight)});
    }
    return out;
  }

 private:
  bool alive_at_dump(double start, double end) const { return start < dump_ns_ && !(end < dump_ns_); }
  static int64_t epoch_ns(double t) { return static_cast<int64_t>(std::llround(kEpochBaseNs + t)); }

  void parallel_ranks(TableWriter& w, int global_rank) const {
    const ProcessTags& t = tags_[static_cast<size_t>(global_rank)];
    w.i64(t.tp);
    w.i64(t.pp);
    w.i64(t.dp);
  }
  void federation(TableWriter& w, int global_rank) const {
    if (!how_.tags) return;
    const ProcessTags& t = tags_[static_cast<size_t>(global_rank)];
    w.text(t.process->host);
    w.text("10.0." + std::to_string(t.process->node) + ".1:9922");
    w.i64(global_rank);
    w.i64(t.process->node);
    w.i64(t.process->local);
    w.text("dp=" + std::to_string(t.dp) + ",pp=" + std::to_string(t.pp) + ",tp=" + std::to_string(t.tp));
  }
  std::string func_of(const SimProxyOp& op) const {
    if (const OperationRecord* task = t_.operation(op.task)) return task->col.name;
    return op.is_p2p ? (op.is_send ? "Send" : "Recv") : "AllReduce";
  }

  std::string proxy_ops() const {
    TableWriter w(how_.json, with_tags({"ts", "rank", "tp_rank", "pp_rank", "dp_rank", "comm_hash", "coll_func", "seq",
                                        "channel_id", "peer", "is_send", "n_steps", "trans_bytes", "send_gpu_wait_ns",
                                        "send_peer_wait_ns", "send_wait_ns", "recv_wait_ns", "recv_flush_wait_ns"},
                                       how_.tags));
    for (const ProxyOpRecord& rec : t_.proxy_ops) {
      const SimProxyOp& op = rec.op;
      if (!(op.end_ns < dump_ns_)) continue;  // alive ops have no row yet
      w.begin_row();
      w.i64(epoch_ns(op.end_ns));
      w.i64(op.comm_rank);
      parallel_ranks(w, op.rank);
      w.unsigned_cell(op.comm_hash, how_.unsigned_cells);
      w.text(func_of(op));
      w.unsigned_cell(op.is_p2p ? 0 : static_cast<uint64_t>(op.seq), how_.unsigned_cells);
      w.i64(op.channel);
      w.i64(op.comm_peer);
      w.i64(op.is_send ? 1 : 0);
      w.i64(op.n_steps);
      w.unsigned_cell(static_cast<uint64_t>(op.n_steps) * op.chunk_bytes, how_.unsigned_cells);
      // SendGpuWait, SendPeerWait, SendWait | RecvWait, RecvFlushWait summed over the steps
      for (double v : rec.steps.phase) w.i64(std::llround(std::max(0.0, v)));
      federation(w, op.rank);
      w.end_row();
    }
    return w.finish();
  }

  std::string inflight_ops() const {
    TableWriter w(how_.json, with_tags({"ts", "rank", "comm_hash", "coll_func", "seq", "kind", "channel_id", "peer",
                                        "is_send", "start_ns", "age_ns"},
                                       how_.tags));
    const int64_t snapshot = std::isfinite(dump_ns_) ? epoch_ns(dump_ns_) : 0;
    for (const OperationRecord& rec : t_.operations) {
      const SimCollective& c = rec.col;
      if (!alive_at_dump(c.enqueue_ns, c.end_ns)) continue;
      const bool p2p = c.name == "Send" || c.name == "Recv";
      w.begin_row();
      w.i64(snapshot);
      w.i64(c.comm_rank);
      w.unsigned_cell(c.comm_hash, how_.unsigned_cells);
      w.text(c.name);
      w.unsigned_cell(p2p ? 0 : static_cast<uint64_t>(c.seq), how_.unsigned_cells);
      w.text(p2p ? "p2p" : "coll");
      w.i64(-1);
      w.i64(p2p ? c.peer : -1);
      w.i64(p2p ? (c.name == "Send" ? 1 : 0) : -1);
      w.i64(epoch_ns(c.enqueue_ns));
      w.i64(std::llround(dump_ns_ - c.enqueue_ns));
      federation(w, c.rank);
      w.end_row();
    }
    for (const ProxyOpRecord& rec : t_.proxy_ops) {
      const SimProxyOp& op = rec.op;
      if (!alive_at_dump(op.sched_ns, op.end_ns)) continue;
      w.begin_row();
      w.i64(snapshot);
      w.i64(op.comm_rank);
      w.unsigned_cell(op.comm_hash, how_.unsigned_cells);
      w.text(func_of(op));
      w.unsigned_cell(op.is_p2p ? 0 : static_cast<uint64_t>(op.seq), how_.unsigned_cells);
      w.text("proxy_op");
      w.i64(op.channel);
      w.i64(op.comm_peer);
      w.i64(op.is_send ? 1 : 0);
      w.i64(epoch_ns(op.sched_ns));
      w.i64(std::llround(dump_ns_ - op.sched_ns));
      federation(w, op.rank);
      w.end_row();
    }
    return w.empty() ? std::string() : w.finish();
  }

  // nccl.net_qp: one row per IB work request that completed, as NCCL's IB transport reports
  // them to the profiler: a send's from its posting (the step accepted: data ready and credit
  // in) to its completion (the acknowledgement), of the chunk's length, opcode 1 (RDMA write
  // with immediate); a receive's from the buffer's posting to the data's arrival, with no
  // length or opcode (NCCL sets none). Each connection end has its own queue pair; a GPU its
  // own NIC. Every started step where the simulation kept them (Retention::every_step, as `mock
  // --format ...+net_qp` does); otherwise only ops whose steps were all kept (StepSummary: up
  // to 32): rows missing between two others of a queue pair would show a queued send as idle.
  std::string net_qp() const {
    TableWriter w(how_.json,
                  with_tags({"ts", "rank", "device", "qp_num", "wr_id", "opcode", "length", "duration_ns"}, how_.tags));
    const uint64_t seed = sim_.scenario().seed;
    for (const ProxyOpRecord& rec : t_.proxy_ops) {
      const SimProxyOp& op = rec.op;
      const uint64_t qp = 1 + (mix(seed, mix(uint64_t(op.rank), uint64_t(op.peer), uint64_t(op.channel)),
                                   op.comm_hash, op.is_send ? 0x736e64ull : 0x726376ull) & 0xffffffull);
      const bool every = !rec.every_step.empty();
      if (!every && rec.steps.started > StepSummary::kKept) continue;
      for (int k = 0; k < rec.steps.started; ++k) {
        const SimStep st = every ? rec.every_step[size_t(k)] : rec.steps.step(k);
        const double posted = op.is_send ? st.t2 : st.t0, done = op.is_send ? st.t3 : st.t1;
        if (!std::isfinite(posted) || !(done < dump_ns_)) continue;
        w.begin_row();
        w.i64(epoch_ns(done));
        w.i64(op.rank);
        w.i64(tags_[static_cast<size_t>(op.rank)].process->local);
        w.u64(qp);
        w.unsigned_cell(static_cast<uint64_t>(k), how_.unsigned_cells);  // wr_id and length are u64:
        w.i64(op.is_send ? 1 : 0);                                         // blank in a default export
        w.unsigned_cell(op.is_send ? op.chunk_bytes : 0, how_.unsigned_cells);
        w.i64(std::llround(std::max(0.0, done - posted)));
        federation(w, op.rank);
        w.end_row();
      }
    }
    return w.finish();
  }

  // How long the host spent in the NCCL call of one operation (probing's enqueue_time_ns: its
  // collective's start to stop event on the host), a few microseconds.
  double enqueue_call_ns(const OperationRecord& rec) const {
    return 3000 + 4000 * unit(mix(sim_.scenario().seed, uint64_t(rec.index), uint64_t(rec.col.rank), 0x656e7175ull));
  }

  // Per operation (collectives() index), the window of the recording rank's own proxy ops: from
  // the first one's progress to the last one's end.
  std::map<int, std::pair<double, double>> proxy_windows() const {
    std::map<int, std::pair<double, double>> windows;
    for (const ProxyOpRecord& rec : t_.proxy_ops) {
      const SimProxyOp& op = rec.op;
      const OperationRecord* task = t_.operation(op.task);
      if (!task || task->col.rank != op.rank || !std::isfinite(op.end_ns)) continue;
      auto [it, added] = windows.emplace(op.task, std::make_pair(op.progress_ns, op.end_ns));
      if (!added) it->second = {std::min(it->second.first, op.progress_ns), std::max(it->second.second, op.end_ns)};
    }
    return windows;
  }

  // One row per completed operation. Timed by the kernel (timing_source kernel_gpu), or, as
  // probing does without kernel events (`coll_perf_proxy`), by the rank's proxy ops where it has
  // any and else by the host's enqueue call.
  std::string coll_perf() const {
    TableWriter w(how_.json,
                  with_tags({"ts", "rank", "tp_rank", "pp_rank", "dp_rank", "comm_hash", "n_ranks", "coll_func", "seq",
                             "is_p2p", "peer", "count", "msg_size_bytes", "dtype", "algo", "proto", "n_channels",
                             "exec_time_ns", "enqueue_time_ns", "timing_source", "algobw_gbps", "pool_events_dropped"},
                            how_.tags));
    const uint64_t bytes = sim_.scenario().bytes;
    const std::map<int, std::pair<double, double>> proxies =
        how_.coll_perf_proxy ? proxy_windows() : std::map<int, std::pair<double, double>>{};
    for (const OperationRecord& rec : t_.operations) {
      const SimCollective& c = rec.col;
      if (!(c.end_ns < dump_ns_) || c.channel_end_ns.empty()) continue;
      double stop = *std::max_element(c.channel_end_ns.begin(), c.channel_end_ns.end());
      if (!(stop < dump_ns_) || !(c.kernel_start_ns <= stop)) continue;
      double start = c.kernel_start_ns;
      std::string source = "kernel_gpu";
      if (how_.coll_perf_proxy) {
        auto window = proxies.find(rec.index);
        if (window != proxies.end()) {
          std::tie(start, stop) = window->second;
          source = "proxy";
        } else {
          start = c.enqueue_ns;
          stop = c.enqueue_ns + enqueue_call_ns(rec);
          source = "enqueue";
        }
      }
      const bool p2p = c.name == "Send" || c.name == "Recv";
      const double exec = stop - start;
      w.begin_row();
      w.i64(epoch_ns(stop));
      w.i64(c.comm_rank);
      parallel_ranks(w, c.rank);
      w.unsigned_cell(c.comm_hash, how_.unsigned_cells);
      w.i64(comm_size_.at(c.comm_hash));
      w.text(c.name);
      w.unsigned_cell(p2p ? 0 : static_cast<uint64_t>(c.seq), how_.unsigned_cells);
      w.i64(p2p ? 1 : 0);
      w.i64(p2p ? c.peer : -1);
      w.unsigned_cell(bytes / 4, how_.unsigned_cells);
      w.unsigned_cell(bytes, how_.unsigned_cells);
      w.text("ncclFloat32");
      w.text(p2p ? "" : c.algorithm == "TREE" ? "Tree" : "Ring");
      w.text(p2p || sim_.scenario().proto == "simple" ? "Simple" : protocol_name(sim_.scenario().proto));
      w.i64(static_cast<int64_t>(c.channels.empty() ? c.channel_end_ns.size() : c.channels.size()));
      w.i64(std::llround(exec));
      w.i64(std::llround(enqueue_call_ns(rec)));
      w.text(source);
      w.real(exec > 0 ? static_cast<double>(bytes) / exec : 0.0);  // bytes per ns = GB/s
      w.i64(0);  // no child event lost: the simulator has no event pool
      federation(w, c.rank);
      w.end_row();
    }
    return w.finish();
  }

  const Simulation& sim_;
  const NodeTimeline& t_;
  ProbingExport how_;
  std::map<uint64_t, int> comm_size_;
  std::vector<ProcessTags> tags_;
  double dump_ns_ = 0;
};

}  // namespace

ProbingExport parse_probing_format(const std::string& format) {
  ProbingExport how;
  size_t at = format.find('+');
  const std::string base = format.substr(0, at);
  if (base == "probing-json") how.json = true;
  else if (base != "probing-csv") throw std::invalid_argument("unknown export format '" + base + "'");
  while (at != std::string::npos) {
    size_t next = format.find('+', at + 1);
    const std::string opt = format.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
    if (opt == "untagged") how.tags = false;
    else if (opt == "blank") how.unsigned_cells = UnsignedCells::kBlank;
    else if (opt == "cast") how.unsigned_cells = UnsignedCells::kCastSigned;
    else if (opt == "coll_perf") how.coll_perf = true;
    else if (opt == "coll_perf_proxy") how.coll_perf = how.coll_perf_proxy = true;
    else if (opt == "net_qp") how.net_qp = true;
    else if (opt == "no_proxy_ops") how.proxy_ops = false;
    else if (opt == "no_inflight") how.inflight_ops = false;
    else throw std::invalid_argument("unknown probing export option '" + opt + "' in '" + format + "'");
    at = next;
  }
  return how;
}

std::vector<RenderedFile> render_host_probing(const Simulation& sim, int node, const ProbingExport& how) {
  return render_host_probing(sim, sim.node_timeline(node), how);
}

std::vector<RenderedFile> render_host_probing(const Simulation& sim, const NodeTimeline& timeline,
                                              const ProbingExport& how) {
  return HostExport(sim, timeline, how).files();
}

}  // namespace culprit::mock
