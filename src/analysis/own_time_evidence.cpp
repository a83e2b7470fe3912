#include "analysis/own_time_evidence.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "analysis/own_work_stragglers.hpp"
#include "analysis/peer_roles.hpp"
#include "analysis/place_peers.hpp"
#include "analysis/queue_pair_wires.hpp"
#include "analysis/robust_stats.hpp"
#include "analysis/send_wait_peers.hpp"
#include "analysis/unexplained_send_gpu_wait.hpp"

namespace culprit {

namespace {

// Per job, as the gap test's and the late posters': the chance that a healthy job shows any
// sender beyond its peers.
constexpr double kFalseAlarm = 1e-3;

// What is known of healthy GPUs before looking: their speeds differ by a few percent (the gap
// test's prior), and so does the time they take to fill a buffer: that share of a sender's
// SendGpuWait per step is its prior spread (more than its speed explains, where it waited for
// its input too).
const double kPriorShare = StragglerConfig{}.prior_sigma;

// The senders whose SendGpuWait unexplained by their inputs stands far beyond their peers'
// (place_peers.hpp), with the best of their tests. Every job has a slowest GPU, and without
// kernel clocks it waits for its own work longer than the others on every send: only a
// sender beyond the spread of its peers is more than that. A peer whose input is unseen
// counts its whole SendGpuWait, at least what is unexplained of it: its peers' yardstick errs
// wide, not narrow.
std::map<uint32_t, PeerOutlier> unexplained_outliers(const PeerRoles& roles, std::span<const SendGpuWaitFact> sends,
                                                     std::span<const EdgeKey> keys,
                                                     std::span<const InputArrivalFact> arrivals) {
  const std::vector<std::optional<double>> per_step = unexplained_per_step(sends, arrivals);
  std::vector<PeerFigure> figures;
  for (size_t i = 0; i < sends.size(); ++i) {
    const double value = per_step[i].value_or(sends[i].wait_per_step_ns);
    std::optional<PeerFigure> f = roles.figure(sends[i].sender, keys[i].comm_hash, keys[i].src_rank, value);
    if (!f) continue;
    f->prior_sigma = kPriorShare * sends[i].wait_per_step_ns;
    figures.push_back(*f);
  }
  const PeerDepartures departures = peer_departures(figures);
  std::map<uint32_t, PeerOutlier> out;
  if (departures.judged == 0) return out;
  const double tail = kFalseAlarm / static_cast<double>(departures.judged);
  for (const auto& [who, d] : departures.of)
    if (const std::optional<PeerOutlier> p = significant(d, tail)) keep_stronger(out, who.first, *p);
  return out;
}

}  // namespace

void offer_unexplained_send_gpu_wait(const Observations& obs, const ProcessContext& context,
                                     const LazyPeerRoles& roles, const std::vector<EdgeFacts>& facts,
                                     const OwnDelay& own_delay, std::vector<Evidence>& evidence,
                                     std::vector<std::string>& notes) {
  const bool all_measured = own_delay.all_work_measured();
  std::vector<SendGpuWaitFact> sends;
  std::vector<EdgeKey> send_keys;
  std::vector<InputArrivalFact> arrivals;
  std::map<std::string, uint32_t> nodes;  // host -> its index
  auto node_of = [&](uint32_t process) {
    return nodes.emplace(context.host_of(process), static_cast<uint32_t>(nodes.size())).first->second;
  };
  std::map<std::pair<uint32_t, uint64_t>, int> ranks_on_node;  // (node, communicator) -> its ranks there
  for (const auto& [rank, process] : context.rank_map()) ++ranks_on_node[{node_of(process), rank.first}];
  for (size_t i = 0; i < facts.size() && !all_measured; ++i) {  // kernel clocks judge every GPU's own work
    const EdgeFacts& f = facts[i];
    const EdgeSummary& e = obs.edges[i];
    if (f.src == f.dst || f.p2p) continue;  // collectives only (unexplained_send_gpu_wait.hpp says why)
    if (f.view.has_send) {
      sends.push_back({.sender = f.src,
                       .node = node_of(f.src),
                       .comm_hash = e.key.comm_hash,
                       .channel = e.key.channel,
                       .excess_per_step_ns = f.anomaly[kSendGpuWait],
                       .steps = static_cast<double>(e.send_steps),
                       .margin = f.margin[kSendGpuWait],
                       .output_late_per_step_ns = f.view.has_recv ? f.late_data_ns : -1,
                       .wait_per_step_ns = f.view.step_ns[kSendGpuWait],
                       .receiver = f.dst,
                       .node_holds_others = ranks_on_node[{node_of(f.src), e.key.comm_hash}] > 1});
      send_keys.push_back(e.key);
    }
    if (f.view.has_recv)
      arrivals.push_back({.receiver = f.dst,
                          .node = node_of(f.dst),
                          .comm_hash = e.key.comm_hash,
                          .channel = e.key.channel,
                          .late_per_step_ns = f.late_data_ns,
                          .from_other_node = node_of(f.src) != node_of(f.dst),
                          .wait_per_step_ns = f.view.step_ns[kRecvWait],
                          .sender = f.src});
  }
  const std::map<uint32_t, Excess> own_time = unexplained_send_gpu_wait(sends, arrivals);
  if (!own_time.empty()) {
    const std::map<uint32_t, PeerOutlier> beyond_peers =
        unexplained_outliers(roles.get(), sends, send_keys, arrivals);
    for (const auto& [p, own] : own_time) {
      auto peer = beyond_peers.find(p);
      if (own_delay.work_measured[p] || peer == beyond_peers.end()) continue;
      const double margin = std::min(own.margin, peer->second.margin());
      evidence[p].offer(own.ns, CulpritClass::kGpuProducer, std::nullopt, margin);
    }
  }
  const auto& measured = own_delay.work_measured;
  if (std::none_of(measured.begin(), measured.end(), [](bool m) { return m; }) && !obs.edges.empty())
    notes.push_back("no GPU kernel windows in the input (KernelCh with StopGpuClk, nccl.coll_perf): a GPU's own "
                    "work is judged by its SendGpuWait beyond what its inputs' arrival explains, by a late post of "
                    "its buffers (told from a hold by its own waits) and by how much less than its collective's "
                    "other members it waited, each only where it stands far beyond its peers' (the slowest healthy "
                    "GPU waits less and posts late too); all of which takes each host to enqueue just before its GPU "
                    "reaches the operation: where hosts run ahead, proxy ops start early, their waits span the GPUs' "
                    "own work and a late GPU holds its buffers as a slow consumer would (add nccl.coll_perf)");
}

void offer_kernel_lateness(const OwnDelay& own_delay, std::vector<Evidence>& evidence) {
  for (uint32_t p = 0; p < own_delay.late_ns.size(); ++p) {
    if (own_delay.late_ns[p] <= 0) continue;
    evidence[p].offer(own_delay.late_ns[p], CulpritClass::kGpuProducer, std::nullopt, own_delay.margin[p]);
    // A GPU whose own work is measurably slow also consumes and frees buffers slowly: that
    // is one straggler, not a consumer fault.
    if (evidence[p].culprit_class == CulpritClass::kGpuConsumer) evidence[p].culprit_class = CulpritClass::kGpuProducer;
  }
}

void offer_slow_wires(const Observations& obs, const std::vector<EdgeFacts>& facts, std::vector<Evidence>& evidence) {
  for (size_t i = 0; i < facts.size(); ++i)
    if (facts[i].slow_link)
      evidence[facts[i].src].offer(facts[i].link_excess_ns * static_cast<double>(obs.edges[i].send_steps),
                                   CulpritClass::kNetworkLink, facts[i].dst, facts[i].link_margin);
}

namespace {

// Per collective communicator, its pace from its connections with a send half.
std::map<uint64_t, CollectivePace> collective_paces(const Observations& obs, const std::vector<EdgeFacts>& facts) {
  struct Samples {
    std::vector<double> cycles, waits, quickest;
  };
  std::map<uint64_t, Samples> samples;
  for (size_t i = 0; i < facts.size(); ++i) {
    const EdgeFacts& f = facts[i];
    if (f.src == f.dst || !f.view.has_send || f.p2p) continue;
    Samples& s = samples[obs.edges[i].key.comm_hash];
    s.cycles.push_back(f.view.send_cycle_ns);
    s.waits.push_back(f.view.step_ns[kSendWait]);
    // Without a quickest op (no op carried steps alone), its mean bounds it from above too.
    s.quickest.push_back(f.view.quickest_op_send_wait_ns.value_or(f.view.step_ns[kSendWait]));
  }
  std::map<uint64_t, CollectivePace> paces;
  for (const auto& [comm, s] : samples)
    paces[comm] = {median_of(s.cycles), median_of(s.waits), median_of(s.quickest)};
  return paces;
}

}  // namespace

void offer_slow_send_waits(const Observations& obs, const LazyPeerRoles& roles, const std::vector<EdgeFacts>& facts,
                           const AttributionConfig& cfg, std::vector<Evidence>& evidence) {
  // Where any connection is timed step by step, the wire tests judge every wire.
  for (const EdgeFacts& f : facts)
    if (f.view.wire_ns > 0 || f.view.send_wait_min_ns > 0) return;
  std::vector<SendWaitFigure> sends;
  for (size_t i = 0; i < facts.size(); ++i) {
    const EdgeFacts& f = facts[i];
    if (f.src == f.dst || !f.view.has_send) continue;
    // Send/recv connections by their SendWait per step, collectives' by their quickest op's
    // (send_wait_peers.hpp).
    const double per_step = f.p2p ? f.view.step_ns[kSendWait] : f.view.quickest_op_send_wait_ns.value_or(0);
    const EdgeSummary& e = obs.edges[i];
    sends.push_back({i, f.src, e.key.comm_hash, e.key.src_rank, f.dst, e.key.dst_rank, per_step,
                     static_cast<double>(e.send_steps)});
  }
  if (sends.empty()) return;
  const std::map<uint64_t, CollectivePace> paces = collective_paces(obs, facts);
  for (const SlowSendWait& slow : slow_send_waits(roles.get(), sends)) {
    const EdgeFacts& f = facts[slow.connection];
    double margin = slow.margin;
    if (!f.p2p) {
      const double quickest = f.view.quickest_op_send_wait_ns.value_or(0);
      const CollectivePace& pace = paces.at(obs.edges[slow.connection].key.comm_hash);
      if (!sets_the_pace(quickest, pace, cfg.link_ratio)) {
        const double windows = full_windows_outlasted(quickest, pace, cfg.nccl_steps);
        if (windows <= 1) continue;  // a collective's link queued behind its flow, not slow
        margin = std::min(margin, windows);
      }
    }
    evidence[f.src].offer(slow.excess_ns, CulpritClass::kNetworkLink, f.dst, margin);
  }
  // Beyond any healthy link's full window, a collective link is slow whatever its peers' spread.
  for (const SendWaitFigure& s : sends) {
    const EdgeFacts& f = facts[s.connection];
    if (f.p2p) continue;
    const CollectivePace& pace = paces.at(obs.edges[s.connection].key.comm_hash);
    const double beyond = beyond_any_healthy_window(s.per_step_ns, pace, cfg.nccl_steps);
    if (beyond > 1)
      evidence[f.src].offer((s.per_step_ns - pace.typical_quickest_op_ns) * s.steps, CulpritClass::kNetworkLink,
                            f.dst, beyond);
  }
}

void offer_slow_queue_pairs(const Observations& obs, const std::vector<EdgeFacts>& facts,
                            std::vector<Evidence>& evidence) {
  std::vector<OutboundSendWait> sends;
  for (const EdgeFacts& f : facts)
    if (f.view.has_send) sends.push_back({f.src, f.dst, f.view.step_ns[kSendWait]});
  for (const SlowQueuePair& q : slow_queue_pairs(obs.qps, sends, evidence.size()))
    evidence[q.process].offer(q.excess_ns, CulpritClass::kNetworkLink, q.peer, q.margin);
}

namespace {

// What the report asks for where no wire is timed: the table that would time them, or, where it
// was read, why it timed nothing.
std::string untimed_wires_remedy(const std::vector<QpObservation>& qps) {
  if (qps.empty())
    return "export nccl.net_qp (probing's mask bit 128) to time each queue pair's sends that found it idle "
           "(docs/accuracy.md, \"Slow wires from nccl.net_qp\")";
  const bool sized = std::any_of(qps.begin(), qps.end(), [](const QpObservation& q) { return q.wr_length > 0; });
  if (!sized)
    return "nccl.net_qp was read, but none of its rows has a length (probing exports its unsigned columns "
           "empty): export it with CAST(length AS BIGINT), so that the full-size sends that found their "
           "queue pair idle can be timed";
  return "nccl.net_qp was read, but no queue pair has " + std::to_string(kMinIdleSends) +
         " full-size sends that found it idle (without ts, or every send queued behind another: a queued send "
         "times the queue, not the wire)";
}

}  // namespace

void note_untimed_wires(const Observations& obs, const std::vector<EdgeFacts>& facts, std::vector<std::string>& notes) {
  bool sends = false;
  for (const EdgeFacts& f : facts) {
    if (f.view.wire_ns > 0 || f.view.send_wait_min_ns > 0) return;  // timed step by step
    sends |= f.view.has_send && f.src != f.dst;
  }
  for (const QpObservation& q : obs.qps)
    if (q.wr_length > 0 && q.idle_sends >= kMinIdleSends) return;
  if (sends)
    notes.push_back("no wire timing (the steps of NCCL traces, nccl.net_qp): links are judged by their SendWait "
                    "sums, which a send queued behind others lengthens as a slow wire does, so a link slower by "
                    "less than that queueing stays hidden among healthy ones; " +
                    untimed_wires_remedy(obs.qps));
}

}  // namespace culprit
