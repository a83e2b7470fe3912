#include "io/discover.hpp"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <system_error>
#include <thread>

#include "io/flight_recorder_reader.hpp"
#include "io/nccl_trace_reader.hpp"
#include "io/probing_csv_reader.hpp"
#include "io/probing_json_reader.hpp"
#include "io/shard_reader.hpp"

namespace culprit {
namespace fs = std::filesystem;

namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size())
    s.replace(pos, from.size(), to);
  return s;
}

std::string sniff(const std::string& path, size_t n = 4096) {
  std::ifstream in(path, std::ios::binary);
  std::string head(n, '\0');
  in.read(head.data(), static_cast<std::streamsize>(n));
  head.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  return head;
}

// An input directory that cannot be listed is reported like a file that cannot be read
// (a row of /inputs with its error), so that its host's data is known to be missing.
constexpr const char* kUnreadableDir = "unreadable-dir";

void add_files_of(const fs::path& dir, const std::string& host, const std::string& forced,
                  int depth, std::vector<InputFile>& out) {
  std::error_code ec;
  std::vector<fs::path> entries;
  fs::directory_iterator it(dir, ec);
  for (fs::directory_iterator end; !ec && it != end; it.increment(ec)) entries.push_back(it->path());
  if (ec) out.push_back({host, dir.string(), kUnreadableDir});
  std::sort(entries.begin(), entries.end());
  for (const fs::path& p : entries) {
    std::error_code ec2;
    if (fs::is_directory(p, ec2)) {
      if (depth > 0) add_files_of(p, host, forced, depth - 1, out);
      continue;
    }
    if (!fs::is_regular_file(p, ec2)) continue;
    std::string format = detect_format(p.string(), forced);
    if (!format.empty()) out.push_back({host, p.string(), format});
  }
}

std::string directory_problem(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return "input directory " + dir + " does not exist";
  if (!fs::is_directory(dir, ec)) return "input path " + dir + " is not a directory";
  fs::directory_iterator it(dir, ec);
  if (ec) return "cannot read input directory " + dir + ": " + ec.message();
  return "";
}

}  // namespace

std::string expand_input_template(const std::string& tmpl, const std::string& host, int rank,
                                  const std::string& job) {
  std::string s = replace_all(tmpl, "{host}", host);
  s = replace_all(s, "{rank}", std::to_string(rank));
  return replace_all(s, "{job}", job);
}

