// host_by_block_layout: the host of a global rank no input holds, where the job was launched
// in blocks of consecutive ranks per node (launch_layout.hpp).
#include "analysis/launch_layout.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace culprit {
namespace {

// Processes of the given global ranks, node k holding ranks k x per_node .. k x per_node + per_node - 1.
std::vector<GlobalProcess> blocks(const std::vector<int64_t>& ranks, int64_t per_node) {
  std::vector<GlobalProcess> out;
  for (int64_t r : ranks) out.push_back({"node" + std::to_string(r / per_node), -1, r, ""});
  return out;
}

TEST(LaunchLayout, ARankMissingFromABlockBelongsToThatBlocksHost) {
  // Three nodes of eight; rank 3 (inside node0's block) and rank 23 (the last of node2's)
  // recorded nothing.
  std::vector<int64_t> ranks;
  for (int64_t r = 0; r < 24; ++r)
    if (r != 3 && r != 23) ranks.push_back(r);
  const std::vector<GlobalProcess> seen = blocks(ranks, 8);
  EXPECT_EQ(host_by_block_layout(seen, 3), "node0");
  EXPECT_EQ(host_by_block_layout(seen, 23), "node2");
  EXPECT_FALSE(host_by_block_layout(seen, 24).has_value());  // a block no host holds: its node sent nothing
  EXPECT_FALSE(host_by_block_layout(seen, -1).has_value());
}

TEST(LaunchLayout, NothingIsInferredFromAJobLaunchedOtherwise) {
  // Round-robin: node0 holds the even ranks, node1 the odd ones. Every host spans the whole
  // job: no aligned blocks.
  std::vector<GlobalProcess> round_robin;
  for (int64_t r = 0; r < 8; ++r)
    if (r != 5) round_robin.push_back({"node" + std::to_string(r % 2), -1, r, ""});
  EXPECT_FALSE(host_by_block_layout(round_robin, 5).has_value());
  // Blocks of unequal size that straddle the widest host's block size.
  std::vector<GlobalProcess> uneven = {{"a", -1, 0, ""}, {"a", -1, 1, ""}, {"b", -1, 2, ""}, {"b", -1, 3, ""},
                                       {"b", -1, 4, ""}, {"b", -1, 5, ""}};
  EXPECT_FALSE(host_by_block_layout(uneven, 6).has_value());
  // Processes without a global rank or a host say nothing.
  EXPECT_FALSE(host_by_block_layout({{"node0", 100, -1, ""}}, 0).has_value());
}

}  // namespace
}  // namespace culprit
