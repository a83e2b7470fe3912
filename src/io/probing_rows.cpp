#include "io/probing_rows.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "io/trace_line.hpp"

namespace culprit {
namespace {

struct NamedColumn {
  const char* name;
  ProbingColumn column;
};

constexpr NamedColumn kColumnNames[] = {
    {"ts", kColTs},
    {"rank", kColRank},
    {"tp_rank", kColTpRank},
    {"pp_rank", kColPpRank},
    {"dp_rank", kColDpRank},
    {"comm_hash", kColCommHash},
    {"coll_func", kColCollFunc},
    {"seq", kColSeq},
    {"channel_id", kColChannel},
    {"peer", kColPeer},
    {"is_send", kColIsSend},
    {"n_steps", kColSteps},
    {"trans_bytes", kColBytes},
    {"send_gpu_wait_ns", kColSendGpuWait},
    {"send_peer_wait_ns", kColSendPeerWait},
    {"send_wait_ns", kColSendWait},
    {"recv_wait_ns", kColRecvWait},
    {"recv_flush_wait_ns", kColRecvFlushWait},
    {"recv_gpu_wait_ns", kColRecvGpuWait},
    {"_host", kColHost},
    {"_rank", kColGlobalRank},
    {"pid", kColPid},
    {"device", kColDevice},
    {"qp_num", kColQpNum},
    {"length", kColLength},
    {"duration_ns", kColDuration},
    {"kind", kColKind},
    {"age_ns", kColAge},
    {"is_p2p", kColIsP2p},
    {"exec_time_ns", kColExecTime},
    {"timing_source", kColTimingSource},
    {"pool_events_dropped", kColPoolDropped},
    {"algo", kColAlgo},
    {"pool_exhausted", kColPoolExhausted},
    {"write_errors", kColWriteErrors},
    {"ring_rows_overwritten", kColRowsOverwritten},
};

enum Reason : int {
  kTooFewColumns,
  kBadRank,
  kBadCommHash,
  kBadSeq,
  kBadChannel,
  kBadPeer,
  kBadIsSend,
  kBadDevice,
  kBadQpNum,
  kBadDuration,
  kBadKind,
  kBadAge,
  kBadTs,
  kBadExecTime,
  kBadPoolExhausted,
  kOtherCommunicator,
  kReasonCount,
};

constexpr std::array<const char*, kReasonCount> kReasonText = {
    "row with fewer columns than the header",
    "row without a valid rank",
    "row without a valid comm_hash",
    "row without a valid seq",
    "row without a valid channel_id",
    "row without a valid peer",
    "row without a valid is_send",
    "net_qp row without a valid device",
    "net_qp row without a valid qp_num",
    "net_qp row without a valid duration_ns",
    "inflight_ops row without a valid kind",
    "inflight_ops row without a valid age_ns",
    "coll_perf row without a valid ts",
    "coll_perf row without a valid exec_time_ns",
    "profiler_counters row without a valid pool_exhausted",
    "row of a second communicator: without pid, _rank or tp/pp/dp its ranks name no process",
};

const char* table_name(ProbingTable t) {
  switch (t) {
    case ProbingTable::kProxyOps: return "proxy_ops";
    case ProbingTable::kNetQp: return "net_qp";
    case ProbingTable::kInflightOps: return "inflight_ops";
    case ProbingTable::kCollPerf: return "coll_perf";
    case ProbingTable::kProfilerCounters: return "profiler_counters";
    default: return "";
  }
}

bool names_p2p(std::string_view func) {
  return func.find("Send") != std::string_view::npos || func.find("Recv") != std::string_view::npos;
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

// FNV-1a: a stable name for the one unnamed communicator of a file.
uint64_t fnv1a(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h ? h : 1;
}

}  // namespace

int probing_column(std::string_view name) {
  for (const NamedColumn& c : kColumnNames)
    if (name == c.name) return c.column;
  return -1;
}

ProbingTable probing_table_of(const ProbingColumns& c) {
  auto has = [&](int column) { return c[column] >= 0; };
  if (!has(kColRank)) return ProbingTable::kUnknown;
  // inflight_ops has every proxy_ops key column too: its own columns decide first.
  if (has(kColCommHash) && has(kColKind) && has(kColAge)) return ProbingTable::kInflightOps;
  if (has(kColCommHash) && has(kColExecTime) && has(kColTs)) return ProbingTable::kCollPerf;
  if (has(kColCommHash) && has(kColPeer) && has(kColIsSend) && has(kColChannel))
    return ProbingTable::kProxyOps;
  if (has(kColQpNum) && has(kColDuration)) return ProbingTable::kNetQp;
  if (has(kColPoolExhausted)) return ProbingTable::kProfilerCounters;
  return ProbingTable::kUnknown;
}

bool probing_blank(std::string_view cell) {
  if (cell.empty()) return true;
  if (cell.size() != 3 && cell.size() != 4) return false;
  char lower[4];
  for (size_t i = 0; i < cell.size(); ++i)
    lower[i] = static_cast<char>(cell[i] >= 'A' && cell[i] <= 'Z' ? cell[i] + 32 : cell[i]);
  std::string_view l(lower, cell.size());
  return l == "null" || l == "nil" || l == "none";
}

bool parse_comm_hash(std::string_view cell, uint64_t* out, bool* negative) {
  *negative = false;
  if (parse_u64(cell, out)) return true;
  uint64_t magnitude = 0;
  if (cell.size() < 2 || cell[0] != '-' || !parse_u64(cell.substr(1), &magnitude) ||
      magnitude > (uint64_t{1} << 63))
    return false;
  *out = 0 - magnitude;  // two's complement: the int64 the hash was cast to
  *negative = magnitude != 0;
  return true;
}

size_t ProbingRows::IdentityHash::operator()(const Identity& k) const {
  uint64_t h = k.host;
  for (int64_t v : {int64_t{k.rank}, int64_t{k.tp}, int64_t{k.pp}, int64_t{k.dp}, k.pid, k.global_rank})
    h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
  return static_cast<size_t>(h);
}

ProbingRows::ProbingRows(const std::string& path, const std::string& host, const char* format,
                         LocalData& data)
    : host_(host), syntax_(std::string_view(format) == "probing-json" ? "JSON" : "CSV"), data_(data) {
  report_.host = host;
  report_.path = path;
  report_.format = format;
  columns_.fill(-1);
  hosts_.push_back(host);
  ops_begin_ = data.ops.size();
  kernels_begin_ = data.kernel_starts.size();
}

bool ProbingRows::set_columns(const ProbingColumns& columns) {
  ProbingTable table = probing_table_of(columns);
  if (table_ == ProbingTable::kUnknown) {
    if (table == ProbingTable::kUnknown) {
      report_.error = std::string(syntax_) +
                      " columns are none of nccl.proxy_ops (rank, comm_hash, channel_id, peer, "
                      "is_send), nccl.net_qp, nccl.inflight_ops, nccl.coll_perf, nccl.profiler_counters";
      return false;
    }
    table_ = table;
  }
  columns_ = columns;
  std::vector<int> needed;
  switch (table_) {
    case ProbingTable::kProxyOps: needed = {kColRank, kColCommHash, kColChannel, kColPeer, kColIsSend}; break;
    case ProbingTable::kNetQp: needed = {kColRank, kColQpNum, kColDuration}; break;
    case ProbingTable::kInflightOps: needed = {kColRank, kColCommHash, kColKind, kColAge}; break;
    case ProbingTable::kCollPerf: needed = {kColRank, kColCommHash, kColTs, kColExecTime}; break;
    case ProbingTable::kProfilerCounters: needed = {kColRank, kColPoolExhausted}; break;
    default: break;
  }
  min_cells_ = 0;
  for (int c : needed) min_cells_ = std::max(min_cells_, columns_[c] + 1);
  return true;
}

void ProbingRows::row(const std::string_view* cells, size_t n) {
  cells_ = cells;
  n_cells_ = n;
  if (table_ == ProbingTable::kUnknown) return;
  if (static_cast<int>(n) < min_cells_) {
    ++reasons_[kTooFewColumns];
    return;
  }
  switch (table_) {
    case ProbingTable::kProxyOps: proxy_op_row(); break;
    case ProbingTable::kNetQp: net_qp_row(); break;
    case ProbingTable::kInflightOps: inflight_row(); break;
    case ProbingTable::kCollPerf: coll_perf_row(); break;
    case ProbingTable::kProfilerCounters: profiler_counters_row(); break;
    default: break;
  }
}

bool ProbingRows::read_rank(int32_t* rank) {
  int64_t v = -1;
  if (!parse_i64(cell(kColRank), &v) || v < 0 || v > INT32_MAX) {
    ++reasons_[kBadRank];
    return false;
  }
  *rank = static_cast<int32_t>(v);
  return true;
}

bool ProbingRows::read_comm(uint64_t* comm) {
  std::string_view text = cell(kColCommHash);
  bool negative = false;
  if (parse_comm_hash(text, comm, &negative)) {
    negative_comm_ = negative_comm_ || negative;
  } else if (probing_blank(text)) {
    if (!blank_comm_) file_comm_ = fnv1a(report_.path);
    blank_comm_ = true;
    *comm = file_comm_;
  } else {
    ++reasons_[kBadCommHash];
    return false;
  }
  return true;
}

int ProbingRows::read_seq(uint64_t* seq) {
  std::string_view text = cell(kColSeq);
  if (parse_u64(text, seq)) return 1;
  *seq = 0;
  if (columns_[kColSeq] < 0 || probing_blank(text)) return 0;
  ++reasons_[kBadSeq];
  return -1;
}

// An i32 column whose values are >= lo.
bool ProbingRows::read_i32(int column, int64_t lo, int32_t* out) {
  int64_t v = 0;
  if (!parse_i64(cell(column), &v) || v < lo || v > INT32_MAX) return false;
  *out = static_cast<int32_t>(v);
  return true;
}

void ProbingRows::note_comm(uint64_t comm) {
  if (comm == last_comm_ || comm == 0) return;
  last_comm_ = comm;
  if (std::find(comms_.begin(), comms_.end(), comm) == comms_.end()) comms_.push_back(comm);
}

// The identity of the current row, interned; its index stands for the process until the
// file's communicators are known.
uint32_t ProbingRows::identity(int32_t rank) {
  Identity k;
  k.rank = rank;
  if (columns_[kColHost] >= 0) {
    std::string_view host = cell(kColHost);
    if (!probing_blank(host)) {
      if (host != hosts_[last_host_]) {
        auto it = std::find(hosts_.begin(), hosts_.end(), host);
        last_host_ = static_cast<uint32_t>(it - hosts_.begin());
        if (it == hosts_.end()) hosts_.emplace_back(host);
      }
      k.host = last_host_;
    }
  }
  int64_t v = 0;
  if (columns_[kColPid] >= 0 && parse_i64(cell(kColPid), &v) && v > 0) k.pid = v;
  if (columns_[kColGlobalRank] >= 0 && parse_i64(cell(kColGlobalRank), &v) && v >= 0) k.global_rank = v;
  if (k.pid < 0 && k.global_rank < 0 && columns_[kColTpRank] >= 0) {
    int32_t tp = -1, pp = -1, dp = -1;
    if (read_i32(kColTpRank, 0, &tp) && read_i32(kColPpRank, 0, &pp) && read_i32(kColDpRank, 0, &dp)) {
      k.tp = tp;
      k.pp = pp;
      k.dp = dp;
    }
  }
  if (last_id_ < ids_.size() && ids_[last_id_] == k) return last_id_;
  auto [it, added] = id_lookup_.emplace(k, static_cast<uint32_t>(ids_.size()));
  if (added) ids_.push_back(k);
  last_id_ = it->second;
  return last_id_;
}

void ProbingRows::proxy_op_row() {
  ProxyOpRecord r;
  int32_t rank = -1, peer = -1, channel = -1;
  int64_t is_send = -1, steps = 0;
  if (!read_rank(&rank) || !read_comm(&r.comm_hash)) return;
  if (!read_i32(kColChannel, 0, &channel)) {
    ++reasons_[kBadChannel];
    return;
  }
  if (!read_i32(kColPeer, 0, &peer)) {
    ++reasons_[kBadPeer];
    return;
  }
  if (!parse_i64(cell(kColIsSend), &is_send)) {
    ++reasons_[kBadIsSend];
    return;
  }
  r.is_p2p = names_p2p(cell(kColCollFunc)) ? 1 : 0;
  int seq = read_seq(&r.seq);
  if (seq < 0) return;
  if (seq == 0 && !r.is_p2p) {
    r.seq_unknown = 1;
    blank_seq_ = true;
  }
  parse_i64(cell(kColSteps), &steps);
  std::string_view bytes = cell(kColBytes);
  if (!parse_u64(bytes, &r.bytes) && columns_[kColBytes] >= 0 && probing_blank(bytes)) blank_bytes_ = true;
  for (int p = 0; p < kPhaseCount; ++p) {
    int64_t v = 0;
    if (columns_[kColSendGpuWait + p] >= 0 && parse_i64(cell(kColSendGpuWait + p), &v) && v > 0)
      r.phase_ns[p] = static_cast<uint64_t>(v);
  }
  r.rank = rank;
  r.peer = peer;
  r.channel = channel;
  r.is_send = is_send != 0 ? 1 : 0;
  r.steps = static_cast<uint32_t>(steps > 0 && steps <= INT32_MAX ? steps : 1);
  r.process = identity(rank);
  member(r.comm_hash, rank, r.process, !r.is_p2p, r.seq, !r.seq_unknown);
  data_.ops.push_back(r);
}

void ProbingRows::net_qp_row() {
  int32_t rank = -1, device = -1;
  int64_t duration = -1;
  uint64_t qp = 0, length = 0;
  if (!read_rank(&rank)) return;
  if (columns_[kColDevice] >= 0 && !read_i32(kColDevice, -1, &device)) {
    ++reasons_[kBadDevice];
    return;
  }
  if (!parse_u64(cell(kColQpNum), &qp) || qp > UINT32_MAX) {
    ++reasons_[kBadQpNum];
    return;
  }
  if (!parse_i64(cell(kColDuration), &duration) || duration < 0) {
    ++reasons_[kBadDuration];
    return;
  }
  std::string_view len = cell(kColLength);
  if (!parse_u64(len, &length) && columns_[kColLength] >= 0 && probing_blank(len)) blank_bytes_ = true;
  // A QP has no communicator: the rank names the process, as in a one-communicator file.
  uint32_t process = static_cast<uint32_t>(place(identity(rank), 0));
  QpStat& s = data_.qp_stat(data_.processes[process].host, rank, device, static_cast<uint32_t>(qp), process);
  // `ts` is the completion: with it, the sends that found their queue pair idle are told apart
  // (in finish(), in completion order).
  int64_t end_ns = 0;
  const bool timed = columns_[kColTs] >= 0 && parse_i64(cell(kColTs), &end_ns) && end_ns >= duration;
  s.add(length, static_cast<uint64_t>(duration), timed ? std::optional<int64_t>(end_ns) : std::nullopt);
  ++kept_rows_;
}

void ProbingRows::inflight_row() {
  InflightRecord f;
  if (!read_rank(&f.rank) || !read_comm(&f.comm_hash)) return;
  std::string_view kind = cell(kColKind);
  if (kind == "coll") f.kind = InflightKind::kCollective;
  else if (kind == "p2p") f.kind = InflightKind::kP2p;
  else if (kind == "proxy_op") f.kind = InflightKind::kProxyOp;
  else {
    ++reasons_[kBadKind];
    return;
  }
  int64_t age = -1;
  if (!parse_i64(cell(kColAge), &age) || age < 0) {
    ++reasons_[kBadAge];
    return;
  }
  f.age_ns = static_cast<uint64_t>(age);
  // Sentinels (-1) where a field does not apply; a blank or bad cell is taken as unknown.
  if (!read_i32(kColChannel, -1, &f.channel)) f.channel = -1;
  if (!read_i32(kColPeer, -1, &f.peer)) f.peer = -1;
  int32_t is_send = -1;
  f.is_send = read_i32(kColIsSend, -1, &is_send) ? static_cast<int8_t>(is_send > 0 ? 1 : is_send) : -1;
  int seq = read_seq(&f.seq);
  if (seq < 0) return;
  if (seq == 0) {
    f.seq_unknown = 1;
    if (f.kind == InflightKind::kCollective) blank_seq_ = true;
  }
  f.process = identity(f.rank);
  member(f.comm_hash, f.rank, f.process, f.kind == InflightKind::kCollective, f.seq, !f.seq_unknown);
  inflight_.push_back(f);
}

void ProbingRows::coll_perf_row() {
  KernelStartRecord k;
  if (!read_rank(&k.rank) || !read_comm(&k.comm_hash)) return;
  int64_t ts = -1, exec = -1;
  if (!parse_i64(cell(kColTs), &ts) || ts <= 0) {
    ++reasons_[kBadTs];
    return;
  }
  if (!parse_i64(cell(kColExecTime), &exec) || exec <= 0 || exec > ts) {
    ++reasons_[kBadExecTime];
    return;
  }
  int64_t is_p2p = -1;
  if (!parse_i64(cell(kColIsP2p), &is_p2p)) is_p2p = names_p2p(cell(kColCollFunc)) ? 1 : 0;
  k.is_p2p = is_p2p > 0 ? 1 : 0;
  k.tree = names_tree_algorithm(cell(kColAlgo)) ? 1 : 0;
  int seq = read_seq(&k.seq);
  if (seq < 0) return;
  const bool collective = !k.is_p2p;
  if (seq == 0 && collective) {
    // A collective of unknown sequence cannot be lined up with its node peers' kernels:
    // it counts for its GPU's gaps only, as p2p kernels do (its rank is still a member of
    // a collective, without a known sequence).
    k.is_p2p = 1;
    blank_seq_ = true;
  }
  k.start_gpu_clk_ns = static_cast<uint64_t>(ts - exec);
  k.stop_gpu_clk_ns = static_cast<uint64_t>(ts);
  std::string_view source = cell(kColTimingSource);
  if (!source.empty() && timing_sources_.size() < 6 &&
      std::find(timing_sources_.begin(), timing_sources_.end(), source) == timing_sources_.end())
    timing_sources_.emplace_back(source.substr(0, 16));
  // Only the kernel's own events time the kernel: probing falls back to its proxy ops' window
  // (which opens when the proxy starts, before the GPU where hosts run ahead) or to the host's
  // enqueue call, and a row that lost child events to probing's pool may miss the kernel's
  // ends. Such a row still orders its GPU's kernels.
  int64_t dropped = 0;
  const bool kernel_source = source.empty() || source == "kernel_gpu" || source == "kernel_ch";
  if (!kernel_source || (parse_i64(cell(kColPoolDropped), &dropped) && dropped > 0)) {
    k.window_unknown = 1;
    ++windows_unknown_;
  }
  k.process = identity(k.rank);
  member(k.comm_hash, k.rank, k.process, collective, k.seq, seq != 0);
  data_.kernel_starts.push_back(k);
}

// A rank's profiler counters: it names no process of its own (a rank with no other row is no
// process of the job), only what that rank's tables may miss.
void ProbingRows::profiler_counters_row() {
  int32_t rank = -1;
  if (!read_rank(&rank)) return;
  uint64_t exhausted = 0, errors = 0, overwritten = 0;
  if (!parse_u64(cell(kColPoolExhausted), &exhausted)) {
    ++reasons_[kBadPoolExhausted];
    return;
  }
  if (!parse_u64(cell(kColWriteErrors), &errors)) errors = 0;  // an older table without it
  if (!parse_u64(cell(kColRowsOverwritten), &overwritten)) overwritten = 0;
  const std::string_view tagged = cell(kColHost);
  counters_.add(tagged.empty() ? host_ : std::string(tagged), rank, exhausted, errors, overwritten);
  ++kept_rows_;
}

// The process of identity `id` for a row of communicator `comm`, added on first use; -1
// when the row cannot be placed (a second communicator without anything naming processes).
int64_t ProbingRows::place(uint32_t id, uint64_t comm) {
  const Identity& k = ids_[id];
  const bool named = k.pid > 0 || k.global_rank >= 0;
  const bool several = comms_.size() > 1;
  const bool label = !named && several && k.tp >= 0;
  if (!named && several && !label && (comm != kept_comm_ || comm == 0)) return -1;
  if (id_process_.size() <= id) id_process_.resize(ids_.size(), -1);
  if (id_process_[id] >= 0) return id_process_[id];
  // With one communicator in the file, its rank column names the process (probing's rank
  // is the torch.distributed rank); with several, only pid, _rank or tp/pp/dp do.
  int64_t rank = k.global_rank >= 0 ? k.global_rank : (several ? -1 : k.rank);
  std::string text;
  if (label) {
    text = "tp=" + std::to_string(k.tp) + ",pp=" + std::to_string(k.pp) + ",dp=" + std::to_string(k.dp);
    labelled_ = true;
  } else if (!named && several) {
    rank = k.rank;  // the kept communicator's ranks, as in a one-communicator file
  }
  id_process_[id] = data_.process_index(hosts_[k.host], k.pid > 0 ? k.pid : -1, rank, text);
  return id_process_[id];
}

// With several communicators and rows that nothing but their rank names, keep the
// communicator with the most ranks (then the most rows, then the lowest hash).
void ProbingRows::choose_kept_communicator() {
  if (comms_.size() < 2) return;
  std::map<uint64_t, std::pair<std::set<int32_t>, uint64_t>> unnamed;  // comm -> (ranks, rows)
  auto count = [&](uint32_t id, uint64_t comm, int32_t rank) {
    const Identity& k = ids_[id];
    if (k.pid > 0 || k.global_rank >= 0 || k.tp >= 0 || comm == 0) return;
    auto& [ranks, rows] = unnamed[comm];
    ranks.insert(rank);
    ++rows;
  };
  for (size_t i = ops_begin_; i < data_.ops.size(); ++i) count(data_.ops[i].process, data_.ops[i].comm_hash, data_.ops[i].rank);
  for (size_t i = kernels_begin_; i < data_.kernel_starts.size(); ++i)
    count(data_.kernel_starts[i].process, data_.kernel_starts[i].comm_hash, data_.kernel_starts[i].rank);
  for (const InflightRecord& f : inflight_) count(f.process, f.comm_hash, f.rank);
  std::tuple<size_t, uint64_t> best{0, 0};
  for (const auto& [comm, seen] : unnamed) {
    std::tuple<size_t, uint64_t> mine{seen.first.size(), seen.second};
    if (mine > best) best = mine, kept_comm_ = comm;
  }
  kept_ranks_ = static_cast<int>(std::get<0>(best));
}

template <class Record>
void ProbingRows::place_all(std::vector<Record>& records, size_t begin) {
  id_process_.resize(ids_.size(), -1);
  if (comms_.size() < 2) {  // one communicator: every row is placed by its identity alone
    for (size_t i = begin; i < records.size(); ++i) {
      int64_t process = id_process_[records[i].process];
      records[i].process = static_cast<uint32_t>(process >= 0 ? process : place(records[i].process, 0));
    }
    kept_rows_ += records.size() - begin;
    return;
  }
  size_t out = begin;
  for (size_t i = begin; i < records.size(); ++i) {
    int64_t process = place(records[i].process, records[i].comm_hash);
    if (process < 0) {
      ++reasons_[kOtherCommunicator];
      continue;
    }
    records[i].process = static_cast<uint32_t>(process);
    if (out != i) records[out] = records[i];
    ++out;
  }
  kept_rows_ += out - begin;
  records.resize(out);
}

// (communicator, rank) of a kept row, summed per identity: LocalData learns each member
// once, in finish(), instead of once per row.
void ProbingRows::member(uint64_t comm, int32_t rank, uint32_t id, bool collective, uint64_t seq,
                         bool seq_known) {
  note_comm(comm);
  if (last_member_ >= members_.size() || members_[last_member_].comm != comm ||
      members_[last_member_].rank != rank || members_[last_member_].id != id) {
    auto [it, added] = member_lookup_.emplace(MemberKey{comm, rank, id}, members_.size());
    if (added) members_.push_back({comm, rank, id});
    last_member_ = it->second;
  }
  Member& m = members_[last_member_];
  m.collective = m.collective || collective;
  if (collective && seq_known) {
    m.newest_seq = m.has_seq ? std::max(m.newest_seq, seq) : seq;
    m.has_seq = true;
  }
}

void ProbingRows::note_members() {
  for (const Member& m : members_) {
    int64_t process = place(m.id, m.comm);
    if (process >= 0)
      data_.note_comm_rank(m.comm, m.rank, static_cast<uint32_t>(process), m.collective, m.newest_seq, m.has_seq);
  }
}

// Several snapshots of one operation are one record with the largest age.
void ProbingRows::merge_inflight() {
  std::map<std::tuple<uint32_t, uint64_t, int32_t, uint8_t, uint64_t, int32_t, int32_t, int8_t>, size_t> seen;
  kept_rows_ = 0;
  for (const InflightRecord& f : inflight_) {
    auto key = std::make_tuple(f.process, f.comm_hash, f.rank, static_cast<uint8_t>(f.kind), f.seq,
                               f.channel, f.peer, f.is_send);
    auto [it, added] = seen.emplace(key, data_.inflight.size());
    if (added) {
      data_.inflight.push_back(f);
      ++kept_rows_;
    } else {
      data_.inflight[it->second].age_ns = std::max(data_.inflight[it->second].age_ns, f.age_ns);
    }
  }
  inflight_.clear();
}

void ProbingRows::write_notes() {
  std::vector<std::string>& notes = report_.notes;
  const uint64_t others = reasons_[kOtherCommunicator];
  if (others > 0)
    notes.push_back(std::to_string(comms_.size()) +
                    " communicators, no pid, _rank or tp/pp/dp to tell their ranks apart: kept comm " +
                    hex(kept_comm_) + " (" + std::to_string(kept_ranks_) + " ranks), rejected " +
                    std::to_string(others) + " rows of the others");
  if (labelled_)
    notes.push_back(std::to_string(comms_.size()) +
                    " communicators without pid or _rank: processes named by tp/pp/dp within the host");
  if (blank_comm_)
    notes.push_back("comm_hash blank (unsigned column not exported): rows taken as one unnamed communicator " +
                    hex(file_comm_) + " (hash of the file path)");
  if (blank_seq_)
    notes.push_back(table_ == ProbingTable::kCollPerf
                        ? "seq blank on collective rows (unsigned column not exported): their kernels count for "
                          "gaps only, no sequence window"
                        : "seq blank on collective rows (unsigned column not exported): sequence unknown, no "
                          "sequence window, every row kept");
  if (blank_bytes_)
    notes.push_back(std::string(table_ == ProbingTable::kNetQp ? "length" : "trans_bytes") +
                    " blank (unsigned column not exported): bytes unknown (0)");
  if (negative_comm_)
    notes.push_back("negative comm_hash (a CAST AS BIGINT export): read back as the same 64 bits");
  if (table_ == ProbingTable::kCollPerf && kept_rows_ > 0) {
    std::string sources;
    for (const std::string& s : timing_sources_) sources += (sources.empty() ? "" : ",") + s;
    notes.push_back("kernel clock taken from coll_perf: start = ts - exec_time_ns, stop = ts (timing_source " +
                    (sources.empty() ? std::string("not given") : sources) + ")");
  }
  if (windows_unknown_ > 0)
    notes.push_back(std::to_string(windows_unknown_) +
                    " coll_perf row(s) timed by proxy ops or the enqueue call, or with pool_events_dropped > 0: no "
                    "kernel window, they only order their GPU's kernels");
  for (std::string& n : extra_notes_) notes.push_back(std::move(n));
}

void ProbingRows::finish() {
  choose_kept_communicator();
  if (table_ == ProbingTable::kProxyOps) {
    place_all(data_.ops, ops_begin_);
  } else if (table_ == ProbingTable::kCollPerf) {
    place_all(data_.kernel_starts, kernels_begin_);
  } else if (table_ == ProbingTable::kInflightOps) {
    place_all(inflight_, 0);
    merge_inflight();
  } else if (table_ == ProbingTable::kNetQp) {
    for (QpStat& q : data_.qp_stats) q.fold_idle_sends();
  } else if (table_ == ProbingTable::kProfilerCounters) {
    for (const auto& who : counters_.losing_ranks()) data_.ranks_losing_events.insert(who);
    for (std::string& note : counters_.notes()) extra_notes_.push_back(std::move(note));
  }
  note_members();
  report_.records += kept_rows_;
  for (int r = 0; r < kReasonCount; ++r)
    if (reasons_[r]) report_.reject(kReasonText[r], reasons_[r]);
  write_notes();
  report_.layout = table_name(table_);
  if (report_.records == 0 && report_.error.empty()) {
    if (table_ == ProbingTable::kInflightOps && report_.rejected == 0)
      report_.notes.push_back("no rows: no operation was in flight at a watchdog snapshot");
    else if (table_ != ProbingTable::kUnknown && (report_.rejected > 0 || table_ != ProbingTable::kProxyOps))
      report_.error = std::string("no usable nccl.") + table_name(table_) + " row";
    else
      report_.error = std::string("empty ") + syntax_ + " file";
  }
  data_.inputs.push_back(std::move(report_));
}

}  // namespace culprit
