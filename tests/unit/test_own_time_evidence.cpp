// Own-time evidence: slow wires at their sender (and, without wire timing, send/recv SendWait
// beyond its peers), unexplained SendGpuWait beyond its peers (and its note), kernel lateness,
// slow queue pairs.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "analysis/own_time_evidence.hpp"
#include "analysis/queue_pair_wires.hpp"
#include "pass_fixtures.hpp"

namespace culprit {
namespace {

constexpr uint64_t kComm = 0xBEEFull;
constexpr uint64_t kSteps = 16;

// Connections between processes of one collective communicator (rank = process).
struct Facts {
  Observations obs;
  std::vector<EdgeFacts> facts;

  EdgeFacts& add(uint32_t src, uint32_t dst) { return test::add_connection(obs, facts, kComm, src, dst, 0, kSteps); }
};

OwnDelay none_measured(size_t n) {
  return {std::vector<double>(n, 0.0), std::vector<double>(n, 0.0), std::vector<bool>(n, false), false, {}};
}

// The passes over `obs`, with its context and its GPUs' peers read from it.
void offer_unexplained(const Observations& obs, const std::vector<EdgeFacts>& facts, const OwnDelay& own,
                       std::vector<Evidence>& evidence, std::vector<std::string>& notes) {
  const ProcessContext context(obs);
  offer_unexplained_send_gpu_wait(obs, context, LazyPeerRoles(context, obs), facts, own, evidence, notes);
}
void offer_slow_sends(const Facts& f, std::vector<Evidence>& evidence) {
  const ProcessContext context(f.obs);
  offer_slow_send_waits(f.obs, LazyPeerRoles(context, f.obs), f.facts, AttributionConfig{}, evidence);
}

TEST(OwnTimeEvidence, ASlowWireIsNetworkLinkEvidenceAtItsSenderTowardsItsReceiver) {
  Facts f;
  f.add(0, 1);
  EdgeFacts& slow = f.add(1, 2);
  slow.slow_link = true;
  slow.link_excess_ns = 2000;  // per step, over 16 steps
  f.add(2, 0).link_excess_ns = 9000;  // an excess without a slow wire is no evidence
  std::vector<Evidence> evidence(3);
  offer_slow_wires(f.obs, f.facts, evidence);
  EXPECT_EQ(evidence[1].culprit_class, CulpritClass::kNetworkLink);
  EXPECT_DOUBLE_EQ(evidence[1].ns, 32000);
  ASSERT_TRUE(evidence[1].peer.has_value());
  EXPECT_EQ(*evidence[1].peer, 2u);
  EXPECT_FALSE(evidence[0].any());
  EXPECT_FALSE(evidence[2].any());
}

TEST(OwnTimeEvidence, SendGpuWaitItsOnTimeInputDoesNotExplainIsTheGpusOwnTime) {
  Facts f;
  // A ring of six. Every GPU waits about 1 us per step for its GPU; process 1 waits 6 us (5 us
  // beyond the baseline) while its input (0 -> 1) came on time. Process 2 waits as long, but
  // its input (1 -> 2) came 5 us late: a victim.
  const double wait[6] = {1000, 6000, 6000, 1020, 990, 1010};
  for (uint32_t p = 0; p < 6; ++p) {
    EdgeFacts& e = f.add(p, (p + 1) % 6);
    e.view.step_ns[kSendGpuWait] = wait[p];
    if (wait[p] > 1100) e.anomaly[kSendGpuWait] = wait[p] - 1000;
  }
  f.facts[1].late_data_ns = 5000;
  std::vector<Evidence> evidence(6);
  std::vector<std::string> notes;
  OwnDelay own = none_measured(6);
  offer_unexplained(f.obs, f.facts, own, evidence, notes);
  EXPECT_EQ(evidence[1].culprit_class, CulpritClass::kGpuProducer);
  EXPECT_DOUBLE_EQ(evidence[1].ns, 5000.0 * kSteps);
  for (uint32_t p : {0u, 2u, 3u, 4u, 5u}) EXPECT_FALSE(evidence[p].any()) << p;
  // No process has kernel clocks: the note says how own work was judged instead.
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind("no GPU kernel windows in the input", 0), 0u);

