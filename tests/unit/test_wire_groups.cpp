// wire_groups_of: communicators of one kind, size and chunk share their wires' baselines;
// another chunk size, size or kind keeps them apart. replica_groups_of: of those, the ones
// over other GPUs.
#include <gtest/gtest.h>

#include <vector>

#include "analysis/wire_groups.hpp"
#include "pass_fixtures.hpp"

namespace culprit {
namespace {

// Four processes on two hosts; communicators are added over them with a chunk per send step.
struct Job {
  Observations obs;
  std::vector<EdgeFacts> facts;

  Job() { test::add_collective_processes(obs, 0x10, {"nodeA", "nodeA", "nodeB", "nodeB"}); }
  // A communicator over `members` (rank i = members[i]), its ring's connections moving
  // `chunk` bytes per step.
  void add_comm(uint64_t comm, const std::vector<uint32_t>& members, uint64_t chunk, bool collective = true) {
    test::add_comm_ranks(obs, comm, members, collective);
    for (size_t r = 0; r < members.size(); ++r) {
      EdgeSummary e;
      e.key = {comm, static_cast<int32_t>(r), static_cast<int32_t>((r + 1) % members.size()), 0, 0};
      e.send_steps = e.recv_steps = 16;
      e.send_bytes = e.recv_bytes = 16 * chunk;
      obs.edges.push_back(e);
    }
  }
  WireGroups groups() {
    ProcessContext context(obs);
    std::vector<EdgeView> views;
    for (const EdgeSummary& e : obs.edges) views.push_back(view_of(e));
    return wire_groups_of(context, views);
  }
};

TEST(WireGroups, ReplicasOfOneKindSizeAndChunkShareAGroup) {
  Job job;
  job.add_comm(0x20, {0, 2}, 512 << 10);
  job.add_comm(0x30, {1, 3}, 500 << 10);  // the same chunk, give or take the last step's
  const WireGroups g = job.groups();
  EXPECT_EQ(wire_group_of(0x20, g), wire_group_of(0x30, g));
}

TEST(WireGroups, AnotherChunkSizeIsAnotherGroup) {
  Job job;
  job.add_comm(0x20, {0, 2}, 512 << 10);
  job.add_comm(0x30, {1, 3}, 128 << 10);  // another message size or protocol
  const WireGroups g = job.groups();
  EXPECT_NE(wire_group_of(0x20, g), wire_group_of(0x30, g));
}

TEST(WireGroups, AnotherSizeOrKindIsAnotherGroup) {
  Job job;
  job.add_comm(0x20, {0, 2}, 512 << 10);
  job.add_comm(0x30, {1, 3}, 512 << 10, /*collective=*/false);
  job.add_comm(0x40, {0, 1, 2}, 512 << 10);
  const WireGroups g = job.groups();
  EXPECT_NE(wire_group_of(0x20, g), wire_group_of(0x30, g));
  EXPECT_NE(wire_group_of(0x20, g), wire_group_of(0x40, g));
}

TEST(WireGroups, ReplicasHoldOtherGpusCommunicatorsOverTheSameGpusStayApart) {
  // Two data-parallel pairs over other GPUs are replicas; a third communicator of the same
  // kind, size and chunk over GPUs one of them holds runs at another point of the program.
  Job job;
  job.add_comm(0x20, {0, 2}, 512 << 10);
  job.add_comm(0x30, {1, 3}, 512 << 10);
  job.add_comm(0x40, {0, 2}, 512 << 10);
  ProcessContext context(job.obs);
  const WireGroups r = replica_groups_of(context, job.obs);
  EXPECT_EQ(r.at(0x20), r.at(0x30));
  EXPECT_NE(r.at(0x40), r.at(0x20));
  // From the summaries, the kinds are those of the views.
  const WireGroups kinds = wire_groups_of(context, std::span<const EdgeSummary>(job.obs.edges));
  EXPECT_EQ(wire_group_of(0x40, kinds), wire_group_of(0x20, kinds));
}

}  // namespace
}  // namespace culprit
