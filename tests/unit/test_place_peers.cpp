// place_peers on hand-built figures: a GPU is measured against the others of its place, in
// its place's spread or its family's, and nobody else's (place_peers.hpp).
#include "analysis/place_peers.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace culprit {
namespace {

constexpr FlowPlace kPlace{1, 1, {}};

// GPUs first..first+n-1 of one place (communicator `comm`, family `family`, stage `stage`)
// with figures `values`.
std::vector<PeerFigure> place(uint32_t first, uint64_t comm, uint64_t family, uint32_t stage,
                              const std::vector<double>& values) {
  std::vector<PeerFigure> out;
  for (size_t i = 0; i < values.size(); ++i)
    out.push_back({first + static_cast<uint32_t>(i), comm, family, kPlace, stage, values[i], {}, 0});
  return out;
}

TEST(PlacePeers, AGpuDepartsFromTheMedianOfItsPlacesOthers) {
  // Eight GPUs of one place: GPU 3's departure is its figure less the others' median (100).
  const auto found = peer_departures(place(0, 0xa, 0xa, 0, {90, 100, 110, 400, 95, 105, 100, 98}));
  EXPECT_EQ(found.judged, 8u);
  const PeerDeparture& d = found.of.at({3, 0xa});
  EXPECT_DOUBLE_EQ(d.excess, 300);
  EXPECT_EQ(d.df, 6);  // seven others, less one
  ASSERT_TRUE(significant(d, 1e-4).has_value());
  // The others are judged without GPU 3 in their yardstick: none stands out.
  for (uint32_t gpu : {0u, 1u, 2u, 4u, 5u, 6u, 7u}) EXPECT_FALSE(significant(found.of.at({gpu, 0xa}), 1e-4));
}

TEST(PlacePeers, AGpuKeepsItsLargestFigureOfACommunicator) {
  // Two connections of GPU 0 in one communicator and place: the larger counts.
  std::vector<PeerFigure> figures = place(0, 0xa, 0xa, 0, {100, 110, 90, 105, 95});
  figures.push_back({0, 0xa, 0xa, kPlace, 0, 500, {}, 0});
  const auto found = peer_departures(figures);
  EXPECT_EQ(found.judged, 5u);
  EXPECT_DOUBLE_EQ(found.of.at({0, 0xa}).excess, 500 - 100);
}

TEST(PlacePeers, SmallPlacesAreJudgedInTheirFamilysSpreadAndStagesApart) {
  // Ten stages of two replicas (communicators 0xa and 0xb, one family): a place of two has
  // no spread of its own, the family's pairs have one, and each stage's typical figure (its
  // schedule, a thousand apart) cancels in them. Replicas differ by about 10.
  std::vector<PeerFigure> figures;
  const double within[10][2] = {{0, 10}, {5, -5}, {-8, 2}, {3, 9}, {0, 300},
                                {4, -6}, {-2, 9}, {7, -3}, {-5, 5}, {1, 12}};
  for (uint32_t s = 0; s < 10; ++s)
    for (uint32_t r = 0; r < 2; ++r)
      figures.push_back({2 * s + r, r == 0 ? 0xaULL : 0xbULL, 0xa, kPlace, s + 1, 1000.0 * s + within[s][r], {}, 0});
  const auto found = peer_departures(figures);
  EXPECT_EQ(found.judged, 20u);
  const PeerDeparture& late = found.of.at({9, 0xb});
  EXPECT_DOUBLE_EQ(late.excess, 300);
  EXPECT_TRUE(significant(late, 1e-3 / 20).has_value());
  for (uint32_t gpu = 0; gpu < 20; ++gpu) {
    if (gpu == 9) continue;
    EXPECT_FALSE(significant(found.of.at({gpu, gpu % 2 ? 0xbULL : 0xaULL}), 1e-3 / 20).has_value());
  }
  // Judged against every GPU at once, the stages' schedules would swamp it.
  for (PeerFigure& f : figures) f.stage = 0;
  EXPECT_FALSE(significant(peer_departures(figures).of.at({9, 0xb}), 1e-3 / 20).has_value());
}

TEST(PlacePeers, AMembersOwnCommunicatorStaysOutOfItsFamilysYardstick) {
  // Six stages of four replicas (communicators 0xa-0xd, one family); the replicas differ by
  // about 10. GPU 13 (stage 4 of replica 0xb) came 400 later than its stage's others, and every
  // other GPU of 0xb waited on it: each came 150 earlier than its stage's others. Those
  // victims would widen the family's spread to about 100; without them it stays near 10.
  std::vector<PeerFigure> figures;
  const double noise[6][4] = {{0, 10, -5, 4}, {5, -5, 8, -2}, {-8, 2, 6, 0}, {3, 400, -4, 7},
                              {4, -6, 1, -9}, {-2, 9, 3, 5}};
  for (uint32_t s = 0; s < 6; ++s)
    for (uint32_t r = 0; r < 4; ++r) {
      const double victim = (r == 1 && s != 3) ? -150 : 0;
      figures.push_back({4 * s + r, 0xaULL + r, 0xa, kPlace, s + 1, 1000.0 * s + noise[s][r] + victim, {}, 0});
    }
  const auto found = peer_departures(figures);
  const PeerDeparture& late = found.of.at({13, 0xb});
  EXPECT_NEAR(late.excess, 400 - 3, 1e-9);
  EXPECT_LT(std::sqrt(late.variance), 40);
  EXPECT_TRUE(significant(late, 1e-3 / 24).has_value());
}

TEST(PlacePeers, AFamilyOfTooFewContrastsJudgesNobody) {
  // Two stages of two: two contrasts, one besides the judged GPU's (three are needed).
  std::vector<PeerFigure> figures = place(0, 0xa, 0xa, 1, {0, 10});
  for (const PeerFigure& f : place(2, 0xb, 0xa, 2, {1000, 1300})) figures.push_back(f);
  const auto found = peer_departures(figures);
  EXPECT_EQ(found.judged, 0u);
  EXPECT_TRUE(found.of.empty());
}

TEST(PlacePeers, AGpuAloneInItsPlaceIsNotJudged) {
  // A family of five places of two and one place of one GPU (say, a pipeline's last stage
  // without replicas): the one has no others to depart from, and costs the family-wise
  // bound no test.
  std::vector<PeerFigure> figures;
  for (uint32_t s = 0; s < 5; ++s)
    for (const PeerFigure& f : place(2 * s, 0xa + s, 0xa, s + 1, {1000.0 * s, 1000.0 * s + 10})) figures.push_back(f);
  figures.push_back({10, 0xf, 0xa, kPlace, 9, 5000, {}, 0});
  const auto found = peer_departures(figures);
  EXPECT_EQ(found.judged, 10u);
  EXPECT_EQ(found.of.count({10, 0xf}), 0u);
}

TEST(PlacePeers, APlaceOfFourWithTwoAlikeNamesNeither) {
  // A healthy tree of two nodes in probing's exports (seed 685660, per step): per channel one
  // GPU of each node sends and receives, and the two leaves (whose inputs come over NVLink)
  // show their whole SendGpuWait beyond their inputs where the two roots show none. Leaves and
  // roots share a place of four. Judged by the two roots alone (the other leaf clipped), each
  // leaf stood beyond them; with the three others as its yardstick, neither does.
  std::vector<PeerFigure> figures = place(0, 0xa, 0xa, 0, {0, 295082, 29677, 318633});
  for (PeerFigure& f : figures) f.prior_sigma = 12000;
  const auto found = peer_departures(figures);
  EXPECT_EQ(found.judged, 4u);
  for (uint32_t gpu : {0u, 1u, 2u, 3u}) EXPECT_FALSE(significant(found.of.at({gpu, 0xa}), 1e-3 / 4));
  // One leaf far beyond three GPUs alike is still named.
  figures[1].value = 20000;
  figures[2].value = 10000;
  figures[3].value = 318633;
  EXPECT_TRUE(significant(peer_departures(figures).of.at({3, 0xa}), 1e-3 / 4).has_value());
}

TEST(PlacePeers, ABelowTypicalFigureIsNeverSignificant) {
  const auto found = peer_departures(place(0, 0xa, 0xa, 0, {100, 110, -400, 105, 95, 98}));
  EXPECT_LT(found.of.at({2, 0xa}).excess, 0);
  EXPECT_FALSE(significant(found.of.at({2, 0xa}), 0.5).has_value());
}

}  // namespace
}  // namespace culprit