  // Kernel clocks measure process 1's own work: the proxy's guess is not offered, no note.
  std::vector<Evidence> measured_evidence(6);
  std::vector<std::string> measured_notes;
  own.work_measured[1] = true;
  offer_unexplained(f.obs, f.facts, own, measured_evidence, measured_notes);
  EXPECT_FALSE(measured_evidence[1].any());
  EXPECT_TRUE(measured_notes.empty());
}

TEST(OwnTimeEvidence, TheSlowestOfHealthySendersIsNotItsOwnCause) {
  // A ring of six senders that fill their buffers in 0.9-1.3 us per step; each receiver
  // waits 0.18-0.32 us per step for its data. Process 1's SendGpuWait stands out from the
  // communicator's baseline and its input explains only part of it, but what is left (0.1 us
  // per step) is within the spread of its peers' (every job has a slowest GPU; without
  // kernel clocks that spread is all there is to judge it by).
  Facts f;
  const double wait[6] = {1000, 1300, 1100, 1200, 900, 1250};
  const double late[6] = {200, 320, 250, 180, 300, 220};  // of connection p -> p + 1
  for (uint32_t p = 0; p < 6; ++p) {
    EdgeFacts& e = f.add(p, (p + 1) % 6);
    e.view.step_ns[kSendGpuWait] = wait[p];
    e.late_data_ns = late[p];
  }
  f.facts[1].anomaly[kSendGpuWait] = 300;
  std::vector<Evidence> evidence(6);
  std::vector<std::string> notes;
  offer_unexplained(f.obs, f.facts, none_measured(6), evidence, notes);
  for (const Evidence& e : evidence) EXPECT_FALSE(e.any());
}

TEST(OwnTimeEvidence, WithoutWireTimingASendRecvLinkBeyondItsPeersIsANetworkLink) {
  // Six send/recv connections of one place, SendWait 77-80 us per step, one at 470 us.
  auto build = [](bool p2p, double timed_wire_ns) {
    Facts f;
    const double wait[6] = {77e3, 80e3, 470e3, 78e3, 79e3, 76e3};
    for (uint32_t p = 0; p < 6; ++p) {
      EdgeFacts& e = f.add(p, (p + 1) % 6);
      e.p2p = p2p;
      e.view.step_ns[kSendWait] = wait[p];
    }
    f.facts[0].view.wire_ns = timed_wire_ns;
    return f;
  };
  Facts f = build(true, 0);
  std::vector<Evidence> evidence(6);
  offer_slow_sends(f, evidence);
  EXPECT_EQ(evidence[2].culprit_class, CulpritClass::kNetworkLink);
  ASSERT_TRUE(evidence[2].peer.has_value());
  EXPECT_EQ(*evidence[2].peer, 3u);
  for (uint32_t p : {0u, 1u, 3u, 4u, 5u}) EXPECT_FALSE(evidence[p].any()) << p;
  // Collective connections queue as their flow bunches: their mean SendWait is not judged.
  Facts collective = build(false, 0);
  std::vector<Evidence> none(6);
  offer_slow_sends(collective, none);
  for (const Evidence& e : none) EXPECT_FALSE(e.any());
  // Where any connection is timed step by step, the wire tests judge the wires.
  Facts timed = build(true, 50e3);
  offer_slow_sends(timed, none);
  for (const Evidence& e : none) EXPECT_FALSE(e.any());
}

TEST(OwnTimeEvidence, WithoutWireTimingACollectiveLinkThatSetsThePaceIsANetworkLink) {
  // A ring of eight whose steps take 360 us (each sender's wait for data, credit and the wire,
  // per step). Seven links move a step in 30-42 us in their quickest op; one spent 400 us in
  // every op (a 3.65x link of a simulated ring, the queue of its sends included). Queued
  // behind a burst of its flow (120 us in its quickest op, short of a step), it is not.
  auto build = [](double slow_quickest_ns) {
    Facts f;
    const double quickest[8] = {30e3, 42e3, slow_quickest_ns, 36e3, 33e3, 38e3, 31e3, 40e3};
    for (uint32_t p = 0; p < 8; ++p) {
      EdgeFacts& e = f.add(p, (p + 1) % 8);
      e.view.quickest_op_send_wait_ns = quickest[p];
      e.view.step_ns[kSendWait] = quickest[p] * 1.3;
      e.view.send_cycle_ns = 360e3;
    }
    return f;
  };
  Facts slow = build(400e3);
  std::vector<Evidence> evidence(8);
  offer_slow_sends(slow, evidence);
  EXPECT_EQ(evidence[2].culprit_class, CulpritClass::kNetworkLink);
  ASSERT_TRUE(evidence[2].peer.has_value());
  EXPECT_EQ(*evidence[2].peer, 3u);
  for (uint32_t p : {0u, 1u, 3u, 4u, 5u, 6u, 7u}) EXPECT_FALSE(evidence[p].any()) << p;
  Facts queued = build(120e3);
  std::vector<Evidence> none(8);
  offer_slow_sends(queued, none);
  for (const Evidence& e : none) EXPECT_FALSE(e.any());
}

TEST(OwnTimeEvidence, PointToPointAndSelfConnectionsJudgeNoSendGpuWait) {
  Facts f;
  f.add(0, 1);
  f.add(1, 2).anomaly[kSendGpuWait] = 5000;
  for (EdgeFacts& e : f.facts) e.p2p = true;  // a pipeline: receives do not bound the wait
  f.add(1, 1).anomaly[kSendGpuWait] = 5000;   // a process to itself: no input seen
  std::vector<Evidence> evidence(3);
  std::vector<std::string> notes;
  offer_unexplained(f.obs, f.facts, none_measured(3), evidence, notes);
  for (const Evidence& e : evidence) EXPECT_FALSE(e.any());
  // Without connections there is nothing the note would explain.
  Observations empty;
  std::vector<std::string> empty_notes;
  offer_unexplained(empty, {}, none_measured(3), evidence, empty_notes);
  EXPECT_TRUE(empty_notes.empty());
}

TEST(OwnTimeEvidence, AConnectionFromARankWithoutDataIsPlacedOnNoHostOfTheJob) {
  // Ranks 0 and 1 recorded data; rank 2 is known only as rank 0's sender (its node sent
  // nothing): the context gives it a placeholder process, which the observations do not hold.
  Observations obs;
  obs.processes = {{"n0", 100, 0, ""}, {"n1", 101, 1, ""}};
  test::add_comm_ranks(obs, kComm, {0, 1}, true);
  EdgeSummary e;
  e.key = {kComm, 2, 0, 0, 0};
  e.recv_steps = kSteps;
  obs.edges.push_back(e);
  ProcessContext context(obs);
  EdgeFacts f;
  f.src = context.process_of(kComm, 2);
  f.dst = 0;
  f.view.has_recv = true;
  ASSERT_GE(f.src, obs.processes.size());
  std::vector<Evidence> evidence(context.size());
  std::vector<std::string> notes;
  offer_unexplained_send_gpu_wait(obs, context, LazyPeerRoles(context, obs), {f}, none_measured(context.size()),
                                  evidence, notes);
  for (const Evidence& x : evidence) EXPECT_FALSE(x.any());
}

TEST(OwnTimeEvidence, AKernelLateGpuIsAProducerAndItsSlowConsumptionIsTheSameStraggler) {
  OwnDelay own = none_measured(4);
  own.late_ns = {0, 5000, 5000, 5000};
  std::vector<Evidence> evidence(4);
  evidence[2].offer(8000, CulpritClass::kGpuConsumer);   // stronger, but the same slow GPU
  evidence[3].offer(8000, CulpritClass::kNetworkLink, 0u);  // a wire is not its kernels
  offer_kernel_lateness(own, evidence);
  EXPECT_FALSE(evidence[0].any());
  EXPECT_EQ(evidence[1].culprit_class, CulpritClass::kGpuProducer);
  EXPECT_DOUBLE_EQ(evidence[1].ns, 5000);
  EXPECT_EQ(evidence[2].culprit_class, CulpritClass::kGpuProducer);
  EXPECT_DOUBLE_EQ(evidence[2].ns, 8000);
  EXPECT_EQ(evidence[3].culprit_class, CulpritClass::kNetworkLink);
  EXPECT_DOUBLE_EQ(evidence[3].ns, 8000);
}

TEST(OwnTimeEvidence, ASlowQueuePairIsANetworkLinkTowardsItsSlowestSend) {
  Facts f;
  f.add(3, 0).view.step_ns[kSendWait] = 5000;
  f.add(3, 2).view.step_ns[kSendWait] = 9000;  // its slowest outbound connection
  f.add(3, 1).view.step_ns[kSendWait] = 20000;
  f.facts[2].view.has_send = false;  // only its receiver recorded it: no send of process 3's to judge
  for (uint32_t p = 0; p < 4; ++p) {
    // 100 sends of 64 KiB each, 10 of which found the queue pair idle and took 1 us; process
    // 3's took 4 us.
    QpObservation q{p, 0, 42 + p, 100, 100 * 65536, 0, 65536, 10, 10 * std::log(p == 3 ? 4000.0 : 1000.0)};
    f.obs.qps.push_back(q);
  }
  std::vector<Evidence> evidence(4);
  offer_slow_queue_pairs(f.obs, f.facts, evidence);
  EXPECT_EQ(evidence[3].culprit_class, CulpritClass::kNetworkLink);
  EXPECT_NEAR(evidence[3].ns, 100 * 3000.0, 1e-6);  // 3 us beyond its peers' on each of its 100 sends
  ASSERT_TRUE(evidence[3].peer.has_value());
  EXPECT_EQ(*evidence[3].peer, 2u);
  for (uint32_t p : {0u, 1u, 2u}) EXPECT_FALSE(evidence[p].any());
}

// Without per-step timing or queue pairs, the report says how links are judged and what to export.
TEST(OwnTimeEvidence, WiresTimedByNothingButSumsAreNoted) {
  Facts f;
  f.add(0, 1);
  f.add(1, 0);
  std::vector<std::string> notes;
  note_untimed_wires(f.obs, f.facts, notes);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind("no wire timing", 0), 0u);
  EXPECT_NE(notes[0].find("export nccl.net_qp"), std::string::npos);

