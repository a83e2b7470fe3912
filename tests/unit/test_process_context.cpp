// ProcessContext: who holds each communicator rank, communicator sizes, collectives, and placeholders for peers without data.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "analysis/process_context.hpp"

namespace culprit {
namespace {

constexpr uint64_t kWorld = 0xF00DF00DF00DF00Dull;  // collectives
constexpr uint64_t kPipe = 0x1234ABCD00000000ull;   // send/recv only

GlobalCommRank member(uint64_t comm, int32_t rank, uint32_t process, bool collective) {
  GlobalCommRank c;
  c.comm_hash = comm;
  c.rank = rank;
  c.process = process;
  c.has_collective = collective;
  return c;
}

EdgeSummary edge(uint64_t comm, int32_t src, int32_t dst) {
  EdgeSummary e;
  e.key.comm_hash = comm;
  e.key.src_rank = src;
  e.key.dst_rank = dst;
  e.key.channel = 0;
  e.send_steps = 8;
  return e;
}

// Processes 0..2 hold world ranks 0..2 (only rank 1 saw a collective); 0 and 2 also hold
// pipe ranks 1 and 0; process 3 recorded nothing. An edge of the world names rank 5.
Observations job() {
  Observations obs;
  for (int p = 0; p < 4; ++p) obs.processes.push_back({"node" + std::to_string(p / 2), 100 + p, p, ""});
  obs.comm_ranks = {member(kWorld, 0, 0, false), member(kWorld, 1, 1, true), member(kWorld, 2, 2, false),
                    member(kPipe, 1, 0, false), member(kPipe, 0, 2, false)};
  obs.edges = {edge(kWorld, 0, 1), edge(kWorld, 2, 5), edge(kPipe, 0, 1)};
  return obs;
}

TEST(ProcessContext, RanksMapToTheirProcessesAndSizesCoverEveryNamedRank) {
  ProcessContext ctx(job());
  EXPECT_EQ(ctx.size(), 4u);
  EXPECT_EQ(ctx.host_of(3), "node1");
  const auto& ranks = ctx.rank_map();
  EXPECT_EQ(ranks.size(), 5u);
  EXPECT_EQ(ranks.at({kWorld, 2}), 2u);
  EXPECT_EQ(ranks.at({kPipe, 1}), 0u);
  EXPECT_EQ(ranks.at({kPipe, 0}), 2u);
  // The world's size is one more than the highest rank any record names: rank 5 of an edge.
  EXPECT_EQ(ctx.n_ranks().at(kWorld), 6);
  EXPECT_EQ(ctx.n_ranks().at(kPipe), 2);
  EXPECT_EQ(ctx.placeholders(), 0u);
}

TEST(ProcessContext, ACommunicatorIsCollectiveWhenAnyRankRanACollective) {
  ProcessContext ctx(job());
  EXPECT_TRUE(ctx.is_collective(kWorld));  // rank 1 alone saw one
  EXPECT_FALSE(ctx.is_collective(kPipe));
  EXPECT_FALSE(ctx.is_collective(0x42));
}

TEST(ProcessContext, APeerWithoutDataGetsOneNamedPlaceholder) {
  ProcessContext ctx(job());
  EXPECT_EQ(ctx.process_of(kWorld, 1), 1u);  // known ranks add nothing
  EXPECT_EQ(ctx.placeholders(), 0u);
  uint32_t ghost = ctx.process_of(kWorld, 5);
  EXPECT_EQ(ghost, 4u);
  EXPECT_EQ(ctx.process_of(kWorld, 5), ghost);  // asked again: the same placeholder
  EXPECT_EQ(ctx.placeholders(), 1u);
  EXPECT_EQ(ctx.size(), 5u);
  const GlobalProcess& p = ctx.processes()[ghost];
  EXPECT_EQ(p.host, "(no data)");
  EXPECT_EQ(p.pid, -1);
  // kWorld's ranks are the global ranks of the processes seen in it: the placeholder is
  // global rank 5's.
  EXPECT_TRUE(ctx.ranks_are_global(kWorld));
  EXPECT_EQ(p.rank, 5);
  EXPECT_EQ(p.label, "global rank 5, no records");
  EXPECT_EQ(ctx.rank_map().at({kWorld, 5}), ghost);
  EXPECT_FALSE(ctx.has_records(ghost));
  // The same rank number of another communicator is another process, named by it.
  EXPECT_FALSE(ctx.ranks_are_global(kPipe));
  const uint32_t pipe_ghost = ctx.process_of(kPipe, 5);
  EXPECT_NE(pipe_ghost, ghost);
  EXPECT_EQ(ctx.processes()[pipe_ghost].rank, -1);
  EXPECT_EQ(ctx.processes()[pipe_ghost].label, "comm 1234abcd rank 5");
  EXPECT_EQ(ctx.placeholders(), 2u);
}

TEST(ProcessContext, AGlobalRankNoRecordNamesIsPlacedOnItsHostByTheLaunchLayout) {
  // Two nodes of four GPUs, global ranks in blocks (node0: 0-3, node1: 4-7); rank 6 recorded
  // nothing at all. A snapshot's gap at world rank 6 is node1's GPU.
  Observations obs;
  for (int r = 0; r < 8; ++r) {
    if (r == 6) continue;
    obs.processes.push_back({"node" + std::to_string(r / 4), -1, r, ""});
    obs.comm_ranks.push_back(member(kWorld, r, static_cast<uint32_t>(obs.processes.size() - 1), true));
  }
  ProcessContext ctx(obs);
  const uint32_t six = ctx.process_of(kWorld, 6);
  EXPECT_EQ(six, 7u);
  EXPECT_EQ(ctx.processes()[six].host, "node1");
  EXPECT_EQ(ctx.processes()[six].rank, 6);
  EXPECT_EQ(ctx.processes()[six].label, "global rank 6, no records; host from the launch layout");
  EXPECT_EQ(ctx.name_of(six), "node1 rank 6");
  EXPECT_EQ(ctx.placeholders(), 1u);
}

TEST(ProcessContext, RecordsAndCommunicatorsBelongToTheProcessesThatHoldRanks) {
  ProcessContext ctx(job());
  EXPECT_TRUE(ctx.has_records(0));
  EXPECT_TRUE(ctx.has_records(2));
  EXPECT_FALSE(ctx.has_records(3));  // in the job, but no communicator rank of its own
  ctx.process_of(kWorld, 5);
  auto comms = ctx.comms_of_processes();
  EXPECT_EQ(comms.at(0), (std::set<uint64_t>{kWorld, kPipe}));
  EXPECT_EQ(comms.at(1), (std::set<uint64_t>{kWorld}));
  EXPECT_EQ(comms.at(2), (std::set<uint64_t>{kWorld, kPipe}));
  EXPECT_EQ(comms.count(3), 0u);
  EXPECT_EQ(comms.at(4), (std::set<uint64_t>{kWorld}));  // the placeholder holds its rank
}

}  // namespace
}  // namespace culprit
