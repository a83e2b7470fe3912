// The Flight Recorder reader on hand-written dumps in JSON form (the pickle form decodes to
// the same values: test_safe_unpickler.cpp, and the simulator's dumps in test_simulator_fr):
// schema 2.10 and 1.x, pg_id mapped to group names from entries and by creation order,
// send/receive peers in global ranks, rejected entries counted, unusable files reported.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io/discover.hpp"
#include "io/flight_recorder_reader.hpp"

namespace culprit {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const FrGroupState* group_named(const LocalData& d, const std::string& name) {
  for (const FrGroupState& g : d.fr_groups)
    if (fr_text(g.name) == name) return &g;
  return nullptr;
}

// A dump of rank 5 in schema 2.10's JSON form: pg_status numbers as strings, `ranks` as a
// string, comm_lib_version instead of nccl_version.
json dump_2_10() {
  return json::parse(R"({
    "version": "2.10", "comm_lib_version": "2.27.3",
    "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[4, 5, 6, 7]"},
                  "9": {"name": "9", "desc": "PIPELINE_MODEL_PARALLEL_GROUP", "ranks": "[1, 5]"}},
    "pg_status": {"0": {"last_enqueued_collective": "12", "last_started_collective": "-1",
                        "last_completed_collective": "11"},
                  "3": {"last_enqueued_collective": "40", "last_started_collective": "-1",
                        "last_completed_collective": "38"}},
    "entries": [
      {"record_id": 1, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": 12,
       "p2p_seq_id": 0, "op_id": 12, "profiling_name": "nccl:all_reduce", "time_created_ns": 5,
       "input_sizes": [[120]], "input_dtypes": ["Float"], "state": "scheduled", "is_p2p": false},
      {"record_id": 2, "pg_id": 3, "process_group": ["9", "PIPELINE_MODEL_PARALLEL_GROUP"],
       "collective_seq_id": 0, "p2p_seq_id": 39, "op_id": 39, "profiling_name": "nccl:send 1->0",
       "time_created_ns": 6, "input_sizes": [[4096]], "input_dtypes": ["BFloat16"], "state": "started",
       "is_p2p": true}
    ]})");
}

TEST(FlightRecorderReader, Schema210JsonForm) {
  LocalData d;
  InputReport report;
  read_flight_recorder_value(dump_2_10(), 5, "mem", "node1", d, report);
  EXPECT_TRUE(report.error.empty()) << report.error;
  EXPECT_EQ(report.layout, "schema 2.10");
  EXPECT_EQ(report.rejected, 0u);
  ASSERT_EQ(d.processes.size(), 1u);
  EXPECT_EQ(d.processes[0].rank, 5);
  EXPECT_EQ(d.processes[0].pid, -1);  // no invented pid
  const FrGroupState* world = group_named(d, "0");
  ASSERT_NE(world, nullptr);
  EXPECT_EQ(world->last_enqueued, 12);
  EXPECT_EQ(world->last_completed, 11);
  EXPECT_EQ(world->group_size, 4);
  EXPECT_FALSE(world->has_p2p);
  const FrGroupState* pp = group_named(d, "9");
  ASSERT_NE(pp, nullptr);
  EXPECT_EQ(pp->last_enqueued, 40);  // pg_id 3 is group "9": its entry says so
  EXPECT_TRUE(pp->has_p2p);
  ASSERT_EQ(d.fr_ops.size(), 2u);
  EXPECT_EQ(fr_text(d.fr_ops[0].op), "nccl:all_reduce");
  EXPECT_EQ(d.fr_ops[0].collective_seq, 12);
  EXPECT_EQ(d.fr_ops[1].peer_global_rank, 1);  // group rank 0 of [1, 5]
  EXPECT_TRUE(d.fr_ops[1].is_send);
  EXPECT_EQ(d.fr_ops[1].state, FrOpState::kStarted);
  ASSERT_EQ(d.fr_members.size(), 2u);  // [4, 5, 6, 7] and [1, 5]: one run each
  EXPECT_EQ(d.fr_members[0].count, 4);
  EXPECT_EQ(d.fr_members[1].stride, 4);
  ASSERT_EQ(d.comm_ranks.size(), 2u);  // rank 5 is group rank 1 of both groups
  EXPECT_EQ(d.comm_ranks[0].rank, 1);
}

