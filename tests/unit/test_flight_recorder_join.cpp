// join_flight_recorder_ranks: a dump's process (host, global rank) and the traced process on
// that host holding the same world rank become one, on the rank alone when the dump's host is
// unknown; a dump matching no traced process stays its own process.
#include <gtest/gtest.h>

#include "analysis/flight_recorder_join.hpp"

namespace culprit {
namespace {

constexpr uint64_t kWorld = 0x77;

Observations traced_pair() {
  Observations obs;
  obs.processes = {{"h0", 10, -1, ""}, {"h1", 11, -1, ""}};
  GlobalCommRank c;
  c.comm_hash = kWorld;
  c.rank = 0;
  c.process = 0;
  obs.comm_ranks.push_back(c);
  c.rank = 1;
  c.process = 1;
  obs.comm_ranks.push_back(c);
  return obs;
}

void add_dump(Observations& obs, const std::string& host, int64_t rank) {
  const auto p = static_cast<uint32_t>(obs.processes.size());
  obs.processes.push_back({host, -1, rank, ""});
  FrGroupState g;
  g.group = fr_group_hash("0");
  g.process = p;
  g.global_rank = static_cast<int32_t>(rank);
  g.group_size = 2;
  obs.fr_groups.push_back(g);
  FrOpRecord op;
  op.group = g.group;
  op.process = p;
  obs.fr_ops.push_back(op);
}

TEST(FlightRecorderJoin, DumpMeetsTheTracedProcessOfItsWorldRank) {
  Observations obs = traced_pair();
  add_dump(obs, "h1", 1);
  add_dump(obs, "", 0);  // collected into one folder: no host
  ASSERT_TRUE(needs_flight_recorder_join(obs));
  std::vector<std::string> notes;
  Observations joined = join_flight_recorder_ranks(obs, notes);
  ASSERT_EQ(joined.processes.size(), 2u);
  EXPECT_EQ(joined.processes[1].pid, 11);  // the traced identity is kept
  EXPECT_EQ(joined.processes[1].rank, 1);  // and gains the global rank
  EXPECT_EQ(joined.processes[0].rank, 0);
  EXPECT_EQ(joined.fr_groups[0].process, 1u);
  EXPECT_EQ(joined.fr_groups[1].process, 0u);
  EXPECT_EQ(joined.fr_ops[0].process, 1u);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("2 dump(s) joined"), std::string::npos);
}

TEST(FlightRecorderJoin, DumpOnAnotherHostOrRankStaysApart) {
  Observations obs = traced_pair();
  add_dump(obs, "h0", 1);  // rank 1 is traced on h1, not h0
  add_dump(obs, "h1", 1);
  std::vector<std::string> notes;
  Observations joined = join_flight_recorder_ranks(obs, notes);
  ASSERT_EQ(joined.processes.size(), 3u);
  EXPECT_EQ(joined.processes[2].host, "h0");
  EXPECT_EQ(joined.fr_groups[0].process, 2u);
  EXPECT_EQ(joined.fr_groups[1].process, 1u);
  EXPECT_NE(notes.at(0).find("1 matched none"), std::string::npos);
}

TEST(FlightRecorderJoin, DumpsAloneNeedNoJoin) {
  Observations obs;
  add_dump(obs, "", 0);
  EXPECT_FALSE(needs_flight_recorder_join(obs));
}

}  // namespace
}  // namespace culprit
