// chain_order: a node's GPUs in their order along its chain, read from their places.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "analysis/chain_order.hpp"
#include "pass_fixtures.hpp"

namespace culprit {
namespace {

constexpr uint64_t kComm = 0xc4a1ull;

// nodeA holds GPU 0; nodeB GPUs 1-4, each with its place in each of `places`' collectives.
Observations node_with_places(const std::vector<std::vector<double>>& places) {
  Observations obs;
  test::add_collective_processes(obs, kComm, {"nodeA", "nodeB", "nodeB", "nodeB", "nodeB"});
  for (const std::vector<double>& collective : places)
    for (size_t i = 0; i < collective.size(); ++i) {
      GlobalCommRank& c = obs.comm_ranks[i + 1];
      c.chain_place_sum += collective[i];
      c.chain_place_sq_sum += collective[i] * collective[i];
      c.chain_place_samples += 1;
    }
  return obs;
}

TEST(ChainOrder, TheGpusAreOrderedByTheirPlaces) {
  const Observations obs = node_with_places({{3, 0, 2, 1}, {3, 0, 2, 1}, {3, 0, 2, 1}, {3, 0, 2, 1}});
  const ProcessContext context(obs);
  EXPECT_EQ(chain_order_of(obs, context, 1, kComm), (std::vector<uint32_t>{2, 4, 3, 1}));
}

TEST(ChainOrder, OneSwapInFourCollectivesStillReadsTheOrder) {
  const Observations obs = node_with_places({{3, 0, 2, 1}, {3, 0, 1, 2}, {3, 0, 2, 1}, {3, 0, 2, 1}, {3, 0, 2, 1}});
  const ProcessContext context(obs);
  EXPECT_EQ(chain_order_of(obs, context, 3, kComm), (std::vector<uint32_t>{2, 4, 3, 1}));
}

TEST(ChainOrder, PlacesThatVaryGiveNoOrder) {
  // Two channels' chains rotated against each other: the last channel's stop differs.
  const Observations obs = node_with_places({{3, 0, 2, 1}, {1, 2, 0, 3}, {3, 0, 2, 1}, {1, 2, 0, 3}});
  const ProcessContext context(obs);
  EXPECT_TRUE(chain_order_of(obs, context, 1, kComm).empty());
}

TEST(ChainOrder, AGpuWithoutPlacesGivesNoOrder) {
  Observations obs = node_with_places({{3, 0, 2, 1}, {3, 0, 2, 1}, {3, 0, 2, 1}});
  obs.comm_ranks[4].chain_place_samples = 0;
  obs.comm_ranks[4].chain_place_sum = 0;
  const ProcessContext context(obs);
  EXPECT_TRUE(chain_order_of(obs, context, 1, kComm).empty());
}

// A ring's stops give no order but the GPU that stopped last of its node's every time.
TEST(ChainOrder, TheGpuThatStoppedLastInEveryCollectiveIsFound) {
  Observations obs = node_with_places({});
  for (size_t i = 1; i < obs.comm_ranks.size(); ++i) obs.comm_ranks[i].last_stop_samples = 6;
  obs.comm_ranks[3].last_stops = 6;
  const ProcessContext context(obs);
  EXPECT_EQ(last_to_stop(obs, context, 1, kComm), std::optional<uint32_t>(3));
  EXPECT_EQ(last_to_stop(obs, context, 0, kComm), std::nullopt);  // nodeA recorded no stops
  obs.comm_ranks[3].last_stops = 5;
  obs.comm_ranks[2].last_stops = 1;
  EXPECT_EQ(last_to_stop(obs, context, 1, kComm), std::nullopt);
  // Two collectives are too few to say.
  for (GlobalCommRank& c : obs.comm_ranks) c.last_stop_samples = c.last_stops = 0;
  obs.comm_ranks[2].last_stop_samples = obs.comm_ranks[2].last_stops = 2;
  EXPECT_EQ(last_to_stop(obs, context, 1, kComm), std::nullopt);
}

}  // namespace
}  // namespace culprit
