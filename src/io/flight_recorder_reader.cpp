#include "io/flight_recorder_reader.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "core/flight_recorder_records.hpp"
#include "io/safe_unpickler.hpp"

namespace culprit {
namespace {

using json = nlohmann::json;

constexpr const char* kFormat = "flight-recorder";
// A dump holds at most the ring buffer (TORCH_NCCL_TRACE_BUFFER_SIZE entries, 2000 by
// default, a few hundred bytes each): anything far beyond is not a dump.
constexpr size_t kMaxDumpBytes = size_t{256} << 20;
constexpr size_t kMaxEntries = size_t{1} << 20;

// An integer however the encoding wrote it: a number, or (JSON form) a string of digits.
std::optional<int64_t> integer_of(const json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    return u > static_cast<uint64_t>(INT64_MAX) ? std::nullopt : std::optional<int64_t>(static_cast<int64_t>(u));
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (d >= -9.2e18 && d <= 9.2e18 && d == static_cast<double>(static_cast<int64_t>(d))) return static_cast<int64_t>(d);
    return std::nullopt;
  }
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    int64_t n = 0;
    auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (error != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
    return n;
  }
  return std::nullopt;
}

std::optional<int64_t> field_integer(const json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() ? std::nullopt : integer_of(*it);
}

std::string field_text(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  return it->dump(-1, ' ', false, json::error_handler_t::replace);
}

// pg_config's `ranks`: a string such as "[12, 13, 14, 15]" (as PyTorch writes it) or a list.
std::optional<std::vector<int64_t>> rank_list_of(const json& v) {
  std::vector<int64_t> ranks;
  if (v.is_array()) {
    for (const json& r : v) {
      auto n = integer_of(r);
      if (!n || *n < 0 || *n > INT32_MAX) return std::nullopt;
      ranks.push_back(*n);
    }
    return ranks;
  }
  if (!v.is_string()) return std::nullopt;
  const std::string& s = v.get_ref<const std::string&>();
  size_t i = s.find('[');
  if (i == std::string::npos) return std::nullopt;
  for (++i; i < s.size() && s[i] != ']';) {
    if (std::isdigit(static_cast<unsigned char>(s[i]))) {
      size_t end = i;
      while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
      if (end - i > 9) return std::nullopt;  // ranks are 32-bit in the records
      ranks.push_back(std::stoll(s.substr(i, end - i)));
      i = end;
    } else if (s[i] == ',' || s[i] == ' ') {
      ++i;
    } else {
      return std::nullopt;
    }
  }
  return ranks;
}

struct GroupConfig {
  std::string desc;
  std::vector<int64_t> ranks;  // global ranks in group-rank order; empty: unknown
};

// pg_config, keyed by group name. A group named only by an entry is added later.
std::map<std::string, GroupConfig> read_pg_config(const json& dump, InputReport& report) {
  std::map<std::string, GroupConfig> groups;
  auto it = dump.find("pg_config");
  if (it == dump.end() || !it->is_object()) return groups;
  for (const auto& [key, value] : it->items()) {
    if (!value.is_object()) {
      report.reject("pg_config entry that is not a mapping");
      continue;
    }
    std::string name = field_text(value, "name");
    GroupConfig& g = groups[name.empty() ? key : name];
    g.desc = field_text(value, "desc");
    if (auto ranks = value.find("ranks"); ranks != value.end()) {
      if (auto list = rank_list_of(*ranks)) g.ranks = std::move(*list);
      else report.reject("pg_config ranks that are not a list of ranks");
    }
  }
  return groups;
}

struct GroupStatus {
  int64_t enqueued = -1, started = -1, completed = -1;
};

// pg_status, keyed by the dump's local pg_id.
std::map<std::string, GroupStatus> read_pg_status(const json& dump, InputReport& report) {
  std::map<std::string, GroupStatus> status;
  auto it = dump.find("pg_status");
  if (it == dump.end() || !it->is_object()) return status;
  for (const auto& [pg_id, value] : it->items()) {
    if (!value.is_object()) {
      report.reject("pg_status entry that is not a mapping");
      continue;
    }
    GroupStatus s;
    s.enqueued = field_integer(value, "last_enqueued_collective").value_or(-1);
    s.started = field_integer(value, "last_started_collective").value_or(-1);
    s.completed = field_integer(value, "last_completed_collective").value_or(-1);
    status[pg_id] = s;
  }
  return status;
}

// The dump's entries: `entries` of schema 2.x, or the whole dump in schema 1.x.
const json* entries_of(const json& dump) {
  if (dump.is_array()) return &dump;
  auto it = dump.find("entries");
  return it != dump.end() && it->is_array() ? &*it : nullptr;
}

std::string pg_id_of(const json& entry) {
  auto it = entry.find("pg_id");
  if (it == entry.end()) return "";
  if (auto n = integer_of(*it)) return std::to_string(*n);
  return it->is_string() ? it->get<std::string>() : "";
}

std::pair<std::string, std::string> group_of_entry(const json& entry) {
  auto it = entry.find("process_group");
  if (it == entry.end()) return {};
  if (it->is_array() && !it->empty() && (*it)[0].is_string())
    return {(*it)[0].get<std::string>(), it->size() > 1 && (*it)[1].is_string() ? (*it)[1].get<std::string>() : ""};
  if (it->is_string()) return {it->get<std::string>(), ""};
  return {};
}

bool is_numeric_name(const std::string& s) {
  return !s.empty() && s.size() < 19 && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// Local pg_id -> group name. Entries carry both. A rank's other groups (no entries: it has
// nothing in flight there) are matched by creation order: PyTorch numbers a rank's groups
// in the order it created them, and unnamed groups are named by a job-wide counter in the
// same order, so when every remaining name is such a number the sorted ids and the sorted
// names pair up. Otherwise they stay unmatched and the notes say so.
std::map<std::string, std::string> name_groups(const json* entries, const std::map<std::string, GroupStatus>& status,
                                               const std::map<std::string, GroupConfig>& config) {
  std::map<std::string, std::string> names;
  if (entries)
    for (const json& e : *entries)
      if (e.is_object())
        if (std::string id = pg_id_of(e), name = group_of_entry(e).first; !id.empty() && !name.empty())
          names.emplace(id, name);
  std::set<std::string> named;
  for (const auto& [id, name] : names) named.insert(name);
  std::vector<std::pair<int64_t, std::string>> ids, unnamed;
  for (const auto& [id, s] : status)
    if (!names.count(id) && is_numeric_name(id)) ids.emplace_back(std::stoll(id), id);
  for (const auto& [name, g] : config)
    if (!named.count(name)) {
      if (!is_numeric_name(name)) return names;
      unnamed.emplace_back(std::stoll(name), name);
    }
  if (ids.size() != unnamed.size()) return names;
  std::sort(ids.begin(), ids.end());
  std::sort(unnamed.begin(), unnamed.end());
  for (size_t i = 0; i < ids.size(); ++i) names.emplace(ids[i].second, unnamed[i].second);
  return names;
}

FrOpState state_of(const std::string& s, bool* known) {
  *known = true;
  if (s == "completed") return FrOpState::kCompleted;
  if (s == "started") return FrOpState::kStarted;
  if (s == "scheduled") return FrOpState::kScheduled;
  *known = false;
  return FrOpState::kScheduled;
}

// "nccl:send 3->4" / "nccl:recv 4<-3": the operation, and the peer's group rank (-1 unknown).
std::pair<std::string, int64_t> op_and_peer(const std::string& profiling_name) {
  size_t space = profiling_name.find(' ');
  std::string op = profiling_name.substr(0, space);
  if (space == std::string::npos) return {op, -1};
  std::string rest = profiling_name.substr(space + 1);
  size_t arrow = rest.find("->");
  if (arrow == std::string::npos) arrow = rest.find("<-");
  if (arrow == std::string::npos) return {op, -1};
  std::string peer = rest.substr(arrow + 2);
  if (!is_numeric_name(peer)) return {op, -1};
  return {op, std::stoll(peer)};
}

int32_t group_rank_of(const GroupConfig& g, int64_t global_rank) {
  auto it = std::find(g.ranks.begin(), g.ranks.end(), global_rank);
  return it == g.ranks.end() ? -1 : static_cast<int32_t>(it - g.ranks.begin());
}

// The collective sequences a dump's entries show for one group: its status when the dump
// has no pg_status (schema 1.x holds every entry, completed ones included).
struct EntrySequences {
  int64_t newest = -1;             // newest collective entered
  int64_t newest_completed = -1;
  int64_t oldest_unfinished = -1;
};

// What every entry and group state of one dump shares.
struct DumpContext {
  int64_t global_rank;
  uint32_t process;
  std::map<std::string, GroupConfig>& config;
  const std::map<std::string, std::string>& names;
  LocalData& data;
  InputReport& report;
  std::set<std::string> groups_with_p2p;
  std::map<std::string, EntrySequences> sequences;
};

void note_sequence(const FrOpRecord& r, EntrySequences& s) {
  if (r.is_p2p || r.collective_seq < 0) return;
  s.newest = std::max(s.newest, r.collective_seq);
  if (r.state == FrOpState::kCompleted) s.newest_completed = std::max(s.newest_completed, r.collective_seq);
  else if (s.oldest_unfinished < 0 || r.collective_seq < s.oldest_unfinished) s.oldest_unfinished = r.collective_seq;
}

// A status read off the entries: enqueued up to the newest, completed up to the newest
// completed one (or, when none is, up to just before the oldest unfinished one).
std::optional<GroupStatus> status_from_entries(const EntrySequences& s) {
  if (s.newest < 0) return std::nullopt;
  GroupStatus status;
  status.enqueued = s.newest;
  status.completed = s.newest_completed >= 0 ? s.newest_completed : s.oldest_unfinished - 1;
  return status;
}

void read_entry(const json& e, DumpContext& c) {
  if (!e.is_object()) return c.report.reject("entry that is not a mapping");
  auto [group, desc] = group_of_entry(e);
  if (group.empty()) {
    auto it = c.names.find(pg_id_of(e));
    if (it != c.names.end()) group = it->second;
    else if (std::string id = pg_id_of(e); !id.empty() && !e.contains("process_group")) group = id;  // schema 1.x
  }
  if (group.empty()) return c.report.reject("entry without a process group");
  GroupConfig& config = c.config[group];
  if (config.desc.empty()) config.desc = desc;
  bool known = false;
  FrOpRecord r;
  r.state = state_of(field_text(e, "state"), &known);
  if (!known) return c.report.reject("entry with an unknown state");
  const std::string profiling_name = field_text(e, "profiling_name");
  auto [op, peer] = op_and_peer(profiling_name);
  r.group = fr_group_hash(group);
  r.process = c.process;
  r.global_rank = static_cast<int32_t>(c.global_rank);
  r.collective_seq = field_integer(e, "collective_seq_id").value_or(field_integer(e, "seq_id").value_or(-1));
  r.p2p_seq = field_integer(e, "p2p_seq_id").value_or(-1);
  r.time_created_ns = static_cast<uint64_t>(std::max<int64_t>(0, field_integer(e, "time_created_ns").value_or(0)));
  auto is_p2p = e.find("is_p2p");
  r.is_p2p = is_p2p != e.end() && is_p2p->is_boolean() ? is_p2p->get<bool>()
                                                       : op.find("send") != std::string::npos || op.find("recv") != std::string::npos;
  r.is_send = op.find("send") != std::string::npos;
  if (r.is_p2p && peer >= 0 && static_cast<size_t>(peer) < config.ranks.size())
    r.peer_global_rank = static_cast<int32_t>(config.ranks[static_cast<size_t>(peer)]);
  fr_copy_text(r.op, op);
  fr_copy_text(r.sizes, field_text(e, "input_sizes"));
  fr_copy_text(r.dtypes, field_text(e, "input_dtypes"));
  if (r.is_p2p) c.groups_with_p2p.insert(group);
  note_sequence(r, c.sequences[group]);
  c.data.fr_ops.push_back(r);
  ++c.report.records;
}

void add_group(const std::string& name, const GroupConfig& g, const GroupStatus* status, DumpContext& c) {
  FrGroupState s;
  s.group = fr_group_hash(name);
  s.process = c.process;
  s.global_rank = static_cast<int32_t>(c.global_rank);
  s.group_size = static_cast<int32_t>(g.ranks.size());
  s.has_status = status != nullptr;
  if (status) {
    s.last_enqueued = status->enqueued;
    s.last_started = status->started;
    s.last_completed = status->completed;
  }
  s.has_p2p = c.groups_with_p2p.count(name) > 0;
  fr_copy_text(s.name, name);
  fr_copy_text(s.desc, g.desc);
  c.data.fr_groups.push_back(s);
  for (const FrMemberRun& run : fr_member_runs(s.group, g.ranks)) c.data.fr_members.push_back(run);
  if (int32_t group_rank = group_rank_of(g, c.global_rank); group_rank >= 0)
    c.data.note_comm_rank(s.group, group_rank, c.process, false, 0, false);
  ++c.report.records;
}

// Groups this rank holds: pg_status mapped to names, and groups of its config or entries
// without a status.
std::string version_of_dump(const DumpContext& c) { return c.report.layout.substr(c.report.layout.find(' ') + 1); }

void add_groups(const std::map<std::string, GroupStatus>& status, DumpContext& c) {
  std::map<std::string, const GroupStatus*> by_name;
  size_t unmatched = 0;
  for (const auto& [id, s] : status) {
    auto it = c.names.find(id);
    if (it == c.names.end()) ++unmatched;
    else by_name[it->second] = &s;
  }
  size_t derived = 0;
  for (const auto& [name, g] : c.config) {
    auto it = by_name.find(name);
    std::optional<GroupStatus> from_entries;
    if (it == by_name.end() && status.empty()) from_entries = status_from_entries(c.sequences[name]);
    derived += from_entries.has_value();
    add_group(name, g, it != by_name.end() ? it->second : from_entries ? &*from_entries : nullptr, c);
  }
  if (derived)
    c.report.notes.push_back("no pg_status (schema " + version_of_dump(c) + "): how far rank " + std::to_string(c.global_rank) +
                             " got in " + std::to_string(derived) + " group(s) is read off its entries");
  if (unmatched)
    c.report.notes.push_back(std::to_string(unmatched) + " pg_status entr" + (unmatched == 1 ? "y" : "ies") +
                             " of rank " + std::to_string(c.global_rank) +
                             " could not be matched to a group name (no entry names their pg_id)");
}

std::string version_of(const json& dump) {
  if (dump.is_array()) return "1.x";
  std::string v = dump.is_object() ? field_text(dump, "version") : "";
  return v.empty() ? "unknown" : v;
}

void report_error(InputReport& report, std::string error, bool truncated) {
  report.error = std::move(error);
  report.truncated = truncated;
}

}  // namespace

int64_t flight_recorder_rank_of_name(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  for (const char* ext : {".json", ".pkl", ".pickle"})
    if (name.size() > std::strlen(ext) && name.ends_with(ext)) name.resize(name.size() - std::strlen(ext));
  size_t digits = name.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(name[digits - 1]))) --digits;
  if (digits == 0 || digits == name.size() || name.size() - digits > 9) return -1;
  return std::stoll(name.substr(digits));
}

