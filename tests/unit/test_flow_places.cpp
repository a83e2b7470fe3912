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
  for (const auto& [rank, place] : places) EXPECT_EQ(place, (FlowPlace{2, 2}));
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
  EXPECT_EQ(places.at({kComm, 0}), (FlowPlace{2, 2}));
  EXPECT_EQ(places.at({kComm, 1}), (FlowPlace{3, 3}));
  EXPECT_EQ(places.at({kComm, 2}), (FlowPlace{1, 1}));
  EXPECT_EQ(places.at({kComm, 3}), (FlowPlace{1, 1}));
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
