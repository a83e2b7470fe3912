// judge_busy_wires: a timed wire whose busy time and shortest send both stand out from the
// other links of its wire group, judged against the spread between links without itself.
#include <gtest/gtest.h>

#include <vector>

#include "analysis/busy_wire_peers.hpp"

namespace culprit {
namespace {

constexpr uint64_t kComm = 0xB05Full;
constexpr uint64_t kSteps = 100;

// One channel of link src->dst, unsaturated (each send alone on the wire): busy time per step
// and the mean shortest single send (microseconds).
EdgeSummary wire(int32_t src, int32_t dst, int32_t channel, double busy_us, double shortest_us,
                 uint64_t comm = kComm) {
  EdgeSummary e;
  e.key = {comm, src, dst, channel, 0};
  e.phase_ns[kSendWait] = static_cast<uint64_t>(1.5 * busy_us * 1000 * kSteps);
  e.send_steps = kSteps;
  e.send_ops = 1;
  e.send_wire_steps = kSteps;
  e.send_wire_busy_ns = static_cast<uint64_t>(busy_us * 1000 * kSteps);
  e.send_wire_queued_steps = kSteps / 2;
  e.send_wait_min_ops = 1;
  e.send_wait_min_sum_ns = static_cast<uint64_t>(shortest_us * 1000);
  return e;
}

std::vector<BusyWireJudgement> judge(const std::vector<EdgeSummary>& edges, const WireGroups& groups = {},
                                     const LinkPeerConfig& config = {.leave_judged_out = true}) {
  std::vector<EdgeView> views;
  for (const EdgeSummary& e : edges) views.push_back(view_of(e));
  return judge_busy_wires(views, groups, config);
}

// A ring's links, one channel each: link k moves a chunk in busy_us[k] and its shortest send
// takes a tenth longer.
std::vector<EdgeSummary> ring(const std::vector<double>& busy_us) {
  std::vector<EdgeSummary> out;
  for (size_t k = 0; k < busy_us.size(); ++k)
    out.push_back(wire(static_cast<int32_t>(k), static_cast<int32_t>(k + 1), 0, busy_us[k], 1.1 * busy_us[k]));
  return out;
}

// Send ops of one step each (a small message spread over many channels): no busy time after a
// first completion, but the one step found its wire idle, so its SendWait times the wire.
EdgeSummary one_step_ops(int32_t src, int32_t dst, double send_wait_us, uint64_t ops = 8) {
  EdgeSummary e;
  e.key = {kComm, src, dst, 0, 0};
  e.phase_ns[kSendWait] = static_cast<uint64_t>(send_wait_us * 1000 * static_cast<double>(ops));
  e.send_steps = ops;
  e.send_ops = ops;
  e.send_wait_min_ops = ops;
  e.send_wait_min_sum_ns = e.phase_ns[kSendWait];
  e.send_wait_min_max_ns = static_cast<uint64_t>(send_wait_us * 1000);  // every op alike
  return e;
}

TEST(BusyWirePeers, OneStepOpsTimeTheirWireByTheirSendWait) {
  const EdgeView v = view_of(one_step_ops(0, 1, 45));
  EXPECT_DOUBLE_EQ(v.wire_ns, 45000);
  EXPECT_FALSE(v.wire_saturated);
  // Ops of several steps are timed by their busy time only: their shortest send is not it.
  EdgeSummary longer = one_step_ops(0, 1, 45);
  longer.send_steps = 2 * longer.send_ops;
  EXPECT_DOUBLE_EQ(view_of(longer).wire_ns, 0);

  // A tree+dp job of 30 nodes over 8 channels (seed 224072): 4 MB moved one step per op; a
  // 6.66x link took 262 us a step, its peers 41-52 us.
  std::vector<EdgeSummary> edges;
  const std::vector<double> us = {43, 40.3, 41.3, 42.2, 262, 43.2, 47.7, 44.1, 46.5, 51.5, 52.7, 48.8, 50.2};
  for (size_t k = 0; k < us.size(); ++k)
    edges.push_back(one_step_ops(static_cast<int32_t>(k), static_cast<int32_t>(k + 1), us[k]));
  const std::vector<BusyWireJudgement> j = judge(edges);
  for (size_t k = 0; k < j.size(); ++k) EXPECT_EQ(j[k].slow, k == 4) << "link " << k;
}

TEST(BusyWirePeers, ASlowLinkAmongFiveIsSlow) {
  // Four healthy links within 3 % of 30 us; link 2 takes 2x in both times.
  std::vector<BusyWireJudgement> j = judge(ring({30, 30.9, 60, 29.4, 30.3}));
  for (size_t k = 0; k < j.size(); ++k) EXPECT_EQ(j[k].slow, k == 2) << "link " << k;
  EXPECT_GT(j[2].margin, 1.0);
  EXPECT_NEAR(j[2].excess_per_step_ns, 60000 - 30300, 200);  // above the group's median
}

TEST(BusyWirePeers, ALinkIsNotPartOfItsOwnYardstick) {
  // The numbers of a simulated ring of five nodes over eight channels with a 1.83x link
  // (link 2) costing 12 %: the two directions' links move a chunk in 26 and 31 us, the slow
  // one in 46 us and its sends queue (a shortest send ten times the others'; link 3,
  // downstream, waits for credit in some steps).
  const double busy[] = {31.0, 25.6, 45.9, 26.4, 32.9, 26.2, 31.3, 26.0, 31.3, 25.9};
  const double shortest[] = {22.7, 24.4, 237, 42, 23.9, 25.5, 23.0, 26.3, 23.0, 29.6};
  std::vector<EdgeSummary> edges;
  for (int32_t k = 0; k < 10; ++k) edges.push_back(wire(k, (k + 1) % 10, 0, busy[k], shortest[k]));
  std::vector<BusyWireJudgement> apart = judge(edges);
  for (size_t k = 0; k < apart.size(); ++k) EXPECT_EQ(apart[k].slow, k == 2) << "link " << k;
  // Among all ten, itself included, it moves the chi-square median of the spread by a place.
  for (const BusyWireJudgement& w : judge(edges, {}, {.leave_judged_out = false})) EXPECT_FALSE(w.slow);
}

TEST(BusyWirePeers, LinksThatDifferByNatureAreNotSlow) {
  // Eight links that differ by about 10 %, the slowest 1.2x the median: what hardware does.
  std::vector<BusyWireJudgement> j = judge(ring({30, 33, 27.5, 31, 29, 32.5, 28, 36}));
  for (const BusyWireJudgement& w : j) EXPECT_FALSE(w.slow);
}

TEST(BusyWirePeers, BothTheBusyTimeAndTheShortestSendMustStandOut) {
  // Link 2's busy time is twice its peers' but its shortest send is theirs: sends paced one by
  // one carry latency in their busy time, a slow wire lengthens every send.
  std::vector<EdgeSummary> edges = ring({30, 30.9, 30, 29.4, 30.3});
  edges[2] = wire(2, 3, 0, 60, 33);
  for (const BusyWireJudgement& w : judge(edges)) EXPECT_FALSE(w.slow);
  edges[2] = wire(2, 3, 0, 30, 66);  // and the reverse: one long send, a normal busy time
  for (const BusyWireJudgement& w : judge(edges)) EXPECT_FALSE(w.slow);
}

TEST(BusyWirePeers, AQueueThatStandsInSomeOpsOnlyIsNoSlowWire) {
  // Link 2 takes twice its peers' time in both figures, but one of its ops moved every step in
  // a typical send (33 us): a healthy wire that set its flow's pace and queued its sends in the
  // other ops. A slow wire lengthens every send of every op.
  std::vector<EdgeSummary> edges = ring({30, 30.9, 30, 29.4, 30.3});
  edges[2] = wire(2, 3, 0, 60, 66);
  edges[2].send_op_wait_min_ops = 8;
  edges[2].send_op_wait_min_ns = 33'000;
  for (const BusyWireJudgement& w : judge(edges)) EXPECT_FALSE(w.slow);
  edges[2].send_op_wait_min_ns = 70'000;  // its quickest op slow too: a slow wire
  EXPECT_TRUE(judge(edges)[2].slow);
}

TEST(BusyWirePeers, FewerThanThreeLinksAreLeftToTheOtherTests) {
  for (const BusyWireJudgement& w : judge(ring({30, 90}))) EXPECT_FALSE(w.slow);
}

TEST(BusyWirePeers, AllChannelsOfOneLinkAreOneSample) {
  // Three links of four channels: the slow link's four channels do not make a majority of
  // their own, and its channels' spread is its noise.
  std::vector<EdgeSummary> edges;
  const double busy[] = {30, 31, 75};
  for (int32_t k = 0; k < 3; ++k)
    for (int32_t c = 0; c < 4; ++c) {
      const double us = busy[k] * (1 + 0.01 * (c - 1.5));
      edges.push_back(wire(k, k + 1, c, us, 1.1 * us));
    }
  std::vector<BusyWireJudgement> j = judge(edges);
  for (size_t i = 0; i < j.size(); ++i) EXPECT_EQ(j[i].slow, i >= 8) << "view " << i;
}

TEST(BusyWirePeers, ALinkMustBeSlowInBothTimesOnMostOfItsChannels) {
  // The numbers of a tree+dp 4x4x8 under LL (fresh seed 11153): its wire group's healthy links
  // of eight channels, every channel queued (5.4 us busy, 12.1 us shortest). Link 2's first four
  // channels found their wire idle (12.3 us busy, latency included, and 12.0 shortest), its
  // other four queued (5.3 and 37.8): each of its medians stands out, but no channel is slow in
  // both times. It was named a slow link first, ahead of the true one.
  std::vector<EdgeSummary> edges;
  for (int32_t k = 0; k < 16; ++k)
    for (int32_t c = 0; c < 8; ++c) {
      const double jitter = 1 + 0.004 * (c - 3.5) + 0.003 * (k % 5);
      if (k != 2) edges.push_back(wire(k, k + 1, c, 5.4 * jitter, 12.1 * jitter));
      else edges.push_back(c < 4 ? wire(k, k + 1, c, 12.3 * jitter, 12.0 * jitter)
                                 : wire(k, k + 1, c, 5.3 * jitter, 37.8 * jitter));
    }
  for (const BusyWireJudgement& w : judge(edges)) EXPECT_FALSE(w.slow);
  // The same link slow on five channels of eight, both times each (the lower median channel's
  // both times lengthened): slow, however its other three channels stand.
  for (int32_t c = 0; c < 5; ++c) edges[16 + c] = wire(2, 3, c, 26.5, 205);
  std::vector<BusyWireJudgement> j = judge(edges);
  for (size_t i = 0; i < j.size(); ++i) EXPECT_EQ(j[i].slow, i >= 16 && i < 24) << "view " << i;
}

TEST(BusyWirePeers, LinksAreComparedWithinTheirWireGroup) {
  // Two communicators of three links each: one moves chunks in 30 us, the other in 60 us.
  // Apart, nothing is slow; as one wire group, the second's links would be.
  std::vector<EdgeSummary> edges;
  for (int32_t k = 0; k < 3; ++k) edges.push_back(wire(k, k + 1, 0, 30 + k * 0.5, 33 + k * 0.5, 1));
  for (int32_t k = 0; k < 3; ++k) edges.push_back(wire(k, k + 1, 0, 60 + k, 66 + k, 2));
  for (const BusyWireJudgement& w : judge(edges)) EXPECT_FALSE(w.slow);
  edges.push_back(wire(3, 4, 0, 120, 132, 2));  // a fourth link in the second, twice its peers
  std::vector<BusyWireJudgement> j = judge(edges);
  for (size_t i = 0; i < j.size(); ++i) EXPECT_EQ(j[i].slow, i == 6) << "view " << i;
}

}  // namespace
}  // namespace culprit
