#include "pipeline/local_stage.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "pipeline/chain_places.hpp"
#include "pipeline/passage_lag.hpp"

namespace culprit {

std::vector<CommWindow> agree_windows(Communicator& comm, const LocalData& data, int seq_window) {
  std::map<uint64_t, uint64_t> newest;
  for (const CommRankSeen& c : data.comm_ranks)
    if (c.has_seq) newest[c.comm_hash] = std::max(newest[c.comm_hash], c.newest_seq);
  std::vector<CommWindow> mine;
  for (const auto& [hash, seq] : newest) mine.push_back({hash, seq});
  // Communicators are not known in advance, so gather the (small) lists instead of one
  // fixed-size reduction, then take the maximum per communicator.
  std::map<uint64_t, uint64_t> all;
  for (const std::vector<char>& blob : comm.all_gather_bytes(to_bytes(mine)))
    for (const CommWindow& w : from_bytes<CommWindow>(blob))
      all[w.comm_hash] = std::max(all[w.comm_hash], w.min_seq);
  std::vector<CommWindow> windows;
  uint64_t span = seq_window > 0 ? static_cast<uint64_t>(seq_window) : 1;
  for (const auto& [hash, newest_seq] : all)
    windows.push_back({hash, newest_seq + 1 >= span ? newest_seq + 1 - span : 0});
  return windows;
}

void measure_kernel_lateness(const LocalData& data, const std::vector<CommWindow>& windows,
                             std::vector<GlobalCommRank>& ranks) {
  auto min_seq_of = [&](uint64_t comm) -> uint64_t {
    auto it = std::lower_bound(windows.begin(), windows.end(), comm,
                               [](const CommWindow& w, uint64_t c) { return w.comm_hash < c; });
    return it != windows.end() && it->comm_hash == comm ? it->min_seq : 0;
  };
  // (host, comm, seq) -> the kernel starts of that node's GPUs in that collective.
  std::map<std::tuple<std::string, uint64_t, uint64_t>, std::vector<const KernelStartRecord*>> groups;
  for (const KernelStartRecord& k : data.kernel_starts) {
    // Node peers start a collective together; p2p calls have no common start.
    if (k.is_p2p || k.window_unknown || k.seq < min_seq_of(k.comm_hash)) continue;
    groups[{data.processes[k.process].host, k.comm_hash, k.seq}].push_back(&k);
  }
  std::map<std::pair<uint64_t, int32_t>, GlobalCommRank*> by_rank;
  for (GlobalCommRank& r : ranks) by_rank[{r.comm_hash, r.rank}] = &r;
  // Gaps: per GPU, its collectives and p2p calls of every communicator in kernel-start order.
  // Each gap comes with its period (previous kernel start to this one), so that the share of
  // time a GPU spends on its own work can be compared between GPUs that launch different
  // numbers of kernels (pipeline stages).
  std::map<uint32_t, std::vector<const KernelStartRecord*>> by_process;
  for (const KernelStartRecord& k : data.kernel_starts) by_process[k.process].push_back(&k);
  for (auto& [process, list] : by_process) {
    std::sort(list.begin(), list.end(), [](const KernelStartRecord* a, const KernelStartRecord* b) {
      return a->start_gpu_clk_ns < b->start_gpu_clk_ns;
    });
    for (size_t i = 1; i < list.size(); ++i) {
      const KernelStartRecord* prev = list[i - 1];
      const KernelStartRecord* cur = list[i];
      if ((!cur->is_p2p && cur->seq < min_seq_of(cur->comm_hash)) || prev->stop_gpu_clk_ns == 0 ||
          prev->stop_gpu_clk_ns < prev->start_gpu_clk_ns || cur->start_gpu_clk_ns <= prev->stop_gpu_clk_ns ||
          prev->window_unknown || cur->window_unknown)
        continue;  // outside the window, no stop recorded, overlapping streams, or not the kernel's window
      auto it = by_rank.find({cur->comm_hash, cur->rank});
      if (it == by_rank.end()) continue;
      it->second->gap_sum_ns += cur->start_gpu_clk_ns - prev->stop_gpu_clk_ns;
      it->second->gap_period_sum_ns += cur->start_gpu_clk_ns - prev->start_gpu_clk_ns;
      it->second->gap_samples += 1;
      // Single gaps before collectives, keyed by sequence, for the gap test (pipelines'
      // send/recv gaps are judged by their sums only, own_delay.cpp).
      if (!cur->is_p2p)
        it->second->gaps.push_back({cur->seq, std::log(static_cast<double>(cur->start_gpu_clk_ns - prev->stop_gpu_clk_ns))});
    }
  }
  for (GlobalCommRank& r : ranks)
    if (r.gaps.size() > kMaxGapSamples)
      r.gaps.erase(r.gaps.begin(), r.gaps.end() - static_cast<std::ptrdiff_t>(kMaxGapSamples));
  for (auto& [key, starts] : groups) {
    if (starts.size() < 2) continue;  // nothing to compare with on this node
    std::vector<uint64_t> clocks;
    for (const KernelStartRecord* k : starts) clocks.push_back(k->start_gpu_clk_ns);
    std::sort(clocks.begin(), clocks.end());
    // Lower median: with two GPUs the late one is measured against the early one.
    uint64_t median = clocks[(clocks.size() - 1) / 2];
    for (const KernelStartRecord* k : starts) {
      auto it = by_rank.find({k->comm_hash, k->rank});
      if (it == by_rank.end()) continue;
      it->second->kernel_late_sum_ns +=
          static_cast<int64_t>(k->start_gpu_clk_ns) - static_cast<int64_t>(median);
      it->second->kernel_samples += 1;
    }
  }
}

void measure_op_times(const LocalData& data, const std::vector<CommWindow>& windows,
                      std::vector<GlobalCommRank>& ranks) {
  std::map<std::pair<uint64_t, int32_t>, GlobalCommRank*> by_rank;
  for (GlobalCommRank& r : ranks) by_rank[{r.comm_hash, r.rank}] = &r;
  for (const ProxyOpRecord& op : data.ops) {
    // Receive ops only: they all end when the collective's last data arrives, so their
    // lengths differ by when each rank posted them. Send ops end earlier and would mix in a
    // second population.
    if (op.is_p2p || op.is_send || op.end_ns <= op.start_ns || !record_in_window(op, windows)) continue;
    auto it = by_rank.find({op.comm_hash, op.rank});
    if (it == by_rank.end()) continue;
    it->second->op_time_sum_ns += op.end_ns - op.start_ns;
    it->second->op_samples += 1;
  }
}

// Sums each receiving rank's gated holds of the window (io/slot_gates.hpp).
void measure_gated_holds(const LocalData& data, const std::vector<CommWindow>& windows,
                         std::vector<GlobalCommRank>& ranks) {
  std::map<std::pair<uint64_t, int32_t>, GlobalCommRank*> by_rank;
  for (GlobalCommRank& r : ranks) by_rank[{r.comm_hash, r.rank}] = &r;
  for (const GatedHoldRecord& g : data.gated_holds) {
    if (!collective_in_window(g.comm_hash, g.seq, windows)) continue;
    auto it = by_rank.find({g.comm_hash, g.rank});
    if (it == by_rank.end()) continue;
    it->second->gated_steps += g.steps;
    it->second->gated_own_sum_ns += g.own_ns;
    it->second->gated_work_sum_ns += g.work_ns;
  }
}

void measure_busy_time(const LocalData& data, const std::vector<CommWindow>& windows,
                       std::vector<GlobalCommRank>& ranks) {
  std::map<std::pair<uint64_t, int32_t>, GlobalCommRank*> by_rank;
  for (GlobalCommRank& r : ranks) by_rank[{r.comm_hash, r.rank}] = &r;
  auto in_window = [&](uint64_t comm, uint64_t seq, bool unwindowed) {
    return unwindowed || collective_in_window(comm, seq, windows);
  };
  std::set<std::pair<uint64_t, int32_t>> kernel_timed;
  for (const KernelStartRecord& k : data.kernel_starts) {
    if (k.stop_gpu_clk_ns <= k.start_gpu_clk_ns || k.window_unknown || !in_window(k.comm_hash, k.seq, k.is_p2p))
      continue;
    auto it = by_rank.find({k.comm_hash, k.rank});
    if (it == by_rank.end()) continue;
    it->second->busy_sum_ns += k.stop_gpu_clk_ns - k.start_gpu_clk_ns;
    kernel_timed.insert({k.comm_hash, k.rank});
  }
  // Without kernel records: each collective's span over the rank's proxy ops (start to end on
  // its own clock); p2p ops each count alone.
  std::map<std::tuple<uint64_t, int32_t, uint64_t>, std::pair<uint64_t, uint64_t>> spans;
  for (const ProxyOpRecord& op : data.ops) {
    if (op.end_ns <= op.start_ns || kernel_timed.count({op.comm_hash, op.rank}) || !record_in_window(op, windows)) continue;
    if (op.is_p2p) {
      if (auto it = by_rank.find({op.comm_hash, op.rank}); it != by_rank.end()) it->second->busy_sum_ns += op.end_ns - op.start_ns;
      continue;
    }
    auto [it, added] = spans.emplace(std::make_tuple(op.comm_hash, op.rank, op.seq), std::make_pair(op.start_ns, op.end_ns));
    if (!added) it->second = {std::min(it->second.first, op.start_ns), std::max(it->second.second, op.end_ns)};
  }
  for (const auto& [key, span] : spans)
    if (auto it = by_rank.find({std::get<0>(key), std::get<1>(key)}); it != by_rank.end())
      it->second->busy_sum_ns += span.second - span.first;
}

LocalStageResult run_local_stage(const LocalData& data, const std::vector<CommWindow>& windows,
                                 ReducePath path) {
  LocalStageResult result;
  NodeSummary& s = result.summary;
  for (const LocalProcess& p : data.processes) s.processes.push_back({p.host, p.pid, p.rank, p.label});
  for (const CommRankSeen& c : data.comm_ranks) {
    GlobalCommRank g;
    g.comm_hash = c.comm_hash;
    g.rank = c.rank;
    g.process = c.process;
    g.newest_seq = c.newest_seq;
    g.has_collective = c.has_collective;
    g.seq_unknown = c.has_collective && !c.has_seq;
    g.cut_short = c.cut_short;
    s.comm_ranks.push_back(g);
  }
  measure_kernel_lateness(data, windows, s.comm_ranks);
  measure_op_times(data, windows, s.comm_ranks);
  measure_busy_time(data, windows, s.comm_ranks);
  measure_passage_lags(data, windows, s.comm_ranks);
  measure_chain_places(data, windows, s.comm_ranks);
  measure_gated_holds(data, windows, s.comm_ranks);
  ReduceOutcome reduced = reduce_edges(data.ops, windows, path);
  s.edges = std::move(reduced.edges);
  result.reduce_path = reduced.path_used;
  result.reduce_note = reduced.note;
  s.inputs = data.inputs;
  s.p2p_calls = data.p2p_calls;
  s.inflight = data.inflight;
  s.fr_groups = data.fr_groups;
  s.fr_ops = data.fr_ops;
  // Every dump of a node names its groups' members: each run travels once.
  std::set<std::tuple<uint64_t, int32_t, int32_t, int32_t, int32_t>> members;
  for (const FrMemberRun& m : data.fr_members)
    if (members.insert({m.group, m.first_group_rank, m.first_rank, m.stride, m.count}).second) s.fr_members.push_back(m);
  for (const QpStat& q : data.qp_stats) {
    // A rank whose profiler dropped events may miss a work request between two others: the
    // later one would look idle, its queueing taken for its wire. It gives no idle sends.
    const bool complete = !data.ranks_losing_events.count({q.host, q.rank});
    QpObservation o{q.process, q.device, q.qp_num, q.count, q.bytes, q.sum_ns, 0, 0, 0, 0};
    if (complete) {
      o.wr_length = q.wr_length;
      o.idle_sends = q.idle_sends;
      o.idle_log_ns_sum = q.idle_log_ns_sum;
      o.idle_log_ns_sq_sum = q.idle_log_ns_sq_sum;
    }
    s.qps.push_back(o);
  }
  return result;
}

}  // namespace culprit
