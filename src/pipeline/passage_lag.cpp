#include "pipeline/passage_lag.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "reduce/edge_reduce.hpp"

namespace culprit {
namespace {

// Each process's GPU clock minus its own clock: the median over its kernels (each known
// within the profiler's polling of the kernel start).
std::map<uint32_t, int64_t> clock_offsets(const LocalData& data) {
  std::map<uint32_t, std::vector<int64_t>> samples;
  for (const KernelStartRecord& k : data.kernel_starts)
    if (k.start_host_ns > 0 && k.start_gpu_clk_ns > 0 && k.start_gpu_clk_ns <= static_cast<uint64_t>(INT64_MAX))
      samples[k.process].push_back(static_cast<int64_t>(k.start_gpu_clk_ns) - k.start_host_ns);
  std::map<uint32_t, int64_t> offsets;
  for (auto& [process, s] : samples) {
    std::nth_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(s.size() / 2), s.end());
    offsets[process] = s[s.size() / 2];
  }
  return offsets;
}

// The handoff time of `line` at step k, on its GPU's clock (offset added). Long double holds
// a 64-bit clock exactly, and a garbled trace's times cannot overflow it.
long double handoff_at(const HandoffLine& line, double k, int64_t offset) {
  return static_cast<long double>(line.mean_ns) + static_cast<long double>(offset) +
         static_cast<long double>(line.ns_per_step * (k - line.step_mean));
}

struct ChannelEnds {
  std::vector<const HandoffLine*> receives, sends;
};

// One way across a node: the entry's receive, the exit's send, and the exit's step of the data
// the entry received at step k, less k.
struct Passage {
  const HandoffLine* entry;
  const HandoffLine* exit;
  int shift;
};

// The passages of one collective's channel on a node of `gpus` GPUs in the communicator.
//   - A ring: one network receive and one network send, by two processes; each GPU forwards a
//     step one step later, so the exit sends step k + gpus.
//   - A tree (a chain of the node's GPUs between its parent and its children, NCCL's
//     BALANCED_TREE): two processes, each with network receives and sends, one facing the
//     parent and one the children. Data from the children enters at one and leaves at the
//     other, data from the parent the other way; each GPU forwards step k as step k. A child's
//     receives are freed together, and a parent's sends to its children are handed over
//     together, so either stands for its end.
// Anything else (a part missing, a single GPU, a node of the tree's root or leaves, whose
// chain meets the network at one end only) gives none.
std::vector<Passage> passages_of(const ChannelEnds& ends, int gpus) {
  if (ends.receives.size() == 1 && ends.sends.size() == 1) {
    if (ends.receives[0]->process == ends.sends[0]->process) return {};
    return {{ends.receives[0], ends.sends[0], gpus}};
  }
  const HandoffLine* receive_of[2] = {nullptr, nullptr};
  const HandoffLine* send_of[2] = {nullptr, nullptr};
  uint32_t process[2] = {0, 0};
  int seen = 0;
  auto place = [&](const HandoffLine* line, const HandoffLine** of) {
    for (int i = 0; i < seen; ++i)
      if (process[i] == line->process) {
        if (!of[i]) of[i] = line;
        return true;
      }
    if (seen == 2) return false;
    process[seen] = line->process;
    of[seen++] = line;
    return true;
  };
  for (const HandoffLine* r : ends.receives)
    if (!place(r, receive_of)) return {};
  for (const HandoffLine* s : ends.sends)
    if (!place(s, send_of)) return {};
  if (seen != 2 || !receive_of[0] || !receive_of[1] || !send_of[0] || !send_of[1]) return {};
  return {{receive_of[0], send_of[1], 0}, {receive_of[1], send_of[0], 0}};
}

// Where a tree's data turns back: every network receive and send of the channel on the node is
// one process's (a chain that meets the network at one end only). At the tree's root that GPU
// meets the child: what it receives goes up the node's chain to the top and comes back down to
// it, as the same step, to be sent to the child. A leaf's GPU meets its parent the same way, but
// there the data sent up (step k) must reach the root and come back before the parent's data of
// step k arrives: its send of a step comes before its free of that step, always. So only a
// channel whose every collective of the window reads a positive lag is a turn.
const HandoffLine* turning_receive(const ChannelEnds& ends) {
  if (ends.receives.empty() || ends.sends.empty()) return nullptr;
  const uint32_t process = ends.receives[0]->process;
  for (const auto* side : {&ends.receives, &ends.sends})
    for (const HandoffLine* line : *side)
      if (line->process != process) return nullptr;
  return ends.receives[0];
}

// The lags of one channel's turn on a node, per collective, until every one is known positive.
struct TurnSamples {
  int32_t rank = -1;
  bool one_rank = true;  // the same GPU turned the data in every collective
  std::vector<double> lags;
};

// Sums one passage's lag into its entry's entry_lag_* and its exit's exit_shortfall_*.
void add_lag_sample(const HandoffLine& entry, const HandoffLine& exit, double lag, int gpus,
                    std::map<std::pair<uint64_t, int32_t>, GlobalCommRank*>& by_rank) {
  const double shortfall = lag - kSlotsPerConnection * (gpus - 2);
  if (auto it = by_rank.find({entry.comm_hash, entry.rank}); it != by_rank.end()) {
    const double lag_ns = lag * entry.ns_per_step;
    it->second->entry_lag_sum += lag;
    it->second->entry_lag_sq_sum += lag * lag;
    it->second->entry_lag_ns_sum += lag_ns;
    it->second->entry_lag_ns_sq_sum += lag_ns * lag_ns;
    it->second->entry_step_ns_sum += entry.ns_per_step;
    it->second->entry_lag_samples += 1;
  }
  if (auto it = by_rank.find({exit.comm_hash, exit.rank}); it != by_rank.end()) {
    it->second->exit_shortfall_sum += shortfall;
    it->second->exit_shortfall_sq_sum += shortfall * shortfall;
    it->second->exit_shortfall_samples += 1;
  }
}

// One collective's lag at a turn: from the receive freeing step k to the send handing step k
// back to the proxy, in steps of the receive's pace. Both are one process's, on one clock.
void add_turn_sample(const HandoffLine& receive, const HandoffLine& send, TurnSamples& turn) {
  if (receive.ns_per_step <= 0) return;
  const double k = receive.step_mean;
  const double lag = static_cast<double>((handoff_at(send, k, 0) - handoff_at(receive, k, 0)) / receive.ns_per_step);
  if (!std::isfinite(lag)) return;
  if (turn.rank != -1 && turn.rank != receive.rank) turn.one_rank = false;
  turn.rank = receive.rank;
  turn.lags.push_back(lag);
}

}  // namespace

