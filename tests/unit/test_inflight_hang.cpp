// judge_inflight on hand-built snapshots: who never entered the collective its peers are
// stuck in, who is blocked elsewhere, and what a snapshot cannot tell.
#include <gtest/gtest.h>

#include <map>

#include "analysis/attribution.hpp"
#include "analysis/inflight_hang.hpp"

namespace culprit {
namespace {

constexpr uint64_t kWorld = 0x9e3779b97f4a7c15ull;
constexpr uint64_t kDp = 0x1234ull;

// Processes 0..n-1 are ranks 0..n-1 of kWorld; a rank unknown to the table becomes a new
// process (as the attribution's placeholder does).
struct Table {
  explicit Table(int n) {
    for (int r = 0; r < n; ++r) obs.processes.push_back({"node" + std::to_string(r / 4), -1, r, ""});
  }
  uint32_t process_of(uint64_t comm, int32_t rank) {
    auto it = extra.find({comm, rank});
    if (comm == kWorld && rank < static_cast<int32_t>(obs.processes.size())) return static_cast<uint32_t>(rank);
    if (it != extra.end()) return it->second;
    auto id = static_cast<uint32_t>(obs.processes.size() + extra.size());
    extra[{comm, rank}] = id;
    return id;
  }
  void alive(uint64_t comm, int32_t rank, uint32_t process, uint64_t seq, InflightKind kind = InflightKind::kCollective,
             int32_t peer = -1) {
    InflightRecord f;
    f.comm_hash = comm;
    f.rank = rank;
    f.process = process;
    f.seq = seq;
    f.kind = kind;
    f.peer = peer;
    f.age_ns = 20'000'000'000ull;
    obs.inflight.push_back(f);
  }
  InflightVerdict judge(bool world_ranks_are_global = false) {
    return judge_inflight(
        obs, [this](uint64_t c, int32_t r) { return process_of(c, r); },
        [world_ranks_are_global](uint64_t c) { return world_ranks_are_global && c == kWorld; });
  }
  Observations obs;
  std::map<std::pair<uint64_t, int32_t>, uint32_t> extra;
};

TEST(InflightHang, ARankNoRecordNamesBelowTheHighestIsAMemberWhereRanksAreGlobal) {
  // Rank 3 stopped before collective 6 and, inside its node's chain, has no network
  // connection: no record of any kind names it. Every other rank is inside 6.
  Table t(8);
  for (int r = 0; r < 8; ++r)
    if (r != 3) t.alive(kWorld, r, static_cast<uint32_t>(r), 6);
  EXPECT_TRUE(t.judge().stopped.empty());  // without knowing the ranks are global: not a member
  InflightVerdict v = t.judge(true);
  EXPECT_EQ(v.stopped, (std::set<uint32_t>{3}));
  EXPECT_EQ(v.unrecorded, (std::set<uint32_t>{3}));
  EXPECT_EQ(v.waits.size(), 7u);
  ASSERT_EQ(v.notes.size(), 1u);
  EXPECT_NE(v.notes[0].find("rank(s) 3 named by no record"), std::string::npos);
  // The highest rank cannot be missed so: rank 7 absent leaves a communicator of seven.
  Table last(8);
  for (int r = 0; r < 7; ++r) last.alive(kWorld, r, static_cast<uint32_t>(r), 6);
  EXPECT_TRUE(last.judge(true).stopped.empty());
}

TEST(InflightHang, TheMemberThatNeverEnteredIsStopped) {
  Table t(8);
  for (int r = 0; r < 8; ++r)
    if (r != 5) t.alive(kWorld, r, static_cast<uint32_t>(r), 12);
  // Rank 5 left no row of its own; the proxy op of its ring successor names it as peer.
  t.alive(kWorld, 6, 6, 12, InflightKind::kProxyOp, 5);
  InflightVerdict v = t.judge();
  EXPECT_EQ(v.stopped, (std::set<uint32_t>{5}));
  EXPECT_EQ(v.waits.size(), 7u);  // every member inside 12 waits for it
  for (const WaitEdge& w : v.waits) EXPECT_EQ(w.to, 5u);
  ASSERT_EQ(v.notes.size(), 1u);
  EXPECT_NE(v.notes[0].find("inside collective 12"), std::string::npos);
}

TEST(InflightHang, AMemberThatReachedTheSequenceElsewhereIsNotBehind) {
  Table t(4);
  for (int r = 0; r < 3; ++r) t.alive(kWorld, r, static_cast<uint32_t>(r), 7);
  GlobalCommRank done;
  done.comm_hash = kWorld;
  done.rank = 3;
  done.process = 3;
  done.has_collective = true;
  done.newest_seq = 7;  // its proxy ops of collective 7 completed: it was there
  t.obs.comm_ranks.push_back(done);
  EXPECT_TRUE(t.judge().stopped.empty());
}

TEST(InflightHang, AMemberInFlightInAnotherCommunicatorIsBlockedNotStopped) {
  Table t(4);
  for (int r = 0; r < 3; ++r) t.alive(kWorld, r, static_cast<uint32_t>(r), 3);
  t.alive(kDp, 0, 3, 40);  // world rank 3 waits inside a DP collective
  GlobalCommRank member;
  member.comm_hash = kWorld;
  member.rank = 3;
  member.process = 3;
  t.obs.comm_ranks.push_back(member);
  InflightVerdict v = t.judge();
  EXPECT_FALSE(v.stopped.count(3));
  EXPECT_TRUE(v.in_flight.count(3));
}

TEST(InflightHang, EveryoneInsideNamesNobody) {
  // A GPU stuck inside the kernel: all members are inside the same collective.
  Table t(4);
  for (int r = 0; r < 4; ++r) t.alive(kWorld, r, static_cast<uint32_t>(r), 9);
  InflightVerdict v = t.judge();
  EXPECT_TRUE(v.stopped.empty());
  EXPECT_TRUE(v.waits.empty());
}

TEST(InflightHang, ASendWhosePeerIsInsideNothingWaitsForIt) {
  Table t(2);
  t.alive(kWorld, 0, 0, 0, InflightKind::kP2p, 1);
  InflightVerdict v = t.judge();
  EXPECT_EQ(v.stopped, (std::set<uint32_t>{1}));
  ASSERT_EQ(v.waits.size(), 1u);
  EXPECT_EQ(v.waits[0].from, 0u);
}

TEST(InflightHang, AttributionNamesTheStoppedRankWithItsVictims) {
  Table t(8);
  for (int r = 0; r < 8; ++r) {
    GlobalCommRank c;
    c.comm_hash = kWorld;
    c.rank = r;
    c.process = static_cast<uint32_t>(r);
    c.has_collective = true;
    c.newest_seq = r == 2 ? 4 : 5;  // rank 2 never entered collective 5
    t.obs.comm_ranks.push_back(c);
    if (r != 2) t.alive(kWorld, r, static_cast<uint32_t>(r), 5);
  }
  Attribution a = attribute(t.obs);
  ASSERT_EQ(a.culprits.size(), 1u);
  EXPECT_EQ(a.culprits[0].process_id, 2u);
  EXPECT_EQ(a.culprits[0].culprit_class, "hang");
  EXPECT_EQ(a.culprits[0].victims, 7u);
  EXPECT_EQ(a.processes[2].rank, 2);
}

}  // namespace
}  // namespace culprit
