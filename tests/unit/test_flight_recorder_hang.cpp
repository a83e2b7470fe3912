// judge_flight_recorder on hand-built dump states: a rank that stopped completing, a host
// that stopped issuing work behind victims blocked elsewhere, a missing dump, groups whose
// members are all stuck inside one collective, pipeline groups whose counters count sends
// and receives, and mismatched operations.
#include <gtest/gtest.h>

#include <map>

#include "analysis/flight_recorder_hang.hpp"

namespace culprit {
namespace {

// Process p is global rank p; a rank without a process gets a new one, labelled.
struct Dumps {
  explicit Dumps(int n) {
    for (int r = 0; r < n; ++r) obs.processes.push_back({"", -1, r, ""});
  }
  // A group and its members, in group-rank order.
  void group(const std::string& name, const std::vector<int32_t>& ranks) {
    for (const FrMemberRun& run : fr_member_runs(fr_group_hash(name), std::vector<int64_t>(ranks.begin(), ranks.end())))
      obs.fr_members.push_back(run);
  }
  void state(const std::string& name, int32_t rank, int64_t enqueued, int64_t completed, bool p2p = false) {
    FrGroupState s;
    s.group = fr_group_hash(name);
    s.process = static_cast<uint32_t>(rank);
    s.global_rank = rank;
    s.last_enqueued = enqueued;
    s.last_completed = completed;
    s.has_status = 1;
    s.has_p2p = p2p;
    fr_copy_text(s.name, name);
    obs.fr_groups.push_back(s);
  }
  void op(const std::string& name, int32_t rank, int64_t seq, const std::string& what, const std::string& sizes,
          int32_t peer = -1) {
    FrOpRecord r;
    r.group = fr_group_hash(name);
    r.process = static_cast<uint32_t>(rank);
    r.global_rank = rank;
    r.collective_seq = seq;
    r.is_p2p = peer >= 0;
    r.peer_global_rank = peer;
    fr_copy_text(r.op, what);
    fr_copy_text(r.sizes, sizes);
    fr_copy_text(r.dtypes, "['Float']");
    obs.fr_ops.push_back(r);
  }
  FlightRecorderVerdict judge() {
    return judge_flight_recorder(obs, [this](int64_t rank, const std::string& label) {
      if (rank < static_cast<int64_t>(obs.processes.size())) return static_cast<uint32_t>(rank);
      labels.emplace(rank, label);  // the first call adds the process
      return static_cast<uint32_t>(rank);
    });
  }
  bool waits(const FlightRecorderVerdict& v, uint32_t from, uint32_t to) const {
    for (const WaitEdge& w : v.waits)
      if (w.from == from && w.to == to) return true;
    return false;
  }
  Observations obs;
  std::map<int64_t, std::string> labels;
};

bool has_note(const FlightRecorderVerdict& v, const std::string& text) {
  for (const std::string& n : v.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

TEST(FlightRecorderHang, RankWhosePeerCompletedWhatItNeverCompletedStoppedCompleting) {
  Dumps d(2);
  d.group("tp", {0, 1});
  d.state("tp", 0, 10, 5);   // collective 6 enqueued, never completed
  d.state("tp", 1, 12, 10);  // ... though rank 1 completed it: rank 0's part ran
  d.op("tp", 0, 6, "nccl:all_reduce", "[[120]]");
  FlightRecorderVerdict v = d.judge();
  ASSERT_EQ(v.stopped.size(), 1u);
  ASSERT_TRUE(v.stopped.count(0));
  EXPECT_NE(v.stopped.at(0).find("stopped completing work"), std::string::npos) << v.stopped.at(0);
  EXPECT_NE(v.stopped.at(0).find("collective 6 (nccl:all_reduce)"), std::string::npos) << v.stopped.at(0);
  EXPECT_TRUE(d.waits(v, 1, 0));  // rank 1 waits in 11, which rank 0 never enqueued
}

TEST(FlightRecorderHang, HostThatStoppedIssuingIsTheRootNotTheRanksBlockedBehindIt) {
  // World [0,1,2]: rank 0 waits in collective 6, which ranks 1 and 2 never enqueued. Rank 1
  // is itself blocked in group t, waiting for rank 2; rank 2 has nothing unfinished anywhere.
  Dumps d(3);
  d.group("world", {0, 1, 2});
  d.group("t", {1, 2});
  d.state("world", 0, 6, 5);
  d.state("world", 1, 5, 5);
  d.state("world", 2, 5, 5);
  d.state("t", 1, 9, 7);
  d.state("t", 2, 7, 7);
  FlightRecorderVerdict v = d.judge();
  ASSERT_EQ(v.stopped.size(), 1u);
  ASSERT_TRUE(v.stopped.count(2));
  EXPECT_NE(v.stopped.at(2).find("stopped issuing work"), std::string::npos);
  EXPECT_TRUE(d.waits(v, 0, 1));
  EXPECT_TRUE(d.waits(v, 0, 2));
  EXPECT_TRUE(d.waits(v, 1, 2));
}

TEST(FlightRecorderHang, MissingDumpThatOthersWaitForIsARoot) {
  Dumps d(2);  // rank 2 is a member without any dump
  d.group("world", {0, 1, 2});
  d.state("world", 0, 4, 3);
  d.state("world", 1, 4, 3);
  FlightRecorderVerdict v = d.judge();
  ASSERT_EQ(v.stopped.size(), 1u);
  ASSERT_TRUE(v.stopped.count(2));
  EXPECT_NE(v.stopped.at(2).find("wrote no dump"), std::string::npos);
  EXPECT_EQ(d.labels[2], "no dump");
  EXPECT_TRUE(d.waits(v, 0, 2));
  EXPECT_TRUE(d.waits(v, 1, 2));
}

TEST(FlightRecorderHang, AStatusUnknownInOneGroupOnlyNamesNobody) {
  // Rank 2's dump has a status for group t but none it could match for world (a named
  // group without entries): its progress in world is unknown, not stopped.
  Dumps d(3);
  d.group("world", {0, 1, 2});
  d.group("t", {1, 2});
  d.state("world", 0, 5, 4);
  d.state("world", 1, 5, 4);
  FrGroupState unmatched;
  unmatched.group = fr_group_hash("world");
  unmatched.process = 2;
  unmatched.global_rank = 2;
  d.obs.fr_groups.push_back(unmatched);
  d.state("t", 2, 8, 8);
  d.state("t", 1, 8, 8);
  FlightRecorderVerdict v = d.judge();
  EXPECT_TRUE(v.stopped.empty());
}

TEST(FlightRecorderHang, EveryMemberInsideOneCollectiveNamesNobody) {
  Dumps d(2);
  d.group("tp", {0, 1});
  d.state("tp", 0, 5, 4);
  d.state("tp", 1, 5, 4);
  FlightRecorderVerdict v = d.judge();
  EXPECT_TRUE(v.stopped.empty());
  EXPECT_TRUE(v.waits.empty());
  EXPECT_TRUE(has_note(v, "cannot tell which one holds the others"));
}

TEST(FlightRecorderHang, PipelineCountersAreNotComparedAcrossStages) {
  // A middle stage sends and receives twice as often as the first: compared as collectives,
  // rank 0 would look as if rank 1 completed what rank 0 never did.
  Dumps d(2);
  d.group("pp", {0, 1});
  d.state("pp", 0, 100, 98, true);
  d.state("pp", 1, 200, 199, true);
  d.op("pp", 0, 26, "nccl:send", "[[4096]]", 1);
  FlightRecorderVerdict v = d.judge();
  EXPECT_TRUE(v.stopped.empty()) << v.stopped.begin()->second;
  EXPECT_TRUE(d.waits(v, 0, 1));  // the send waits for its partner
}

TEST(FlightRecorderHang, SendToAHostThatStoppedNamesIt) {
  Dumps d(2);
  d.group("pp", {0, 1});
  d.state("pp", 0, 40, 39, true);
  d.state("pp", 1, 38, 38, true);
  d.op("pp", 0, 3, "nccl:send", "[[4096]]", 1);
  FlightRecorderVerdict v = d.judge();
  ASSERT_EQ(v.stopped.size(), 1u);
  EXPECT_TRUE(v.stopped.count(1));
}

TEST(FlightRecorderHang, MismatchedOperationsAreReportedWithBothSides) {
  Dumps d(2);
  d.group("tp", {0, 1});
  d.state("tp", 0, 7, 6);
  d.state("tp", 1, 7, 6);
  d.op("tp", 0, 7, "nccl:all_reduce", "[[120]]");
  d.op("tp", 1, 7, "nccl:broadcast", "[[1, 8192]]");
  FlightRecorderVerdict v = d.judge();
  EXPECT_TRUE(has_note(v, "mismatch in group tp at collective 7: rank 0 runs nccl:all_reduce [[120]]"));
  EXPECT_TRUE(has_note(v, "rank 1 runs nccl:broadcast [[1, 8192]]"));
}

TEST(FlightRecorderHang, AllToAllSizesMayDifferWithoutAMismatch) {
  Dumps d(2);
  d.group("ep", {0, 1});
  d.state("ep", 0, 3, 3);
  d.state("ep", 1, 3, 3);
  d.op("ep", 0, 3, "nccl:all_to_all", "[[4107, 5120]]");
  d.op("ep", 1, 3, "nccl:all_to_all", "[[4034, 5120]]");
  d.op("ep", 0, 2, "nccl:all_reduce", "[[16]]");
  d.op("ep", 1, 2, "nccl:all_reduce", "[[32]]");
  FlightRecorderVerdict v = d.judge();
  EXPECT_FALSE(has_note(v, "at collective 3"));
  EXPECT_TRUE(has_note(v, "at collective 2"));  // an all_reduce's inputs are alike on every rank
}

TEST(FlightRecorderHang, NoDumpsNoVerdict) {
  Dumps d(2);
  FlightRecorderVerdict v = d.judge();
  EXPECT_TRUE(v.stopped.empty());
  EXPECT_TRUE(v.notes.empty());
}

}  // namespace
}  // namespace culprit
