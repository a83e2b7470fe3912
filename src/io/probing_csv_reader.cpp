#include "io/probing_csv_reader.hpp"

#include <array>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "io/line_reader.hpp"
#include "io/trace_line.hpp"

namespace culprit {
namespace {

// The nccl.proxy_ops columns in export order (used when a file has no header row).
const std::array<const char*, 18> kProxyOpsColumns = {
    "ts", "rank", "tp_rank", "pp_rank", "dp_rank", "comm_hash", "coll_func", "seq", "channel_id",
    "peer", "is_send", "n_steps", "trans_bytes", "send_gpu_wait_ns", "send_peer_wait_ns",
    "send_wait_ns", "recv_wait_ns", "recv_flush_wait_ns"};
// The nccl.net_qp columns in export order.
const std::array<const char*, 8> kNetQpColumns = {"ts",     "rank",   "device", "qp_num",
                                                  "wr_id",  "opcode", "length", "duration_ns"};
// probing's global fan-out appends these.
const std::array<const char*, 6> kFederationColumns = {"_host",       "_addr",       "_rank",
                                                       "_node_rank", "_local_rank", "_role"};

inline std::string_view trim_field(std::string_view f) {
  while (!f.empty() && (f.front() == ' ' || f.front() == '"')) f.remove_prefix(1);
  while (!f.empty() && (f.back() == ' ' || f.back() == '"' || f.back() == '\r')) f.remove_suffix(1);
  return f;
}

void split_csv(std::string_view line, std::vector<std::string_view>& fields) {
  fields.clear();
  if (std::memchr(line.data(), '"', line.size()) == nullptr) {
    // No quoting (the common case): split at every comma in one pass.
    const char* p = line.data();
    const char* end = p + line.size();
    const char* start = p;
    for (;; ++p) {
      if (p == end || *p == ',') {
        std::string_view f(start, static_cast<size_t>(p - start));
        if (!f.empty() && (f.front() == ' ' || f.back() == ' ' || f.back() == '\r')) f = trim_field(f);
        fields.push_back(f);
        if (p == end) break;
        start = p + 1;
      }
    }
    return;
  }
  size_t start = 0;
  bool quoted = false;
  for (size_t i = 0; i <= line.size(); ++i) {
    if (i < line.size() && line[i] == '"') quoted = !quoted;
    if (i == line.size() || (line[i] == ',' && !quoted)) {
      fields.push_back(trim_field(line.substr(start, i - start)));
      start = i + 1;
    }
  }
}

enum class Table { kUnknown, kProxyOps, kNetQp };

enum Reason : int {
  kTooFewColumns,
  kBadRank,
  kBadCommHash,
  kBadChannel,
  kBadPeer,
  kBadIsSend,
  kBadDevice,
  kBadQpNum,
  kBadDuration,
  kReasonCount,
};

constexpr std::array<const char*, kReasonCount> kReasonText = {
    "row with fewer columns than the header",
    "row without a valid rank",
    "row without a valid comm_hash",
    "row without a valid channel_id",
    "row without a valid peer",
    "row without a valid is_send",
    "net_qp row without a valid device",
    "net_qp row without a valid qp_num",
    "net_qp row without a valid duration_ns",
};

class CsvParser {
 public:
  CsvParser(const std::string& host, LocalData& data, InputReport& report)
      : host_(host), data_(data), report_(report) {}

  void line(std::string_view text) {
    if (text.empty() || text == "\r") return;
    split_csv(text, fields_);
    if (columns_.empty()) {
      if (is_header(fields_)) {
        for (std::string_view f : fields_) columns_.emplace_back(f);
        resolve();
        return;
      }
      // No header: the table's export order, with the federation columns when the row is
      // long enough to hold them.
      if (fields_.size() >= kProxyOpsColumns.size()) {
        columns_.assign(kProxyOpsColumns.begin(), kProxyOpsColumns.end());
        if (fields_.size() >= kProxyOpsColumns.size() + kFederationColumns.size())
          columns_.insert(columns_.end(), kFederationColumns.begin(), kFederationColumns.end());
      } else {
        columns_.assign(kNetQpColumns.begin(), kNetQpColumns.end());
        if (fields_.size() >= kNetQpColumns.size() + kFederationColumns.size())
          columns_.insert(columns_.end(), kFederationColumns.begin(), kFederationColumns.end());
      }
      resolve();
    } else if (fields_.size() == columns_.size() && !fields_.empty() && fields_[0] == columns_[0] &&
               is_header(fields_)) {
      return;  // the header again (exports concatenated with cat)
    }
    if (table_ == Table::kProxyOps) proxy_op_row();
    else if (table_ == Table::kNetQp) net_qp_row();
  }

