// The attribution as a pipeline of passes (docs/attribution.md describes each):
//   1. context          process_context.hpp
//   2. connection facts connection_facts.hpp (receiver_peers, slow_wire, edge_stats)
//   3. own time         own_delay.hpp, own_time_evidence.hpp; holds set against the output
//                       slots: own_holds.hpp (against peers), queued_holds.hpp (a queue of
//                       its own steps); without kernel clocks also
//                       last_arrival_time.hpp (last_arrivals.hpp); hangs: sequence_hang.hpp,
//                       inflight_hang.hpp, flight_recorder_hang.hpp
//   4. explanations     receiver_explanations.hpp (lanes.hpp), held_by_neighbours.hpp;
//                       own_time_roots.hpp drops the holds of processes slow on their own
//   5. wait-for graph   wait_graph.hpp: roots of the anomaly edges, victims along data_flow.hpp
//   6. blame and score  blame.hpp; consumer_position.hpp moves a slow consumer to the GPU of its
//                       node where the data waits; hidden_consumers.hpp shares the score of one
//                       it cannot place with the GPUs of its node that would look the same;
//                       notes: unexplained_waits.hpp (where holds end without a cause),
//                       silent_gpus.hpp (GPUs of a root's node that no record names)
#include "analysis/attribution.hpp"

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <set>
#include <string>

#include "analysis/blame.hpp"
#include "analysis/connection_facts.hpp"
#include "analysis/consumer_position.hpp"
#include "analysis/data_flow.hpp"
#include "analysis/flight_recorder_hang.hpp"
#include "analysis/flight_recorder_join.hpp"
#include "analysis/gated_holds.hpp"
#include "analysis/held_by_neighbours.hpp"
#include "analysis/hidden_consumers.hpp"
#include "analysis/inflight_hang.hpp"
#include "analysis/lanes.hpp"
#include "analysis/last_arrival_time.hpp"
#include "analysis/last_arrivals.hpp"
#include "analysis/own_delay.hpp"
#include "analysis/own_holds.hpp"
#include "analysis/own_time_evidence.hpp"
#include "analysis/own_time_roots.hpp"
#include "analysis/peer_roles.hpp"
#include "analysis/queued_holds.hpp"
#include "analysis/receiver_explanations.hpp"
#include "analysis/sequence_hang.hpp"
#include "analysis/silent_gpus.hpp"
#include "analysis/unexplained_waits.hpp"
#include "analysis/wire_groups.hpp"