TEST(FlightRecorderReader, MemberListsTravelAsRunsOfEvenlySpacedRanks) {
  std::vector<FrMemberRun> runs = fr_member_runs(1, {0, 2, 4, 6, 7, 9, 3});
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].first_rank, 0);
  EXPECT_EQ(runs[0].stride, 2);
  EXPECT_EQ(runs[0].count, 4);
  EXPECT_EQ(runs[1].first_rank, 7);
  EXPECT_EQ(runs[1].count, 2);
  EXPECT_EQ(runs[1].first_group_rank, 4);
  EXPECT_EQ(runs[2].first_rank, 3);
  EXPECT_EQ(runs[2].count, 1);
  std::vector<int64_t> world(16384);
  for (size_t i = 0; i < world.size(); ++i) world[i] = static_cast<int64_t>(i);
  EXPECT_EQ(fr_member_runs(1, world).size(), 1u);
}

TEST(FlightRecorderReader, GroupsWithoutEntriesAreMatchedByCreationOrder) {
  // A rank with nothing in flight: its pg_ids cannot be read off entries. PyTorch numbers
  // both in creation order, so sorted ids meet sorted numeric names.
  json dump = json::parse(R"({"version": "2.9",
    "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"},
                  "112": {"name": "112", "desc": "X", "ranks": "[0, 1]"},
                  "33": {"name": "33", "desc": "Y", "ranks": "[0, 1]"}},
    "pg_status": {"0": {"last_enqueued_collective": 7, "last_completed_collective": 7},
                  "4": {"last_enqueued_collective": 30, "last_completed_collective": 30},
                  "16": {"last_enqueued_collective": 3, "last_completed_collective": 3}}})");
  LocalData d;
  InputReport report;
  read_flight_recorder_value(dump, 0, "mem", "", d, report);
  ASSERT_NE(group_named(d, "33"), nullptr);
  EXPECT_EQ(group_named(d, "0")->last_enqueued, 7);
  EXPECT_EQ(group_named(d, "33")->last_enqueued, 30);
  EXPECT_EQ(group_named(d, "112")->last_enqueued, 3);
  EXPECT_TRUE(report.notes.empty());
}

TEST(FlightRecorderReader, NamedGroupsWithoutEntriesStayUnmatchedAndSaySo) {
  json dump = json::parse(R"({"version": "2.9",
    "pg_config": {"trainer": {"name": "trainer", "desc": "", "ranks": "[0, 1]"}},
    "pg_status": {"2": {"last_enqueued_collective": 7, "last_completed_collective": 7}}})");
  LocalData d;
  InputReport report;
  read_flight_recorder_value(dump, 0, "mem", "", d, report);
  ASSERT_NE(group_named(d, "trainer"), nullptr);
  EXPECT_FALSE(group_named(d, "trainer")->has_status);
  ASSERT_EQ(report.notes.size(), 1u);
  EXPECT_NE(report.notes[0].find("could not be matched"), std::string::npos);
}

TEST(FlightRecorderReader, Schema1ListOfEntries) {
  json dump = json::parse(R"([{"pg_id": 0, "seq_id": 4, "profiling_name": "nccl:all_reduce", "state": "scheduled",
                               "input_sizes": [[8]], "input_dtypes": ["Float"]}])");
  LocalData d;
  InputReport report;
  read_flight_recorder_value(dump, 2, "mem", "", d, report);
  EXPECT_EQ(report.layout, "schema 1.x");
  ASSERT_EQ(d.fr_ops.size(), 1u);
  EXPECT_EQ(d.fr_ops[0].collective_seq, 4);
  EXPECT_EQ(d.fr_ops[0].group, fr_group_hash("0"));
}

TEST(FlightRecorderReader, BadEntriesAreCountedAndTheRestKept) {
  json dump = dump_2_10();
  dump["entries"].push_back(42);
  dump["entries"].push_back(json{{"pg_id", 0}, {"process_group", {"0", "default_pg"}}, {"state", "exploded"}});
  dump["entries"].push_back(json{{"state", "scheduled"}, {"profiling_name", "nccl:all_reduce"}});
  LocalData d;
  InputReport report;
  read_flight_recorder_value(dump, 5, "mem", "", d, report);
  EXPECT_EQ(report.rejected, 3u);
  EXPECT_EQ(report.reject_reasons["entry that is not a mapping"], 1u);
  EXPECT_EQ(report.reject_reasons["entry with an unknown state"], 1u);
  EXPECT_EQ(report.reject_reasons["entry without a process group"], 1u);
  EXPECT_EQ(d.fr_ops.size(), 2u);
}

