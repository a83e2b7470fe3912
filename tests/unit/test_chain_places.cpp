// chain_places: each GPU's place along its node's chain, from the order in which the node's
// GPUs stopped their kernels in each collective.
#include <gtest/gtest.h>

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
  Node() {
    test::add_node_gpus(data, ranks, "n0", kComm, 4);
  }
  // Collective `seq` of NCCL's tree (or `tree` false: a ring): rank r ran from start to
  // stops[r] on the node's GPU clock.
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
  double mean_place(int32_t rank) const {
    return ranks[static_cast<size_t>(rank)].chain_place_sum / ranks[static_cast<size_t>(rank)].chain_place_samples;
  }
};

TEST(ChainPlaces, EachGpusPlaceIsHowManyOfItsNodeStoppedBeforeIt) {
  Node node;
  // The parent's last step comes down the chain 2, 0, 3, 1, an NVLink hop (8 us) apart.
  node.collective(1, {1'408'000, 1'424'000, 1'400'000, 1'416'000});
  node.collective(2, {2'508'000, 2'524'000, 2'500'000, 2'516'000});
  measure_chain_places(node.data, {}, node.ranks);
  EXPECT_EQ(node.ranks[0].chain_place_samples, 2u);
  EXPECT_DOUBLE_EQ(node.mean_place(2), 0.0);
  EXPECT_DOUBLE_EQ(node.mean_place(0), 1.0);
  EXPECT_DOUBLE_EQ(node.mean_place(3), 2.0);
  EXPECT_DOUBLE_EQ(node.mean_place(1), 3.0);
  EXPECT_DOUBLE_EQ(node.ranks[1].chain_place_sq_sum, 18.0);
  EXPECT_EQ(node.ranks[1].last_stop_samples, 0u);  // a tree's stops are places
}

TEST(ChainPlaces, ACollectiveSomeGpuRecordedNoStopOfGivesNoPlaces) {
  Node node;
  node.collective(1, {1'408'000, 1'424'000, 1'400'000, 1'416'000});
  node.data.kernel_starts[3].stop_gpu_clk_ns = 0;  // 2.28+: a channel without StopGpuClk
  node.collective(2, {2'508'000, 2'524'000, 2'500'000});  // rank 3 recorded nothing
  measure_chain_places(node.data, {}, node.ranks);
  for (const GlobalCommRank& r : node.ranks) EXPECT_EQ(r.chain_place_samples, 0u);
}

TEST(ChainPlaces, ANodeOfTwoGpusHasItsEndsOnly) {
  Node node;
  node.data.comm_ranks.resize(2);
  node.collective(1, {1'408'000, 1'424'000});
  measure_chain_places(node.data, {}, node.ranks);
  EXPECT_EQ(node.ranks[0].chain_place_samples, 0u);
}

// A ring 4x8x1 with a slow consumer (fresh seed 11091) stopped its node's GPUs in one order in
// every collective, the slow one last: not the chain's order, so not read as one; which GPU
// stopped last is counted.
TEST(ChainPlaces, ARingsStopsGiveNoPlacesButWhichGpuStoppedLast) {
  Node node;
  node.collective(1, {1'100'000, 1'853'000, 1'859'000, 1'774'000}, false);
  node.collective(2, {2'100'000, 2'859'000, 2'864'000, 2'769'000}, false);
  node.collective(3, {3'100'000, 3'869'000, 3'862'000, 3'770'000}, false);
  measure_chain_places(node.data, {}, node.ranks);
  for (const GlobalCommRank& r : node.ranks) {
    EXPECT_EQ(r.chain_place_samples, 0u);
    EXPECT_EQ(r.last_stop_samples, 3u);
  }
  EXPECT_EQ(node.ranks[2].last_stops, 2u);
  EXPECT_EQ(node.ranks[1].last_stops, 1u);
  EXPECT_EQ(node.ranks[0].last_stops + node.ranks[3].last_stops, 0u);
}

TEST(ChainPlaces, OnlyTheWindowsCollectivesCount) {
  Node node;
  node.collective(1, {1'408'000, 1'424'000, 1'400'000, 1'416'000});
  node.collective(5, {5'408'000, 5'424'000, 5'400'000, 5'416'000});
  measure_chain_places(node.data, {{kComm, 3}}, node.ranks);
  EXPECT_EQ(node.ranks[0].chain_place_samples, 1u);
}

}  // namespace
}  // namespace culprit
