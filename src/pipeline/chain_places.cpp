#include "pipeline/chain_places.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "reduce/edge_reduce.hpp"

namespace culprit {

namespace {

// A chain of two GPUs has its two ends only, both known from the proxy records.
constexpr size_t kMinChain = 3;

}  // namespace

void measure_chain_places(const LocalData& data, const std::vector<CommWindow>& windows,
                          std::vector<GlobalCommRank>& ranks) {
  std::map<std::pair<std::string, uint64_t>, std::set<int32_t>> node_ranks;
  for (const CommRankSeen& c : data.comm_ranks)
    node_ranks[{data.processes[c.process].host, c.comm_hash}].insert(c.rank);
  // (host, comm, seq) -> (stop, rank) of each GPU of the node that recorded one.
  std::map<std::tuple<std::string, uint64_t, uint64_t>, std::vector<std::pair<uint64_t, int32_t>>> stops;
  for (const KernelStartRecord& k : data.kernel_starts) {
    if (k.is_p2p || k.window_unknown || k.stop_gpu_clk_ns <= k.start_gpu_clk_ns ||
        !collective_in_window(k.comm_hash, k.seq, windows))
      continue;
    stops[{data.processes[k.process].host, k.comm_hash, k.seq}].emplace_back(k.stop_gpu_clk_ns, k.rank);
  }
  std::map<std::pair<uint64_t, int32_t>, GlobalCommRank*> by_rank;
  for (GlobalCommRank& r : ranks) by_rank[{r.comm_hash, r.rank}] = &r;
  for (auto& [key, stopped] : stops) {
    const std::set<int32_t>& members = node_ranks[{std::get<0>(key), std::get<1>(key)}];
    std::set<int32_t> seen;
    for (const auto& [stop, rank] : stopped) seen.insert(rank);
    // A GPU that recorded the collective twice (copied files) or not at all leaves its places unknown.
    if (members.size() < kMinChain || seen != members || stopped.size() != members.size()) continue;
    std::sort(stopped.begin(), stopped.end());
    for (size_t place = 0; place < stopped.size(); ++place) {
      auto it = by_rank.find({std::get<1>(key), stopped[place].second});
      if (it == by_rank.end()) continue;
      const auto p = static_cast<double>(place);
      it->second->chain_place_sum += p;
      it->second->chain_place_sq_sum += p * p;
      it->second->chain_place_samples += 1;
    }
  }
}

}  // namespace culprit
