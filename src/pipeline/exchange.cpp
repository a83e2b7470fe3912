#include "pipeline/exchange.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "pipeline/exchange_wire.hpp"
#include "reduce/edge_reduce.hpp"

namespace culprit {

// How the records that are not trivially copyable travel (pipeline/exchange_wire.hpp). The
// structured bindings name every member: a member added to one of these records stops the
// build here until it is listed (or the record gets a trivially copyable part that carries it).
template <>
struct WireMembers<GlobalProcess> {
  template <class P, class F>
  static void visit(P& p, F&& member) {
    auto& [host, pid, rank, label] = p;
    member(host); member(pid); member(rank); member(label);
  }
};

template <>
struct WireMembers<GlobalCommRank> {
  template <class C, class F>
  static void visit(C& c, F&& member) {
    static_assert(sizeof(GlobalCommRank) == sizeof(CommRankFixed) + sizeof(c.gaps),
                  "a member of GlobalCommRank beyond CommRankFixed and gaps is not on the wire");
    member(base_part<CommRankFixed>(c));
    member(c.gaps);
  }
};

template <>
struct WireMembers<InputReport> {
  template <class R, class F>
  static void visit(R& r, F&& member) {
    auto& [host, path, format, layout, records, rejected, reject_reasons, error, truncated, notes] = r;
    member(host); member(path); member(format); member(layout); member(records); member(rejected);
    member(reject_reasons); member(error); member(truncated); member(notes);
  }
};

template <>
struct WireMembers<NodeSummary> {
  template <class S, class F>
  static void visit(S& s, F&& table) {
    auto& [processes, comm_ranks, edges, inputs, qps, p2p_calls, inflight, fr_groups, fr_members, fr_ops] = s;
    table(processes); table(comm_ranks); table(edges); table(inputs); table(qps);
    table(p2p_calls); table(inflight); table(fr_groups); table(fr_members); table(fr_ops);
  }
};

namespace {

constexpr uint64_t kMagic = 0x6e63636c63756c38ull;  // "nccl cul8" (8: the generic packer)

// Every process index of a node's records names one of the node's processes.
void check_process_indices(const NodeSummary& s) {
  const size_t n = s.processes.size();
  auto check = [n](const auto& table, const char* what) {
    for (const auto& record : table)
      if (record.process >= n) throw std::runtime_error(std::string("exchange blob: bad ") + what + " process index");
  };
  check(s.comm_ranks, "comm-rank");
  check(s.qps, "QP");
  check(s.p2p_calls, "p2p");
  check(s.inflight, "in-flight");
  check(s.fr_groups, "Flight Recorder");
  check(s.fr_ops, "Flight Recorder");
}

// The same rank reported twice (copied files): keep the richer entry of each kind of evidence.
void merge_duplicate_comm_rank(GlobalCommRank& seen, const GlobalCommRank& c) {
  seen.newest_seq = std::max(seen.newest_seq, c.newest_seq);
  seen.has_collective = seen.has_collective || c.has_collective;
  seen.seq_unknown = seen.seq_unknown && c.seq_unknown;
  seen.cut_short = seen.cut_short || c.cut_short;
  if (c.kernel_samples > seen.kernel_samples) {
    seen.kernel_late_sum_ns = c.kernel_late_sum_ns;
    seen.kernel_samples = c.kernel_samples;
  }
  if (c.gap_samples > seen.gap_samples) {
    seen.gap_sum_ns = c.gap_sum_ns;
    seen.gap_period_sum_ns = c.gap_period_sum_ns;
    seen.gap_samples = c.gap_samples;
    seen.gaps = c.gaps;
  }
  seen.busy_sum_ns = std::max(seen.busy_sum_ns, c.busy_sum_ns);
  if (c.op_samples > seen.op_samples) {
    seen.op_time_sum_ns = c.op_time_sum_ns;
    seen.op_samples = c.op_samples;
  }
  if (c.entry_lag_samples > seen.entry_lag_samples) {
    seen.entry_lag_sum = c.entry_lag_sum;
    seen.entry_lag_sq_sum = c.entry_lag_sq_sum;
    seen.entry_lag_ns_sum = c.entry_lag_ns_sum;
    seen.entry_lag_ns_sq_sum = c.entry_lag_ns_sq_sum;
    seen.entry_step_ns_sum = c.entry_step_ns_sum;
    seen.entry_lag_samples = c.entry_lag_samples;
  }
  if (c.gated_steps > seen.gated_steps) {
    seen.gated_steps = c.gated_steps;
    seen.gated_own_sum_ns = c.gated_own_sum_ns;
    seen.gated_work_sum_ns = c.gated_work_sum_ns;
  }
  if (c.chain_length > seen.chain_length) {
    std::copy(std::begin(c.chain_from), std::end(c.chain_from), std::begin(seen.chain_from));
    seen.chain_length = c.chain_length;
  }
  if (c.last_stop_samples > seen.last_stop_samples) {
    seen.last_stop_samples = c.last_stop_samples;
    seen.last_stops = c.last_stops;
  }
  if (c.loop_lag_samples > seen.loop_lag_samples) {
    seen.loop_lag_sum = c.loop_lag_sum;
    seen.loop_lag_sq_sum = c.loop_lag_sq_sum;
    seen.loop_lag_samples = c.loop_lag_samples;
  }
  if (c.exit_shortfall_samples > seen.exit_shortfall_samples) {
    seen.exit_shortfall_sum = c.exit_shortfall_sum;
    seen.exit_shortfall_sq_sum = c.exit_shortfall_sq_sum;
    seen.exit_shortfall_samples = c.exit_shortfall_samples;
  }
}

// What rank 0 already holds of the Flight Recorder records: the same dump read twice (copied
// files) or a group's member list sent by several nodes counts once.
struct FlightRecorderSeen {
  std::set<std::pair<uint64_t, uint32_t>> groups;   // (group, process)
  std::set<std::tuple<uint64_t, int32_t, int32_t, int32_t, int32_t>> members;  // member runs
  std::set<uint32_t> processes_with_ops;            // processes whose entries are held
};

void merge_flight_recorder(const NodeSummary& node, const std::vector<uint32_t>& remap, FlightRecorderSeen& seen,
                           Observations& obs) {
  std::set<uint32_t> new_ops;
  for (FrGroupState g : node.fr_groups) {
    g.process = remap[g.process];
    if (seen.groups.insert({g.group, g.process}).second) obs.fr_groups.push_back(g);
  }
  for (const FrMemberRun& m : node.fr_members)
    if (seen.members.insert({m.group, m.first_group_rank, m.first_rank, m.stride, m.count}).second) obs.fr_members.push_back(m);
  for (FrOpRecord r : node.fr_ops) {
    r.process = remap[r.process];
    if (seen.processes_with_ops.count(r.process)) continue;
    new_ops.insert(r.process);
    obs.fr_ops.push_back(r);
  }
  seen.processes_with_ops.insert(new_ops.begin(), new_ops.end());
}

}  // namespace

std::vector<char> pack_node_summary(const NodeSummary& summary) {
  WireWriter out;
  out.put(kMagic);
  out.put(summary);
  return std::move(out).take();
}

NodeSummary unpack_node_summary(const std::vector<char>& bytes) {
  WireReader in(bytes);
  if (in.get<uint64_t>() != kMagic) throw std::runtime_error("exchange blob has a bad magic number");
  NodeSummary s = in.get<NodeSummary>();
  if (!in.at_end()) throw std::runtime_error("exchange blob: bytes after its last table");
  check_process_indices(s);
  return s;
}

void gather_observations(Communicator& comm, const NodeSummary& mine, int seq_window,
                         Observations* observations, std::vector<InputReport>* inputs) {
  std::vector<std::vector<char>> blobs = comm.gather_bytes(pack_node_summary(mine));
  *observations = Observations();
  observations->seq_window = seq_window;
  inputs->clear();
  if (comm.rank() != 0) return;

  std::map<std::tuple<std::string, int64_t, int64_t, std::string>, uint32_t> process_index;
  std::map<std::pair<uint64_t, int32_t>, size_t> rank_index;
  std::map<std::tuple<uint64_t, int32_t, int32_t, uint8_t>, size_t> p2p_index;
  std::vector<EdgeSummary> all_edges;
  FlightRecorderSeen fr_seen;
  for (const std::vector<char>& blob : blobs) {
    if (blob.empty()) continue;  // an analyzer process silent past the deadline sent nothing
    NodeSummary node = unpack_node_summary(blob);
    std::vector<uint32_t> remap(node.processes.size());
    for (size_t i = 0; i < node.processes.size(); ++i) {
      const GlobalProcess& p = node.processes[i];
      auto key = std::make_tuple(p.host, p.pid, p.rank, p.label);
      auto [it, added] = process_index.emplace(key, observations->processes.size());
      if (added) observations->processes.push_back(node.processes[i]);
      remap[i] = it->second;
    }
    for (GlobalCommRank c : node.comm_ranks) {
      c.process = remap[c.process];
      auto key = std::make_pair(c.comm_hash, c.rank);
      auto it = rank_index.find(key);
      if (it == rank_index.end()) {
        rank_index.emplace(key, observations->comm_ranks.size());
        observations->comm_ranks.push_back(c);
      } else {
        merge_duplicate_comm_rank(observations->comm_ranks[it->second], c);
      }
    }
    all_edges.insert(all_edges.end(), node.edges.begin(), node.edges.end());
    for (QpObservation q : node.qps) {
      q.process = remap[q.process];
      observations->qps.push_back(q);
    }
    for (P2pCallCount c : node.p2p_calls) {
      c.process = remap[c.process];
      // The same rank reported twice (copied files): keep the larger count.
      auto key = std::make_tuple(c.comm_hash, c.rank, c.peer, c.is_send);
      auto [it, added] = p2p_index.emplace(key, observations->p2p_calls.size());
      if (added) observations->p2p_calls.push_back(c);
      else observations->p2p_calls[it->second].calls = std::max(observations->p2p_calls[it->second].calls, c.calls);
    }
    for (InflightRecord f : node.inflight) {
      f.process = remap[f.process];
      observations->inflight.push_back(f);
    }
    merge_flight_recorder(node, remap, fr_seen, *observations);
    for (InputReport& in : node.inputs) inputs->push_back(std::move(in));
  }
  observations->edges = merge_edge_summaries(all_edges);
}

}  // namespace culprit
