#include "analysis/attribution.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "analysis/inflight_hang.hpp"
#include "analysis/own_delay.hpp"
#include "analysis/queue_pair_wires.hpp"
#include "analysis/sequence_hang.hpp"
#include "analysis/unexplained_send_gpu_wait.hpp"
#include "analysis/wait_graph.hpp"

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

// Everything judged about one connection.
struct EdgeFacts {
  EdgeView view;
  uint32_t src = 0, dst = 0;
  double anomaly[kPhaseCount] = {0, 0, 0, 0, 0, 0};  // significant excess per step vs median
  double late_data_ns = 0;    // per step: receiver waited for data beyond the comm's low reference
  double link_excess_ns = 0;  // per step: SendWait above the communicator's reference
  bool p2p = false;           // a connection of a communicator that runs only send/recv
  bool slow_link = false, no_credit = false, slow_flush = false, slow_consume = false;
  std::string verdict = "normal";
};

struct Evidence {
  double ns = 0;
  std::string culprit_class;
  int64_t peer = -1;
  void offer(double value, const std::string& cls, int64_t other = -1) {
    if (value > ns) {
      ns = value;
      culprit_class = cls;
      peer = other;
    }
  }
};

using Lane = std::tuple<std::string, uint64_t, int32_t>;  // host, comm, channel

}  // namespace

