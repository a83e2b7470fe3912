// judge_wire: a slow wire lengthens both its busy time and its shortest send; without wire times, SendWait beyond a saturated link's.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "analysis/slow_wire.hpp"

namespace culprit {
namespace {

constexpr uint64_t kComm = 0xABCDull;
constexpr uint64_t kSteps = 16;

// A connection's SendWait per step, and where given its wire busy time per step and its
// shortest send (all microseconds).
EdgeSummary sender(int32_t src, double send_wait_us, double busy_us = 0, double shortest_us = 0) {
  EdgeSummary e;
  e.key.comm_hash = kComm;
  e.key.src_rank = src;
  e.key.dst_rank = src + 1;
  e.key.channel = 0;
  e.phase_ns[kSendWait] = static_cast<uint64_t>(send_wait_us * 1000 * kSteps);
  e.phase_ns[kRecvWait] = static_cast<uint64_t>(send_wait_us * 1000 * kSteps);
  e.send_steps = e.recv_steps = kSteps;
  e.send_ops = e.recv_ops = 1;
  if (busy_us > 0) {
    e.send_wire_steps = kSteps;
    e.send_wire_busy_ns = static_cast<uint64_t>(busy_us * 1000 * kSteps);
  }
  if (shortest_us > 0) {
    e.send_wait_min_ops = 1;
    e.send_wait_min_sum_ns = static_cast<uint64_t>(shortest_us * 1000);
  }
  return e;
}

// Judges every connection against the baseline of all of them.
std::vector<WireJudgement> judge_all(const std::vector<EdgeSummary>& edges, const AttributionConfig& cfg = {}) {
  std::vector<EdgeView> views;
  for (const EdgeSummary& e : edges) views.push_back(view_of(e));
  std::map<uint64_t, CommBaseline> base = baselines_of(views);
  std::vector<WireJudgement> out;
  for (const EdgeView& v : views) out.push_back(judge_wire(v, base.at(kComm), cfg));
  return out;
}

TEST(SlowWire, ASlowWireLengthensBothBusyTimeAndShortestSend) {
  // Healthy wires: 40 us busy per step, 45 us shortest send. Connection 1: 100 and 110.
  std::vector<EdgeSummary> edges = {sender(0, 50, 40, 45), sender(1, 80, 100, 110), sender(2, 50, 40, 45),
                                    sender(3, 50, 40, 45)};
  std::vector<WireJudgement> j = judge_all(edges);
  EXPECT_TRUE(j[1].slow);
  // The wire's own excess (100 - 40 us) is larger than SendWait's (80 - 50 us): it is reported.
  EXPECT_DOUBLE_EQ(j[1].excess_per_step_ns, 60000);
  // Its margin is the tightest guard's: four wires measure no spread, so link_ratio (1.5x the
  // quickest) asks for 20 us more busy time (it has 60: 3x) and 22.5 us more shortest send
  // (it has 65: 2.89x); the 2 us floor is far below both.
  EXPECT_NEAR(j[1].margin, 65.0 / 22.5, 1e-9);
  for (size_t i : {0u, 2u, 3u}) {
    EXPECT_FALSE(j[i].slow);
    EXPECT_DOUBLE_EQ(j[i].excess_per_step_ns, 0);
    EXPECT_DOUBLE_EQ(j[i].margin, 0);
  }
}

TEST(SlowWire, OneOpWhoseStepsAllQueuedDoesNotMakeAWireSlow) {
  // Eight send ops each. Healthy wires: 40 us busy per step, every op's shortest send 45 us.
  // Connection 1 is paced by credit that came in bursts: busy 70 us a step, and one op's
  // recorded steps all queued (its shortest 300 us), the other seven 45 us.
  std::vector<EdgeSummary> edges = {sender(0, 50, 40, 45), sender(1, 80, 70, 45), sender(2, 50, 40, 45),
                                    sender(3, 50, 40, 45)};
  for (EdgeSummary& e : edges) {
    e.send_ops = e.send_wait_min_ops = 8;
    e.send_wait_min_max_ns = e.send_wait_min_sum_ns;
    e.send_wait_min_sum_ns *= 8;
  }
  edges[1].send_wait_min_sum_ns = 7 * 45000 + 300000;
  edges[1].send_wait_min_max_ns = 300000;
  EXPECT_DOUBLE_EQ(view_of(edges[1]).send_wait_min_ns, 45000);
  EXPECT_FALSE(judge_all(edges)[1].slow);
  // With the mean of all eight ops (76.9 us, 1.7x the others) it would have been judged slow.
  edges[1].send_wait_min_max_ns = 0;
  edges[1].send_wait_min_ops = 2;
  edges[1].send_wait_min_sum_ns = 2 * (7 * 45000 + 300000) / 8;
  EXPECT_TRUE(judge_all(edges)[1].slow);
  // A slow wire slows every op's quickest step: still slow without its worst op.
  edges[1] = sender(1, 80, 100, 110);
  edges[1].send_ops = edges[1].send_wait_min_ops = 8;
  edges[1].send_wait_min_sum_ns = 8 * 110000;
  edges[1].send_wait_min_max_ns = 120000;
  EXPECT_TRUE(judge_all(edges)[1].slow);
}

TEST(SlowWire, AWireQuickInOneWholeOperationIsNotSlow) {
  // Eight send ops each, every op's shortest send 45 us on the healthy wires and their quickest
  // op 48 us a step. Connection 1 (busy 70 us a step: half its steps idle, latency included)
  // queued every step of four ops behind bursts of credit (shortest 200 us there) and sent the
  // other four at 45: its ops' shortest steps, without the worst, average 112 us, 2.5x the
  // others'. Its quickest op took 48 us a step like theirs: its wire is not slow.
  std::vector<EdgeSummary> edges = {sender(0, 50, 40, 45), sender(1, 80, 70, 45), sender(2, 50, 40, 45),
                                    sender(3, 50, 40, 45)};
  for (EdgeSummary& e : edges) {
    e.send_ops = e.send_wait_min_ops = e.send_op_wait_min_ops = 8;
    e.send_wait_min_max_ns = e.send_wait_min_sum_ns;
    e.send_wait_min_sum_ns *= 8;
    e.send_op_wait_min_ns = 48000;
  }
  edges[1].send_wait_min_sum_ns = 4 * 45000 + 4 * 200000;
  edges[1].send_wait_min_max_ns = 200000;
  EXPECT_DOUBLE_EQ(view_of(edges[1]).send_wait_min_ns, 48000);
  EXPECT_FALSE(judge_all(edges)[1].slow);
  // Without its quickest op's time (probing-style sums carry none) it would have been judged slow.
  edges[1].send_op_wait_min_ops = 0;
  edges[1].send_op_wait_min_ns = 0;
  EXPECT_DOUBLE_EQ(view_of(edges[1]).send_wait_min_ns, 4 * 45000.0 / 7 + 3 * 200000.0 / 7);
  EXPECT_TRUE(judge_all(edges)[1].slow);
  // A slow wire slows every op, its quickest one too: still slow.
  edges[1] = sender(1, 80, 100, 110);
  edges[1].send_ops = edges[1].send_wait_min_ops = edges[1].send_op_wait_min_ops = 8;
  edges[1].send_wait_min_sum_ns = 8 * 110000;
  edges[1].send_wait_min_max_ns = 110000;
  edges[1].send_op_wait_min_ns = 115000;
  EXPECT_DOUBLE_EQ(view_of(edges[1]).send_wait_min_ns, 110000);
  EXPECT_TRUE(judge_all(edges)[1].slow);
}

TEST(SlowWire, QueuedOrCreditPacedSendsOnAHealthyWireAreNotSlow) {
  // Queued: every send waited behind others (shortest 300 us) but the wire moved one chunk
  // per 40 us. Credit-paced: busy time carries latency (70 us > 1.5 x 40), shortest send healthy.
  std::vector<EdgeSummary> edges = {sender(0, 50, 40, 45), sender(1, 330, 40, 300), sender(2, 60, 70, 45),
                                    sender(3, 50, 40, 45)};
  std::vector<WireJudgement> j = judge_all(edges);
  EXPECT_FALSE(j[1].slow);
  EXPECT_FALSE(j[2].slow);
  EXPECT_DOUBLE_EQ(j[1].excess_per_step_ns, 280000);  // SendWait's excess, but no slow wire
  // Both long at once: slow.
  edges[2] = sender(2, 330, 70, 300);
  EXPECT_TRUE(judge_all(edges)[2].slow);
}

TEST(SlowWire, SumsOnlyASaturatedLinkIsHealthyButEightQueuedSendsBeyondTheTypicalAreSlow) {
  // No wire times: SendWait per step 50 us typical. A saturated healthy link queues up to
  // nccl_steps (8) sends: 330 us is 41 us per send, under 1.5 x 50. 700 us is 87.5 us per send.
  std::vector<EdgeSummary> edges = {sender(0, 50), sender(1, 330), sender(2, 700), sender(3, 50)};
  std::vector<WireJudgement> j = judge_all(edges);
  EXPECT_FALSE(j[0].slow);
  EXPECT_FALSE(j[1].slow);
  EXPECT_DOUBLE_EQ(j[1].excess_per_step_ns, 280000);
  EXPECT_TRUE(j[2].slow);
  EXPECT_DOUBLE_EQ(j[2].excess_per_step_ns, 650000);
  // A looser link_ratio (3 x 50 = 150 us per send) lets 87.5 us pass.
  AttributionConfig loose;
  loose.link_ratio = 3.0;
  EXPECT_FALSE(judge_all(edges, loose)[2].slow);
}

TEST(SlowWire, OneTimedWireIsNoBaselineAndAReceiveOnlyHalfIsNeverSlow) {
  // Only connection 1 has wire times: one is no baseline (it would be its own reference and
  // never slow), so the sums decide: 700 us is 87.5 us per send, above 1.5 x 50.
  std::vector<EdgeSummary> edges = {sender(0, 50), sender(1, 700, 150, 155), sender(2, 50), sender(3, 50)};
  EXPECT_TRUE(judge_all(edges)[1].slow);
  // Sums only, and the view lacks its send half (only the receiver recorded it): however
  // long its SendWait, there is no send to judge.
  std::vector<EdgeSummary> sums = {sender(0, 50), sender(1, 700), sender(2, 50), sender(3, 50)};
  std::vector<EdgeView> views;
  for (const EdgeSummary& e : sums) views.push_back(view_of(e));
  CommBaseline base = baselines_of(views).at(kComm);
  AttributionConfig cfg;
  EXPECT_TRUE(judge_wire(views[1], base, cfg).slow);
  views[1].has_send = false;
  EXPECT_FALSE(judge_wire(views[1], base, cfg).slow);
}

TEST(SlowWire, WithARobustSampleTheMedianIsTheReferenceAndTheExcessMayBeNegative) {
  // Six connections: median 50 us. The quickest (30 us) lies below it.
  std::vector<EdgeSummary> edges = {sender(0, 30),  sender(1, 50), sender(2, 50),
                                    sender(3, 50), sender(4, 50), sender(5, 800)};
  std::vector<WireJudgement> j = judge_all(edges);
  EXPECT_DOUBLE_EQ(j[0].excess_per_step_ns, -20000);
  EXPECT_FALSE(j[0].slow);
  EXPECT_TRUE(j[5].slow);
  EXPECT_DOUBLE_EQ(j[5].excess_per_step_ns, 750000);
}

TEST(SlowWire, WithTheirSpreadMeasuredAWireAQuarterSlowerIsSlowAndWithoutItHalf) {
  // Eight wires of 40 us busy per step and 45 us shortest send (a 1 % ripple), one 1.3x slower:
  // the eight measure their spread, so a wire beyond it and a quarter of a transfer is slow.
  auto job = [](double factor, size_t n) {
    std::vector<EdgeSummary> edges;
    for (size_t i = 0; i < n; ++i) {
      const double ripple = 1 + 0.01 * static_cast<double>(i % 3), f = i == 1 ? factor : 1.0;
      edges.push_back(sender(static_cast<int32_t>(i), 50 * ripple * f, 40 * ripple * f, 45 * ripple * f));
    }
    return judge_all(edges);
  };
  std::vector<WireJudgement> j = job(1.3, 8);
  for (size_t i = 0; i < j.size(); ++i) EXPECT_EQ(j[i].slow, i == 1) << "connection " << i;
  // 1.2x: under a quarter of a transfer, not slow.
  for (const WireJudgement& w : job(1.2, 8)) EXPECT_FALSE(w.slow);
  // Four wires cannot measure their spread: link_ratio (1.5x the quickest) guards.
  for (const WireJudgement& w : job(1.3, 4)) EXPECT_FALSE(w.slow);
  j = job(1.6, 4);
  for (size_t i = 0; i < j.size(); ++i) EXPECT_EQ(j[i].slow, i == 1) << "connection " << i;
}

// A wire group (edge_stats.hpp) gives pairs of ranks a baseline: alone, a communicator of two
// links has one other wire to compare with.
TEST(SlowWire, WireBaselinesSpanTheWireGroup) {
  std::vector<EdgeSummary> edges;
  for (uint64_t comm = 1; comm <= 3; ++comm)
    for (int32_t src = 0; src < 2; ++src) {
      // Busy 40 us, shortest send 45 us; communicator 1's first link: 100 and 110.
      EdgeSummary e = comm == 1 && src == 0 ? sender(src, 80, 100, 110) : sender(src, 50, 40, 45);
      e.key.comm_hash = comm;
      e.key.dst_rank = 1 - src;
      edges.push_back(e);
    }
  std::vector<EdgeView> views;
  for (const EdgeSummary& e : edges) views.push_back(view_of(e));
  const std::map<uint64_t, CommBaseline> alone = baselines_of(views);
  EXPECT_EQ(alone.at(1).wire.n, 2u);
  const std::map<uint64_t, CommBaseline> grouped = baselines_of(views, {{1, 1}, {2, 1}, {3, 1}});
  for (uint64_t comm = 1; comm <= 3; ++comm) EXPECT_EQ(grouped.at(comm).wire.n, 6u) << comm;
  EXPECT_EQ(grouped.at(1).phase[kSendWait].n, 2u);  // the phases stay per communicator
  AttributionConfig cfg;
  EXPECT_TRUE(judge_wire(views[0], grouped.at(1), cfg).slow);
  for (size_t i = 1; i < views.size(); ++i)
    EXPECT_FALSE(judge_wire(views[i], grouped.at(views[i].edge->key.comm_hash), cfg).slow) << i;
}

}  // namespace
}  // namespace culprit