bool looks_like_flight_recorder(std::string_view head) {
  if (looks_like_pickle(head)) return true;
  size_t i = head.find_first_not_of(" \t\r\n");
  if (i == std::string_view::npos || (head[i] != '{' && head[i] != '[')) return false;
  auto has = [&](const char* key) { return head.find(key) != std::string_view::npos; };
  const bool entry_keys = has("\"profiling_name\"") && (has("\"collective_seq_id\"") || has("\"seq_id\"") || has("\"pg_id\""));
  if (head[i] == '[') return entry_keys;  // schema 1.x: a list of entries
  return has("\"pg_status\"") || has("\"pg_config\"") || (has("\"entries\"") && has("\"version\"")) || entry_keys;
}

void read_flight_recorder_value(const json& dump, int64_t global_rank, const std::string& name,
                                const std::string& host, LocalData& data, InputReport& report) {
  report.layout = "schema " + version_of(dump);
  if (!dump.is_object() && !dump.is_array()) return report_error(report, "not a Flight Recorder dump (top level is not a mapping)", false);
  const uint32_t process = data.process_index(host, -1, global_rank);
  std::map<std::string, GroupConfig> config = dump.is_object() ? read_pg_config(dump, report) : std::map<std::string, GroupConfig>();
  std::map<std::string, GroupStatus> status = dump.is_object() ? read_pg_status(dump, report) : std::map<std::string, GroupStatus>();
  const json* entries = entries_of(dump);
  const std::map<std::string, std::string> names = name_groups(entries, status, config);
  DumpContext c{global_rank, process, config, names, data, report, {}, {}};
  if (entries) {
    if (entries->size() > kMaxEntries) return report_error(report, "more than " + std::to_string(kMaxEntries) + " entries: not a dump", false);
    for (const json& e : *entries) read_entry(e, c);
  }
  // Schema 1.x names no groups, but every process belongs to the default one (pg_id 0). Its
  // ring buffer keeps the newest entries since the start, so a 1.x dump without any entry of
  // the default group is a rank that enqueued nothing there.
  if (dump.is_array() && !config.count("0")) {
    config["0"].desc = "default_pg";
    if (c.sequences["0"].newest < 0) c.sequences["0"] = {0, 0, -1};
  }
  add_groups(status, c);
  if (config.empty() && status.empty() && (!entries || entries->empty()))
    report.notes.push_back("dump of rank " + std::to_string(global_rank) + " (" + name + ") holds no process group");
}