Attribution attribute(const Observations& obs, const AttributionConfig& cfg) {
  Attribution out;

  // ---- processes and ranks ------------------------------------------------------------
  std::vector<GlobalProcess> procs = obs.processes;
  std::map<std::pair<uint64_t, int32_t>, uint32_t> process_of_rank;
  std::map<uint64_t, int32_t> n_ranks;
  for (const GlobalCommRank& c : obs.comm_ranks) {
    process_of_rank[{c.comm_hash, c.rank}] = c.process;
    n_ranks[c.comm_hash] = std::max(n_ranks[c.comm_hash], c.rank + 1);
  }
  for (const EdgeSummary& e : obs.edges)
    n_ranks[e.key.comm_hash] =
        std::max({n_ranks[e.key.comm_hash], e.key.src_rank + 1, e.key.dst_rank + 1});
  int64_t placeholders = 0;
  auto process_for = [&](uint64_t comm, int32_t rank) -> uint32_t {
    auto it = process_of_rank.find({comm, rank});
    if (it != process_of_rank.end()) return it->second;
    // A rank that appears only as somebody's peer: its node sent no data.
    auto id = static_cast<uint32_t>(procs.size());
    char hash[24];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(comm));
    procs.push_back({"(no data)", -1, -1, "comm " + std::string(hash).substr(0, 8) + " rank " + std::to_string(rank)});
    ++placeholders;
    process_of_rank[{comm, rank}] = id;
    return id;
  };

  // ---- per-step views, baselines, anomalies ------------------------------------------------
  std::set<uint64_t> collective_comms;
  for (const GlobalCommRank& c : obs.comm_ranks)
    if (c.has_collective) collective_comms.insert(c.comm_hash);
  std::vector<EdgeFacts> facts(obs.edges.size());
  std::vector<EdgeView> views;
  views.reserve(obs.edges.size());
  for (const EdgeSummary& e : obs.edges) views.push_back(view_of(e));
  std::map<uint64_t, CommBaseline> baselines = baselines_of(views);
  std::map<uint64_t, double> low_recv_wait;
  {
    std::map<uint64_t, std::vector<double>> rw;
    for (const EdgeView& v : views)
      if (v.has_recv) rw[v.edge->key.comm_hash].push_back(v.step_ns[kRecvWait]);
    for (auto& [comm, values] : rw) low_recv_wait[comm] = quantile(values, 0.1);
  }
  // Receivers that combine several network inputs on one channel (tree parents) hold early
  // data until the last input arrives: their RecvGpuWait and withheld credit are structural.
  // They are judged against each other, not against single-input receivers.
  std::map<std::tuple<uint64_t, int32_t, int32_t>, int> fan_in;  // (comm, dst rank, channel)
  for (const EdgeSummary& e : obs.edges) ++fan_in[{e.key.comm_hash, e.key.dst_rank, e.key.channel}];
  auto multi_input = [&](const EdgeSummary& e) {
    return fan_in[{e.key.comm_hash, e.key.dst_rank, e.key.channel}] > 1;
  };
  const int kReceiverPhases[] = {kSendPeerWait, kRecvFlushWait, kRecvGpuWait};
  // (value, receiving rank) per communicator, combining or not, and phase.
  std::map<std::pair<uint64_t, bool>, std::map<int, std::vector<std::pair<double, int32_t>>>> receiver_groups;
  for (const EdgeView& v : views)
    for (int p : kReceiverPhases)
      if (p == kSendPeerWait ? v.has_send : v.has_recv)
        receiver_groups[{v.edge->key.comm_hash, multi_input(*v.edge)}][p].emplace_back(v.step_ns[p], v.edge->key.dst_rank);
  // A combining receiver holds an input's buffers (RecvGpuWait, and so the sender's
  // SendPeerWait) while it waits for a later sibling input: that much is explained.
  std::map<std::tuple<uint64_t, int32_t, int32_t>, std::vector<const EdgeView*>> inputs_of;
  for (const EdgeView& v : views)
    if (v.has_recv) inputs_of[{v.edge->key.comm_hash, v.edge->key.dst_rank, v.edge->key.channel}].push_back(&v);
  auto sibling_wait = [&](const EdgeView& v) {
    double wait = 0;
    if (!v.has_recv) return wait;
    for (const EdgeView* w : inputs_of[{v.edge->key.comm_hash, v.edge->key.dst_rank, v.edge->key.channel}])
      if (w != &v) wait = std::max(wait, w->step_ns[kRecvWait] - v.step_ns[kRecvWait]);
    return wait;
  };
  auto receiver_anomaly = [&](const EdgeView& v, int p, double scale) {
    const auto& members = receiver_groups[{v.edge->key.comm_hash, multi_input(*v.edge)}][p];
    std::vector<double> group;
    for (const auto& m : members) group.push_back(m.first);
    Robust base = robust_of(group);
    double value = v.step_ns[p];
    if (p != kRecvFlushWait && multi_input(*v.edge)) value = std::max(0.0, value - sibling_wait(v));
    // Held buffers (withheld credit, slow consumption) only throttle a pipeline when they
    // cost a good part of a transfer: below credit_rel_floor of the wire time per step they
    // are the normal give of combining and forwarding GPUs.
    if (p != kRecvFlushWait) scale *= cfg.credit_rel_floor / cfg.rel_floor;
    if (base.n >= kMinRobustSample) return significant_excess(value, base, scale, cfg);
    // A few values: an outlier must stand above every connection into other receivers (a
    // slow receiver is slow on all of its inputs alike).
    double others = 0;
    for (const auto& m : members)
      if (m.second != v.edge->key.dst_rank) others = std::max(others, m.first);
    double excess = value - others;
    return excess > std::max(cfg.rel_floor * scale, cfg.abs_floor_ns) ? excess : 0.0;
  };
  size_t half_missing = 0, half_missing_with_data = 0;
  std::set<uint32_t> processes_with_records;
  for (const GlobalCommRank& c : obs.comm_ranks) processes_with_records.insert(c.process);
  for (size_t i = 0; i < obs.edges.size(); ++i) {
    const EdgeSummary& e = obs.edges[i];
    EdgeFacts& f = facts[i];
    f.view = views[i];
    f.src = process_for(e.key.comm_hash, e.key.src_rank);
    f.dst = process_for(e.key.comm_hash, e.key.dst_rank);
    f.p2p = !collective_comms.count(e.key.comm_hash);
    if (!f.view.has_send || !f.view.has_recv) {
      ++half_missing;
      // The end whose half is missing may still be in the input (it recorded other
      // connections): then that end recorded nothing for this one, its node is not missing.
      uint32_t silent_end = f.view.has_send ? f.dst : f.src;
      if (processes_with_records.count(silent_end)) ++half_missing_with_data;
    }
    const CommBaseline& base = baselines[e.key.comm_hash];
    for (int p : {kSendGpuWait, kSendWait, kRecvWait}) {
      bool present = p <= kSendWait ? f.view.has_send : f.view.has_recv;
      if (present) f.anomaly[p] = significant_excess(f.view.step_ns[p], base.phase[p], base.cycle_ns, cfg);
    }
    for (int p : kReceiverPhases) {  // judged among receivers of their own kind
      bool present = p == kSendPeerWait ? f.view.has_send : f.view.has_recv;
      if (present) f.anomaly[p] = receiver_anomaly(f.view, p, base.cycle_ns);
    }
    // Waiting measures are absolute (every connection of a stalled ring waits), so they are
    // judged against the communicator's low reference with the floors alone.
    double floor = std::max(cfg.rel_floor * base.cycle_ns, cfg.abs_floor_ns);
    if (f.view.has_recv) {
      double late = f.view.step_ns[kRecvWait] - low_recv_wait[e.key.comm_hash];
      if (late > floor) f.late_data_ns = late;
    }
    // A slow wire. SendWait runs from isend accepted to completion: the wire and the NICs,
    // not the GPUs. Whether the sender's GPU was also waiting does not matter: in a short
    // ring its input came through this wire.
    f.link_excess_ns = f.view.step_ns[kSendWait] - low_reference(base.phase[kSendWait]);
    if (f.view.wire_ns > 0 && base.wire.n >= 2 && f.view.send_wait_min_ns > 0) {
      // Preferred: the wire's busy time per step, and its shortest single send, both well
      // above the communicator's. Queueing behind other sends, which any saturated link
      // shows, lengthens neither the busy time nor (where a step found the wire idle) the
      // shortest send; sends paced one by one by credit carry latency in their busy time
      // but not a longer shortest send. A slow wire lengthens both.
      auto slower = [&](double value, const Robust& base_of) {
        double excess = value - low_reference(base_of);
        double guard = std::max(cfg.abs_floor_ns, base_of.n < kMinRobustSample ? 0.0 : cfg.mad_k * base_of.sigma);
        return value > cfg.link_ratio * low_reference(base_of) && excess > guard;
      };
      double wire_excess = f.view.wire_ns - low_reference(base.wire);
      f.slow_link = slower(f.view.wire_ns, base.wire) && slower(f.view.send_wait_min_ns, base.send_wait_min);
      f.link_excess_ns = std::max(f.link_excess_ns, wire_excess);
    } else {
      // Sums only: SendWait far above what even a saturated healthy link shows, i.e. one
      // send's share with all NCCL_STEPS queued above the communicator's typical SendWait.
      double per_send = f.view.step_ns[kSendWait] / cfg.nccl_steps;
      f.slow_link = f.view.has_send && per_send > cfg.link_ratio * low_reference(base.phase[kSendWait]) &&
                    f.link_excess_ns > std::max(cfg.abs_floor_ns, base.phase[kSendWait].n < kMinRobustSample
                                                                      ? 0.0 : cfg.mad_k * base.phase[kSendWait].sigma);
    }
    f.no_credit = f.anomaly[kSendPeerWait] > 0;
    f.slow_flush = f.anomaly[kRecvFlushWait] > 0;
    f.slow_consume = f.anomaly[kRecvGpuWait] > 0;
    // The most specific cause first: a slow flush also withholds credit from the sender.
    if (f.slow_link) f.verdict = "slow_link";
    else if (f.slow_flush) f.verdict = "slow_flush";
    else if (f.no_credit) f.verdict = "no_credit";
    else if (f.late_data_ns > 0) f.verdict = "late_data";
  }
  if (half_missing_with_data)
    out.notes.push_back(std::to_string(half_missing_with_data) +
                        " connection(s) recorded by one end only: the other end is in the input but "
                        "has no records of them (judged from the end that has)");
  if (half_missing > half_missing_with_data)
    out.notes.push_back(std::to_string(half_missing - half_missing_with_data) +
                        " connection(s) seen from one end only: the other end has no data at all");
  // Watchdog snapshots may name ranks known only as peers: judged before the process
  // table is final.
  InflightVerdict in_flight = judge_inflight(obs, process_for);
  out.notes.insert(out.notes.end(), in_flight.notes.begin(), in_flight.notes.end());
  out.ranks_without_data = static_cast<size_t>(placeholders);

  const size_t n = procs.size();

  // ---- a GPU's own delay (own_delay.hpp) ----------------------------------------------------
  OwnDelay own_delay = measure_own_delay(obs, procs, n_ranks, baselines, cfg);
  std::vector<double>& kernel_late_total = own_delay.late_ns;
  const std::vector<bool>& own_work_measured = own_delay.work_measured;
  const bool have_gaps = own_delay.have_gaps;
  out.evidence.insert(out.evidence.end(), own_delay.diagnostics.begin(), own_delay.diagnostics.end());
  std::map<std::string, std::vector<uint32_t>> late_on_host;
  for (uint32_t p = 0; p < n; ++p)
    if (kernel_late_total[p] > 0) late_on_host[procs[p].host].push_back(p);

  // ---- lanes: where data enters and leaves each node, per communicator and channel --------
  std::map<Lane, std::vector<size_t>> inbound, outbound;
  for (size_t i = 0; i < facts.size(); ++i) {
    const EdgeKey& k = obs.edges[i].key;
    if (facts[i].src == facts[i].dst) continue;
    inbound[{procs[facts[i].dst].host, k.comm_hash, k.channel}].push_back(i);
    outbound[{procs[facts[i].src].host, k.comm_hash, k.channel}].push_back(i);
  }
  // Data that enters a node on a lane leaves it on the same lane (inside one collective; a
  // send/recv receive frees its buffers whatever the node sends next, so p2p receivers are
  // never held by their lane). The exit is held up from
  // beyond the node when its sender withholds nothing itself: its receiver gives no credit,
  // its wire is slow, or its GPU is ahead of the wire (data ready at once, SendGpuWait under
  // rel_floor of its step). Then a receiver of that lane that is slow to free buffers is
  // passing backpressure on, not causing it.
  auto lane_backpressured = [&](const Lane& lane) {
    auto it = outbound.find(lane);
    if (it == outbound.end()) return false;
    for (size_t i : it->second) {
      const EdgeFacts& o = facts[i];
      bool gpu_ahead = o.view.has_send &&
                       o.view.step_ns[kSendGpuWait] < cfg.rel_floor * o.view.send_cycle_ns;
      if (o.no_credit || o.slow_link || gpu_ahead) return true;
    }
    return false;
  };

  // ---- anomaly wait-for edges and self evidence ----------------------------------------
  // Only anomalies enter the root graph: in a stalled collective everybody waits, so plain
  // waiting says nothing about who is at fault. Self evidence is a delay a process caused.
  std::vector<WaitEdge> holds;
  std::vector<Evidence> evidence(n);
  for (size_t i = 0; i < facts.size(); ++i) {
    const EdgeFacts& f = facts[i];
    const EdgeSummary& e = obs.edges[i];
    double send_steps = static_cast<double>(e.send_steps), recv_steps = static_cast<double>(e.recv_steps);
    Lane dst_lane{procs[f.dst].host, e.key.comm_hash, e.key.channel};
    if (f.slow_link) evidence[f.src].offer(f.link_excess_ns * send_steps, "network_link", f.dst);
    double flush = f.slow_flush ? f.anomaly[kRecvFlushWait] * recv_steps : 0;
    double consume = f.slow_consume ? f.anomaly[kRecvGpuWait] * recv_steps : 0;
    // Withheld credit says the receiver posted or freed its buffers late. Its own slow
    // consumption or flush explains that. Otherwise, where its kernel gaps measure its own
    // work, they judge that work, and a late post with its own work in order means it was
    // elsewhere in its program (another communicator's collective, the previous send/recv,
    // a combine waiting for a sibling input): it blames nobody. Without GPU clocks the late
    // post is the best hint left.
    if (f.no_credit && (!own_work_measured[f.dst] || flush > 0 || consume > 0)) {
      // The receiver did not post buffers in time. Either its own downstream is blocked (the
      // wait passes on), or a late GPU inside its node holds it, or it is the culprit.
      double weight = f.anomaly[kSendPeerWait] * send_steps;
      holds.push_back({f.src, f.dst, weight, "no_credit"});
      const std::vector<uint32_t>& late = late_on_host[procs[f.dst].host];
      bool late_elsewhere = std::any_of(late.begin(), late.end(), [&](uint32_t x) { return x != f.dst; });
      if (!f.p2p && lane_backpressured(dst_lane)) {
        for (size_t o : outbound[dst_lane])
          if (facts[o].dst != f.dst) holds.push_back({f.dst, facts[o].src, weight, "backpressure"});
      } else if (late_elsewhere && flush == 0 && consume == 0) {
        for (uint32_t x : late)
          if (x != f.dst) holds.push_back({f.dst, x, weight, "node_interior"});
      } else if (flush > consume) {
        evidence[f.dst].offer(weight + flush, "flush");
      } else if (consume > 0) {
        evidence[f.dst].offer(weight + consume, "gpu_consumer");
      } else {
        evidence[f.dst].offer(weight, "gpu_producer");
      }
    } else if (f.p2p || !lane_backpressured(dst_lane)) {
      if (flush > 0) evidence[f.dst].offer(flush, "flush");
      if (consume > 0) evidence[f.dst].offer(consume, "gpu_consumer");
    }
  }
  // Without kernel clocks for a GPU: its SendGpuWait beyond what its inputs' late arrival
  // explains is its own time (unexplained_send_gpu_wait.hpp).
  {
    std::vector<SendGpuWaitFact> sends;
    std::vector<InputArrivalFact> arrivals;
    for (size_t i = 0; i < facts.size(); ++i) {
      const EdgeFacts& f = facts[i];
      const EdgeSummary& e = obs.edges[i];
      if (f.src == f.dst || f.p2p) continue;  // collectives only (the header says why)
      if (f.view.has_send)
        sends.push_back({f.src, e.key.comm_hash, f.anomaly[kSendGpuWait], static_cast<double>(e.send_steps)});
      if (f.view.has_recv) arrivals.push_back({f.dst, e.key.comm_hash, f.late_data_ns});
    }
    for (const auto& [p, own_ns] : unexplained_send_gpu_wait(sends, arrivals))
      if (!own_work_measured[p]) evidence[p].offer(own_ns, "gpu_producer");
  }
  if (std::none_of(own_work_measured.begin(), own_work_measured.end(), [](bool m) { return m; }) &&
      !obs.edges.empty())
    out.notes.push_back("no GPU kernel windows in the input (KernelCh with StopGpuClk, nccl.coll_perf): a GPU's own "
                        "work is judged by its SendGpuWait beyond what its inputs' arrival explains");
  for (uint32_t p = 0; p < n; ++p) {
    if (kernel_late_total[p] <= 0) continue;
    evidence[p].offer(kernel_late_total[p], "gpu_producer");
    // A GPU whose own work is measurably slow also consumes and frees buffers slowly: that
    // is one straggler, not a consumer fault.
    if (evidence[p].culprit_class == "gpu_consumer") evidence[p].culprit_class = "gpu_producer";
  }
  // Queue pairs (probing's nccl.net_qp) well under the job's wire speed (queue_pair_wires.hpp).
  {
    std::vector<OutboundSendWait> sends;
    for (const EdgeFacts& f : facts)
      if (f.view.has_send) sends.push_back({f.src, f.dst, f.view.step_ns[kSendWait]});
    for (const SlowQueuePair& q : slow_queue_pairs(obs.qps, sends, n, cfg))
      evidence[q.process].offer(q.excess_ns, "network_link", q.peer);
  }
  // A hang: the ranks whose records stop before the newest sequence their communicator
  // reached (sequence_hang.hpp).
  std::set<uint32_t> hung = stopped_by_sequence(obs, process_of_rank);
  // A snapshot of operations still alive refines the sequence laggards: a member that never
  // entered the collective its peers are stuck in stopped; one alive inside any operation
  // is blocked there.
  hung.insert(in_flight.stopped.begin(), in_flight.stopped.end());
  std::erase_if(hung, [&](uint32_t p) { return in_flight.in_flight.count(p) > 0; });
  for (uint32_t p : hung) {
    evidence[p].ns = 0;  // whatever else it shows, stopping is what everyone waits for
    evidence[p].offer(std::numeric_limits<double>::max() / 4, "hang");
  }
  // GPUs of one node are chained by invisible NVLink hops: a weaker GPU-side delay on a node
  // that also holds a stronger one is most likely that one's backpressure or starvation.
  {
    // A slow wire starves the node it feeds as much as it holds up its sender's node, so
    // it counts on both ends' nodes.
    std::map<std::string, uint32_t> strongest;
    // A GPU whose own work is measurably slow (kernel clocks) explains the GPU-side delays
    // of its node peers; the reverse cannot happen (a slow consumer does not lengthen
    // another GPU's own work). So kernel evidence outranks proxy-derived evidence.
    auto rank_of = [&](uint32_t p) { return std::make_pair(kernel_late_total[p] > 0, evidence[p].ns); };
    auto consider = [&](const std::string& host, uint32_t p) {
      auto it = strongest.find(host);
      if (it == strongest.end() || rank_of(p) > rank_of(it->second)) strongest[host] = p;
    };
    for (uint32_t p = 0; p < n; ++p) {
      if (evidence[p].ns <= 0) continue;
      consider(procs[p].host, p);
      if (evidence[p].culprit_class == "network_link" && evidence[p].peer >= 0)
        consider(procs[static_cast<size_t>(evidence[p].peer)].host, p);
    }
    // Withheld credit with no slowness of its own (class gpu_producer without kernel
    // evidence) is what a slow wire does to the GPUs around it in the same communicator:
    // starved inputs, stalled combines. It is held by the strongest slow wire there.
    std::map<uint64_t, uint32_t> strongest_link;  // comm -> sender of its worst slow wire
    std::map<uint32_t, std::set<uint64_t>> comms_of;
    for (const auto& [key, process] : process_of_rank) comms_of[process].insert(key.first);
    for (uint32_t p = 0; p < n; ++p) {
      if (evidence[p].culprit_class != "network_link") continue;
      for (uint64_t comm : comms_of[p]) {
        auto it = strongest_link.find(comm);
        if (it == strongest_link.end() || evidence[p].ns > evidence[it->second].ns) strongest_link[comm] = p;
      }
    }
    for (uint32_t p = 0; p < n; ++p) {
      if (evidence[p].culprit_class != "gpu_producer" || kernel_late_total[p] > 0) continue;
      for (uint64_t comm : comms_of[p]) {
        auto it = strongest_link.find(comm);
        if (it != strongest_link.end() && it->second != p && evidence[it->second].ns > evidence[p].ns) {
          holds.push_back({p, it->second, evidence[p].ns, "starved_by_link"});
          break;
        }
      }
    }
    for (uint32_t p = 0; p < n; ++p) {
      if (evidence[p].ns <= 0 || evidence[p].culprit_class == "network_link") continue;
      uint32_t x = strongest[procs[p].host];
      if (x != p && evidence[p].culprit_class != "flush" && evidence[p].culprit_class != "hang")
        holds.push_back({p, x, evidence[p].ns, "node_interior"});
    }
  }

  // A GPU whose own work is measurably slow (kernel gaps) is a root whatever it also waits
  // for: waiting on others does not lengthen the work between its kernels.
  holds.erase(std::remove_if(holds.begin(), holds.end(),
                             [&](const WaitEdge& h) { return kernel_late_total[h.from] > 0 && have_gaps; }),
              holds.end());
  for (uint32_t p = 0; p < n; ++p)
    if (evidence[p].ns > 0)
      out.evidence.push_back(procs[p].host + ":" + std::to_string(procs[p].pid) + " " +
                             evidence[p].culprit_class + " " + std::to_string(evidence[p].ns) +
                             " ns (kernel/arrival lateness " + std::to_string(kernel_late_total[p]) + " ns)");
  for (const WaitEdge& h : holds)
    out.evidence.push_back("hold " + procs[h.from].host + ":" + std::to_string(procs[h.from].pid) + " -> " +
                           procs[h.to].host + ":" + std::to_string(procs[h.to].pid) + " " + h.why);
  std::vector<RootCandidate> candidates(n);
  for (uint32_t p = 0; p < n; ++p)
    candidates[p] = {evidence[p].ns, evidence[p].culprit_class, evidence[p].peer};
  std::vector<uint32_t> roots = find_roots(n, holds, candidates, 1.0);
  std::set<uint32_t> root_set(roots.begin(), roots.end());

  // ---- data flow: who gets its input from whom ----------------------------------------------
  // In a collective every rank ends up waiting for the data that passes through the root, so
  // victims are found along the data flow: a receiver depends on its network sender; inside
  // a node, data that leaves came in through the node's receivers and its interior GPUs.
  std::vector<WaitEdge> flow;
  std::map<std::pair<std::string, uint64_t>, std::vector<uint32_t>> members_on_host;
  std::set<std::pair<uint64_t, uint32_t>> receives_from_net, sends_to_net;
  for (const auto& [key, process] : process_of_rank) members_on_host[{procs[process].host, key.first}].push_back(process);
  for (size_t i = 0; i < facts.size(); ++i) {
    if (facts[i].src == facts[i].dst) continue;
    flow.push_back({facts[i].dst, facts[i].src, 1.0, "data"});
    receives_from_net.insert({obs.edges[i].key.comm_hash, facts[i].dst});
    sends_to_net.insert({obs.edges[i].key.comm_hash, facts[i].src});
  }
  for (const auto& [host_comm, members] : members_on_host) {
    uint64_t comm = host_comm.second;
    for (uint32_t a : members) {
      bool a_pure_receiver = receives_from_net.count({comm, a}) && !sends_to_net.count({comm, a});
      if (a_pure_receiver) continue;  // its input comes from the network
      for (uint32_t b : members) {
        bool b_pure_sender = sends_to_net.count({comm, b}) && !receives_from_net.count({comm, b});
        if (a != b && !b_pure_sender) flow.push_back({a, b, 1.0, "data"});
      }
    }
  }
  flow.insert(flow.end(), in_flight.waits.begin(), in_flight.waits.end());
  GraphVerdict g = attribute_to_roots(n, flow, roots);

  // What each process waited: its measured RecvWait, SendGpuWait and SendPeerWait.
  std::vector<double> waited(n, 0.0);
  for (size_t i = 0; i < facts.size(); ++i) {
    const EdgeSummary& e = obs.edges[i];
    waited[facts[i].dst] += static_cast<double>(e.phase_ns[kRecvWait]);
    waited[facts[i].src] += static_cast<double>(e.phase_ns[kSendGpuWait] + e.phase_ns[kSendPeerWait]);
  }
  g.wait_ns = waited;

  // ---- rows -------------------------------------------------------------------------------
  out.processes.resize(n);
  for (uint32_t p = 0; p < n; ++p) {
    ProcessRow& row = out.processes[p];
    row.process_id = p;
    row.host = procs[p].host;
    row.pid = procs[p].pid;
    row.rank = procs[p].rank;
    row.label = procs[p].label;
    row.wait_ns = static_cast<uint64_t>(g.wait_ns[p]);
  }
  std::map<uint32_t, double> blame;
  // What a slow GPU cost the job: its victims' time inside NCCL beyond its own (it does not
  // wait for itself, so its own time there is what the others would have spent without it),
  // from the kernel durations that time every GPU. A fault inside NCCL (a slow wire, consumer
  // or flush) lengthens the root's own time there as much as its victims', so this measure
  // says nothing about it; its cost is left unknown rather than guessed (docs/attribution.md).
  std::vector<double> busy(n, 0.0);
  for (const GlobalCommRank& c : obs.comm_ranks) busy[c.process] += static_cast<double>(c.busy_sum_ns);
  std::map<uint32_t, double> cost;
  std::map<uint32_t, uint32_t> victims;
  for (uint32_t p = 0; p < n; ++p) {
    int64_t r = g.attributed_root[p];
    if (r < 0 || !root_set.count(static_cast<uint32_t>(r)) || static_cast<uint32_t>(r) == p) continue;
    ProcessRow& row = out.processes[p];
    row.role = "victim";
    row.attributed_root = r;
    row.chain_depth = static_cast<int32_t>(g.chain[p].size()) - 1;
    blame[static_cast<uint32_t>(r)] += g.wait_ns[p];
    if (busy[static_cast<size_t>(r)] > 0 && busy[p] > 0)
      cost[static_cast<uint32_t>(r)] += std::max(0.0, busy[p] - busy[static_cast<size_t>(r)]);
    victims[static_cast<uint32_t>(r)] += 1;
    for (uint32_t hop = 0; hop < g.chain[p].size(); ++hop) out.chains.push_back({p, hop, g.chain[p][hop]});
  }
  // Measured excess a root caused directly (no credit it withheld, the wire's extra time)
  // counts as blame too; a hang's evidence is a ranking device, not a time.
  for (uint32_t r : roots)
    if (!hung.count(r)) blame[r] += evidence[r].ns;
  double total_blame = 0;
  for (uint32_t r : roots) total_blame += blame[r];
  // The job's time inside NCCL: every process's, summed (what a root's blame is a share of).
  double job_busy_ns = 0;
  for (double b : busy) job_busy_ns += b;
  for (uint32_t r : roots) {
    ProcessRow& row = out.processes[r];
    row.role = "culprit";
    row.culprit_class = evidence[r].culprit_class;
    row.attributed_root = r;
    row.blame_ns = static_cast<uint64_t>(blame[r]);
    // Score: half from how far the evidence clears its guard (x/(1+x) with x in units of the
    // median step cycle), half from the share of processes that wait on this root.
    double cycle = 0;
    for (const auto& [comm, b] : baselines) cycle = std::max(cycle, b.cycle_ns);
    double steps = 1;
    for (const EdgeSummary& e : obs.edges) steps = std::max(steps, static_cast<double>(std::max(e.send_steps, e.recv_steps)));
    double x = hung.count(r) ? 1e9 : evidence[r].ns / std::max(1.0, cycle * steps * cfg.rel_floor);
    double coverage = n > 1 ? static_cast<double>(victims[r]) / static_cast<double>(n - 1) : 0;
    row.score = std::clamp(0.5 * x / (1 + x) + 0.5 * coverage, 0.0, 1.0);

    CulpritRow c;
    c.process_id = r;
    c.host = row.host;
    c.pid = row.pid;
    c.culprit_class = row.culprit_class;
    c.peer_process_id = evidence[r].peer;
    c.blame_ns = row.blame_ns;
    c.blame_share = total_blame > 0 ? blame[r] / total_blame : 0;
    // A hang stops everyone who waits on it: its share is theirs (and its own) of the job.
    if (hung.count(r)) c.job_share = n > 0 ? static_cast<double>(victims[r] + 1) / static_cast<double>(n) : 0;
    else if (evidence[r].culprit_class == "gpu_producer" && busy[r] > 0 && job_busy_ns > 0)
      c.job_share = std::min(1.0, cost[r] / job_busy_ns);
    else c.job_share = std::numeric_limits<double>::quiet_NaN();  // not measurable here (above)
    c.victims = victims[r];
    c.score = row.score;
    out.culprits.push_back(c);
  }
  // A stopped rank stops the whole job, whatever a straggler costs beside it: hangs first.
  std::sort(out.culprits.begin(), out.culprits.end(), [](const CulpritRow& a, const CulpritRow& b) {
    const bool a_hang = a.culprit_class == "hang", b_hang = b.culprit_class == "hang";
    if (a_hang != b_hang) return a_hang;
    return a.blame_ns != b.blame_ns ? a.blame_ns > b.blame_ns : a.process_id < b.process_id;
  });

  for (const auto& [key, process] : process_of_rank)
    out.comm_ranks.push_back({key.first, key.second, n_ranks[key.first], process});
  for (size_t i = 0; i < facts.size(); ++i) {
    const EdgeSummary& e = obs.edges[i];
    EdgeRow row;
    row.comm_hash = e.key.comm_hash;
    row.channel = e.key.channel;
    row.src_process = facts[i].src;
    row.dst_process = facts[i].dst;
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
    row.verdict = facts[i].verdict;
    out.edges.push_back(row);
  }
  return out;
}

}  // namespace culprit