TEST(FlightRecorderReader, NumbersOutOfRangeAreUnknownNotFatal) {
  json dump = dump_2_10();
  dump["pg_status"]["0"]["last_enqueued_collective"] = "99999999999999999999";
  dump["pg_config"]["9"]["ranks"] = "[1, 99999999999]";
  LocalData d;
  InputReport report;
  read_flight_recorder_value(dump, 5, "mem", "", d, report);
  EXPECT_EQ(group_named(d, "0")->last_enqueued, -1);
  EXPECT_EQ(report.reject_reasons["pg_config ranks that are not a list of ranks"], 1u);
}

TEST(FlightRecorderReader, DumpWithoutAnyGroupSaysSo) {
  // Short dumps seen by users (87 bytes): a version and empty tables, nothing else.
  json dump = json::parse(R"({"version": "2.9", "pg_config": {}, "pg_status": {}, "nccl_version": "2.27.3"})");
  LocalData d;
  InputReport report;
  read_flight_recorder_value(dump, 7, "mem", "", d, report);
  EXPECT_TRUE(report.error.empty());
  EXPECT_TRUE(d.fr_groups.empty());
  ASSERT_EQ(report.notes.size(), 1u);
  EXPECT_NE(report.notes[0].find("holds no process group"), std::string::npos);
  EXPECT_EQ(d.processes.at(0).rank, 7);  // known, so that a wait for it names an unusable dump
}

class FlightRecorderFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("fr_reader_" + std::to_string(::getpid()));
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& content) {
    std::ofstream(dir / name, std::ios::binary) << content;
    return (dir / name).string();
  }
  fs::path dir;
};

TEST_F(FlightRecorderFiles, RankComesFromTheFileName) {
  std::string path = write("nccl_trace_rank_5", dump_2_10().dump());
  EXPECT_EQ(detect_format(path, "auto"), "flight-recorder");
  LocalData d;
  read_flight_recorder_file(path, "node1", d);
  ASSERT_EQ(d.inputs.size(), 1u);
  EXPECT_TRUE(d.inputs[0].error.empty()) << d.inputs[0].error;
  EXPECT_EQ(d.inputs[0].format, "flight-recorder");
  EXPECT_EQ(d.processes.at(0).rank, 5);
  EXPECT_EQ(d.processes.at(0).host, "node1");
}

TEST_F(FlightRecorderFiles, EmptyDumpIsReportedAndItsRankKnown) {
  std::string path = write("_dump_3", "");
  EXPECT_EQ(detect_format(path, "auto"), "flight-recorder");
  LocalData d;
  read_flight_recorder_file(path, "", d);
  ASSERT_EQ(d.inputs.size(), 1u);
  EXPECT_NE(d.inputs[0].error.find("empty dump"), std::string::npos);
  EXPECT_TRUE(d.inputs[0].truncated);
  ASSERT_EQ(d.processes.size(), 1u);
  EXPECT_EQ(d.processes[0].rank, 3);
  EXPECT_TRUE(d.fr_groups.empty());
}

TEST_F(FlightRecorderFiles, CutShortJsonIsReported) {
  std::string text = dump_2_10().dump();
  std::string path = write("_dump_4", text.substr(0, text.size() / 2));
  LocalData d;
  read_flight_recorder_file(path, "", d);
  EXPECT_NE(d.inputs.at(0).error.find("cannot parse as JSON"), std::string::npos);
  EXPECT_TRUE(d.inputs.at(0).truncated);
}

TEST_F(FlightRecorderFiles, OtherFilesAreNotDumps) {
  EXPECT_EQ(detect_format(write("notes_7", "hello"), "auto"), "");
  EXPECT_EQ(detect_format(write("empty_7", ""), "auto"), "");
  EXPECT_EQ(detect_format(write("nccl_trace_rank_", dump_2_10().dump()), "flight-recorder"), "");
  EXPECT_EQ(flight_recorder_rank_of_name("/x/nccl_trace_rank_12"), 12);
  EXPECT_EQ(flight_recorder_rank_of_name("/x/rank_7.json"), 7);
  EXPECT_EQ(flight_recorder_rank_of_name("/x/12"), -1);
}

}  // namespace
}  // namespace culprit