  void finish() {
    for (int r = 0; r < kReasonCount; ++r)
      if (reasons_[r]) report_.reject(kReasonText[r], reasons_[r]);
    report_.layout = table_ == Table::kNetQp ? "net_qp" : table_ == Table::kProxyOps ? "proxy_ops" : "";
    if (report_.records == 0 && report_.error.empty()) {
      if (table_ == Table::kNetQp) report_.error = "no usable nccl.net_qp row";
      else report_.error = report_.rejected > 0 ? "no usable nccl.proxy_ops row" : "empty CSV file";
    }
  }

 private:
  // A header row names the columns: it has a field "rank" (both tables do) or starts with
  // something that is not a number.
  static bool is_header(const std::vector<std::string_view>& fields) {
    for (std::string_view f : fields)
      if (f == "rank") return true;
    int64_t probe = 0;
    return !fields.empty() && !parse_i64(fields[0], &probe);
  }

  int col(const char* name) const {
    for (size_t i = 0; i < columns_.size(); ++i)
      if (columns_[i] == name) return static_cast<int>(i);
    return -1;
  }

  void resolve() {
    c_rank_ = col("rank");
    c_comm_ = col("comm_hash");
    c_func_ = col("coll_func");
    c_seq_ = col("seq");
    c_channel_ = col("channel_id");
    c_peer_ = col("peer");
    c_send_ = col("is_send");
    c_steps_ = col("n_steps");
    c_bytes_ = col("trans_bytes");
    c_phase_[kSendGpuWait] = col("send_gpu_wait_ns");
    c_phase_[kSendPeerWait] = col("send_peer_wait_ns");
    c_phase_[kSendWait] = col("send_wait_ns");
    c_phase_[kRecvWait] = col("recv_wait_ns");
    c_phase_[kRecvFlushWait] = col("recv_flush_wait_ns");
    c_phase_[kRecvGpuWait] = col("recv_gpu_wait_ns");  // not in probing; kept if a site adds it
    c_host_ = col("_host");
    c_pid_ = col("pid");
    c_global_rank_ = col("_rank");
    c_device_ = col("device");
    c_qp_ = col("qp_num");
    c_length_ = col("length");
    c_duration_ = col("duration_ns");
    if (c_rank_ >= 0 && c_comm_ >= 0 && c_peer_ >= 0 && c_send_ >= 0 && c_channel_ >= 0) {
      table_ = Table::kProxyOps;
    } else if (c_rank_ >= 0 && c_qp_ >= 0 && c_duration_ >= 0) {
      table_ = Table::kNetQp;
    } else {
      table_ = Table::kUnknown;
      report_.error =
          "CSV header has neither the nccl.proxy_ops columns (rank, comm_hash, channel_id, peer, "
          "is_send) nor the nccl.net_qp ones";
    }
    min_columns_ = 0;
    for (int c : {c_rank_, c_comm_, c_channel_, c_peer_, c_send_, c_qp_, c_duration_})
      min_columns_ = std::max(min_columns_, c + 1);
  }

  std::string_view field(int c) const {
    return c >= 0 && static_cast<size_t>(c) < fields_.size() ? fields_[c] : std::string_view();
  }

  // The process a row belongs to: (host, pid) with the pid column when there is one, else
  // the global rank (_rank, else rank) stored as a negative pid.
  uint32_t process_of(int64_t rank) {
    std::string_view host = c_host_ >= 0 ? field(c_host_) : std::string_view();
    if (host.empty()) host = host_;
    int64_t pid = 0, global_rank = -1;
    if (!(c_pid_ >= 0 && parse_i64(field(c_pid_), &pid) && pid > 0)) {
      if (!(c_global_rank_ >= 0 && parse_i64(field(c_global_rank_), &global_rank))) global_rank = rank;
      pid = -1 - global_rank;
    }
    if (host != last_host_ || !has_last_) {
      last_host_.assign(host.data(), host.size());
      pid_process_.clear();
      has_last_ = true;
    }
    auto it = pid_process_.find(pid);
    if (it != pid_process_.end()) return it->second;
    uint32_t process = data_.process_index(last_host_, pid);
    pid_process_.emplace(pid, process);
    return process;
  }