void measure_passage_lags(const LocalData& data, const std::vector<CommWindow>& windows,
                          std::vector<GlobalCommRank>& ranks) {
  const std::map<uint32_t, int64_t> offsets = clock_offsets(data);
  // (host, comm, seq, channel) -> the node's network ends of that channel in that collective.
  std::map<std::tuple<std::string, uint64_t, uint64_t, int32_t>, ChannelEnds> channels;
  for (const HandoffLine& line : data.handoffs) {
    if (!collective_in_window(line.comm_hash, line.seq, windows)) continue;
    ChannelEnds& ends = channels[{data.processes[line.process].host, line.comm_hash, line.seq, line.channel}];
    (line.is_send ? ends.sends : ends.receives).push_back(&line);
  }
  // The GPUs of each node in each communicator: the steps a channel's data takes to cross it.
  std::map<std::pair<std::string, uint64_t>, std::set<int32_t>> node_ranks;
  for (const CommRankSeen& c : data.comm_ranks)
    node_ranks[{data.processes[c.process].host, c.comm_hash}].insert(c.rank);
  std::map<std::pair<uint64_t, int32_t>, GlobalCommRank*> by_rank;
  for (GlobalCommRank& r : ranks) by_rank[{r.comm_hash, r.rank}] = &r;

  // The tree collectives of the node (KernelStartRecord::tree): only a tree's data turns back.
  std::set<std::pair<uint64_t, uint64_t>> tree_collectives;
  for (const KernelStartRecord& k : data.kernel_starts)
    if (k.tree && !k.is_p2p) tree_collectives.insert({k.comm_hash, k.seq});
  // (host, comm, channel) -> the lags of the GPU where its data turns.
  std::map<std::tuple<std::string, uint64_t, int32_t>, TurnSamples> turns;

  for (const auto& [key, ends] : channels) {
    const auto gpus = static_cast<int>(node_ranks[{std::get<0>(key), std::get<1>(key)}].size());
    if (gpus < 2) continue;
    if (const HandoffLine* receive = turning_receive(ends);
        receive && tree_collectives.count({std::get<1>(key), std::get<2>(key)})) {
      add_turn_sample(*receive, *ends.sends[0], turns[{std::get<0>(key), std::get<1>(key), std::get<3>(key)}]);
      continue;
    }
    for (const Passage& way : passages_of(ends, gpus)) {
      const HandoffLine& entry = *way.entry;
      const HandoffLine& exit = *way.exit;
      if (entry.ns_per_step <= 0) continue;
      auto entry_offset = offsets.find(entry.process), exit_offset = offsets.find(exit.process);
      if (entry_offset == offsets.end() || exit_offset == offsets.end()) continue;
      const double k = entry.step_mean;
      const long double passage =
          handoff_at(exit, k + way.shift, exit_offset->second) - handoff_at(entry, k, entry_offset->second);
      const double lag = static_cast<double>(passage / entry.ns_per_step);
      if (!std::isfinite(lag)) continue;
      add_lag_sample(entry, exit, lag, gpus, by_rank);
    }
  }
  for (const auto& [key, turn] : turns) {
    auto it = by_rank.find({std::get<1>(key), turn.rank});
    if (it == by_rank.end() || !turn.one_rank || turn.lags.empty() ||
        !std::ranges::all_of(turn.lags, [](double lag) { return lag > 0; }))
      continue;
    for (double lag : turn.lags) {
      it->second->loop_lag_sum += lag;
      it->second->loop_lag_sq_sum += lag * lag;
      it->second->loop_lag_samples += 1;
    }
  }
}

}  // namespace culprit
