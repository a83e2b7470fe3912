#include "pipeline/chain_places.hpp"

#include <algorithm>
#include <cmath>
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
// A GPU that swapped places with its neighbour in one collective of four or more still reads
// its place; one whose place varies more belongs to no single chain.
constexpr double kPlaceSlack = 0.25;
constexpr uint32_t kMinSamples = 3;
// The stops of a collective none of whose channels recorded its own (shards): the kernel's last.
constexpr int32_t kWholeKernel = -1;

// (stop, rank) of the node's GPUs in one collective's channel.
using Stops = std::vector<std::pair<uint64_t, int32_t>>;
// (host, comm, seq, channel) -> its stops.
using CollectiveStops = std::map<std::tuple<std::string, uint64_t, uint64_t, int32_t>, Stops>;

struct PlaceSums {
  double sum = 0;
  uint32_t samples = 0;
};
// (host, comm, channel) -> rank -> its places.
using ChannelPlaces = std::map<std::tuple<std::string, uint64_t, int32_t>, std::map<int32_t, PlaceSums>>;

// Whether every GPU of the node in the communicator, three or more, recorded one stop. A GPU
// that recorded the collective twice (copied files) or not at all leaves the places unknown.
bool complete(const Stops& stops, const std::set<int32_t>& members) {
  std::set<int32_t> seen;
  for (const auto& [stop, rank] : stops) seen.insert(rank);
  return members.size() >= kMinChain && seen == members && stops.size() == members.size();
}

// The tree collectives' stops of each channel, where the channel recorded its own; else the
// kernel's last stop over its channels, for the whole collective.
CollectiveStops tree_stops(const LocalData& data, const std::vector<CommWindow>& windows) {
  std::set<std::pair<uint64_t, uint64_t>> tree;  // (comm, seq)
  for (const KernelStartRecord& k : data.kernel_starts)
    if (k.tree && !k.is_p2p && !k.window_unknown) tree.insert({k.comm_hash, k.seq});
  CollectiveStops stops;
  std::set<std::tuple<std::string, uint64_t, uint64_t>> by_channel;  // (host, comm, seq)
  for (const ChannelStopRecord& c : data.channel_stops) {
    if (!tree.count({c.comm_hash, c.seq}) || !collective_in_window(c.comm_hash, c.seq, windows)) continue;
    const std::string& host = data.processes[c.process].host;
    stops[{host, c.comm_hash, c.seq, c.channel}].emplace_back(c.stop_gpu_clk_ns, c.rank);
    by_channel.insert({host, c.comm_hash, c.seq});
  }
  for (const KernelStartRecord& k : data.kernel_starts) {
    const std::string& host = data.processes[k.process].host;
    if (!k.tree || k.is_p2p || k.window_unknown || k.stop_gpu_clk_ns <= k.start_gpu_clk_ns ||
        by_channel.count({host, k.comm_hash, k.seq}) || !collective_in_window(k.comm_hash, k.seq, windows))
      continue;
    stops[{host, k.comm_hash, k.seq, kWholeKernel}].emplace_back(k.stop_gpu_clk_ns, k.rank);
  }
  return stops;
}

// The order of a chain's GPUs (comm ranks, the first to stop first) where every GPU's mean place
// lies within a quarter of a whole place of its own; empty where none is read.
std::vector<int32_t> read_order(const std::map<int32_t, PlaceSums>& places) {
  std::vector<int32_t> order(places.size(), -1);
  for (const auto& [rank, p] : places) {
    if (p.samples < kMinSamples) return {};
    const double mean = p.sum / p.samples, place = std::round(mean);
    if (std::fabs(mean - place) > kPlaceSlack || place < 0 || place >= static_cast<double>(order.size())) return {};
    int32_t& slot = order[static_cast<size_t>(place)];
    if (slot != -1) return {};
    slot = rank;
  }
  return order;
}

// (host, comm, channel) -> the chain's order, the first to stop first.
using ChannelOrders = std::map<std::tuple<std::string, uint64_t, int32_t>, std::vector<int32_t>>;