namespace culprit {
namespace {

// A hang: the ranks whose records stop before the newest sequence their communicator
// reached. A snapshot of operations still alive refines them: a member that never entered
// the collective its peers are stuck in stopped; one alive inside any operation is blocked
// there. Whatever else a stopped process shows, stopping is what everyone waits for.
void mark_hangs(const Observations& obs, const ProcessContext& context, const InflightVerdict& in_flight,
                std::vector<Evidence>& evidence) {
  std::set<uint32_t> hung = stopped_by_sequence(obs, context.rank_map());
  hung.insert(in_flight.stopped.begin(), in_flight.stopped.end());
  std::erase_if(hung, [&](uint32_t p) { return in_flight.in_flight.count(p) > 0; });
  for (uint32_t p : hung) evidence[p].stop();
}

// Which input named each root: the profiler's records (traces, exports, shards) or the
// Flight Recorder dumps (flight_recorder_hang.hpp), which name who stopped from PyTorch's own
// bookkeeping. Both may; the dumps' stop then outranks a delay the records found before it.
std::vector<std::string> mark_flight_recorder_stops(const FlightRecorderVerdict& flight,
                                                    std::vector<Evidence>& evidence) {
  std::vector<std::string> named_by(evidence.size());
  for (uint32_t p = 0; p < evidence.size(); ++p)
    if (evidence[p].any()) named_by[p] = "profiler";
  for (const auto& [p, reason] : flight.stopped) {
    named_by[p] = named_by[p].empty() ? "flight recorder" : "flight recorder + profiler";
    evidence[p].stop();
  }
  return named_by;
}

// The test that found a process's evidence, as its source file and line.
std::string where_found(const Evidence& e) {
  return std::filesystem::path(e.found_at.file_name()).filename().string() + ":" + std::to_string(e.found_at.line());
}

// One line per process with self evidence and per hold (NCCL_CULPRIT_DEBUG=1).
void describe_evidence(const ProcessContext& context, const std::vector<Evidence>& evidence,
                       const OwnDelay& own_delay, const std::vector<WaitEdge>& holds, std::vector<std::string>& out) {
  for (uint32_t p = 0; p < evidence.size(); ++p)
    if (evidence[p].any())
      out.push_back(context.name_of(p) + " " + name_of(evidence[p].culprit_class) + " " +
                    (evidence[p].stopped ? std::string("stopped") : std::to_string(evidence[p].ns) + " ns") +
                    " (kernel/arrival lateness " + std::to_string(own_delay.late_ns[p]) + " ns; found at " +
                    where_found(evidence[p]) + ")");
  for (const WaitEdge& h : holds)
    out.push_back("hold " + context.name_of(h.from) + " -> " + context.name_of(h.to) + " " + h.why);
}

// Each rank's measured own time and work per gated step, and whose work stood out
// (NCCL_CULPRIT_DEBUG=1).
void describe_own_holds(const ProcessContext& context, const Observations& obs,
                        const std::map<uint64_t, CommBaseline>& baselines,
                        const std::vector<OwnHoldVerdict>& verdicts, std::vector<std::string>& out) {
  const auto work = gated_work_per_step(obs);
  for (const auto& [who, own] : gated_own_time_per_step(obs)) {
    std::string line = "own time " + context.name_of(who.first) + " comm " + std::to_string(who.second) + " " +
                       std::to_string(own) + " ns/step, work " + std::to_string(work.at(who)) + " ns/step";
    if (auto base = baselines.find(who.second); base != baselines.end())
      line += ", step scale " + std::to_string(base->second.cycle_ns) + " ns";
    for (const OwnHoldVerdict& v : verdicts)
      if (v.process == who.first && v.comm == who.second)
        line += " stands out by " + std::to_string(v.excess.ns) + " ns (margin " +
                std::to_string(v.excess.margin) + ")";
    out.push_back(line);
  }
}

std::vector<uint32_t> roots_of(const std::vector<WaitEdge>& holds, const std::vector<Evidence>& evidence) {
  std::vector<RootCandidate> candidates(evidence.size());
  for (uint32_t p = 0; p < evidence.size(); ++p) candidates[p] = {evidence[p].ns, evidence[p].stopped};
  return find_roots(evidence.size(), holds, candidates, 1.0);
}

int32_t size_of(const ProcessContext& context, uint64_t comm_hash) {
  auto it = context.n_ranks().find(comm_hash);
  return it == context.n_ranks().end() ? 0 : it->second;
}

EdgeRow edge_row(const EdgeSummary& e, const EdgeFacts& f) {
  EdgeRow row;
  row.comm_hash = e.key.comm_hash;
  row.channel = e.key.channel;
  row.src_process = f.src;
  row.dst_process = f.dst;
  row.src_rank = e.key.src_rank;
  row.dst_rank = e.key.dst_rank;
  row.send_gpu_wait_ns = e.phase_ns[kSendGpuWait];
  row.send_peer_wait_ns = e.phase_ns[kSendPeerWait];
  row.send_wait_ns = e.phase_ns[kSendWait];
  row.recv_wait_ns = e.phase_ns[kRecvWait];
  row.recv_flush_wait_ns = e.phase_ns[kRecvFlushWait];
  row.recv_gpu_wait_ns = e.phase_ns[kRecvGpuWait];
  row.send_steps = e.send_steps;
  row.recv_steps = e.recv_steps;
  row.bytes = std::max(e.send_bytes, e.recv_bytes);
  row.verdict = name_of(f.verdict);
  return row;
}

}  // namespace

Attribution attribute(const Observations& given, const AttributionConfig& cfg) {
  Attribution out;
  Observations joined;
  std::vector<std::string> join_notes;
  const bool join = needs_flight_recorder_join(given);
  if (join) joined = join_flight_recorder_ranks(given, join_notes);
  const Observations& obs = join ? joined : given;
  ProcessContext context(obs);
  ConnectionFacts facts = judge_connections(obs, context, cfg);
  out.notes = facts.notes;
  out.notes.insert(out.notes.end(), join_notes.begin(), join_notes.end());
  // Watchdog snapshots may name ranks known only as peers: judged before the process table
  // is final.
  InflightVerdict in_flight =
      judge_inflight(obs, [&](uint64_t comm, int32_t rank) { return context.process_of(comm, rank); },
                     [&](uint64_t comm) { return context.ranks_are_global(comm); });
  out.notes.insert(out.notes.end(), in_flight.notes.begin(), in_flight.notes.end());
  FlightRecorderVerdict flight = judge_flight_recorder(
      obs, [&](int64_t rank, const std::string& label) { return context.process_of_global_rank(rank, label); });
  out.notes.insert(out.notes.end(), flight.notes.begin(), flight.notes.end());
  out.ranks_without_data = context.placeholders();

  OwnDelay own_delay = measure_own_delay(obs, context.processes(), context.n_ranks(), facts.baselines, cfg);
  out.evidence = own_delay.diagnostics;
  std::vector<Evidence> evidence(context.size());
  std::vector<WaitEdge> holds;
  Lanes lanes(obs, facts.edges, context);
  offer_slow_wires(obs, facts.edges, evidence);
  const LazyPeerRoles roles(context, obs);  // built only by an input without kernel clocks or wire timing
  offer_slow_send_waits(obs, roles, facts.edges, cfg, evidence);
  // Judged only where some GPU's own work is unmeasured (an input without kernel clocks).
  const std::vector<MemberWait> members =
      own_delay.all_work_measured() ? std::vector<MemberWait>{} : member_waits(obs, facts.edges, roles.get());
  const ArrivalJudgement arrivals = judge_arrivals(members);
  explain_receivers({obs, facts.edges, context, lanes, own_delay, roles, arrivals}, cfg, evidence, holds, out.notes);
  const std::vector<OwnHoldVerdict> peer_holds =
      judge_own_holds(obs, facts.baselines, cfg, replica_groups_of(context, obs));
  const std::vector<OwnHoldVerdict> queued_holds = judge_queued_holds(obs, facts.baselines, cfg);
  const std::vector<OwnHoldVerdict> own_holds = merge_own_hold_verdicts(peer_holds, queued_holds);
  offer_slow_own_holds(obs, own_holds, evidence);
  describe_own_holds(context, obs, facts.baselines, own_holds, out.evidence);
  const auto held_from_beyond = [&](const MemberWait& m) {
    return lanes.node_backpressured(context.host_of(m.process), m.comm_hash, m.process, cfg);
  };
  offer_last_arrival_time(members, arrivals, held_from_beyond, evidence);
  offer_unexplained_send_gpu_wait(obs, context, roles, facts.edges, own_delay, evidence, out.notes);
  offer_kernel_lateness(own_delay, evidence);
  offer_slow_queue_pairs(obs, facts.edges, evidence);
  note_untimed_wires(obs, facts.edges, out.notes);
  mark_hangs(obs, context, in_flight, evidence);
  std::vector<std::string> named_by = mark_flight_recorder_stops(flight, evidence);
  add_starved_by_link_holds(context, evidence, own_delay.late_ns, holds);
  add_node_interior_holds(context, evidence, own_delay.late_ns, holds, slow_own_holders(own_holds));
  drop_holds_of_own_time_roots(own_delay, facts.edges, holds);
  drop_holds_of_slow_own_holds(own_holds, holds);
  drop_holds_of_stopped(evidence, holds);
  const std::vector<double> waited = waited_per_process(obs, facts.edges, context.size());
  note_unexplained_wait_targets(unexplained_wait_targets(holds, evidence, own_delay.work_measured),
                                std::accumulate(waited.begin(), waited.end(), 0.0), context, out.notes);
  describe_evidence(context, evidence, own_delay, holds, out.evidence);

  std::vector<uint32_t> roots = roots_of(holds, evidence);
  const std::vector<ConsumerPlacement> placements =
      place_slow_consumers(obs, facts.edges, context, evidence, roots, slow_own_holders(peer_holds));
  apply_consumer_placements(placements, context, evidence, roots, out.notes);
  std::vector<uint32_t> unplaced = roots;
  for (const ConsumerPlacement& p : placements) {
    out.evidence.insert(out.evidence.end(), p.readings.begin(), p.readings.end());
    if (!p.concluded()) continue;
    std::erase(unplaced, p.placed);
    named_by[p.placed] = named_by[p.named];
  }
  // A GPU that queued its own steps is the one its lane waits for: nothing it holds hides
  // another consumer.
  for (uint32_t p : slow_own_holders(queued_holds)) std::erase(unplaced, p);
  share_with_hidden_consumers(hidden_consumer_candidates(obs, facts.edges, context, evidence, unplaced), context,
                              evidence, out.notes);
  note_silent_gpus_beside_roots(silent_gpus_beside_roots(roots, evidence, context.processes()), evidence, context,
                                out.notes);
  std::vector<WaitEdge> flow = data_flow_edges(obs, facts.edges, context);
  flow.insert(flow.end(), in_flight.waits.begin(), in_flight.waits.end());
  flow.insert(flow.end(), flight.waits.begin(), flight.waits.end());
  GraphVerdict graph = attribute_to_roots(context.size(), flow, roots);
  graph.wait_ns = waited;

  Blame blame = blame_roots({obs, context, evidence, graph, roots});
  out.processes = std::move(blame.processes);
  out.culprits = std::move(blame.culprits);
  for (CulpritRow& c : out.culprits) c.evidence = named_by[c.process_id];
  out.chains = std::move(blame.chains);
  for (const auto& [key, process] : context.rank_map())
    out.comm_ranks.push_back({key.first, key.second, size_of(context, key.first), process});
  for (size_t i = 0; i < facts.edges.size(); ++i) out.edges.push_back(edge_row(obs.edges[i], facts.edges[i]));
  return out;
}

}  // namespace culprit
