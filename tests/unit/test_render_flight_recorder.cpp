// The simulator's Flight Recorder dumps (mock/render_flight_recorder.hpp): the pickle and the
// JSON form hold the same dump, the counters follow the timeline, the ring buffer wraps, and
// the reader takes every form back.
#include <gtest/gtest.h>

#include "io/flight_recorder_reader.hpp"
#include "io/safe_unpickler.hpp"
#include "mock/pickle_writer.hpp"
#include "mock/render_flight_recorder.hpp"
#include "mock/simulator.hpp"

namespace culprit {
namespace {

using json = nlohmann::json;

const char* kHang = "topology=ring,nodes=2,gpus=4,channels=2,seqs=6,bytes=4M,fault=hang:5@3";

json decode(const mock::RenderedFile& f) {
  return looks_like_pickle(f.content) ? unpickle_plain(f.content) : json::parse(f.content);
}

TEST(PickleWriter, RoundTripsThroughTheSafeUnpickler) {
  json value = json::parse(R"({"version": "2.9", "n": [0, 255, 256, 65536, -1, -2147483649, 9007199254740993],
                              "f": 0.25, "t": true, "none": null, "s": ["a", "a", "é"], "empty": {}, "list": []})");
  EXPECT_EQ(unpickle_plain(mock::pickle_protocol2(value)), value);
}

TEST(RenderFlightRecorder, PickleAndJsonHoldTheSameDump) {
  mock::Simulation sim(mock::Scenario::parse(kHang));
  auto pickles = mock::render_host_flight_recorder(sim, 1, mock::parse_flight_recorder_format("flight-recorder"));
  auto texts = mock::render_host_flight_recorder(sim, 1, mock::parse_flight_recorder_format("flight-recorder+json"));
  ASSERT_EQ(pickles.size(), 4u);
  ASSERT_EQ(texts.size(), 4u);
  for (size_t i = 0; i < pickles.size(); ++i) {
    EXPECT_EQ(pickles[i].name, texts[i].name);
    EXPECT_TRUE(looks_like_pickle(pickles[i].content));
    json p = decode(pickles[i]), t = decode(texts[i]);
    EXPECT_EQ(p["pg_config"], t["pg_config"]);
    // The JSON form writes pg_status numbers as strings.
    for (const auto& [id, s] : p["pg_status"].items())
      EXPECT_EQ(std::to_string(s["last_completed_collective"].get<int64_t>()),
                t["pg_status"][id]["last_completed_collective"].get<std::string>());
  }
}

TEST(RenderFlightRecorder, CountersFollowTheTimeline) {
  mock::Simulation sim(mock::Scenario::parse(kHang));
  auto files = mock::render_host_flight_recorder(sim, 1, mock::parse_flight_recorder_format("flight-recorder"));
  for (const mock::RenderedFile& f : files) {
    json dump = decode(f);
    const json& world = dump["pg_status"]["0"];
    if (f.name == "nccl_trace_rank_5") {  // never enqueued collective 4 (seq 3, counted from 1)
      EXPECT_EQ(world["last_enqueued_collective"], 3);
      EXPECT_EQ(world["last_completed_collective"], 3);
      EXPECT_TRUE(dump["entries"].empty());
    } else {
      EXPECT_GE(world["last_enqueued_collective"].get<int>(), 4);
      EXPECT_EQ(world["last_completed_collective"], 3);
      ASSERT_FALSE(dump["entries"].empty());
      EXPECT_EQ(dump["entries"][0]["state"], "scheduled");
      EXPECT_EQ(dump["entries"][0]["collective_seq_id"], 4);
    }
  }
}

TEST(RenderFlightRecorder, RingBufferKeepsTheNewestEntries) {
  mock::Simulation sim(mock::Scenario::parse(kHang));
  auto files = mock::render_host_flight_recorder(sim, 0, mock::parse_flight_recorder_format("flight-recorder+all+buffer=2"));
  json dump = decode(files.at(0));
  ASSERT_EQ(dump["entries"].size(), 2u);
  EXPECT_EQ(dump["entries"][1]["collective_seq_id"], dump["pg_status"]["0"]["last_enqueued_collective"]);
}

TEST(RenderFlightRecorder, SchemaVariants) {
  mock::Simulation sim(mock::Scenario::parse(kHang));
  json v210 = decode(mock::render_host_flight_recorder(sim, 0, mock::parse_flight_recorder_format("flight-recorder+v2.10"))[0]);
  EXPECT_TRUE(v210.contains("comm_lib_version"));
  EXPECT_FALSE(v210.contains("nccl_version"));
  json v1 = decode(mock::render_host_flight_recorder(sim, 0, mock::parse_flight_recorder_format("flight-recorder+v1.0"))[0]);
  ASSERT_TRUE(v1.is_array());
  EXPECT_TRUE(v1[0].contains("seq_id"));
  LocalData d;
  InputReport report;
  read_flight_recorder_value(v1, 0, "mem", "node000", d, report);
  ASSERT_EQ(d.fr_groups.size(), 1u);  // status read off the entries
  EXPECT_EQ(d.fr_groups[0].last_completed, 3);
}

TEST(RenderFlightRecorder, MissingEmptyAndBadOptions) {
  mock::Simulation sim(mock::Scenario::parse(kHang));
  auto files = mock::render_host_flight_recorder(sim, 1, mock::parse_flight_recorder_format("flight-recorder+missing=5+empty=6"));
  ASSERT_EQ(files.size(), 3u);
  for (const mock::RenderedFile& f : files) {
    EXPECT_NE(f.name, "nccl_trace_rank_5");
    if (f.name == "nccl_trace_rank_6") EXPECT_TRUE(f.content.empty());
  }
  EXPECT_THROW(mock::parse_flight_recorder_format("flight-recorder+nonsense"), std::invalid_argument);
  EXPECT_THROW(mock::parse_flight_recorder_format("flight-recorder+missing=x"), std::invalid_argument);
  EXPECT_THROW(mock::parse_flight_recorder_format("probing-csv"), std::invalid_argument);
}

}  // namespace
}  // namespace culprit