  void proxy_op_row() {
    if (static_cast<int>(fields_.size()) < min_columns_) {
      ++reasons_[kTooFewColumns];
      return;
    }
    ProxyOpRecord r;
    int64_t rank = -1, peer = -1, channel = -1, is_send = -1, steps = 0;
    if (!parse_i64(field(c_rank_), &rank) || rank < 0 || rank > INT32_MAX) {
      ++reasons_[kBadRank];
      return;
    }
    if (!parse_u64(field(c_comm_), &r.comm_hash)) {
      ++reasons_[kBadCommHash];
      return;
    }
    if (!parse_i64(field(c_channel_), &channel) || channel < 0 || channel > INT32_MAX) {
      ++reasons_[kBadChannel];
      return;
    }
    if (!parse_i64(field(c_peer_), &peer) || peer < 0 || peer > INT32_MAX) {
      ++reasons_[kBadPeer];
      return;
    }
    if (!parse_i64(field(c_send_), &is_send)) {
      ++reasons_[kBadIsSend];
      return;
    }
    parse_i64(field(c_steps_), &steps);
    parse_u64(field(c_seq_), &r.seq);
    parse_u64(field(c_bytes_), &r.bytes);
    for (int p = 0; p < kPhaseCount; ++p) {
      int64_t v = 0;
      if (c_phase_[p] >= 0 && parse_i64(field(c_phase_[p]), &v) && v > 0)
        r.phase_ns[p] = static_cast<uint64_t>(v);
    }
    std::string_view func = field(c_func_);
    r.is_p2p = (func.find("Send") != std::string_view::npos ||
                func.find("Recv") != std::string_view::npos) ? 1 : 0;
    r.rank = static_cast<int32_t>(rank);
    r.peer = static_cast<int32_t>(peer);
    r.channel = static_cast<int32_t>(channel);
    r.is_send = is_send != 0 ? 1 : 0;
    r.steps = static_cast<uint32_t>(steps > 0 && steps <= INT32_MAX ? steps : 1);
    // Identity: probing rows carry no pid unless the site added one; the global rank is
    // the next best stable name for a process of that host (stored as a negative pid).
    r.process = process_of(rank);
    data_.note_comm_rank(r.comm_hash, r.rank, r.process, !r.is_p2p, r.seq);
    data_.ops.push_back(r);
    ++report_.records;
  }

  void net_qp_row() {
    if (static_cast<int>(fields_.size()) < min_columns_) {
      ++reasons_[kTooFewColumns];
      return;
    }
    int64_t rank = -1, device = -1, duration = -1;
    uint64_t qp = 0, length = 0;
    if (!parse_i64(field(c_rank_), &rank) || rank < 0 || rank > INT32_MAX) {
      ++reasons_[kBadRank];
      return;
    }
    if (c_device_ >= 0 && (!parse_i64(field(c_device_), &device) || device < -1 || device > INT32_MAX)) {
      ++reasons_[kBadDevice];
      return;
    }
    if (!parse_u64(field(c_qp_), &qp) || qp > UINT32_MAX) {
      ++reasons_[kBadQpNum];
      return;
    }
    if (!parse_i64(field(c_duration_), &duration) || duration < 0) {
      ++reasons_[kBadDuration];
      return;
    }
    parse_u64(field(c_length_), &length);
    uint32_t process = process_of(rank);
    QpStat& s = data_.qp_stat(data_.processes[process].host, static_cast<int32_t>(rank),
                              static_cast<int32_t>(device), static_cast<uint32_t>(qp), process);
    s.add(length, static_cast<uint64_t>(duration));
    ++report_.records;
  }

  const std::string& host_;
  LocalData& data_;
  InputReport& report_;
  std::vector<std::string> columns_;
  std::vector<std::string_view> fields_;
  Table table_ = Table::kUnknown;
  int min_columns_ = 0;
  int c_rank_ = -1, c_comm_ = -1, c_func_ = -1, c_seq_ = -1, c_channel_ = -1, c_peer_ = -1;
  int c_send_ = -1, c_steps_ = -1, c_bytes_ = -1, c_host_ = -1, c_pid_ = -1, c_global_rank_ = -1;
  int c_device_ = -1, c_qp_ = -1, c_length_ = -1, c_duration_ = -1;
  int c_phase_[kPhaseCount] = {-1, -1, -1, -1, -1, -1};
  std::string last_host_;                              // host of the previous row
  std::unordered_map<int64_t, uint32_t> pid_process_;  // its pids' process indices
  bool has_last_ = false;
  uint64_t reasons_[kReasonCount] = {};
};

void finish_file(const LineReadResult& lines, InputReport& report) {
  if (lines.overlong_lines) report.reject("line longer than 1 MiB", lines.overlong_lines);
  if (!lines.opened || !lines.error.empty())
    report.error = "cannot read: " + (lines.error.empty() ? std::string("unknown error") : lines.error);
}

}  // namespace

void read_probing_csv_file(const std::string& path, const std::string& host, LocalData& data) {
  InputReport report;
  report.host = host;
  report.path = path;
  report.format = "probing-csv";
  CsvParser parser(host, data, report);
  LineReadResult lines = for_each_line(path, [&](std::string_view l) { parser.line(l); });
  finish_file(lines, report);
  parser.finish();
  data.inputs.push_back(std::move(report));
}

void read_probing_csv_buffer(std::string_view content, const std::string& name,
                             const std::string& host, LocalData& data) {
  InputReport report;
  report.host = host;
  report.path = name;
  report.format = "probing-csv";
  CsvParser parser(host, data, report);
  LineReadResult lines = for_each_line_in(content, [&](std::string_view l) { parser.line(l); });
  finish_file(lines, report);
  parser.finish();
  data.inputs.push_back(std::move(report));
}

}  // namespace culprit
