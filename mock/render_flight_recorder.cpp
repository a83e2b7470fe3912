#include "mock/render_flight_recorder.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "mock/pickle_writer.hpp"
#include "mock/records.hpp"

namespace culprit::mock {
namespace {

using json = nlohmann::json;

constexpr double kEpochBaseNs = 1.7e18;  // simulation time 0 as UNIX time

int rank_option(const std::string& value, const std::string& option) {
  try {
    size_t used = 0;
    int r = std::stoi(value, &used);
    if (used == value.size() && r >= 0) return r;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument("mock --format flight-recorder: " + option + " needs a rank, got '" + value + "'");
}

// One process group of a rank, as its dump describes it.
struct Group {
  std::string name;   // job-wide number in creation order
  std::string desc;
  int local_id = 0;   // the dump's pg_id: the rank's own groups in creation order
  const SimComm* comm = nullptr;
  bool p2p = false;
  int64_t enqueued = 0, completed = 0;  // operations counted by pg_status
};

std::string desc_of(const SimComm& c) {
  if (c.name == "world") return "default_pg";
  if (c.name.rfind("dp", 0) == 0) return "DATA_PARALLEL_GROUP";
  if (c.name.rfind("pp", 0) == 0) return "PIPELINE_MODEL_PARALLEL_GROUP";
  return c.name;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s = "[";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s + "]";
}

std::map<uint64_t, Group> groups_of(const Simulation& sim, int rank) {
  std::map<uint64_t, Group> groups;
  const std::vector<SimComm>& comms = sim.communicators();
  int local = 0;
  for (size_t i = 0; i < comms.size(); ++i) {
    if (std::find(comms[i].ranks.begin(), comms[i].ranks.end(), rank) == comms[i].ranks.end()) continue;
    Group g;
    g.name = std::to_string(i);
    g.desc = desc_of(comms[i]);
    g.local_id = local++;
    g.comm = &comms[i];
    g.p2p = comms[i].algorithm == "P2P";
    groups[comms[i].hash] = g;
  }
  return groups;
}

// One operation of the rank, in enqueue order, with its sequence numbers.
struct Op {
  const SimCollective* c = nullptr;
  Group* group = nullptr;
  int64_t op_id = 0, collective_seq = 0, p2p_seq = 0;
  bool completed = false;
};

std::vector<Op> ops_of(const Simulation& sim, const NodeTimeline& timeline, int rank, double dump_ns,
                       std::map<uint64_t, Group>& groups) {
  std::vector<const SimCollective*> mine;
  for (const OperationRecord& rec : timeline.operations)
    if (rec.col.rank == rank && rec.col.enqueue_ns <= dump_ns) mine.push_back(&rec.col);
  std::stable_sort(mine.begin(), mine.end(),
                   [](const SimCollective* a, const SimCollective* b) { return a->enqueue_ns < b->enqueue_ns; });
  std::map<uint64_t, std::pair<int64_t, int64_t>> counters;  // group -> (collectives, p2p)
  std::vector<Op> ops;
  for (const SimCollective* c : mine) {
    const uint64_t hash = c->comm_hash ? c->comm_hash : sim.comm_hash();
    auto g = groups.find(hash);
    if (g == groups.end()) continue;
    Op op;
    op.c = c;
    op.group = &g->second;
    auto& [collectives, p2p] = counters[hash];
    const bool is_p2p = c->name == "Send" || c->name == "Recv";
    if (is_p2p) ++p2p;
    else ++collectives;
    op.collective_seq = collectives;
    op.p2p_seq = p2p;
    op.op_id = collectives + p2p;
    op.completed = c->end_ns <= dump_ns;
    op.group->enqueued = op.op_id;
    if (op.completed) op.group->completed = std::max(op.group->completed, op.op_id);
    ops.push_back(op);
  }
  return ops;
}

std::string profiling_name(const Op& op) {
  const SimCollective& c = *op.c;
  const int self = c.comm_rank >= 0 ? c.comm_rank : c.rank;
  if (c.name == "Send") return "nccl:send " + std::to_string(self) + "->" + std::to_string(c.peer);
  if (c.name == "Recv") return "nccl:recv " + std::to_string(self) + "<-" + std::to_string(c.peer);
  return "nccl:all_reduce";
}

json time_or_none(double ns, bool known, bool json_form) {
  if (!known) return json_form ? json(0) : json(nullptr);
  return json(static_cast<int64_t>(kEpochBaseNs + ns));
}

// `elements`: the float elements of the scenario's per-rank message (doubled where a rank
// is made to mismatch).
json entry_of(const Op& op, int64_t record_id, const FlightRecorderExport& how, int64_t elements) {
  const bool p2p = op.c->name == "Send" || op.c->name == "Recv";
  json e;
  e["record_id"] = record_id;
  e["pg_id"] = op.group->local_id;
  if (how.version.rfind("1.", 0) == 0) {
    e["seq_id"] = op.collective_seq;
  } else {
    e["process_group"] = json::array({op.group->name, op.group->desc});
    e["collective_seq_id"] = op.collective_seq;
    e["p2p_seq_id"] = op.p2p_seq;
    e["op_id"] = op.op_id;
    e["thread_name"] = "pt_main_thread";
    e["thread_id"] = "140000000000001";
    e["is_p2p"] = p2p;
    e["timeout_ms"] = 600000;
    e["retired"] = op.completed;
    e["time_discovered_started_ns"] = time_or_none(0, false, how.json);
    e["time_discovered_completed_ns"] = time_or_none(op.c->end_ns, op.completed, how.json);
    e["duration_ms"] = how.json ? json(0) : json(nullptr);  // needs TORCH_NCCL_ENABLE_TIMING
    e["output_sizes"] = json::array({json::array({elements})});
    e["output_dtypes"] = json::array({"Float"});
  }
  e["profiling_name"] = profiling_name(op);
  e["time_created_ns"] = time_or_none(op.c->enqueue_ns, true, how.json);
  e["input_sizes"] = json::array({json::array({elements})});
  e["input_dtypes"] = json::array({"Float"});
  e["state"] = op.completed ? "completed" : "scheduled";
  return e;
}

// The entries the dump holds: the newest `buffer` operations, only the unfinished ones unless
// every entry is asked for (schema 1.x dumps hold all: they have no pg_status to say what
// completed).
json entries_of(const std::vector<Op>& ops, int rank, int64_t elements, const FlightRecorderExport& how) {
  const bool all = !how.only_active || how.version.rfind("1.", 0) == 0;
  const size_t first = ops.size() > how.buffer ? ops.size() - how.buffer : 0;
  int64_t newest_unfinished = -1;
  for (size_t i = first; i < ops.size(); ++i)
    if (!ops[i].completed && ops[i].c->name == "AllReduce") newest_unfinished = static_cast<int64_t>(i);
  json entries = json::array();
  for (size_t i = first; i < ops.size(); ++i) {
    if (!all && ops[i].completed) continue;
    const bool mismatched = how.mismatch.count(rank) && static_cast<int64_t>(i) == newest_unfinished;
    entries.push_back(entry_of(ops[i], static_cast<int64_t>(i), how, mismatched ? 2 * elements : elements));
  }
  return entries;
}

json count(int64_t v, bool json_form) { return json_form ? json(std::to_string(v)) : json(v); }

json dump_of(const Simulation& sim, const NodeTimeline& timeline, int rank, const FlightRecorderExport& how) {
  std::map<uint64_t, Group> groups = groups_of(sim, rank);
  const double dump_ns = std::isfinite(sim.dump_time_ns()) ? sim.dump_time_ns() : INFINITY;
  const std::vector<Op> ops = ops_of(sim, timeline, rank, dump_ns, groups);
  const auto elements = static_cast<int64_t>(std::max<uint64_t>(1, sim.scenario().bytes / 4));
  json entries = entries_of(ops, rank, elements, how);
  if (how.version.rfind("1.", 0) == 0) return entries;
  json dump;
  dump["version"] = how.version;
  dump[how.version == "2.10" ? "comm_lib_version" : "nccl_version"] = "2.27.3";
  json config = json::object(), status = json::object();
  for (const auto& [hash, g] : groups) {
    config[g.name] = {{"name", g.name}, {"desc", g.desc}, {"ranks", rank_list(g.comm->ranks)}};
    status[std::to_string(g.local_id)] = {{"last_enqueued_collective", count(g.enqueued, how.json)},
                                          {"last_started_collective", count(-1, how.json)},
                                          {"last_completed_collective", count(g.completed, how.json)}};
  }
  dump["pg_config"] = config;
  dump["pg_status"] = status;
  if (!entries.empty() || !how.json) dump["entries"] = entries;  // the JSON form drops an empty list
  return dump;
}

}  // namespace

FlightRecorderExport parse_flight_recorder_format(const std::string& format) {
  FlightRecorderExport how;
  size_t at = format.find('+');
  if (format.substr(0, at) != "flight-recorder")
    throw std::invalid_argument("mock --format: '" + format + "' is not flight-recorder[+options]");
  while (at != std::string::npos) {
    size_t next = format.find('+', at + 1);
    const std::string option = format.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
    const size_t eq = option.find('=');
    const std::string key = option.substr(0, eq), value = eq == std::string::npos ? "" : option.substr(eq + 1);
    if (option == "json") how.json = true;
    else if (option == "traces") how.traces = true;
    else if (option == "all") how.only_active = false;
    else if (key == "buffer") how.buffer = static_cast<size_t>(rank_option(value, "buffer"));
    else if (key == "missing") how.missing.insert(rank_option(value, "missing"));
    else if (key == "empty") how.empty.insert(rank_option(value, "empty"));
    else if (key == "mismatch") how.mismatch.insert(rank_option(value, "mismatch"));
    else if (option.size() > 1 && option[0] == 'v' && (option.rfind("v1.", 0) == 0 || option.rfind("v2.", 0) == 0))
      how.version = option.substr(1);
    else throw std::invalid_argument("mock --format flight-recorder: unknown option '" + option + "'");
    at = next;
  }
  if (how.buffer == 0) throw std::invalid_argument("mock --format flight-recorder: buffer must be at least 1");
  return how;
}

std::vector<RenderedFile> render_host_flight_recorder(const Simulation& sim, int node, const FlightRecorderExport& how) {
  return render_host_flight_recorder(sim, sim.node_timeline(node), how);
}

std::vector<RenderedFile> render_host_flight_recorder(const Simulation& sim, const NodeTimeline& timeline,
                                                      const FlightRecorderExport& how) {
  std::vector<RenderedFile> files;
  if (how.traces) files = sim.render_host_nccl_json(timeline);
  const int gpus = sim.scenario().gpus;
  for (int rank = timeline.node * gpus; rank < (timeline.node + 1) * gpus; ++rank) {
    if (how.missing.count(rank)) continue;
    RenderedFile f;
    f.name = "nccl_trace_rank_" + std::to_string(rank);
    if (!how.empty.count(rank)) {
      const json dump = dump_of(sim, timeline, rank, how);
      f.content = how.json ? dump.dump() : pickle_protocol2(dump);
    }
    files.push_back(std::move(f));
  }
  return files;
}

}  // namespace culprit::mock
