// late_posters on hand-built connections: a receiver that came far later than the others of
// its place and stage is named; the slowest of a healthy spread, a place too small to measure
// and receivers of other places or stages are not (late_posters.hpp).
#include "analysis/late_posters.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <vector>

namespace culprit {
namespace {

constexpr uint64_t kComm = 0x5eed;
constexpr FlowPlace kRingPlace{1, 1};

// Receivers 0..n-1 of one ring, each with `late[i]` (SendPeerWait less RecvWait, us per step).
std::vector<PostingDelay> ring(const std::vector<double>& late, uint32_t stage = 0) {
  std::vector<PostingDelay> out;
  for (size_t i = 0; i < late.size(); ++i)
    out.push_back({static_cast<uint32_t>(i), kComm, kComm, kRingPlace, stage, late[i] * 1000});
  return out;
}

TEST(LatePosters, AReceiverFarLaterThanItsPeersIsNamed) {
  // Seven receivers waited 400-480 us per step for their data; receiver 5 made its sender wait
  // 300 us for credit and found its data there. Receiver 2, the latest of the others, is not.
  const auto found = late_posters(ring({-450, -430, -400, -470, -480, 300, -440, -420}));
  ASSERT_EQ(found.size(), 1u);
  const LatePoster& p = found.at({5, kComm});
  EXPECT_GT(p.t, p.critical_t);
  EXPECT_GT(p.t, 10);
}

TEST(LatePosters, TheSlowestOfAHealthySpreadIsNotNamed) {
  // Lateness spread evenly: the latest departs from the others by their spread, no more.
  EXPECT_TRUE(late_posters(ring({-450, -430, -380, -470, -480, -360, -440, -420, -400, -410})).empty());
}

TEST(LatePosters, APlaceOfFewerThanFourReceiversIsNotJudged) {
  // Three receivers cannot measure a spread for one of them against the other two.
  EXPECT_TRUE(late_posters(ring({-450, -440, 300})).empty());
  // Nor do other receivers that show no spread at all.
  EXPECT_TRUE(late_posters(ring({-450, -450, -450, -450, 300})).empty());
}

TEST(LatePosters, OnlyReceiversOfOnePlaceAndStageAreCompared) {
  // A tree's root (it receives from two children) comes late by its place, not its speed.
  std::vector<PostingDelay> tree = ring({-450, -430, -400, -470, -480, -440});
  tree.push_back({6, kComm, kComm, FlowPlace{2, 2}, 0, 300e3});
  EXPECT_TRUE(late_posters(tree).empty());
  // The GPUs of a pipeline's last stage reach the closing collective later than the first
  // stage's by the schedule: compared within their stage, nobody stands out.
  std::vector<PostingDelay> stages = ring({-450, -430, -400, -470}, 1);
  for (PostingDelay d : ring({250, 240, 270, 260}, 2)) {
    d.receiver += 4;
    stages.push_back(d);
  }
  EXPECT_TRUE(late_posters(stages).empty());
  for (PostingDelay& d : stages) d.stage = 0;  // one stage: the late four were far later
  EXPECT_FALSE(late_posters(stages).empty());
}

TEST(LatePosters, ReplicasOfACommunicatorAreComparedTogether) {
  // Two replicated pipelines' stage 2 (communicators 0xa and 0xb, replicas of 0xa), three
  // receivers each: alone, neither measures a spread; together they do, and the late one is
  // named in its own communicator.
  std::vector<PostingDelay> stages;
  const double late[6] = {-450, -430, -400, -470, 300, -440};
  for (uint32_t i = 0; i < 6; ++i)
    stages.push_back({i, i < 3 ? 0xaULL : 0xbULL, i < 3 ? 0xaULL : 0xbULL, kRingPlace, 2, late[i] * 1000});
  EXPECT_TRUE(late_posters(stages).empty());
  for (PostingDelay& d : stages) d.replicas = 0xa;
  const auto found = late_posters(stages);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found.count({4, 0xbULL}), 1u);
}

TEST(LatePosters, ALargePlaceIsJudgedAgainstOneYardstick) {
  // 400 receivers (past the leave-one-out size): the far later one is named, the others not.
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(-400, 30);
  std::vector<double> late;
  for (int r = 0; r < 400; ++r) late.push_back(noise(rng));
  EXPECT_TRUE(late_posters(ring(late)).empty());
  late[123] = 300;
  const auto found = late_posters(ring(late));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found.count({123, kComm}), 1u);
}

TEST(LatePosters, HealthyJobsRaiseFewAlarms) {
  // 2000 rings of 16 receivers whose lateness is normal noise about a common wait: the test
  // is built for one false alarm in a thousand jobs. Measured: 6 of 2000, three times the
  // design, as the gap test's (the clipped variance of 15 others sometimes settles on a tight
  // core, own_work_stragglers.cpp); 8 keeps it from growing unseen.
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(-400, 40);
  int alarms = 0;
  for (int job = 0; job < 2000; ++job) {
    std::vector<double> late;
    for (int r = 0; r < 16; ++r) late.push_back(noise(rng));
    alarms += late_posters(ring(late)).empty() ? 0 : 1;
  }
  std::printf("healthy rings of 16 receivers with an alarm: %d of 2000\n", alarms);
  EXPECT_LE(alarms, 8);
}

}  // namespace
}  // namespace culprit