void read_flight_recorder_file(const std::string& path, const std::string& host, LocalData& data) {
  InputReport report;
  report.host = host;
  report.path = path;
  report.format = kFormat;
  const int64_t rank = flight_recorder_rank_of_name(path);
  std::ifstream in(path, std::ios::binary);
  std::string bytes;
  if (in) {
    in.seekg(0, std::ios::end);
    const auto size = static_cast<size_t>(std::max<std::streamoff>(0, in.tellg()));
    in.seekg(0);
    if (size <= kMaxDumpBytes) {
      bytes.resize(size);
      in.read(bytes.data(), static_cast<std::streamsize>(size));
      bytes.resize(static_cast<size_t>(std::max<std::streamsize>(0, in.gcount())));
    } else {
      report_error(report, "larger than " + std::to_string(kMaxDumpBytes >> 20) + " MiB: not a Flight Recorder dump", false);
    }
  }
  if (!in && report.error.empty()) report_error(report, "cannot read the file", false);
  else if (rank < 0) report_error(report, "file name does not end in the global rank (<prefix><rank>)", false);
  if (!report.error.empty()) return data.inputs.push_back(std::move(report));
  // The rank had a dump file: its process is known even when the dump is unusable, so that
  // the diagnosis can tell an unreadable dump from a missing one.
  data.process_index(host, -1, rank);
  if (bytes.empty()) {
    report_error(report, "empty dump (0 bytes): the rank wrote nothing", true);
    return data.inputs.push_back(std::move(report));
  }
  try {
    json dump = looks_like_pickle(bytes) ? unpickle_plain(bytes) : json::parse(bytes);
    read_flight_recorder_value(dump, rank, path, host, data, report);
  } catch (const UnpickleError& e) {
    report_error(report, std::string("cannot decode the pickle: ") + e.what(), true);
  } catch (const json::exception& e) {
    report_error(report, std::string("cannot parse as JSON: ") + e.what(), true);
  } catch (const std::exception& e) {  // out of memory, or a value no check foresaw: still one file's error
    report_error(report, std::string("cannot read the dump: ") + e.what(), false);
  }
  data.inputs.push_back(std::move(report));
}

}  // namespace culprit
