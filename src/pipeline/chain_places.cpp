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

// The stops of one collective on one node, each GPU of the communicator's, and whether it ran
// NCCL's tree.
struct NodeStops {
  bool tree = false;
  std::vector<std::pair<uint64_t, int32_t>> stopped;  // (stop, rank)
};

// A tree's stops, in order, are the GPUs' places along the chain.
void add_chain_places(const std::vector<GlobalCommRank*>& in_order) {
  for (size_t place = 0; place < in_order.size(); ++place) {
    GlobalCommRank* r = in_order[place];
    if (r == nullptr) continue;
    const auto p = static_cast<double>(place);
    r->chain_place_sum += p;
    r->chain_place_sq_sum += p * p;
    r->chain_place_samples += 1;
  }
}

// Any other algorithm's stops say which GPU stopped last.
void add_last_stop(const std::vector<GlobalCommRank*>& in_order) {
  for (GlobalCommRank* r : in_order)
    if (r != nullptr) r->last_stop_samples += 1;
  if (in_order.back() != nullptr) in_order.back()->last_stops += 1;
}

}  // namespace

void measure_chain_places(const LocalData& data, const std::vector<CommWindow>& windows,
                          std::vector<GlobalCommRank>& ranks) {
  std::map<std::pair<std::string, uint64_t>, std::set<int32_t>> node_ranks;
  for (const CommRankSeen& c : data.comm_ranks)
    node_ranks[{data.processes[c.process].host, c.comm_hash}].insert(c.rank);
  std::map<std::tuple<std::string, uint64_t, uint64_t>, NodeStops> stops;  // (host, comm, seq)
  for (const KernelStartRecord& k : data.kernel_starts) {
    if (k.is_p2p || k.window_unknown || k.stop_gpu_clk_ns <= k.start_gpu_clk_ns ||
        !collective_in_window(k.comm_hash, k.seq, windows))
      continue;
    NodeStops& node = stops[{data.processes[k.process].host, k.comm_hash, k.seq}];
    node.tree = node.tree || k.tree;
    node.stopped.emplace_back(k.stop_gpu_clk_ns, k.rank);
  }
  std::map<std::pair<uint64_t, int32_t>, GlobalCommRank*> by_rank;
  for (GlobalCommRank& r : ranks) by_rank[{r.comm_hash, r.rank}] = &r;
  for (auto& [key, node] : stops) {
    std::vector<std::pair<uint64_t, int32_t>>& stopped = node.stopped;
    const std::set<int32_t>& members = node_ranks[{std::get<0>(key), std::get<1>(key)}];
    std::set<int32_t> seen;
    for (const auto& [stop, rank] : stopped) seen.insert(rank);
    // A GPU that recorded the collective twice (copied files) or not at all leaves its places unknown.
    if (members.size() < kMinChain || seen != members || stopped.size() != members.size()) continue;
    std::sort(stopped.begin(), stopped.end());
    std::vector<GlobalCommRank*> in_order;
    for (const auto& [stop, rank] : stopped) {
      auto it = by_rank.find({std::get<1>(key), rank});
      in_order.push_back(it == by_rank.end() ? nullptr : it->second);
    }
    if (node.tree)
      add_chain_places(in_order);
    else
      add_last_stop(in_order);
  }
}

}  // namespace culprit