namespace {

constexpr const char* kSpace = " \t\r\n";

// `"name"` used as a key (followed by a colon) somewhere in `text`.
bool has_json_key(std::string_view text, std::string_view name) {
  for (size_t at = text.find(name); at != std::string_view::npos; at = text.find(name, at + 1)) {
    if (at == 0 || text[at - 1] != '"' || at + name.size() >= text.size() || text[at + name.size()] != '"')
      continue;
    size_t colon = text.find_first_not_of(kSpace, at + name.size() + 1);
    if (colon != std::string_view::npos && text[colon] == ':') return true;
  }
  return false;
}

// probing's JSON export: an array of row objects keyed by column names (or `[]`, an export
// without rows). NCCL's traces are arrays too, of event objects with a "ph" key.
bool is_probing_json(std::string_view head, size_t i) {
  size_t j = head[i] == '[' ? head.find_first_not_of(kSpace, i + 1) : i;
  if (j == std::string_view::npos) return false;
  if (head[i] == '[' && head[j] == ']') return true;
  if (head[j] != '{' || has_json_key(head, "ph")) return false;
  return has_json_key(head, "rank") || has_json_key(head, "comm_hash") || has_json_key(head, "qp_num");
}

// What the first bytes of a file say it is: "nccl-json", "probing-json", "probing-csv" or ""
// (unclear).
std::string format_of_content(std::string_view head) {
  if (head.substr(0, 3) == "\xEF\xBB\xBF") head.remove_prefix(3);  // UTF-8 byte order mark
  size_t i = head.find_first_not_of(kSpace);
  if (i == std::string_view::npos) return "";
  std::string_view first_line = head.substr(i, head.find('\n', i) - i);
  if ((head[i] == '[' || head[i] == '{') && is_probing_json(head, i)) return "probing-json";
  if ((head[i] == '[' || head[i] == '{') && head.find("\"ph\"") != std::string_view::npos)
    return "nccl-json";
  if (first_line.find(',') != std::string_view::npos &&
      (first_line.find("comm_hash") != std::string_view::npos ||
       first_line.find("qp_num") != std::string_view::npos))
    return "probing-csv";
  return "";
}

// 2.23-2.26 trace names: <dump>-<hostname>-<tid>.txt
bool looks_like_old_trace_name(const std::string& path) {
  std::string stem = fs::path(path).stem().string();
  size_t dash = stem.rfind('-');
  if (dash == std::string::npos || dash + 1 >= stem.size() || stem.find('-') == dash) return false;
  return std::all_of(stem.begin() + static_cast<std::ptrdiff_t>(dash) + 1, stem.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

namespace {

// Flight Recorder dumps are named `<prefix><global rank>`, usually without an extension.
// Their content decides; an empty one counts when its name has one of PyTorch's prefixes
// (the rank wrote nothing: the reader says so).
bool is_flight_recorder_dump(const std::string& path, const std::string& ext) {
  if (flight_recorder_rank_of_name(path) < 0) return false;
  if (!ext.empty() && ext != ".json" && ext != ".pkl" && ext != ".pickle" &&
      !std::all_of(ext.begin() + 1, ext.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  const std::string name = fs::path(path).filename().string();
  const bool pytorch_name = name.starts_with("nccl_trace_rank_") || name.starts_with("_dump_");
  std::string head = sniff(path, 4096);
  if (looks_like_flight_recorder(head)) return true;
  // Nothing, or (schema 1.x in JSON) an empty list of entries: a rank that wrote nothing.
  const size_t first = head.find_first_not_of(" \t\r\n"), last = head.find_last_not_of(" \t\r\n");
  const bool blank = first == std::string::npos || head.substr(first, last - first + 1) == "[]";
  return blank && pytorch_name;
}

}  // namespace

std::string detect_format(const std::string& path, const std::string& forced) {
  std::string ext = fs::path(path).extension().string();
  bool candidate = ext == ".json" || ext == ".txt" || ext == ".csv" || ext == ".shard";
  if (forced == "flight-recorder") return flight_recorder_rank_of_name(path) >= 0 ? forced : "";
  if (!forced.empty() && forced != "auto") return candidate ? forced : "";
  if (is_flight_recorder_dump(path, ext)) return "flight-recorder";
  if (!candidate) return "";
  // Live-capture shards are known by their magic (a *.shard without it is still read as a
  // shard, so that the reader names what is wrong with it).
  if (ext == ".shard" || is_shard_file(path)) return "shard";
  // The content wins over the extension when it is clear (an export saved under the
  // other name); an unclear or unreadable file goes by its extension, so that the reader
  // names what is wrong with it.
  std::string head = sniff(path, 1024);
  std::string by_content = format_of_content(head);
  if (!by_content.empty()) return by_content;
  if (ext == ".csv") return "probing-csv";
  if (ext == ".txt") {
    // Only traces of 2.23-2.26 end in .txt: other text files are not inputs.
    if (head.find("\"ph\"") != std::string::npos) return "nccl-json";
    std::ifstream probe(path, std::ios::binary);
    return !probe && looks_like_old_trace_name(path) ? "nccl-json" : "";
  }
  return "nccl-json";
}

Discovery discover_node_local(const std::string& dir, const std::string& host,
                              const std::string& forced_format) {
  Discovery d;
  d.error = directory_problem(dir);
  if (!d.error.empty()) return d;
  add_files_of(dir, host, forced_format, 1, d.files);
  return d;
}

std::vector<std::string> shared_hosts(const std::string& dir, std::string* error) {
  std::vector<std::string> hosts;
  std::string problem = directory_problem(dir);
  if (!problem.empty()) {
    if (error) *error = problem;
    return hosts;
  }
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    if (it->is_directory(ec2)) hosts.push_back(it->path().filename().string());
  }
  std::sort(hosts.begin(), hosts.end());
  return hosts;
}

Discovery discover_shared(const std::string& dir, int rank, int size,
                          const std::string& forced_format) {
  Discovery d;
  std::vector<std::string> hosts = shared_hosts(dir, &d.error);
  if (!d.error.empty()) return d;
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (static_cast<int>(i % static_cast<size_t>(size)) != rank) continue;
    add_files_of(fs::path(dir) / hosts[i], hosts[i], forced_format, 1, d.files);
  }
  // Flight Recorder dumps collected into one folder lie flat in it, their hosts unknown:
  // they are dealt round-robin too (each is one rank's whole state).
  std::vector<InputFile> flat;
  add_files_of(dir, "", forced_format, 0, flat);
  size_t dealt = 0;
  for (InputFile& f : flat) {
    if (f.format != "flight-recorder") continue;
    if (static_cast<int>(dealt++ % static_cast<size_t>(size)) == rank) d.files.push_back(std::move(f));
  }
  return d;
}

void read_one_file(const InputFile& f, LocalData& data) {
  if (f.format == "nccl-json") {
    read_nccl_trace_file(f.path, f.host, data);
  } else if (f.format == "probing-csv") {
    read_probing_csv_file(f.path, f.host, data);
  } else if (f.format == "probing-json") {
    read_probing_json_file(f.path, f.host, data);
  } else if (f.format == "shard") {
    read_shard_file(f.path, f.host, data);
  } else if (f.format == "flight-recorder") {
    read_flight_recorder_file(f.path, f.host, data);
  } else if (f.format == kUnreadableDir) {
    InputReport report;
    report.host = f.host;
    report.path = f.path;
    report.format = "unknown";
    std::error_code ec;
    fs::directory_iterator it(f.path, ec);
    report.error = "cannot read directory: " + (ec ? ec.message() : std::string("listing failed"));
    data.inputs.push_back(std::move(report));
  } else {
    InputReport report;
    report.host = f.host;
    report.path = f.path;
    report.format = f.format;
    report.error = "format '" + f.format + "' is not supported by this build";
    data.inputs.push_back(std::move(report));
  }
}

void read_input_files(const std::vector<InputFile>& files, LocalData& data, unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min<unsigned>(threads, static_cast<unsigned>(files.size()));
  if (threads <= 1) {
    for (const InputFile& f : files) read_one_file(f, data);
    return;
  }
  // Files in parallel, one LocalData per file, merged in file order so that the result does
  // not depend on scheduling.
  std::vector<LocalData> parts(files.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < files.size(); i = next++) read_one_file(files[i], parts[i]);
    });
  }
  for (std::thread& t : pool) t.join();
  for (LocalData& part : parts) data.absorb(std::move(part));
}

}  // namespace culprit
