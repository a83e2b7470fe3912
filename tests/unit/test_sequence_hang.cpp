// stopped_by_sequence on hand-built observations: laggards, blocked ranks, unmatched p2p.
#include <gtest/gtest.h>

#include "analysis/sequence_hang.hpp"

namespace culprit {
namespace {

constexpr uint64_t kWorld = 0xabcull, kDp = 0xdefull, kPp = 0x777ull;

struct Job {
  Observations obs;
  std::map<std::pair<uint64_t, int32_t>, uint32_t> ranks;
  void member(uint64_t comm, int32_t rank, uint32_t process, int64_t newest_seq) {
    GlobalCommRank c;
    c.comm_hash = comm;
    c.rank = rank;
    c.process = process;
    c.has_collective = newest_seq >= 0;
    c.newest_seq = newest_seq >= 0 ? static_cast<uint64_t>(newest_seq) : 0;
    obs.comm_ranks.push_back(c);
    ranks[{comm, rank}] = process;
  }
  void calls(uint64_t comm, int32_t rank, int32_t peer, bool send, uint64_t n) {
    P2pCallCount c;
    c.comm_hash = comm;
    c.rank = rank;
    c.peer = peer;
    c.is_send = send ? 1 : 0;
    c.calls = n;
    c.process = ranks.at({comm, rank});
    obs.p2p_calls.push_back(c);
  }
  std::set<uint32_t> stopped() const { return stopped_by_sequence(obs, ranks); }
};

TEST(SequenceHang, TheRankBehindTheNewestSequenceStopped) {
  Job j;
  for (int r = 0; r < 4; ++r) j.member(kWorld, r, static_cast<uint32_t>(r), r == 2 ? 4 : 5);
  EXPECT_EQ(j.stopped(), (std::set<uint32_t>{2}));
}

TEST(SequenceHang, EveryoneAtTheSameSequenceIsNoHang) {
  Job j;
  for (int r = 0; r < 4; ++r) j.member(kWorld, r, static_cast<uint32_t>(r), 5);
  EXPECT_TRUE(j.stopped().empty());
}

TEST(SequenceHang, ACutTraceOrAnUnknownSequenceProvesNothing) {
  Job j;
  for (int r = 0; r < 4; ++r) j.member(kWorld, r, static_cast<uint32_t>(r), r == 1 ? 2 : 5);
  j.obs.comm_ranks[1].cut_short = true;
  EXPECT_TRUE(j.stopped().empty());
  j.obs.comm_ranks[1].cut_short = false;
  j.obs.comm_ranks[1].seq_unknown = true;
  EXPECT_TRUE(j.stopped().empty());
}

TEST(SequenceHang, ALaggardUpToDateInAnotherCommunicatorWithLaggardsIsBlocked) {
  // Process 3 lags in the world but is at the newest DP collective, where process 1 lags:
  // 3 waits inside the DP collective for 1, which stopped.
  Job j;
  for (int r = 0; r < 4; ++r) j.member(kWorld, r, static_cast<uint32_t>(r), r == 3 || r == 1 ? 7 : 8);
  j.member(kDp, 0, 1, 3);
  j.member(kDp, 1, 3, 4);
  EXPECT_EQ(j.stopped(), (std::set<uint32_t>{1}));
}

TEST(SequenceHang, ThePipelineStageItsPartnersWaitForStopped) {
  // Stages 0 -> 1 -> 2 of one p2p communicator: stage 1 received 5 activations from stage 0
  // but its partner stage 2 posted 5 receives that stage 1 matched only 4 times.
  Job j;
  for (int r = 0; r < 3; ++r) j.member(kPp, r, static_cast<uint32_t>(r), -1);
  j.calls(kPp, 0, 1, true, 5);
  j.calls(kPp, 1, 0, false, 5);
  j.calls(kPp, 1, 2, true, 4);
  j.calls(kPp, 2, 1, false, 5);
  EXPECT_EQ(j.stopped(), (std::set<uint32_t>{1}));
}

TEST(SequenceHang, AStageOfAPipelineThatAlsoRunsAWorldCollectiveStoppedBetweenCollectives) {
  // The same pipeline, its three stages also members of a world communicator, all at world
  // collective 6: nobody waits inside a collective, so the sends and receives tell who stopped.
  Job j;
  for (int r = 0; r < 3; ++r) {
    j.member(kPp, r, static_cast<uint32_t>(r), -1);
    j.member(kWorld, r, static_cast<uint32_t>(r), 6);
  }
  j.calls(kPp, 0, 1, true, 5);
  j.calls(kPp, 1, 0, false, 5);
  j.calls(kPp, 1, 2, true, 4);
  j.calls(kPp, 2, 1, false, 5);
  EXPECT_EQ(j.stopped(), (std::set<uint32_t>{1}));

  // With laggards in the world communicator stage 1 (at world collective 5, between the
  // laggard at 4 and the newest at 6) may be waiting inside a collective: the collective rule
  // judges (stage 0, behind, stopped), the sends and receives do not name stage 1.
  Job k;
  for (int r = 0; r < 3; ++r) {
    k.member(kPp, r, static_cast<uint32_t>(r), -1);
    k.member(kWorld, r, static_cast<uint32_t>(r), 4 + r);
  }
  k.calls(kPp, 0, 1, true, 5);
  k.calls(kPp, 1, 0, false, 5);
  k.calls(kPp, 1, 2, true, 4);
  k.calls(kPp, 2, 1, false, 5);
  EXPECT_EQ(k.stopped(), (std::set<uint32_t>{0}));
}

}  // namespace
}  // namespace culprit
