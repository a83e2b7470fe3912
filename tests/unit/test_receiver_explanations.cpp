// explain_receivers: withheld credit passed on as backpressure or node_interior, else the receiver's own flush /
// consumer evidence, or producer evidence where it came far later than its peers.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "analysis/receiver_explanations.hpp"
#include "pass_fixtures.hpp"

namespace culprit {
namespace {

constexpr uint64_t kComm = 0x7777ull;
constexpr uint32_t kSteps = 10;

// Three nodes of two GPUs (nodeA: 0 1, nodeB: 2 3, nodeC: 4 5). Connection 0 (1 -> 2) enters
// nodeB; connection 1 (3 -> 4) is nodeB's exit on the same lane, healthy unless a test says.
// The last arrivals as attribute() judges them: only where some GPU's own work is unmeasured.
ArrivalJudgement arrivals_of(const Observations& obs, const std::vector<EdgeFacts>& facts, const OwnDelay& own,
                             const LazyPeerRoles& roles) {
  return own.all_work_measured() ? ArrivalJudgement{} : judge_arrivals(member_waits(obs, facts, roles.get()));
}

struct Job {
  Observations obs;
  std::vector<EdgeFacts> facts;
  OwnDelay own{std::vector<double>(6, 0.0), std::vector<double>(6, 0.0), std::vector<bool>(6, false), false, {}};
  std::vector<Evidence> evidence = std::vector<Evidence>(6);
  std::vector<WaitEdge> holds;
  std::vector<std::string> notes;

