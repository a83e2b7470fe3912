// judge_bottleneck_links: the one saturated link of a flow against the busy times of its
// unsaturated links, which are upper bounds of their transfer times, at a spread of transfer
// times between healthy links taken from the prior (or from the links, where they spread more).
#include <gtest/gtest.h>

#include <vector>

#include "analysis/bottleneck_wires.hpp"
#include "analysis/saturated_wires.hpp"

namespace culprit {
namespace {

constexpr uint64_t kComm = 0xB07ull;
constexpr uint64_t kSteps = 120;

// One channel of link src->dst: busy time per step (microseconds); saturated (every send
// queued, four in flight) or paced by its sender (a fifth queued, one in flight).
EdgeSummary wire(int32_t src, int32_t dst, double busy_us, bool saturated) {
  EdgeSummary e;
  e.key = {kComm, src, dst, 0, 0};
  const double send_wait_us = saturated ? 4 * busy_us : busy_us;
  e.phase_ns[kSendWait] = static_cast<uint64_t>(send_wait_us * 1000 * kSteps);
  e.send_steps = kSteps;
  e.send_ops = 1;
  e.send_wire_steps = kSteps;
  e.send_wire_busy_ns = static_cast<uint64_t>(busy_us * 1000 * kSteps);
  e.send_wire_queued_steps = saturated ? kSteps : kSteps / 5;
  e.send_wait_min_ops = 1;
  e.send_wait_min_sum_ns = static_cast<uint64_t>(send_wait_us * 1000);
  return e;
}

// A single-channel ring: link 0->1 saturated at `bottleneck_us`, the others unsaturated at
// `peers_us`. Returns the bottleneck's judgement, made directly by the signal at the tail of
// one test among the ring's links.
SaturatedWireJudgement judge_ring(double bottleneck_us, const std::vector<double>& peers_us) {
  std::vector<EdgeSummary> edges = {wire(0, 1, bottleneck_us, true)};
  for (size_t k = 0; k < peers_us.size(); ++k)
    edges.push_back(wire(static_cast<int32_t>(k + 1), static_cast<int32_t>(k + 2), peers_us[k], false));
  std::vector<EdgeView> views;
  for (const EdgeSummary& e : edges) views.push_back(view_of(e));
  EXPECT_TRUE(views[0].wire_saturated);
  for (size_t i = 1; i < views.size(); ++i) EXPECT_FALSE(views[i].wire_saturated) << i;
  auto saturated = measured_links_of(views, {}, [](const EdgeView& v) { return v.wire_saturated ? v.wire_ns : 0.0; });
  auto unsaturated = measured_links_of(views, {}, [](const EdgeView& v) { return v.wire_saturated ? 0.0 : v.wire_ns; });
  std::vector<SaturatedWireJudgement> out(views.size());
  const double tail = 1e-3 / static_cast<double>(views.size());
  judge_bottleneck_links(saturated.begin()->second, unsaturated.begin()->second, views, tail, {}, out);
  for (size_t i = 1; i < out.size(); ++i) EXPECT_FALSE(out[i].judged) << i;
  return out[0];
}

TEST(BottleneckWires, ALinkMovingAChunkFarSlowerThanItsPeersTakeWithLatencyIsSlow) {
  // The 5-node single-channel ring of a 2.07x link (simulated): 78.6 us per step saturated,
  // its peers 43-48 us with their latency.
  const SaturatedWireJudgement j = judge_ring(78.55, {43.37, 43.11, 47.87, 47.76});
  EXPECT_TRUE(j.judged);
  EXPECT_TRUE(j.slow);
  EXPECT_GT(j.margin, 1.0);
  EXPECT_NEAR(j.excess_per_step_ns, 78550 - 45620, 1500);
}

TEST(BottleneckWires, TheNaturallySlowestLinkSaturatesAndIsNotNamed) {
  // Links that differ by 10 %: the slowest, 1.25x its peers' busy time, is the bottleneck of a
  // healthy flow (two and a half deviations: what the slowest of five looks like).
  const SaturatedWireJudgement j = judge_ring(56, {43.4, 45.1, 47.9, 44.8});
  EXPECT_TRUE(j.judged);
  EXPECT_FALSE(j.slow);
  EXPECT_EQ(j.margin, 0.0);
}

TEST(BottleneckWires, PeersThatSpreadMoreThanThePriorAreTheYardstick) {
  // The same bottleneck is named among tight peers and not among peers that differ by 40 %.
  EXPECT_TRUE(judge_ring(100, {48, 50, 52, 50}).slow);
  EXPECT_FALSE(judge_ring(100, {30, 45, 60, 85}).slow);
}

TEST(BottleneckWires, JudgedByTheSaturatedWiresPassWithAnyUnsaturatedPeer) {
  auto judge = [](const std::vector<EdgeSummary>& edges) {
    std::vector<EdgeView> views;
    for (const EdgeSummary& e : edges) views.push_back(view_of(e));
    return judge_saturated_wires(views);
  };
  // One saturated link and three unsaturated ones: the bottleneck is judged (and slow).
  std::vector<SaturatedWireJudgement> j =
      judge({wire(0, 1, 100, true), wire(1, 2, 45, false), wire(2, 3, 46, false), wire(3, 0, 44, false)});
  EXPECT_TRUE(j[0].judged);
  EXPECT_TRUE(j[0].slow);
  for (size_t i = 1; i < j.size(); ++i) EXPECT_FALSE(j[i].judged) << i;
  // The spread between links is the prior, known, however few the peers: two will do.
  j = judge({wire(0, 1, 100, true), wire(1, 2, 45, false), wire(2, 0, 46, false)});
  EXPECT_TRUE(j[0].judged);
  EXPECT_TRUE(j[0].slow);
  // Without an unsaturated link there is nothing to judge a bottleneck against.
  j = judge({wire(0, 1, 100, true), wire(1, 0, 98, true)});
  for (const SaturatedWireJudgement& w : j) EXPECT_FALSE(w.judged);
}

// A tree of two nodes of one GPU under LL (fresh seed 11077): each channel has two links, its
// two directions. A 5.41x link (the job 121 % slower) queued a full buffer of sends and moved a
// chunk every 30 us; the other direction's sends found the wire idle, 12.1 us with latency. One
// link is a reference as a median is, the spread between links being the prior: named. The
// naturally slower direction of a healthy pair, 1.1x, is not; nor, with the latency in its
// peers' busy time, a 3.29x link of a tree+dp pair that moved a chunk in 19 us against 12.4
// (the same seed: the bound is loose where latency is most of a step).
TEST(BottleneckWires, OneUnsaturatedLinkIsAReference) {
  EXPECT_TRUE(judge_ring(30.0, {12.1}).slow);
  EXPECT_FALSE(judge_ring(13.3, {12.1}).slow);
  EXPECT_FALSE(judge_ring(19.0, {12.4, 12.4}).slow);
}

}  // namespace
}  // namespace culprit
