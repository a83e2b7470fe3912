// chain_order: the chain from a GPU that ends it, as its node read it, and a ring's last stopper.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <optional>
#include <vector>

#include "analysis/chain_order.hpp"
#include "pass_fixtures.hpp"

namespace culprit {
namespace {

constexpr uint64_t kComm = 0xc4a1ull;

// nodeA holds GPU 0; nodeB GPUs 1-4.
Observations two_nodes() {
  Observations obs;
  test::add_collective_processes(obs, kComm, {"nodeA", "nodeB", "nodeB", "nodeB", "nodeB"});
  return obs;
}

// The chain the node read from GPU 1 (comm ranks, as the nodes send it) comes back as processes.
TEST(ChainOrder, TheChainFromAGpuIsItsNodesReading) {
  Observations obs = two_nodes();
  GlobalCommRank& one = obs.comm_ranks[1];
  const int32_t ranks[] = {1, 3, 4, 2};
  std::ranges::copy(ranks, std::begin(one.chain_from));
  one.chain_length = 4;
  const ProcessContext context(obs);
  EXPECT_EQ(chain_from(obs, context, 1, kComm), (std::vector<uint32_t>{1, 3, 4, 2}));
  EXPECT_TRUE(chain_from(obs, context, 2, kComm).empty());  // no chain read from it
  EXPECT_TRUE(chain_from(obs, context, 1, kComm + 1).empty());
  one.chain_from[3] = 9;  // a rank nobody holds
  EXPECT_TRUE(chain_from(obs, context, 1, kComm).empty());
}

// A ring's stops give no order but the GPU that stopped last of its node's every time.
TEST(ChainOrder, TheGpuThatStoppedLastInEveryCollectiveIsFound) {
  Observations obs = two_nodes();
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
