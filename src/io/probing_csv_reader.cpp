#include "io/probing_csv_reader.hpp"

#include <array>
#include <cstring>
#include <vector>

#include "io/line_reader.hpp"
#include "io/probing_rows.hpp"
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
// The nccl.inflight_ops and nccl.coll_perf columns in export order.
const std::array<const char*, 11> kInflightColumns = {"ts",   "rank",       "comm_hash", "coll_func",
                                                      "seq",  "kind",       "channel_id", "peer",
                                                      "is_send", "start_ns", "age_ns"};
const std::array<const char*, 22> kCollPerfColumns = {
    "ts",  "rank",  "tp_rank", "pp_rank", "dp_rank", "comm_hash", "n_ranks", "coll_func",
    "seq", "is_p2p", "peer", "count", "msg_size_bytes", "dtype", "algo", "proto", "n_channels",
    "exec_time_ns", "enqueue_time_ns", "timing_source", "algobw_gbps", "pool_events_dropped"};
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

// A header row names the columns: it has a field "rank" (every table does) or starts with
// something that is not a number.
bool is_header(const std::vector<std::string_view>& fields) {
  for (std::string_view f : fields)
    if (f == "rank") return true;
  int64_t probe = 0;
  return !fields.empty() && !parse_i64(fields[0], &probe);
}

class CsvParser {
 public:
  CsvParser(const std::string& path, const std::string& host, LocalData& data)
      : rows_(path, host, "probing-csv", data) {}

  InputReport& report() { return rows_.report(); }

  void line(std::string_view text) {
    if (text.empty() || text == "\r") return;
    split_csv(text, fields_);
    if (header_.empty()) {
      if (is_header(fields_)) {
        for (std::string_view f : fields_) header_.emplace_back(f);
        name_columns();
        return;
      }
      header_ = export_order(fields_.size());
      name_columns();
      rows_.add_note("no header row: columns taken in the export order of nccl." + table_ +
                     " (" + std::to_string(header_.size()) + " columns)");
    } else if (fields_.size() == header_.size() && !fields_.empty() && fields_[0] == header_[0] &&
               is_header(fields_)) {
      return;  // the header again (exports concatenated with cat)
    }
    if (known_) rows_.row(fields_.data(), fields_.size());
  }

  void finish() { rows_.finish(); }

 private:
  // Without a header: the table's export order, told apart by the number of fields, with
  // the federation columns when the row is long enough to hold them.
  std::vector<std::string> export_order(size_t n) {
    auto with = [&](const auto& columns, const char* table) {
      table_ = table;
      std::vector<std::string> names(columns.begin(), columns.end());
      if (n >= columns.size() + kFederationColumns.size())
        names.insert(names.end(), kFederationColumns.begin(), kFederationColumns.end());
      return names;
    };
    const size_t fed = kFederationColumns.size();
    if (n == kInflightColumns.size() || n == kInflightColumns.size() + fed)
      return with(kInflightColumns, "inflight_ops");
    if (n == kCollPerfColumns.size() || n == kCollPerfColumns.size() + fed)
      return with(kCollPerfColumns, "coll_perf");
    if (n >= kProxyOpsColumns.size()) return with(kProxyOpsColumns, "proxy_ops");
    return with(kNetQpColumns, "net_qp");
  }

  void name_columns() {
    ProbingColumns columns;
    columns.fill(-1);
    for (size_t i = 0; i < header_.size(); ++i) {
      int c = probing_column(header_[i]);
      if (c >= 0 && columns[c] < 0) columns[c] = static_cast<int>(i);
    }
    known_ = rows_.set_columns(columns);
  }

  ProbingRows rows_;
  std::vector<std::string> header_;
  std::vector<std::string_view> fields_;
  std::string table_;
  bool known_ = false;
};

void finish_file(const LineReadResult& lines, InputReport& report) {
  if (lines.overlong_lines) report.reject("line longer than 1 MiB", lines.overlong_lines);
  if (!lines.opened || !lines.error.empty())
    report.error = "cannot read: " + (lines.error.empty() ? std::string("unknown error") : lines.error);
}

template <class ForEachLine>
void read_csv(const std::string& name, const std::string& host, LocalData& data, ForEachLine each) {
  CsvParser parser(name, host, data);
  LineReadResult lines = each([&](std::string_view l) { parser.line(l); });
  finish_file(lines, parser.report());
  parser.finish();
}

}  // namespace

void read_probing_csv_file(const std::string& path, const std::string& host, LocalData& data) {
  read_csv(path, host, data, [&](const auto& on_line) { return for_each_line(path, on_line); });
}

void read_probing_csv_buffer(std::string_view content, const std::string& name,
                             const std::string& host, LocalData& data) {
  read_csv(name, host, data, [&](const auto& on_line) { return for_each_line_in(content, on_line); });
}

}  // namespace culprit
