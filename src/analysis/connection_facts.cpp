#include "analysis/connection_facts.hpp"

#include <algorithm>
#include <cmath>

#include "analysis/backlog_inside_node.hpp"
#include "analysis/busy_wire_peers.hpp"
#include "analysis/receiver_peers.hpp"
#include "analysis/saturated_wires.hpp"
#include "analysis/slow_wire.hpp"
#include "analysis/wire_groups.hpp"

namespace culprit {
namespace {

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = q * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

// Per communicator: the RecvWait of its quickest-fed receivers (10th percentile), what data
// arriving on time costs there.
std::map<uint64_t, double> low_recv_wait_of(const std::vector<EdgeView>& views) {
  std::map<uint64_t, std::vector<double>> waits;
  for (const EdgeView& v : views)
    if (v.has_recv) waits[v.edge->key.comm_hash].push_back(v.step_ns[kRecvWait]);
  std::map<uint64_t, double> low;
  for (auto& [comm, values] : waits) low[comm] = quantile(std::move(values), 0.1);
  return low;
}

// The judgements of a wire: slow_wire.hpp's guard (by its link's channels), and the tests that
// compare it with the other links of its wire group (saturated_wires.hpp, busy_wire_peers.hpp).
struct WireJudgements {
  WireJudgement guard;
  SaturatedWireJudgement saturated;
  BusyWireJudgement busy;
};

// A wire is judged by slow_wire.hpp's guard and by its link's peers; the strongest verdict
// stands.
WireJudgement strongest_wire_verdict(const WireJudgements& peers) {
  WireJudgement wire = peers.guard;
  if (peers.saturated.judged && peers.saturated.margin > wire.margin) {
    wire.slow = peers.saturated.slow;
    wire.margin = peers.saturated.margin;
    wire.excess_per_step_ns = peers.saturated.excess_per_step_ns;
  }
  if (peers.busy.margin > wire.margin) {
    wire.slow = peers.busy.slow;
    wire.margin = peers.busy.margin;
    wire.excess_per_step_ns = peers.busy.excess_per_step_ns;
  }
  return wire;
}

void judge_phases(EdgeFacts& f, const CommBaseline& base, const ReceiverPeers& receivers,
                  double low_recv_wait, const WireJudgements& wire, const AttributionConfig& cfg) {
  for (int p : {kSendGpuWait, kSendWait, kRecvWait}) {
    bool present = p <= kSendWait ? f.view.has_send : f.view.has_recv;
    if (!present) continue;
    const Excess x = significant_excess(f.view.step_ns[p], base.phase[p], base.cycle_ns, cfg);
    f.anomaly[p] = x.ns;
    f.margin[p] = x.margin;
  }
  for (int p : {kSendPeerWait, kRecvFlushWait, kRecvGpuWait}) {
    bool present = p == kSendPeerWait ? f.view.has_send : f.view.has_recv;
    if (!present) continue;
    const Excess x = receivers.anomaly(f.view, p, base.cycle_ns);
    f.anomaly[p] = x.ns;
    f.margin[p] = x.margin;
  }
  // Waiting for data is absolute (every connection of a stalled ring waits), so it is judged
  // against the communicator's low reference with the floors alone.
  double floor = std::max(cfg.rel_floor * base.cycle_ns, cfg.abs_floor_ns);
  if (f.view.has_recv) {
    double late = f.view.step_ns[kRecvWait] - low_recv_wait;
    if (late > floor) f.late_data_ns = late;
  }
  const WireJudgement strongest = strongest_wire_verdict(wire);
  f.slow_link = strongest.slow;
  f.link_excess_ns = strongest.excess_per_step_ns;
  f.link_margin = strongest.margin;
  f.no_credit = f.anomaly[kSendPeerWait] > 0;
  f.slow_flush = f.anomaly[kRecvFlushWait] > 0;
  f.slow_consume = f.anomaly[kRecvGpuWait] > 0;
  f.verdict = verdict_of(f);
}

// Connections with a missing half. The end whose half is missing may still be in the input
// (it recorded other connections): then that end recorded nothing for this one, and its
// node is not missing.
void note_missing_halves(const std::vector<EdgeFacts>& facts, const ProcessContext& context,
                         std::vector<std::string>& notes) {
  size_t half_missing = 0, half_missing_with_data = 0;
  for (const EdgeFacts& f : facts) {
    if (f.view.has_send && f.view.has_recv) continue;
    ++half_missing;
    uint32_t silent_end = f.view.has_send ? f.dst : f.src;
    if (context.has_records(silent_end)) ++half_missing_with_data;
  }
  if (half_missing_with_data)
    notes.push_back(std::to_string(half_missing_with_data) +
                    " connection(s) recorded by one end only: the other end is in the input but "
                    "has no records of them (judged from the end that has)");
  if (half_missing > half_missing_with_data)
    notes.push_back(std::to_string(half_missing - half_missing_with_data) +
                    " connection(s) seen from one end only: the other end has no data at all");
}

}  // namespace

EdgeVerdict verdict_of(const EdgeFacts& f) {
  if (f.slow_link) return EdgeVerdict::kSlowLink;
  if (f.slow_flush) return EdgeVerdict::kSlowFlush;
  if (f.no_credit) return EdgeVerdict::kNoCredit;
  if (f.late_data_ns > 0) return EdgeVerdict::kLateData;
  return EdgeVerdict::kNormal;
}

ConnectionFacts judge_connections(const Observations& obs, ProcessContext& context, const AttributionConfig& cfg) {
  ConnectionFacts out;
  std::vector<EdgeView> views;
  views.reserve(obs.edges.size());
  for (const EdgeSummary& e : obs.edges) views.push_back(view_of(e));
  std::map<uint64_t, int32_t> p2p_sizes;
  for (const auto& [comm, size] : context.n_ranks())
    if (!context.is_collective(comm)) p2p_sizes[comm] = size;
  const WireGroups wire_groups = wire_groups_of(context, views);
  out.baselines = baselines_of(views, wire_groups);
  const std::vector<SaturatedWireJudgement> saturated =
      judge_saturated_wires(views, wire_groups, {.abs_floor_ns = cfg.abs_floor_ns});
  const std::vector<BusyWireJudgement> busy =
      judge_busy_wires(views, wire_groups, {.abs_floor_ns = cfg.abs_floor_ns, .leave_judged_out = true});
  const std::vector<WireJudgement> guard = judge_wires_by_link(views, out.baselines, cfg);
  std::map<uint64_t, double> low_recv_wait = low_recv_wait_of(views);
  ReceiverPeers receivers(views, cfg, p2p_sizes, wire_groups);
  out.edges.resize(obs.edges.size());
  for (size_t i = 0; i < obs.edges.size(); ++i) {
    const EdgeKey& k = obs.edges[i].key;
    EdgeFacts& f = out.edges[i];
    f.view = views[i];
    f.src = context.process_of(k.comm_hash, k.src_rank);
    f.dst = context.process_of(k.comm_hash, k.dst_rank);
    f.p2p = !context.is_collective(k.comm_hash);
    const WireJudgements wire = {guard[i], saturated[i], busy[i]};
    judge_phases(f, out.baselines[k.comm_hash], receivers, low_recv_wait[k.comm_hash], wire, cfg);
  }
  const BacklogReadings backlogs(obs, out.edges, context, cfg);
  for (size_t i = 0; i < out.edges.size(); ++i)
    take_hold_behind_backlog(backlogs, receivers, out.baselines[obs.edges[i].key.comm_hash].cycle_ns, context, i,
                             out.edges[i]);
  note_missing_halves(out.edges, context, out.notes);
  return out;
}

std::map<uint32_t, std::set<uint64_t>> slow_consuming_comms(const Observations& observations,
                                                           const std::vector<EdgeFacts>& facts) {
  std::map<uint32_t, std::set<uint64_t>> comms;
  for (size_t i = 0; i < facts.size(); ++i)
    if (facts[i].slow_consume) comms[facts[i].dst].insert(observations.edges[i].key.comm_hash);
  return comms;
}

}  // namespace culprit