  // Queue pairs read without lengths (probing's default export leaves unsigned columns empty):
  // the table was exported, its lengths were not.
  f.obs.qps.push_back(QpObservation{0, 0, 42, 100, 0, 0, 0, 0, 0, 0});
  notes.clear();
  note_untimed_wires(f.obs, f.facts, notes);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].find("export nccl.net_qp"), std::string::npos);
  EXPECT_NE(notes[0].find("CAST(length AS BIGINT)"), std::string::npos);

  // Sized, but too few sends found their queue pair idle.
  f.obs.qps[0] = QpObservation{0, 0, 42, 100, 100 * 65536, 0, 65536, kMinIdleSends - 1, 0, 0};
  notes.clear();
  note_untimed_wires(f.obs, f.facts, notes);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].find("export nccl.net_qp"), std::string::npos);
  EXPECT_NE(notes[0].find("found it idle"), std::string::npos);

  // Queue pairs with idle sends time the wires: nothing to say.
  f.obs.qps[0].idle_sends = kMinIdleSends;
  notes.clear();
  note_untimed_wires(f.obs, f.facts, notes);
  EXPECT_TRUE(notes.empty());

  // Nor where the steps time them (NCCL traces).
  f.obs.qps.clear();
  f.facts[0].view.wire_ns = 40000;
  note_untimed_wires(f.obs, f.facts, notes);
  EXPECT_TRUE(notes.empty());
}

}  // namespace
}  // namespace culprit