  Job() {
    test::add_collective_processes(obs, kComm, {"nodeA", "nodeA", "nodeB", "nodeB", "nodeC", "nodeC"});
    add(1, 2);
    add(3, 4);
  }
  void add(uint32_t src, uint32_t dst) {
    EdgeFacts& f = test::add_connection(obs, facts, kComm, src, dst, 0, kSteps);
    f.view.send_cycle_ns = 100000;
    f.view.step_ns[kSendGpuWait] = 50000;  // its GPU busy half of each step: not ahead of the wire
  }
  EdgeFacts& into_b() { return facts[0]; }
  EdgeFacts& exit_of_b() { return facts[1]; }
  // Receiver 2 gave credit 1 us per step late: 10 us over the window.
  void withhold_credit() {
    into_b().no_credit = true;
    into_b().anomaly[kSendPeerWait] = 1000;
  }
  void run() {
    ProcessContext ctx(obs);
    Lanes lanes(obs, facts, ctx);
    const LazyPeerRoles roles(ctx, obs);
    const ArrivalJudgement arrivals = arrivals_of(obs, facts, own, roles);
    explain_receivers({obs, facts, ctx, lanes, own, roles, arrivals}, AttributionConfig{}, evidence, holds, notes);
  }
};

void expect_hold(const WaitEdge& h, uint32_t from, uint32_t to, double weight, const std::string& why) {
  EXPECT_EQ(h.from, from);
  EXPECT_EQ(h.to, to);
  EXPECT_DOUBLE_EQ(h.weight_ns, weight);
  EXPECT_EQ(h.why, why);
}

TEST(ReceiverExplanations, ALatePostWithoutGpuClocksIsAWaitOnTheReceiverButNotItsOwnTime) {
  // Receiver 2 has no kernel clocks and nothing of its own explains its late credit. Its
  // sender waits on it; whether it was slow or the slowest of healthy GPUs, its place's two
  // receivers cannot tell (late_posters.hpp), so it is no root by that alone.
  Job job;
  job.withhold_credit();
  job.run();
  ASSERT_EQ(job.holds.size(), 1u);
  expect_hold(job.holds[0], 1, 2, 10000, "no_credit");
  for (uint32_t p = 0; p < 6; ++p) EXPECT_FALSE(job.evidence[p].any());
}

TEST(ReceiverExplanations, AReceiverThatRecordedNothingIsNamedByTheCreditItWithheld) {
  // Receiver 2's node sent no data: the credit its sender waited for is all that is known of
  // it. It is named, its class one of two (late, or slow to consume).
  Job job;
  job.withhold_credit();
  job.into_b().view.has_recv = false;
  job.run();
  ASSERT_EQ(job.holds.size(), 1u);
  EXPECT_EQ(job.evidence[2].culprit_class, CulpritClass::kGpuProducer);
  EXPECT_DOUBLE_EQ(job.evidence[2].ns, 10000);
  EXPECT_DOUBLE_EQ(job.evidence[2].identified_share, 0.5);
}

// What explain_receivers made of a job.
struct Explained {
  std::vector<Evidence> evidence;
  std::vector<WaitEdge> holds;
  std::vector<std::string> notes;
};

// explain_receivers over a job of `n` GPUs, their own work measured by kernel clocks (and in
// order) where `clocked`.
Explained explain_job(const Observations& obs, const std::vector<EdgeFacts>& facts, uint32_t n, bool clocked = false) {
  OwnDelay own{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0), std::vector<bool>(n, clocked), false, {}};
  Explained out{std::vector<Evidence>(n), {}, {}};
  ProcessContext ctx(obs);
  Lanes lanes(obs, facts, ctx);
  const LazyPeerRoles roles(ctx, obs);
  const ArrivalJudgement arrivals = arrivals_of(obs, facts, own, roles);
  explain_receivers({obs, facts, ctx, lanes, own, roles, arrivals}, AttributionConfig{}, out.evidence, out.holds,
                    out.notes);
  return out;
}

// The evidence of a job whose own work no kernel clock measured.
std::vector<Evidence> explain_unclocked(const Observations& obs, const std::vector<EdgeFacts>& facts, uint32_t n) {
  return explain_job(obs, facts, n).evidence;
}

// Connection `into`: its receiver waited `recv_wait_us` per step for data and kept its sender
// waiting `credit_wait_us` for credit, `excess_us` beyond its peers (flagged, margin 50).
void withheld_credit(EdgeFacts& into, double recv_wait_us, double credit_wait_us, double excess_us) {
  into.view.step_ns[kRecvWait] = recv_wait_us * 1000;
  into.view.step_ns[kSendPeerWait] = credit_wait_us * 1000;
  into.no_credit = true;
  into.anomaly[kSendPeerWait] = excess_us * 1000;
  into.margin[kSendPeerWait] = 50;
}

// Eight GPUs, one per node, in a ring (r -> r + 1), none with kernel clocks. The receivers
// waited 400-480 us per step for their data; receiver 6 kept its sender waiting 300 us per
// step for credit and found its data there: it withheld credit far beyond all the others.
// Where `longest_ms` is given, GPU r waited that long per op (one op per connection) on its
// send and GPU r + 1 on its receive from r.
void ring_withholding_at_6(Observations& obs, std::vector<EdgeFacts>& facts, const double* longest_ms = nullptr) {
  test::add_collective_processes(obs, kComm, {"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"});
  const double waited_us[8] = {450, 430, 400, 470, 480, 440, 0, 420};
  for (uint32_t r = 0; r < 8; ++r) {
    EdgeFacts& f = test::add_connection(obs, facts, kComm, r, (r + 1) % 8, 0, kSteps);
    f.view.step_ns[kRecvWait] = waited_us[(r + 1) % 8] * 1000;
    if (!longest_ms) continue;
    EdgeSummary& e = obs.edges.back();
    e.send_ops = e.recv_ops = 1;
    e.phase_ns[kSendGpuWait] = static_cast<uint64_t>(longest_ms[r] * 1e6);
    e.phase_ns[kRecvWait] = static_cast<uint64_t>(longest_ms[(r + 1) % 8] * 1e6);
  }
  withheld_credit(facts[5], 5, 300, 300);
}

TEST(ReceiverExplanations, ALatePostFarBeyondItsPeersWithoutGpuClocksIsTheReceiversOwnDelay) {
  // Receiver 6 came far later than all the others (ring_withholding_at_6).
  Observations obs;
  std::vector<EdgeFacts> facts;
  ring_withholding_at_6(obs, facts);
  const std::vector<Evidence> evidence = explain_unclocked(obs, facts, 8);
  EXPECT_EQ(evidence[6].culprit_class, CulpritClass::kGpuProducer);
  EXPECT_DOUBLE_EQ(evidence[6].ns, 300000.0 * kSteps);
  EXPECT_GT(evidence[6].margin, 1);
  EXPECT_LT(evidence[6].margin, 50);  // the late-poster test's margin, not the credit's alone
  for (uint32_t p = 0; p < 8; ++p) {
    if (p != 6) {
      EXPECT_FALSE(evidence[p].any()) << "process " << p;
    }
  }
  // No RecvGpuWait recorded (probing's exports): a slow consumer would hold its buffers alike,
  // so the class is one of two.
  EXPECT_DOUBLE_EQ(evidence[6].identified_share, 0.5);
  // Where the communicator records consumption, a late post is not a slow consumer's.
  obs.edges[0].phase_ns[kRecvGpuWait] = 2000 * kSteps;
  EXPECT_DOUBLE_EQ(explain_unclocked(obs, facts, 8)[6].identified_share, 1.0);
}

TEST(ReceiverExplanations, CreditWithheldFarBeyondItsPeersByAGpuWhoseWorkIsInOrderNamesNobody) {
  // The same ring with every GPU's own work timed (nccl.coll_perf beside probing's proxy ops)
  // and in order, and no RecvGpuWait recorded. A slow consumer would look so, but so does the
  // slowest healthy GPU where hosts run ahead: its proxy posted its buffers early and it came
  // late to hold them (docs/accuracy.md, "Measured and not kept: ... with nccl.coll_perf").
  // Its sender's wait on it is no hold either: it was elsewhere in its program.
  Observations obs;
  std::vector<EdgeFacts> facts;
  ring_withholding_at_6(obs, facts);
  const Explained clocked = explain_job(obs, facts, 8, true);
  for (uint32_t p = 0; p < 8; ++p) EXPECT_FALSE(clocked.evidence[p].any()) << "process " << p;
  EXPECT_TRUE(clocked.holds.empty());
  EXPECT_TRUE(clocked.notes.empty());
  // Its own work unmeasured, the late-poster test names it (one of two classes).
  EXPECT_TRUE(explain_job(obs, facts, 8).evidence[6].any());
}

TEST(ReceiverExplanations, ALatePostToACollectiveUnderTheCreditFloorIsNoEvidence) {
  // As above, but the 300 us per step that receiver 6 withheld stayed under the credit floor:
  // its connection is not flagged. In a collective a GPU comes late behind whatever made the
  // GPUs before it late (a slow GPU upstream of a tree): the floor stands.
  Observations obs;
  std::vector<EdgeFacts> facts;
  ring_withholding_at_6(obs, facts);
  facts[5].no_credit = false;
  facts[5].anomaly[kSendPeerWait] = 0;
  facts[5].margin[kSendPeerWait] = 0;
  for (const Evidence& e : explain_unclocked(obs, facts, 8)) EXPECT_FALSE(e.any());
}

// A ring r -> r + 1 of eight GPUs in communicator `comm`, one op per connection, GPU r
// waiting waited_ms[r] at most per op: on its send (SendGpuWait) and on its receive (RecvWait).
void ring_of_waits(Observations& obs, std::vector<EdgeFacts>& facts, uint64_t comm, const double (&waited_ms)[8]) {
  for (uint32_t r = 0; r < 8; ++r) {
    test::add_connection(obs, facts, comm, r, (r + 1) % 8, 0, kSteps);
    EdgeSummary& e = obs.edges.back();
    e.send_ops = e.recv_ops = 1;
    e.phase_ns[kSendGpuWait] = static_cast<uint64_t>(waited_ms[r] * 1e6);
    e.phase_ns[kRecvWait] = static_cast<uint64_t>(waited_ms[(r + 1) % 8] * 1e6);
  }
}

TEST(ReceiverExplanations, ALatePostToACollectiveOnlyBecauseTheOneBeforeEndedLateIsNotItsOwnDelay) {
  // Receiver 6 came far later than the others to the collectives of kComm (as above). The
  // same GPUs also run a collective of communicator 0xbeef just before (a data-parallel
  // AllReduce before the world one). A GPU slow in its own work comes late to both; one that
  // left 0xbeef late (behind a slow link there) waited its full share in 0xbeef (a tree+dp job
  // of 23 nodes, a 4.8x link, its 1/10 compute: the GPU named at 0.98 waited 3.8 ms per op
  // there against the others' median 2.9, and least of all 115 in the world tree).
  // GPU 6 waited least in kComm: a late post there, not a hold (withheld_credit.hpp).
  const double world_ms[8] = {4.0, 4.1, 3.9, 4.2, 4.0, 4.1, 0.2, 4.0};
  for (const double gpu6_ms : {4.1, 0.3}) {
    Observations obs;
    std::vector<EdgeFacts> facts;
    ring_withholding_at_6(obs, facts, world_ms);
    constexpr uint64_t kBefore = 0xbeef;
    test::add_comm_ranks(obs, kBefore, {0, 1, 2, 3, 4, 5, 6, 7});
    ring_of_waits(obs, facts, kBefore, {4.0, 4.2, 3.9, 4.1, 4.0, 3.8, gpu6_ms, 4.0});
    const std::vector<Evidence> evidence = explain_unclocked(obs, facts, 8);
    if (gpu6_ms > 1) {
      EXPECT_FALSE(evidence[6].any()) << "on time to the collective before: not late by its own work";
    } else {
      EXPECT_EQ(evidence[6].culprit_class, CulpritClass::kGpuProducer) << "late to both";
    }
  }
}

TEST(ReceiverExplanations, AGpuEveryOtherMemberWaitedForIsALateGpuNotASlowConsumer) {
  // Eight GPUs, one per node, in a ring (r -> r + 1), none with kernel clocks, one op per
  // connection. Everyone waited 3.9-4.2 ms in some proxy op (a send's SendGpuWait, a
  // receive's RecvWait) but GPU 6, which waited 0.2 ms at most: its receiver waited for its
  // data, its sender for its credit (last_arrivals.hpp). A GPU slow to consume would have
  // waited on its sends for its own held input: so the class is identified.
  Observations obs;
  std::vector<EdgeFacts> facts;
  test::add_collective_processes(obs, kComm, {"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"});
  ring_of_waits(obs, facts, kComm, {4.0, 4.1, 3.9, 4.2, 4.0, 4.1, 0.2, 4.0});
  obs.edges[6].phase_ns[kRecvWait] = 4'000'000;  // 7 waited for 6's data
  obs.edges[5].phase_ns[kSendGpuWait] = 0;       // 5 had its data: it waited for 6's credit
  obs.edges[5].phase_ns[kSendPeerWait] = 4'000'000;
  EdgeFacts& into_6 = facts[5];
  into_6.no_credit = true;
  into_6.anomaly[kSendPeerWait] = 400000;
  into_6.margin[kSendPeerWait] = 50;
  const std::vector<Evidence> evidence = explain_unclocked(obs, facts, 8);
  EXPECT_EQ(evidence[6].culprit_class, CulpritClass::kGpuProducer);
  EXPECT_DOUBLE_EQ(evidence[6].identified_share, 1.0);
  EXPECT_GT(evidence[6].margin, 1);
  for (uint32_t p = 0; p < 8; ++p) {
    if (p != 6) {
      EXPECT_FALSE(evidence[p].any()) << "process " << p;
    }
  }
  // Had GPU 6 waited on its own send as the others did (a GPU slow to consume waits for its
  // own held input), nobody would stand out, and nothing names it.
  obs.edges[6].phase_ns[kSendGpuWait] = 4'000'000;
  EXPECT_FALSE(explain_unclocked(obs, facts, 8)[6].any());
}

TEST(ReceiverExplanations, CreditWithheldFarBeyondItsPeersByAGpuThatWaitedAsTheyDidIsAHold) {
  // The ring of ring_withholding_at_6, GPU 6 holding its buffers: it withheld credit far
  // beyond its place's peers (late_posters.hpp) and waited on its send as long as the others
  // (withheld_credit.hpp): a slow consumer, not a late post.
  Observations obs;
  std::vector<EdgeFacts> facts;
  const double longest_ms[8] = {4.0, 4.1, 3.9, 4.2, 4.0, 4.1, 4.05, 4.0};
  ring_withholding_at_6(obs, facts, longest_ms);
  const std::vector<Evidence> evidence = explain_unclocked(obs, facts, 8);
  EXPECT_EQ(evidence[6].culprit_class, CulpritClass::kGpuConsumer);
  EXPECT_DOUBLE_EQ(evidence[6].identified_share, 1.0);
  EXPECT_DOUBLE_EQ(evidence[6].ns, 300000.0 * kSteps);
  // Had it waited 3.5 ms less than its peers, the 3 ms of credit per op it withheld would be
  // a late post.
  obs.edges[5].phase_ns[kRecvWait] = obs.edges[6].phase_ns[kSendGpuWait] = 500'000;
  const std::vector<Evidence> late = explain_unclocked(obs, facts, 8);
  EXPECT_EQ(late[6].culprit_class, CulpritClass::kGpuProducer);
  EXPECT_DOUBLE_EQ(late[6].identified_share, 1.0);
}

// Six replicated pipelines (communicators comm_base + i, send/recv only) of as many stages as
// `hops` reach: stage s of pipeline i is GPU 6 s + i, one per node, none with kernel clocks.
// Each hop (from, to) is a connection of every pipeline, in order. Healthy receivers waited
// 95-107 us per step for their data and kept their senders 5-9 us waiting for credit.
void six_replicated_pipelines(Observations& obs, std::vector<EdgeFacts>& facts, uint64_t comm_base,
                              const std::vector<std::pair<int32_t, int32_t>>& hops) {
  int32_t stages = 0;
  for (const auto& [from, to] : hops) stages = std::max({stages, from + 1, to + 1});
  std::vector<std::string> hosts;
  for (int p = 0; p < 6 * stages; ++p) hosts.push_back("node" + std::to_string(p));
  test::add_collective_processes(obs, 0x10, hosts);
  const double recv_wait_us[6] = {100, 95, 107, 99, 103, 97};
  const double credit_wait_us[6] = {6, 9, 5, 7, 8, 6};
  for (uint32_t i = 0; i < 6; ++i) {
    const uint64_t comm = comm_base + i;
    std::vector<uint32_t> members;
    for (int32_t s = 0; s < stages; ++s) members.push_back(6 * static_cast<uint32_t>(s) + i);
    test::add_comm_ranks(obs, comm, members, /*collective=*/false);
    for (size_t h = 0; h < hops.size(); ++h) {
      const auto [from, to] = hops[h];
      EdgeFacts& f = test::add_connection(obs, facts, comm, members[from], members[to], 0, kSteps);
      obs.edges.back().key = {comm, from, to, 0, 0};
      f.p2p = true;
      f.view.step_ns[kRecvWait] = recv_wait_us[(i + h + 1) % 6] * 1000;
      f.view.step_ns[kSendPeerWait] = credit_wait_us[(i + 2 * h) % 6] * 1000;
    }
  }
}

// Six pipelines of two stages (communicators 0x20 + i, send/recv only): GPU i of stage 0 sends
// its activations to GPU 6 + i and receives its gradients back, none with kernel clocks. The
// receivers waited 95-107 us per step for their data and their senders 5-9 us for credit;
// GPU 0 kept GPU 6 waiting 123 us per step for credit and found its gradients there (44 us),
// a simulated GPU 1.7x slower to consume. `late_data_us`: how long GPU 6 waited for GPU 0's
// activations (the others waited 95-107). `flagged`: whether the credit it withheld cleared the
// credit floor on its own.
std::vector<Evidence> pipelines_withholding_at_0(double late_data_us, bool flagged = true) {
  Observations obs;
  std::vector<EdgeFacts> facts;
  six_replicated_pipelines(obs, facts, 0x20, {{0, 1}, {1, 0}});
  withheld_credit(facts[1], 44, 123, 115);
  if (!flagged) {
    facts[1].no_credit = false;
    facts[1].anomaly[kSendPeerWait] = 0;
    facts[1].margin[kSendPeerWait] = 0;
  }
  facts[0].view.step_ns[kRecvWait] = late_data_us * 1000;
  return explain_unclocked(obs, facts, 12);
}

TEST(ReceiverExplanations, ASendRecvReceiverThatWithheldCreditWhileItsOwnDataCameOnTimeHoldsItsBuffers) {
  const std::vector<Evidence> held = pipelines_withholding_at_0(99);
  EXPECT_EQ(held[0].culprit_class, CulpritClass::kGpuConsumer);
  EXPECT_DOUBLE_EQ(held[0].identified_share, 1.0);
  for (uint32_t p = 1; p < 12; ++p) EXPECT_FALSE(held[p].any()) << "process " << p;
  // Its activations as late as its credit (a late GPU, or a stage slow to consume what it
  // forwards): the class stays one of two.
  const std::vector<Evidence> late = pipelines_withholding_at_0(300);
  EXPECT_EQ(late[0].culprit_class, CulpritClass::kGpuProducer);
  EXPECT_DOUBLE_EQ(late[0].identified_share, 0.5);
}

TEST(ReceiverExplanations, ASendRecvReceiverLateOnBothSidesIsNamedUnderTheCreditFloorToo) {
  // GPU 0's 123 us per step of withheld credit stayed under the credit floor (a step of a long
  // transfer). It came far later than the other stage-0 GPUs all the same (late_posters.hpp),
  // its own data came late as well, and its sender waited for it each step: the same evidence,
  // of all the credit it withheld.
  const std::vector<Evidence> late = pipelines_withholding_at_0(300, /*flagged=*/false);
  EXPECT_EQ(late[0].culprit_class, CulpritClass::kGpuProducer);
  EXPECT_DOUBLE_EQ(late[0].ns, 123000.0 * kSteps);
  EXPECT_GT(late[0].margin, 1);
  for (uint32_t p = 1; p < 12; ++p) EXPECT_FALSE(late[p].any()) << "process " << p;
  // Its data on time: under the floor a stage's lateness as a receiver alone is also what a
  // late input upstream or the schedule leaves it; nothing of its own.
  for (const Evidence& e : pipelines_withholding_at_0(99, /*flagged=*/false)) EXPECT_FALSE(e.any());
}

// Six pipelines of three stages (communicators 0x40 + i): GPU i, 6 + i and 12 + i, forward
// 0 -> 1 -> 2 and backward 2 -> 1 -> 0, no withheld credit flagged (all under the credit
// floor). In pipeline 0 the middle stage
// (GPU 6) came late on both sides: it kept its forward sender waiting 123 us per step and
// found its data there (44 us), and its backward data kept GPU 0 waiting 300 us. Its last
// stage (GPU 12), through the schedule, came late on both sides too, by less: it kept GPU 6
// waiting 80 us per step for credit (its data there, 30 us) and GPU 6 waited 200 us for its
// gradients.
std::vector<Evidence> three_stage_pipelines_late_at_6() {
  Observations obs;
  std::vector<EdgeFacts> facts;
  six_replicated_pipelines(obs, facts, 0x40, {{0, 1}, {1, 2}, {2, 1}, {1, 0}});
  // Pipeline 0's connections: facts[0] 0 -> 6, [1] 6 -> 12, [2] 12 -> 6, [3] 6 -> 0.
  const auto set = [&](size_t c, double recv_wait_us_, double credit_wait_us_) {
    facts[c].view.step_ns[kRecvWait] = recv_wait_us_ * 1000;
    facts[c].view.step_ns[kSendPeerWait] = credit_wait_us_ * 1000;
  };
  set(0, 44, 123);  // GPU 6 posted late for GPU 0's data
  set(1, 30, 80);   // GPU 12 posted late for GPU 6's data
  set(2, 200, 6);   // GPU 6 waited for GPU 12's gradients
  set(3, 300, 6);   // GPU 0 waited for GPU 6's gradients
  return explain_unclocked(obs, facts, 18);
}

TEST(ReceiverExplanations, UnderTheCreditFloorOnlyThePipelinesLatestPosterIsNamed) {
  // GPUs 6 and 12 both came far later than their stages' others, on both sides; a slow stage's
  // lateness reaches its neighbours through the schedule, less of it. Only the latest is named.
  const std::vector<Evidence> evidence = three_stage_pipelines_late_at_6();
  EXPECT_EQ(evidence[6].culprit_class, CulpritClass::kGpuProducer);
  EXPECT_DOUBLE_EQ(evidence[6].ns, 123000.0 * kSteps);
  for (uint32_t p = 0; p < 18; ++p) {
    if (p != 6) {
      EXPECT_FALSE(evidence[p].any()) << "process " << p;
    }
  }
}

TEST(ReceiverExplanations, AReceiverOnABackpressuredLaneWaitsOnItsExitsSender) {
  Job job;
  job.withhold_credit();
  job.exit_of_b().slow_link = true;  // nodeB's exit is held from beyond the node
  job.run();
  ASSERT_EQ(job.holds.size(), 2u);
  expect_hold(job.holds[0], 1, 2, 10000, "no_credit");
  expect_hold(job.holds[1], 2, 3, 10000, "backpressure");
  EXPECT_FALSE(job.evidence[2].any());

  // A send/recv receive frees its buffers whatever the node sends next: no backpressure, a
  // wait on the receiver alone (without kernel clocks, a stage's late post is its schedule as
  // much as its speed: no evidence either, late_posters.hpp).
  Job p2p;
  p2p.withhold_credit();
  p2p.into_b().p2p = true;
  p2p.exit_of_b().slow_link = true;
  p2p.run();
  ASSERT_EQ(p2p.holds.size(), 1u);
  expect_hold(p2p.holds[0], 1, 2, 10000, "no_credit");
  EXPECT_FALSE(p2p.evidence[2].any());
}

// The flush runs between a step's arrival and its handoff to the GPU: what holds the GPU
// (backpressure from the node's exit) withholds credit but flushes no slower. So on a
// backpressured lane the credit passes on and the slow flush stays the receiver's own time.
TEST(ReceiverExplanations, ASlowFlushIsTheReceiversOwnOnABackpressuredLane) {
  for (const bool credit_flagged : {true, false}) {
    Job job;
    if (credit_flagged) job.withhold_credit();
    job.into_b().slow_flush = true;
    job.into_b().anomaly[kRecvFlushWait] = 500;
    job.into_b().margin[kRecvFlushWait] = 3;
    job.exit_of_b().slow_link = true;  // nodeB's exit is held from beyond the node
    job.run();
    EXPECT_EQ(job.evidence[2].culprit_class, CulpritClass::kFlush) << credit_flagged;
    EXPECT_DOUBLE_EQ(job.evidence[2].ns, 500.0 * kSteps) << credit_flagged;  // the flush alone
    if (credit_flagged) {
      ASSERT_EQ(job.holds.size(), 2u);
      expect_hold(job.holds[1], 2, 3, 10000, "backpressure");
    }
  }
}

TEST(ReceiverExplanations, ALateGpuOfTheReceiversNodeHoldsIt) {
  Job job;
  job.withhold_credit();
  job.own.late_ns[3] = 5000;  // nodeB's other GPU is late by its own kernels
  job.own.late_ns[4] = 9000;  // another node's late GPU explains nothing here
  job.run();
  ASSERT_EQ(job.holds.size(), 2u);
  expect_hold(job.holds[1], 2, 3, 10000, "node_interior");
  EXPECT_FALSE(job.evidence[2].any());

  // The receiver itself the only late GPU of its node: nobody else to hold it (its own
  // kernel lateness is its evidence, offered by own_time_evidence.hpp).
  Job self;
  self.withhold_credit();
  self.own.late_ns[2] = 5000;
  self.run();
  ASSERT_EQ(self.holds.size(), 1u);
  expect_hold(self.holds[0], 1, 2, 10000, "no_credit");
}

TEST(ReceiverExplanations, ItsOwnSlowFlushOrConsumptionExplainsWithheldCredit) {
  Job flush;
  flush.withhold_credit();
  flush.own.late_ns[3] = 5000;  // a late node peer does not excuse its own slowness
  flush.into_b().slow_flush = true;
  flush.into_b().anomaly[kRecvFlushWait] = 500;  // 5 us over the window
  flush.run();
  ASSERT_EQ(flush.holds.size(), 1u);
  EXPECT_EQ(flush.evidence[2].culprit_class, CulpritClass::kFlush);
  EXPECT_DOUBLE_EQ(flush.evidence[2].ns, 15000);  // the withheld credit plus the flush

  Job consume;
  consume.withhold_credit();
  consume.into_b().slow_flush = true;
  consume.into_b().anomaly[kRecvFlushWait] = 500;
  consume.into_b().slow_consume = true;
  consume.into_b().anomaly[kRecvGpuWait] = 800;  // the larger of the two names the class
  consume.run();
  EXPECT_EQ(consume.evidence[2].culprit_class, CulpritClass::kGpuConsumer);
  EXPECT_DOUBLE_EQ(consume.evidence[2].ns, 18000);
}

// Besides kComm, a data-parallel communicator kDp over all six processes (rank = process):
// GPU 2 receives there from 0 and GPU 3 from 1, both recorded.
constexpr uint64_t kDp = 0x8888ull;
struct JobWithDataParallel : Job {
  JobWithDataParallel() {
    test::add_comm_ranks(obs, kDp, {0, 1, 2, 3, 4, 5});
    test::add_connection(obs, facts, kDp, 0, 2, 0, kSteps);
    test::add_connection(obs, facts, kDp, 1, 3, 0, kSteps);
  }
  EdgeFacts& dp_into(uint32_t receiver) { return facts[receiver == 2 ? 2 : 3]; }
  static void consume_slowly(EdgeFacts& f, double per_step_ns) {
    f.slow_consume = true;
    f.anomaly[kRecvGpuWait] = per_step_ns;
  }
};

TEST(ReceiverExplanations, AReceiverSlowToConsumeInOneCommunicatorOnlyWaitsOnItsNodesSlowConsumer) {
  // GPU 2 consumes slowly in kComm (it feeds GPU 3 over NVLink there) and on time in kDp; GPU 3
  // consumes slowly in kDp, its only network receives: GPU 3 is the slow consumer.
  JobWithDataParallel job;
  JobWithDataParallel::consume_slowly(job.into_b(), 2000);
  JobWithDataParallel::consume_slowly(job.dp_into(3), 1500);
  job.run();
  EXPECT_FALSE(job.evidence[2].any());
  EXPECT_EQ(job.evidence[3].culprit_class, CulpritClass::kGpuConsumer);
  ASSERT_EQ(job.holds.size(), 1u);
  expect_hold(job.holds[0], 2, 3, 20000, "backpressure");

  // Slow in both of its communicators, GPU 2 is a slow consumer itself.
  JobWithDataParallel both;
  JobWithDataParallel::consume_slowly(both.into_b(), 2000);
  JobWithDataParallel::consume_slowly(both.dp_into(2), 1000);
  JobWithDataParallel::consume_slowly(both.dp_into(3), 1500);
  both.run();
  EXPECT_EQ(both.evidence[2].culprit_class, CulpritClass::kGpuConsumer);
  EXPECT_DOUBLE_EQ(both.evidence[2].ns, 30000);
  EXPECT_TRUE(both.holds.empty());

  // With no GPU of its node slow everywhere, its slow consumption stays its own evidence.
  JobWithDataParallel alone;
  JobWithDataParallel::consume_slowly(alone.into_b(), 2000);
  alone.run();
  EXPECT_EQ(alone.evidence[2].culprit_class, CulpritClass::kGpuConsumer);
  EXPECT_TRUE(alone.holds.empty());
}

TEST(ReceiverExplanations, CreditWithheldInOneCommunicatorOnlyWaitsOnItsNodesSlowConsumer) {
  // GPU 2 withheld credit in kComm, its class unknown (its node sent no data of that
  // communicator), and gave it on time in kDp; GPU 3 consumes slowly in kDp, its only network
  // receives. A GPU slow in its own work would be late in both: GPU 2 is held over NVLink by
  // GPU 3 (slow_consumer in a ring+dp, where only the dp ring receives it from the network).
  JobWithDataParallel job;
  job.withhold_credit();
  job.into_b().view.has_recv = false;
  JobWithDataParallel::consume_slowly(job.dp_into(3), 1500);
  job.run();
  EXPECT_FALSE(job.evidence[2].any());
  EXPECT_EQ(job.evidence[3].culprit_class, CulpritClass::kGpuConsumer);
  ASSERT_EQ(job.holds.size(), 2u);  // its sender's wait on it, and its wait on GPU 3
  expect_hold(job.holds[0], 1, 2, 10000, "no_credit");
  expect_hold(job.holds[1], 2, 3, 10000, "backpressure");

  // Where no GPU of its node is slow to consume everywhere, its withheld credit stays its own.
  JobWithDataParallel alone;
  alone.withhold_credit();
  alone.into_b().view.has_recv = false;
  alone.run();
  EXPECT_EQ(alone.evidence[2].culprit_class, CulpritClass::kGpuProducer);
  EXPECT_DOUBLE_EQ(alone.evidence[2].identified_share, 0.5);
}

TEST(ReceiverExplanations, ALatePostWithItsOwnWorkMeasuredAndInOrderBlamesNobody) {
  Job job;
  job.withhold_credit();
  job.own.work_measured[2] = true;
  job.run();
  EXPECT_TRUE(job.holds.empty());
  EXPECT_FALSE(job.evidence[2].any());

  // Measured, but it consumed slowly: that explains the late credit.
  Job slow;
  slow.withhold_credit();
  slow.own.work_measured[2] = true;
  slow.into_b().slow_consume = true;
  slow.into_b().anomaly[kRecvGpuWait] = 800;
  slow.run();
  ASSERT_EQ(slow.holds.size(), 1u);
  EXPECT_EQ(slow.evidence[2].culprit_class, CulpritClass::kGpuConsumer);
}

TEST(ReceiverExplanations, ASlowFlushWithoutWithheldCreditIsOwnEvidenceWhateverItsLane) {
  Job job;
  job.into_b().slow_flush = true;
  job.into_b().anomaly[kRecvFlushWait] = 500;
  job.run();
  EXPECT_TRUE(job.holds.empty());
  EXPECT_EQ(job.evidence[2].culprit_class, CulpritClass::kFlush);
  EXPECT_DOUBLE_EQ(job.evidence[2].ns, 5000);

  Job held;
  held.into_b().slow_flush = true;
  held.into_b().anomaly[kRecvFlushWait] = 500;
  held.exit_of_b().view.step_ns[kSendGpuWait] = 1000;  // nodeB's exit: its GPU is ahead of the wire
  held.run();
  EXPECT_TRUE(held.holds.empty());
  EXPECT_EQ(held.evidence[2].culprit_class, CulpritClass::kFlush);  // a held GPU flushes no slower
  EXPECT_DOUBLE_EQ(held.evidence[2].ns, 5000);

  // A send/recv receive is never held by its lane: the flush is its own.
  Job p2p;
  p2p.into_b().p2p = true;
  p2p.into_b().slow_flush = true;
  p2p.into_b().anomaly[kRecvFlushWait] = 500;
  p2p.exit_of_b().view.step_ns[kSendGpuWait] = 1000;
  p2p.run();
  EXPECT_EQ(p2p.evidence[2].culprit_class, CulpritClass::kFlush);
}

TEST(ReceiverExplanations, BackpressureHoldsAnInputNoLongerPerStepThanTheExitsSendsWereHeld) {
  // Receiver 2 holds each slot 600 us (its kind's typical: a few us, so 590 us of excess at a
  // margin of 9); its own exit (the node's other GPU, 3, waits for its data half of each step)
  // has its data ready at once (GPU ahead) and each of its sends waited 160 us for credit and
  // 200 us on the wire: backpressure explains 360 us a step (a 2.91x leaf consumer of a tree
  // 50x1x8, its one GPU receiving and sending).
  auto slow_consumer_on_held_lane = [](double exit_hold_ns) {
    Job job;
    job.add(2, 5);
    job.into_b().slow_consume = true;
    job.into_b().view.step_ns[kRecvGpuWait] = 600000;
    job.into_b().anomaly[kRecvGpuWait] = 590000;
    job.into_b().margin[kRecvGpuWait] = 9;
    EdgeFacts& exit = job.facts.back();
    exit.view.step_ns[kSendGpuWait] = 1000;
    exit.view.step_ns[kSendPeerWait] = exit_hold_ns * 0.45;
    exit.view.step_ns[kSendWait] = exit_hold_ns * 0.55;
    job.run();
    return job;
  };
  Job own = slow_consumer_on_held_lane(360000);
  EXPECT_TRUE(own.holds.empty());
  EXPECT_EQ(own.evidence[2].culprit_class, CulpritClass::kGpuConsumer);
  EXPECT_NEAR(own.evidence[2].ns, 240000.0 * kSteps, 1);  // what it held beyond its exit's hold
  EXPECT_NEAR(own.evidence[2].margin, 9 * 240.0 / 590.0, 1e-9);
  // Where the exit's sends were held as long as the input (a tree's root returning its child's
  // data over a slow wire), the hold is all backpressure.
  Job passed_on = slow_consumer_on_held_lane(620000);
  EXPECT_FALSE(passed_on.evidence[2].any());
  // Beyond the hold by less than its guards: passed on too.
  Job within_guard = slow_consumer_on_held_lane(560000);
  EXPECT_FALSE(within_guard.evidence[2].any());
}

// Where the data crossed the node to an exit sent by another GPU whose data was ready at once,
// the receiver passed it on in time: its hold is backpressure however long (a full buffer holds
// each input NCCL_STEPS times the exit's pace). The numbers of a healthy interior node of a tree
// 11x8x8 under LL (fresh seed 11031): its entry held its children's data 329 us a step, its exit
// to the parent waited 1 us a step for data, 15 for credit and 31 on the wire.
TEST(ReceiverExplanations, AnExitByAnotherGpuWithItsDataReadyLeavesNoConsumptionBeyondBackpressure) {
  auto held_entry = [](double exit_data_wait_ns) {
    Job job;
    job.into_b().slow_consume = true;
    job.into_b().view.step_ns[kRecvGpuWait] = 329000;
    job.into_b().anomaly[kRecvGpuWait] = 300000;
    job.into_b().margin[kRecvGpuWait] = 9;
    EdgeFacts& exit = job.exit_of_b();  // sent by GPU 3
    exit.view.send_cycle_ns = 47000;
    exit.view.step_ns[kSendGpuWait] = exit_data_wait_ns;
    exit.view.step_ns[kSendPeerWait] = 15000;
    exit.view.step_ns[kSendWait] = 31000;
    job.run();
    return job;
  };
  Job healthy = held_entry(1000);
  EXPECT_FALSE(healthy.evidence[2].any());
  EXPECT_TRUE(healthy.holds.empty());
  // An exit that waits for its data (a quarter of its step or more) is no hold from beyond: the
  // lane is not backpressured, and the hold is the receiver's own.
  Job starved = held_entry(20000);
  EXPECT_EQ(starved.evidence[2].culprit_class, CulpritClass::kGpuConsumer);
  EXPECT_NEAR(starved.evidence[2].ns, 300000.0 * kSteps, 1);
}

// Where per-step traces set receiver 2's holds against its output slots (gated_holds.hpp),
// its own time per step is measured and bounds its consumption; the exit's sums bound nothing. The numbers are those
// of a healthy interior GPU of a 40-node LL tree whose parent stalled: it held its children's
// data about 530 us a step while its sends, summed over their last recorded steps, waited
// 223 us; set against the send of 8 steps before, it held each step 1.1 us after its output
// slot was free.
TEST(ReceiverExplanations, WhereItsHoldsAreSetAgainstItsOutputSlotsItsOwnTimeIsMeasured) {
  auto held_lane_with_gated_own = [](double own_per_step_ns, double exit_hold_ns) {
    Job job;
    job.into_b().slow_consume = true;
    job.into_b().view.step_ns[kRecvGpuWait] = 530000;
    job.into_b().anomaly[kRecvGpuWait] = 529000;
    job.into_b().margin[kRecvGpuWait] = 9;
    EdgeFacts& exit = job.exit_of_b();
    exit.view.step_ns[kSendGpuWait] = 1000;
    exit.view.step_ns[kSendPeerWait] = exit_hold_ns - 15000;
    exit.view.step_ns[kSendWait] = 15000;
    for (GlobalCommRank& r : job.obs.comm_ranks)
      if (r.process == 2 && r.comm_hash == kComm) {
        r.gated_steps = 64;
        r.gated_own_sum_ns = static_cast<uint64_t>(64 * own_per_step_ns);
      }
    job.run();
    return job;
  };
  // Backpressure, though the exit's sums leave 307 us a step unexplained.
  Job passed_on = held_lane_with_gated_own(1100, 223000);
  EXPECT_FALSE(passed_on.evidence[2].any());
  // A slow consumer behind a held exit: its own 300 us a step, though the exit's sums would
  // explain all of its hold.
  Job own = held_lane_with_gated_own(300000, 600000);
  EXPECT_EQ(own.evidence[2].culprit_class, CulpritClass::kGpuConsumer);
  EXPECT_NEAR(own.evidence[2].ns, 300000.0 * kSteps, 1);
  EXPECT_NEAR(own.evidence[2].margin, 9 * 300.0 / 529.0, 1e-9);
  // On a lane its sums do not show held (the exit's GPU busy half of each step), the measured
  // own time bounds it too.
  Job unheld;
  unheld.into_b().slow_consume = true;
  unheld.into_b().view.step_ns[kRecvGpuWait] = 530000;
  unheld.into_b().anomaly[kRecvGpuWait] = 529000;
  unheld.into_b().margin[kRecvGpuWait] = 9;
  for (GlobalCommRank& r : unheld.obs.comm_ranks)
    if (r.process == 2 && r.comm_hash == kComm) {
      r.gated_steps = 64;
      r.gated_own_sum_ns = 64 * 1100;
    }
  unheld.run();
  EXPECT_FALSE(unheld.evidence[2].any());
  // Fewer gated steps than one op's: nothing measured its own time, but its node's exit, sent
  // by GPU 3, had its data ready at once: it passed its data on in time.
  Job few = held_lane_with_gated_own(1100, 223000);
  for (GlobalCommRank& r : few.obs.comm_ranks) r.gated_steps = r.gated_steps ? 4 : 0;
  few.evidence.assign(6, Evidence{});
  few.holds.clear();
  few.run();
  EXPECT_FALSE(few.evidence[2].any());
}

TEST(ReceiverExplanations, AReceiversTimeAddsOverItsCommunicatorsNotOverChannels) {
  // GPU 2 consumes slowly in the world communicator (two channels, 10 us each over the
  // window) and in a second one (10 us); GPU 3 only in the world one, 15 us on one channel
  // (a sibling that feeds GPU 2 over NVLink looks like that). Channels of one communicator
  // run side by side, collectives of two run one after another: GPU 2 added 20 us, GPU 3
  // 15 us.
  Job job;
  job.facts.clear();
  job.obs.edges.clear();
  test::add_comm_ranks(job.obs, kDp, {0, 1, 2, 3, 4, 5});
  auto slow_consumer = [&](uint64_t comm, uint32_t src, uint32_t dst, int32_t channel, double per_step_ns) {
    EdgeFacts& f = test::add_connection(job.obs, job.facts, comm, src, dst, channel, kSteps);
    f.slow_consume = true;
    f.anomaly[kRecvGpuWait] = per_step_ns;
  };
  slow_consumer(kComm, 1, 2, 0, 1000);
  slow_consumer(kComm, 1, 2, 1, 1000);
  slow_consumer(kDp, 0, 2, 0, 1000);
  slow_consumer(kComm, 1, 3, 2, 1500);
  job.run();
  EXPECT_TRUE(job.holds.empty());
  EXPECT_EQ(job.evidence[2].culprit_class, CulpritClass::kGpuConsumer);
  EXPECT_DOUBLE_EQ(job.evidence[2].ns, 20000);
  EXPECT_DOUBLE_EQ(job.evidence[3].ns, 15000);
  EXPECT_TRUE(job.evidence[2].outranks(job.evidence[3]));
}

TEST(ReceiverExplanations, SaysWhoseLatePostsNoPeersCouldJudge) {
  // Receivers 2 and 4 have no kernel clocks, and no other GPU plays their part: the note names
  // them.
  Job job;
  job.withhold_credit();
  job.run();
  ASSERT_EQ(job.notes.size(), 1u);
  EXPECT_EQ(job.notes[0].rfind("2 GPU(s) without kernel clocks have no peers", 0), 0u) << job.notes[0];
  EXPECT_NE(job.notes[0].find(ProcessContext(job.obs).name_of(2)), std::string::npos);
  // Where only GPU 2 has kernel clocks, the note names GPU 4 alone.
  Job mixed;
  mixed.withhold_credit();
  mixed.own.work_measured[2] = true;
  mixed.run();
  ASSERT_EQ(mixed.notes.size(), 1u);
  EXPECT_EQ(mixed.notes[0].rfind("1 GPU(s) without kernel clocks have no peers that play their part in the data "
                                 "flow (" + ProcessContext(mixed.obs).name_of(4) + ";",
                                 0),
            0u)
      << mixed.notes[0];
  // With kernel clocks nothing is judged by its late posts: no note.
  Job clocked;
  clocked.own.work_measured.assign(6, true);
  clocked.run();
  EXPECT_TRUE(clocked.notes.empty());
  // Eight GPUs of one ring, each the others' peer: no note either.
  Observations obs;
  std::vector<EdgeFacts> facts;
  ring_withholding_at_6(obs, facts);
  EXPECT_TRUE(explain_job(obs, facts, 8).notes.empty());
}

}  // namespace
}  // namespace culprit
