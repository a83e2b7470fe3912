// chain_places: the chain from each GPU that ends one, from the order in which the node's GPUs
// stopped each channel of a tree collective.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "local_node_fixture.hpp"
#include "pipeline/chain_places.hpp"

namespace culprit {
namespace {

constexpr uint64_t kComm = 0x7eeull;

// One node of four GPUs (ranks 0-3) of one communicator.
struct Node {
  LocalData data;
  std::vector<GlobalCommRank> ranks;
  Node() { test::add_node_gpus(data, ranks, "n0", kComm, 4); }
  // Collective `seq` of NCCL's tree (or `tree` false: a ring): rank r's kernel ran from its
  // start to stops[r] on the node's GPU clock, its last channel's stop.
  void collective(uint64_t seq, const std::vector<uint64_t>& stops, bool tree = true) {
    for (size_t r = 0; r < stops.size(); ++r) {
      KernelStartRecord k;
      k.tree = tree ? 1 : 0;
      k.comm_hash = kComm;
      k.seq = seq;
      k.process = static_cast<uint32_t>(r);
      k.rank = static_cast<int32_t>(r);
      k.start_gpu_clk_ns = 1'000'000 * seq;
      k.stop_gpu_clk_ns = stops[r];
      data.kernel_starts.push_back(k);
    }
  }
  // Channel `channel` of collective `seq` stopped on rank r at stops[r].
  void channel(uint64_t seq, int32_t channel, const std::vector<uint64_t>& stops) {
    for (size_t r = 0; r < stops.size(); ++r) {
      ChannelStopRecord c;
      c.comm_hash = kComm;
      c.seq = seq;
      c.process = static_cast<uint32_t>(r);
      c.rank = static_cast<int32_t>(r);
      c.channel = channel;
      c.stop_gpu_clk_ns = stops[r];
      data.channel_stops.push_back(c);
    }
  }
  // Rank r's network records (its passage lags') came from `channel`.
  void network_on(int32_t rank, int32_t channel) {
    HandoffLine line;
    line.comm_hash = kComm;
    line.process = static_cast<uint32_t>(rank);
    line.rank = rank;
    line.channel = channel;
    data.handoffs.push_back(line);
  }
  std::vector<int32_t> chain_of(int32_t rank) const {
    const GlobalCommRank& r = ranks[static_cast<size_t>(rank)];
    return {r.chain_from, r.chain_from + r.chain_length};
  }
  void measure(const std::vector<CommWindow>& windows = {}) { measure_chain_places(data, windows, ranks); }
};

TEST(ChainPlaces, EachEndOfTheChainGetsTheChainFromIt) {
  Node node;
  // The parent's last step comes down the chain 2, 0, 3, 1, an NVLink hop (8 us) apart.
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    const uint64_t t = 1'000'000 * seq + 400'000;
    node.collective(seq, {t + 8'000, t + 24'000, t, t + 16'000});
  }
  node.network_on(2, 0);  // meets the parent
  node.network_on(1, 0);  // meets the children
  node.measure();
  EXPECT_EQ(node.chain_of(2), (std::vector<int32_t>{2, 0, 3, 1}));
  EXPECT_EQ(node.chain_of(1), (std::vector<int32_t>{1, 3, 0, 2}));
  EXPECT_TRUE(node.chain_of(0).empty());  // inside the chain: no network records
  EXPECT_EQ(node.ranks[1].last_stop_samples, 0u);  // a tree's stops are places
}

// NCCL rotates the chains of a tree's channels: channel 1 chains the node 3, 1, 2, 0 from the
// parent, channel 0 2, 0, 3, 1. Each channel's own stops give its own chain; the kernel's last
// stop (channel 1's in some collectives, channel 0's in others) gives none.
TEST(ChainPlaces, EachChannelsStopsGiveItsOwnChain) {
  Node node;
  for (uint64_t seq = 1; seq <= 4; ++seq) {
    const uint64_t t = 1'000'000 * seq + 400'000, u = seq % 2 ? t + 5'000 : t - 5'000;
    node.channel(seq, 0, {t + 8'000, t + 24'000, t, t + 16'000});
    node.channel(seq, 1, {u + 24'000, u + 8'000, u + 16'000, u});
    node.collective(seq, {std::max(t + 8'000, u + 24'000), std::max(t + 24'000, u + 8'000),
                          std::max(t, u + 16'000), std::max(t + 16'000, u)});
  }
  node.network_on(2, 0);
  node.network_on(1, 0);
  node.network_on(3, 1);
  node.network_on(0, 1);
  Node whole_kernel = node;
  node.measure();
  EXPECT_EQ(node.chain_of(2), (std::vector<int32_t>{2, 0, 3, 1}));
  EXPECT_EQ(node.chain_of(1), (std::vector<int32_t>{1, 3, 0, 2}));
  EXPECT_EQ(node.chain_of(3), (std::vector<int32_t>{3, 1, 2, 0}));
  EXPECT_EQ(node.chain_of(0), (std::vector<int32_t>{0, 2, 1, 3}));
  whole_kernel.data.channel_stops.clear();  // our live-capture shards: the last channel's stop
  whole_kernel.measure();
  for (int32_t r = 0; r < 4; ++r) EXPECT_TRUE(whole_kernel.chain_of(r).empty()) << r;
}

// A GPU with network records on a channel whose chain it does not end (a garbled record, or
// channels that chain it differently), or whose chain was not read, gets none: its lags may be
// that channel's.
TEST(ChainPlaces, AGpuWhoseChainOnOneOfItsChannelsIsNotKnownGetsNone) {
  const std::vector<uint64_t> one_inside = {24'000, 8'000, 16'000, 0}, one_missing = {8'000, 24'000, 0};
  for (const std::vector<uint64_t>* channel_1 : {&one_inside, &one_missing}) {
    Node node;
    for (uint64_t seq = 1; seq <= 3; ++seq) {
      const uint64_t t = 1'000'000 * seq + 400'000;
      node.channel(seq, 0, {t + 8'000, t + 24'000, t, t + 16'000});
      std::vector<uint64_t> stops;
      for (uint64_t d : *channel_1) stops.push_back(t + d);
      node.channel(seq, 1, stops);
    }
    node.network_on(2, 0);
    node.network_on(2, 1);
    node.measure();
    EXPECT_TRUE(node.chain_of(2).empty());
  }
}

TEST(ChainPlaces, ACollectiveSomeGpuRecordedNoStopOfGivesNoPlaces) {
  Node node;
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    const uint64_t t = 1'000'000 * seq + 400'000;
    node.collective(seq, {t + 8'000, t + 24'000, t, t + 16'000});
  }
  node.data.kernel_starts[3].stop_gpu_clk_ns = 0;  // 2.28+: a channel without StopGpuClk
  node.data.kernel_starts.pop_back();              // rank 3 recorded nothing of collective 3
  node.network_on(2, 0);
  node.measure();
  EXPECT_TRUE(node.chain_of(2).empty());  // one collective of three: too few
}

TEST(ChainPlaces, ANodeOfTwoGpusHasItsEndsOnly) {
  Node node;
  node.data.comm_ranks.resize(2);
  for (uint64_t seq = 1; seq <= 3; ++seq) node.collective(seq, {1'000'000 * seq + 8'000, 1'000'000 * seq + 24'000});
  node.network_on(0, 0);
  node.measure();
  EXPECT_TRUE(node.chain_of(0).empty());
}

// A ring 4x8x1 with a slow consumer (fresh seed 11091) stopped its node's GPUs in one order in
// every collective, the slow one last: not the chain's order, so not read as one; which GPU
// stopped last is counted.
TEST(ChainPlaces, ARingsStopsGiveNoChainButWhichGpuStoppedLast) {
  Node node;
  node.collective(1, {1'100'000, 1'853'000, 1'859'000, 1'774'000}, false);
  node.collective(2, {2'100'000, 2'859'000, 2'864'000, 2'769'000}, false);
  node.collective(3, {3'100'000, 3'869'000, 3'862'000, 3'770'000}, false);
  node.network_on(0, 0);
  node.measure();
  for (const GlobalCommRank& r : node.ranks) {
    EXPECT_EQ(r.chain_length, 0u);
    EXPECT_EQ(r.last_stop_samples, 3u);
  }
  EXPECT_EQ(node.ranks[2].last_stops, 2u);
  EXPECT_EQ(node.ranks[1].last_stops, 1u);
  EXPECT_EQ(node.ranks[0].last_stops + node.ranks[3].last_stops, 0u);
}

TEST(ChainPlaces, OnlyTheWindowsCollectivesCount) {
  Node node;
  for (uint64_t seq = 1; seq <= 6; ++seq) {
    const uint64_t t = 1'000'000 * seq + 400'000;
    node.collective(seq, {t + 8'000, t + 24'000, t, t + 16'000});
  }
  node.network_on(2, 0);
  node.measure({{kComm, 5}});  // collectives 5 and 6: too few
  EXPECT_TRUE(node.chain_of(2).empty());
  node.measure({{kComm, 4}});
  EXPECT_EQ(node.chain_of(2).size(), 4u);
}

}  // namespace
}  // namespace culprit