// Each GPU gets the chain from it where, on every channel its network records came from (its
// passage lags', pipeline/passage_lag.hpp), the chain's order was read and it is one end: the
// same chain from it on all of them. A GPU that ends chains in different orders (channels
// rotated so that it is the first of one and the last of another), or whose chain on one of its
// channels is not known, gets none.
void set_chains_from(const LocalData& data, const ChannelOrders& orders, std::vector<GlobalCommRank>& ranks) {
  std::map<std::pair<uint32_t, uint64_t>, std::set<int32_t>> channels;  // (process, comm) -> its channels
  for (const HandoffLine& line : data.handoffs) channels[{line.process, line.comm_hash}].insert(line.channel);
  std::map<std::pair<uint64_t, int32_t>, uint32_t> process_of;
  for (const CommRankSeen& c : data.comm_ranks) process_of[{c.comm_hash, c.rank}] = c.process;
  for (GlobalCommRank& r : ranks) {
    auto process = process_of.find({r.comm_hash, r.rank});
    if (process == process_of.end()) continue;
    auto own = channels.find({process->second, r.comm_hash});
    if (own == channels.end()) continue;
    const std::string& host = data.processes[process->second].host;
    std::vector<int32_t> chain;
    bool known = true;
    for (int32_t channel : own->second) {
      auto order = orders.find({host, r.comm_hash, channel});
      if (order == orders.end()) order = orders.find({host, r.comm_hash, kWholeKernel});
      std::vector<int32_t> from;
      if (order != orders.end() && order->second.front() == r.rank) from = order->second;
      if (order != orders.end() && order->second.back() == r.rank)
        from.assign(order->second.rbegin(), order->second.rend());
      known = known && !from.empty() && (chain.empty() || chain == from);
      chain = from;
    }
    if (!known || chain.size() > kMaxChainGpus) continue;
    std::ranges::copy(chain, std::begin(r.chain_from));
    r.chain_length = static_cast<uint32_t>(chain.size());
  }
}

// Any other algorithm's stops (the kernel's last over its channels) say which GPU stopped last.
void count_last_stops(const LocalData& data, const std::vector<CommWindow>& windows,
                      const std::map<std::pair<std::string, uint64_t>, std::set<int32_t>>& node_ranks,
                      std::map<std::pair<uint64_t, int32_t>, GlobalCommRank*>& by_rank) {
  std::map<std::tuple<std::string, uint64_t, uint64_t>, Stops> stops;  // (host, comm, seq)
  for (const KernelStartRecord& k : data.kernel_starts)
    if (!k.tree && !k.is_p2p && !k.window_unknown && k.stop_gpu_clk_ns > k.start_gpu_clk_ns &&
        collective_in_window(k.comm_hash, k.seq, windows))
      stops[{data.processes[k.process].host, k.comm_hash, k.seq}].emplace_back(k.stop_gpu_clk_ns, k.rank);
  for (auto& [key, stopped] : stops) {
    auto members = node_ranks.find({std::get<0>(key), std::get<1>(key)});
    if (members == node_ranks.end() || !complete(stopped, members->second)) continue;
    std::ranges::sort(stopped);
    for (const auto& [stop, rank] : stopped)
      if (auto it = by_rank.find({std::get<1>(key), rank}); it != by_rank.end()) it->second->last_stop_samples += 1;
    if (auto it = by_rank.find({std::get<1>(key), stopped.back().second}); it != by_rank.end())
      it->second->last_stops += 1;
  }
}

}  // namespace

void measure_chain_places(const LocalData& data, const std::vector<CommWindow>& windows,
                          std::vector<GlobalCommRank>& ranks) {
  std::map<std::pair<std::string, uint64_t>, std::set<int32_t>> node_ranks;
  for (const CommRankSeen& c : data.comm_ranks)
    node_ranks[{data.processes[c.process].host, c.comm_hash}].insert(c.rank);
  std::map<std::pair<uint64_t, int32_t>, GlobalCommRank*> by_rank;
  for (GlobalCommRank& r : ranks) by_rank[{r.comm_hash, r.rank}] = &r;

  ChannelPlaces places;
  for (auto& [key, stopped] : tree_stops(data, windows)) {
    const auto& [host, comm, seq, channel] = key;
    if (!complete(stopped, node_ranks[{host, comm}])) continue;
    std::ranges::sort(stopped);
    std::map<int32_t, PlaceSums>& channel_places = places[{host, comm, channel}];
    for (size_t place = 0; place < stopped.size(); ++place) {
      PlaceSums& p = channel_places[stopped[place].second];
      p.sum += static_cast<double>(place);
      p.samples += 1;
    }
  }
  ChannelOrders orders;
  for (const auto& [key, channel_places] : places)
    if (std::vector<int32_t> order = read_order(channel_places); !order.empty()) orders[key] = std::move(order);
  set_chains_from(data, orders, ranks);
  count_last_stops(data, windows, node_ranks, by_rank);
}

}  // namespace culprit
