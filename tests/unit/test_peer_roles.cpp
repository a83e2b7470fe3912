// PeerRoles on hand-built observations: replicas share a family, a rank's place comes from
// its connections, and a pipeline's stages are numbered apart (peer_roles.hpp).
#include "analysis/peer_roles.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "pass_fixtures.hpp"

namespace culprit {
namespace {

// Four GPUs on two hosts; communicators over them, each a ring of connections.
struct Job {
  Observations obs;
  Job() { test::add_collective_processes(obs, 0x10, {"nodeA", "nodeA", "nodeB", "nodeB"}); }
  void add_comm(uint64_t comm, const std::vector<uint32_t>& members, bool collective) {
    test::add_comm_ranks(obs, comm, members, collective);
    for (size_t r = 0; r < members.size(); ++r) {
      EdgeSummary e;
      e.key = {comm, static_cast<int32_t>(r), static_cast<int32_t>((r + 1) % members.size()), 0, 0};
      e.send_steps = e.recv_steps = 16;
      e.send_bytes = e.recv_bytes = 16 * (512 << 10);
      obs.edges.push_back(e);
    }
  }
};

TEST(PeerRoles, ReplicatedPipelinesShareAFamilyAndNumberTheirStagesApart) {
  // Two pipelines of two stages: GPUs 0 -> 2 (communicator 0x20) and 1 -> 3 (0x30).
  Job job;
  job.add_comm(0x20, {0, 2}, false);
  job.add_comm(0x30, {1, 3}, false);
  const PeerRoles roles(ProcessContext(job.obs), job.obs);
  const auto first = roles.of(0, 0x20, 0), replica = roles.of(1, 0x30, 0), second = roles.of(2, 0x20, 1);
  ASSERT_TRUE(first && replica && second);
  EXPECT_EQ(first->family, replica->family);
  EXPECT_EQ(first->place, (FlowPlace{1, 1, {{1, 1}}}));
  EXPECT_EQ(first->stage, replica->stage);
  EXPECT_NE(first->stage, second->stage);
  EXPECT_NE(first->stage, 0u);
  // As a figure for place_peers, with the same peers.
  const auto figure = roles.figure(1, 0x30, 0, 42.0);
  ASSERT_TRUE(figure);
  EXPECT_EQ(figure->family, first->family);
  EXPECT_EQ(figure->value, 42.0);
}

TEST(PeerRoles, ACollectivesRanksHaveNoStageAndAnUnconnectedRankNoRole) {
  Job job;
  job.add_comm(0x40, {0, 1, 2, 3}, true);
  const PeerRoles roles(ProcessContext(job.obs), job.obs);
  const auto r0 = roles.of(0, 0x40, 0);
  ASSERT_TRUE(r0);
  EXPECT_EQ(r0->stage, 0u);
  EXPECT_FALSE(roles.of(0, 0x40, 7));   // no such rank connected
  EXPECT_FALSE(roles.of(0, 0x99, 0));   // no such communicator
}

}  // namespace
}  // namespace culprit
