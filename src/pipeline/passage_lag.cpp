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

bool in_window(const HandoffLine& line, const std::vector<CommWindow>& windows) {
  auto it = std::lower_bound(windows.begin(), windows.end(), line.comm_hash,
                             [](const CommWindow& w, uint64_t c) { return w.comm_hash < c; });
  return it == windows.end() || it->comm_hash != line.comm_hash || line.seq >= it->min_seq;
}

}  // namespace

void measure_passage_lags(const LocalData& data, const std::vector<CommWindow>& windows,
                          std::vector<GlobalCommRank>& ranks) {
  const std::map<uint32_t, int64_t> offsets = clock_offsets(data);
  // (host, comm, seq, channel) -> the node's network ends of that channel in that collective.
  std::map<std::tuple<std::string, uint64_t, uint64_t, int32_t>, ChannelEnds> channels;
  for (const HandoffLine& line : data.handoffs) {
    if (!in_window(line, windows)) continue;
    ChannelEnds& ends = channels[{data.processes[line.process].host, line.comm_hash, line.seq, line.channel}];
    (line.is_send ? ends.sends : ends.receives).push_back(&line);
  }
  // The GPUs of each node in each communicator: the steps a channel's data takes to cross it.
  std::map<std::pair<std::string, uint64_t>, std::set<int32_t>> node_ranks;
  for (const CommRankSeen& c : data.comm_ranks)
    node_ranks[{data.processes[c.process].host, c.comm_hash}].insert(c.rank);
  std::map<std::pair<uint64_t, int32_t>, GlobalCommRank*> by_rank;
  for (GlobalCommRank& r : ranks) by_rank[{r.comm_hash, r.rank}] = &r;

  for (const auto& [key, ends] : channels) {
    if (ends.receives.size() != 1 || ends.sends.size() != 1) continue;  // a tree, or a part missing
    const HandoffLine& entry = *ends.receives[0];
    const HandoffLine& exit = *ends.sends[0];
    if (entry.process == exit.process || entry.ns_per_step <= 0) continue;
    auto entry_offset = offsets.find(entry.process), exit_offset = offsets.find(exit.process);
    if (entry_offset == offsets.end() || exit_offset == offsets.end()) continue;
    const auto gpus = static_cast<int>(node_ranks[{std::get<0>(key), std::get<1>(key)}].size());
    if (gpus < 2) continue;
    const double k = entry.step_mean;
    const long double passage =
        handoff_at(exit, k + gpus, exit_offset->second) - handoff_at(entry, k, entry_offset->second);
    const double lag = static_cast<double>(passage / entry.ns_per_step);
    if (!std::isfinite(lag)) continue;
    const double shortfall = lag - kSlotsPerConnection * (gpus - 2);
    if (auto it = by_rank.find({entry.comm_hash, entry.rank}); it != by_rank.end()) {
      it->second->entry_lag_sum += lag;
      it->second->entry_lag_sq_sum += lag * lag;
      it->second->entry_lag_samples += 1;
    }
    if (auto it = by_rank.find({exit.comm_hash, exit.rank}); it != by_rank.end()) {
      it->second->exit_shortfall_sum += shortfall;
      it->second->exit_shortfall_sq_sum += shortfall * shortfall;
      it->second->exit_shortfall_samples += 1;
    }
  }
}

}  // namespace culprit
