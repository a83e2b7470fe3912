#include "io/probing_csv_reader.hpp"

#include <array>
#include <vector>

#include "io/line_reader.hpp"
#include "io/trace_line.hpp"

namespace culprit {
namespace {

// The nccl.proxy_ops columns in export order (used when a file has no header row).
const std::array<const char*, 18> kDefaultColumns = {
    "ts", "rank", "tp_rank", "pp_rank", "dp_rank", "comm_hash", "coll_func", "seq", "channel_id",
    "peer", "is_send", "n_steps", "trans_bytes", "send_gpu_wait_ns", "send_peer_wait_ns",
    "send_wait_ns", "recv_wait_ns", "recv_flush_wait_ns"};

void split_csv(std::string_view line, std::vector<std::string_view>& fields) {
  fields.clear();
  size_t start = 0;
  bool quoted = false;
  for (size_t i = 0; i <= line.size(); ++i) {
    if (i < line.size() && line[i] == '"') quoted = !quoted;
    if (i == line.size() || (line[i] == ',' && !quoted)) {
      std::string_view f = line.substr(start, i - start);
      while (!f.empty() && (f.front() == ' ' || f.front() == '"')) f.remove_prefix(1);
      while (!f.empty() && (f.back() == ' ' || f.back() == '"' || f.back() == '\r')) f.remove_suffix(1);
      fields.push_back(f);
      start = i + 1;
    }
  }
}

class CsvParser {
 public:
  CsvParser(const std::string& host, LocalData& data, InputReport& report)
      : host_(host), data_(data), report_(report) {}

  void line(std::string_view text) {
    if (text.empty() || text == "\r") return;
    split_csv(text, fields_);
    if (columns_.empty()) {
      uint64_t probe = 0;
      if (!fields_.empty() && !parse_u64(fields_[0], &probe)) {  // a header row
        for (std::string_view f : fields_) columns_.emplace_back(f);
        resolve();
        return;
      }
      columns_.assign(kDefaultColumns.begin(), kDefaultColumns.end());
      resolve();
    }
    row();
  }

  void finish() {
    if (report_.records == 0 && report_.error.empty())
      report_.error = report_.rejected > 0 ? "no usable nccl.proxy_ops row" : "empty CSV file";
  }

 private:
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
    if (c_rank_ < 0 || c_comm_ < 0 || c_peer_ < 0 || c_send_ < 0 || c_channel_ < 0)
      report_.error = "CSV header lacks the nccl.proxy_ops columns (rank, comm_hash, channel_id, peer, is_send)";
  }

  std::string_view field(int c) const {
    return c >= 0 && static_cast<size_t>(c) < fields_.size() ? fields_[c] : std::string_view();
  }

  void row() {
    if (!report_.error.empty()) return;
    ProxyOpRecord r;
    int64_t rank = -1, peer = -1, channel = -1, is_send = -1, steps = 0;
    if (!parse_i64(field(c_rank_), &rank) || !parse_u64(field(c_comm_), &r.comm_hash) ||
        !parse_i64(field(c_peer_), &peer) || !parse_i64(field(c_channel_), &channel) ||
        !parse_i64(field(c_send_), &is_send) || rank < 0 || peer < 0 || channel < 0) {
      report_.reject("malformed row");
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
    r.steps = static_cast<uint32_t>(steps > 0 ? steps : 1);
    // Identity: probing rows carry no pid unless the site added one; the global rank is
    // the next best stable name for a process of that host (stored as a negative pid).
    std::string host = c_host_ >= 0 && !field(c_host_).empty() ? std::string(field(c_host_)) : host_;
    int64_t pid = 0, global_rank = -1;
    if (!(c_pid_ >= 0 && parse_i64(field(c_pid_), &pid) && pid > 0)) {
      if (!(c_global_rank_ >= 0 && parse_i64(field(c_global_rank_), &global_rank))) global_rank = rank;
      pid = -1 - global_rank;
    }
    r.process = data_.process_index(host, pid);
    data_.note_comm_rank(r.comm_hash, r.rank, r.process, !r.is_p2p, r.seq);
    data_.ops.push_back(r);
    ++report_.records;
  }

  const std::string& host_;
  LocalData& data_;
  InputReport& report_;
  std::vector<std::string> columns_;
  std::vector<std::string_view> fields_;
  int c_rank_ = -1, c_comm_ = -1, c_func_ = -1, c_seq_ = -1, c_channel_ = -1, c_peer_ = -1;
  int c_send_ = -1, c_steps_ = -1, c_bytes_ = -1, c_host_ = -1, c_pid_ = -1, c_global_rank_ = -1;
  int c_phase_[kPhaseCount] = {-1, -1, -1, -1, -1, -1};
};

}  // namespace

void read_probing_csv_file(const std::string& path, const std::string& host, LocalData& data) {
  InputReport report;
  report.host = host;
  report.path = path;
  report.format = "probing-csv";
  CsvParser parser(host, data, report);
  LineReadResult lines = for_each_line(path, [&](std::string_view l) { parser.line(l); });
  if (lines.overlong_lines) report.reject("line longer than 1 MiB", lines.overlong_lines);
  if (!lines.opened || !lines.error.empty()) report.error = "cannot read: " + lines.error;
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
  for_each_line_in(content, [&](std::string_view l) { parser.line(l); });
  parser.finish();
  data.inputs.push_back(std::move(report));
}

}  // namespace culprit
