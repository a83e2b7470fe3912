// flow_places on hand-built connections: a ring's ranks share one place, a tree's root,
// interior ranks and leaves do not; a pipeline stage is a GPU's place in its send/recv
// communicators (flow_places.hpp).
#include "analysis/flow_places.hpp"

#include <gtest/gtest.h>

namespace culprit {
namespace {

constexpr uint64_t kComm = 0xf10;

void connect(Observations& obs, int32_t src, int32_t dst, int32_t channel = 0) {
  EdgeSummary e;
  e.key = EdgeKey{kComm, src, dst, channel};
  obs.edges.push_back(e);
}

TEST(FlowPlaces, EveryRankOfARingHoldsOnePlace) {
  Observations obs;
  for (int32_t channel = 0; channel < 2; ++channel)
    for (int32_t r = 0; r < 4; ++r) connect(obs, r, (r + 1) % 4, channel);
  const auto places = flow_places(obs);
  ASSERT_EQ(places.size(), 4u);
  const FlowPlace ring{2, 2, {{1, 1}, {1, 1}}};  // one in, one out on each of two channels
  for (const auto& [rank, place] : places) EXPECT_EQ(place, ring);
}

TEST(FlowPlaces, ATreesRootInteriorAndLeavesDiffer) {
  // Root 0, children 1 and 2, 1's children 3 and 4; data up and down.
  Observations obs;
  for (int32_t r = 1; r < 5; ++r) {
    connect(obs, r, (r - 1) / 2);
    connect(obs, (r - 1) / 2, r);
  }
  connect(obs, 3, 3);  // a rank's connection to itself gives it no place
  const auto places = flow_places(obs);
  EXPECT_EQ(places.at({kComm, 0}), (FlowPlace{2, 2, {{2, 2}}}));
  EXPECT_EQ(places.at({kComm, 1}), (FlowPlace{3, 3, {{3, 3}}}));
  EXPECT_EQ(places.at({kComm, 2}), (FlowPlace{1, 1, {{1, 1}}}));
  EXPECT_EQ(places.at({kComm, 3}), (FlowPlace{1, 1, {{1, 1}}}));
}

TEST(FlowPlaces, RanksOfAsManyConnectionsMayPlayOtherPartsChannelByChannel) {
  // Two trees over ranks 0-4, one per channel. Channel 0: root 0, children 1 and 2, 1's
  // children 3 and 4. Channel 1: root 0, one child 2, whose children are 1 and 4, and 1's
  // child 3. Rank 1 is interior on both; rank 2 a leaf on channel 0 and interior on channel 1.
  Observations obs;
  auto both_ways = [&](int32_t parent, int32_t child, int32_t channel) {
    connect(obs, parent, child, channel);
    connect(obs, child, parent, channel);
  };
  both_ways(0, 1, 0);
  both_ways(0, 2, 0);
  both_ways(1, 3, 0);
  both_ways(1, 4, 0);
  both_ways(0, 2, 1);
  both_ways(2, 1, 1);
  both_ways(2, 4, 1);
  both_ways(1, 3, 1);
  const auto places = flow_places(obs);
  // Ranks 1 and 2: five connections each way, but interior twice against leaf and interior.
  EXPECT_EQ(places.at({kComm, 1}).counts(), (FlowPlace{5, 5, {}}));
  EXPECT_EQ(places.at({kComm, 2}).counts(), (FlowPlace{4, 4, {}}));
  EXPECT_EQ(places.at({kComm, 1}).per_channel, (std::vector<std::pair<int, int>>{{2, 2}, {3, 3}}));
  EXPECT_EQ(places.at({kComm, 2}).per_channel, (std::vector<std::pair<int, int>>{{1, 1}, {3, 3}}));
  // Ranks 3 and 4: leaves on both channels, the same place.
  EXPECT_EQ(places.at({kComm, 3}), places.at({kComm, 4}));
}

TEST(FlowPlaces, APipelineStageIsItsSizeAndRankInEverySendRecvCommunicator) {
  // GPUs 0-3: two pipelines of two stages (communicators 0xa: GPUs 0, 1; 0xb: GPUs 2, 3), all
  // four also in a world collective, which is no part of a stage.
  Observations obs;
  auto rank = [&](uint64_t comm, int32_t r, uint32_t process, bool collective) {
    GlobalCommRank c;
    c.comm_hash = comm;
    c.rank = r;
    c.process = process;
    c.has_collective = collective;
    obs.comm_ranks.push_back(c);
  };
  rank(0xa, 0, 0, false);
  rank(0xa, 1, 1, false);
  rank(0xb, 0, 2, false);
  rank(0xb, 1, 3, false);
  for (uint32_t p = 0; p < 4; ++p) rank(kComm, static_cast<int32_t>(p), p, true);
  const std::map<uint64_t, int32_t> sizes{{0xa, 2}, {0xb, 2}, {kComm, 4}};
  const auto stages = pipeline_stages(obs, sizes);
  ASSERT_EQ(stages.size(), 4u);
  EXPECT_EQ(stages.at(0), stages.at(2));  // first stage of either pipeline
  EXPECT_EQ(stages.at(1), stages.at(3));
  EXPECT_NE(stages.at(0), stages.at(1));
  EXPECT_EQ(stages.at(1), (PipelineStage{{2, 1}}));
}

}  // namespace
}  // namespace culprit
