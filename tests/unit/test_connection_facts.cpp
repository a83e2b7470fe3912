// judge_connections: per-connection anomalies and verdicts on small rings, verdict_of's order,
// a slow link told by all of its channels, and the missing-half notes.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "analysis/connection_facts.hpp"

namespace culprit {
namespace {

constexpr uint64_t kComm = 0xF00DF00DF00DF00Dull;
constexpr uint64_t kSteps = 16;

// A ring of `n` GPUs, one per node, rank r sends to r + 1; every hop starts with `phases`
// (microseconds per step: SendGpuWait, SendPeerWait, SendWait, RecvWait, RecvFlushWait, RecvGpuWait).
Observations ring(int n, const std::array<double, kPhaseCount>& phases, bool collective = true) {
  Observations obs;
  for (int r = 0; r < n; ++r) {
    obs.processes.push_back({"node" + std::to_string(r), 1000 + r, r, ""});
    GlobalCommRank c;
    c.comm_hash = kComm;
    c.rank = r;
    c.process = static_cast<uint32_t>(r);
    c.has_collective = collective;
    obs.comm_ranks.push_back(c);
    EdgeSummary e;
    e.key.comm_hash = kComm;
    e.key.src_rank = r;
    e.key.dst_rank = (r + 1) % n;
    e.key.channel = 0;
    for (int p = 0; p < kPhaseCount; ++p) e.phase_ns[p] = static_cast<uint64_t>(phases[p] * 1000 * kSteps);
    e.send_steps = e.recv_steps = kSteps;
    e.send_ops = e.recv_ops = 1;
    obs.edges.push_back(e);
  }
  return obs;
}

void set_phase(Observations& obs, size_t hop, int phase, double us) {
  obs.edges[hop].phase_ns[phase] = static_cast<uint64_t>(us * 1000 * kSteps);
}

TEST(ConnectionFacts, TheMostSpecificCauseNamesTheConnection) {
  EdgeFacts f;
  EXPECT_EQ(verdict_of(f), EdgeVerdict::kNormal);
  f.late_data_ns = 5000;
  EXPECT_EQ(verdict_of(f), EdgeVerdict::kLateData);
  f.no_credit = true;
  EXPECT_EQ(verdict_of(f), EdgeVerdict::kNoCredit);
  f.slow_flush = true;  // a slow flush also withholds credit: the flush is the cause
  EXPECT_EQ(verdict_of(f), EdgeVerdict::kSlowFlush);
  f.slow_link = true;
  EXPECT_EQ(verdict_of(f), EdgeVerdict::kSlowLink);
}

TEST(ConnectionFacts, ASlowHopIsASlowLinkAndItsEndsAreItsProcesses) {
  // Hop 1 (rank 1 -> 2): its GPU is ready, SendWait is 2600 us against 50 us elsewhere.
  Observations obs = ring(4, {2600, 0.2, 50, 2650, 1.5, 2});
  set_phase(obs, 1, kSendGpuWait, 2);
  set_phase(obs, 1, kSendWait, 2600);
  ProcessContext ctx(obs);
  ConnectionFacts facts = judge_connections(obs, ctx, AttributionConfig{});
  ASSERT_EQ(facts.edges.size(), 4u);
  const EdgeFacts& slow = facts.edges[1];
  EXPECT_EQ(slow.src, 1u);
  EXPECT_EQ(slow.dst, 2u);
  EXPECT_TRUE(slow.slow_link);
  EXPECT_EQ(slow.verdict, EdgeVerdict::kSlowLink);
  EXPECT_DOUBLE_EQ(slow.link_excess_ns, 2550000);
  EXPECT_FALSE(slow.p2p);
  for (size_t i : {0u, 2u, 3u}) {
    EXPECT_FALSE(facts.edges[i].slow_link);
    EXPECT_EQ(facts.edges[i].verdict, EdgeVerdict::kNormal);  // everyone waits alike: no late data
  }
  EXPECT_EQ(facts.baselines.at(kComm).phase[kSendWait].n, 4u);
  EXPECT_TRUE(facts.notes.empty());
  EXPECT_EQ(ctx.placeholders(), 0u);
}

// A ring of four GPUs, one per node, on eight channels: each send op moves one step, so each
// wire's SendWait is its own time for a chunk (`us_of(link, channel)`).
Observations timed_ring(double (*us_of)(int, int)) {
  Observations obs = ring(4, {1, 0.2, 25, 26, 0, 1});
  std::vector<EdgeSummary> edges;
  for (const EdgeSummary& hop : obs.edges)
    for (int32_t c = 0; c < 8; ++c) {
      EdgeSummary e = hop;
      e.key.channel = c;
      const auto ns = static_cast<uint64_t>(us_of(hop.key.src_rank, c) * 1000);
      e.phase_ns[kSendWait] = ns * kSteps;
      e.send_ops = kSteps;
      e.send_wait_min_ops = kSteps;
      e.send_wait_min_sum_ns = ns * kSteps;
      e.send_wait_min_max_ns = ns;  // every op alike
      edges.push_back(e);
    }
  obs.edges = edges;
  return obs;
}

// A link's channels share its NICs and route: a slow link slows them all. One channel of eight
// at 33 us a send, its link's others and every other link's at 25 (a healthy tree+dp 5x8x8 under
// LL128, fresh seed 11081, named such a channel a slow link at 0.92): the link-spread test
// judges the link as a whole, within its peers, and the guard, which takes each channel alone,
// names a channel only where most of its link's channels clear it too. Where the link's channels
// all move a chunk in 33 us, the guard names the link.
TEST(ConnectionFacts, OneChannelOutOfLineWithItsLinkIsNoSlowLink) {
  Observations one = timed_ring([](int link, int channel) { return link == 2 && channel == 4 ? 33.0 : 25.0; });
  ProcessContext one_ctx(one);
  const ConnectionFacts jitter = judge_connections(one, one_ctx, AttributionConfig{});
  for (const EdgeFacts& f : jitter.edges) EXPECT_FALSE(f.slow_link);
  Observations all = timed_ring([](int link, int) { return link == 2 ? 33.0 : 25.0; });
  ProcessContext all_ctx(all);
  const ConnectionFacts slow = judge_connections(all, all_ctx, AttributionConfig{});
  for (size_t i = 0; i < slow.edges.size(); ++i) EXPECT_EQ(slow.edges[i].slow_link, i / 8 == 2) << i;
  // Most is more than half: four slow channels of eight name nothing, five name the link.
  Observations half = timed_ring([](int link, int channel) { return link == 2 && channel < 4 ? 33.0 : 25.0; });
  ProcessContext half_ctx(half);
  for (const EdgeFacts& f : judge_connections(half, half_ctx, AttributionConfig{}).edges) EXPECT_FALSE(f.slow_link);
  Observations most = timed_ring([](int link, int channel) { return link == 2 && channel < 5 ? 33.0 : 25.0; });
  ProcessContext most_ctx(most);
  const ConnectionFacts five = judge_connections(most, most_ctx, AttributionConfig{});
  for (size_t i = 0; i < five.edges.size(); ++i) EXPECT_EQ(five.edges[i].slow_link, i / 8 == 2 && i % 8 < 5) << i;
}

TEST(ConnectionFacts, LateDataWithheldCreditAndSlowFlushAreEachTheirOwnVerdict) {
  // Six hops, 20 us on the wire per step (the step scale).
  Observations obs = ring(6, {5, 0.2, 20, 10, 1, 1});
  set_phase(obs, 0, kRecvWait, 110);     // rank 1's data came 100 us late per step
  set_phase(obs, 2, kSendPeerWait, 60);  // rank 3 gave credit 60 us late: above a whole step
  set_phase(obs, 4, kRecvFlushWait, 31); // rank 5 flushed 30 us longer: above a quarter step
  ProcessContext ctx(obs);
  ConnectionFacts facts = judge_connections(obs, ctx, AttributionConfig{});
  EXPECT_DOUBLE_EQ(facts.edges[0].late_data_ns, 100000);
  EXPECT_EQ(facts.edges[0].verdict, EdgeVerdict::kLateData);
  EXPECT_TRUE(facts.edges[2].no_credit);
  EXPECT_NEAR(facts.edges[2].anomaly[kSendPeerWait], 59800, 1e-6);
  EXPECT_EQ(facts.edges[2].verdict, EdgeVerdict::kNoCredit);
  EXPECT_TRUE(facts.edges[4].slow_flush);
  EXPECT_DOUBLE_EQ(facts.edges[4].anomaly[kRecvFlushWait], 30000);
  EXPECT_EQ(facts.edges[4].verdict, EdgeVerdict::kSlowFlush);
  for (size_t i : {1u, 3u, 5u}) EXPECT_EQ(facts.edges[i].verdict, EdgeVerdict::kNormal);
  for (const EdgeFacts& f : facts.edges) EXPECT_FALSE(f.slow_link);
}

TEST(ConnectionFacts, SendRecvOnlyCommunicatorsArePointToPoint) {
  Observations obs = ring(3, {5, 0.2, 20, 10, 1, 1}, /*collective=*/false);
  ProcessContext ctx(obs);
  ConnectionFacts facts = judge_connections(obs, ctx, AttributionConfig{});
  for (const EdgeFacts& f : facts.edges) EXPECT_TRUE(f.p2p);
}

TEST(ConnectionFacts, OneEndedConnectionsAreNotedByWhetherTheOtherEndHasData) {
  Observations obs = ring(4, {5, 0.2, 20, 10, 1, 1});
  obs.edges[0].recv_steps = 0;  // rank 1 is in the input but recorded no receive of hop 0
  // Rank 3 has no data at all (its node sent nothing): hop 2 is seen by its sender only.
  obs.processes.pop_back();
  obs.comm_ranks.pop_back();
  obs.edges[2].recv_steps = 0;
  obs.edges.pop_back();  // hop 3 (rank 3 -> 0) was recorded by rank 3: gone with it
  ProcessContext ctx(obs);
  ConnectionFacts facts = judge_connections(obs, ctx, AttributionConfig{});
  EXPECT_EQ(ctx.placeholders(), 1u);
  EXPECT_EQ(facts.edges[2].dst, 3u);  // a placeholder after the three processes with data
  EXPECT_EQ(ctx.processes()[3].label, "global rank 3, no records");  // the world's ranks are global
  ASSERT_EQ(facts.notes.size(), 2u);
  EXPECT_EQ(facts.notes[0].rfind("1 connection(s) recorded by one end only: the other end is in the input", 0), 0u);
  EXPECT_EQ(facts.notes[1].rfind("1 connection(s) seen from one end only: the other end has no data at all", 0), 0u);
  EXPECT_DOUBLE_EQ(facts.edges[0].late_data_ns, 0);  // no receive half: nothing waited for data
}

}  // namespace
}  // namespace culprit
