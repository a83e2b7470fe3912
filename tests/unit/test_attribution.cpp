// Attribution on small hand-built observations and graphs, where the right answer follows
// from the physics by hand.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <map>
#include <string>

#include "analysis/attribution.hpp"
#include "analysis/wait_graph.hpp"

namespace culprit {
namespace {

constexpr uint64_t kComm = 0xF00DF00DF00DF00Dull;  // above 2^63
constexpr uint64_t kSteps = 16;

// A ring over `nodes` x `gpus`, one channel, rank = node*gpus + local; the hop out of each
// node (last local -> next node's first local) is the only network hop.
struct RingBuilder {
  int nodes, gpus;
  Observations obs;

  RingBuilder(int n, int g) : nodes(n), gpus(g) {
    for (int r = 0; r < n * g; ++r) {
      obs.processes.push_back({"node" + std::to_string(r / g), 1000 + r, -1, ""});
      GlobalCommRank c;
      c.comm_hash = kComm;
      c.rank = r;
      c.process = static_cast<uint32_t>(r);
      c.newest_seq = 19;
      c.has_collective = true;
      obs.comm_ranks.push_back(c);
    }
  }
  int ranks() const { return nodes * gpus; }
  // Per-step phases in microseconds of the network hop leaving node `node`.
  void hop(int node, double sgw, double spw, double sw, double rw, double rfw, double rgw) {
    EdgeSummary e;
    e.key.comm_hash = kComm;
    e.key.src_rank = node * gpus + gpus - 1;
    e.key.dst_rank = ((node + 1) % nodes) * gpus;
    e.key.channel = 0;
    double us[kPhaseCount] = {sgw, spw, sw, rw, rfw, rgw};
    for (int p = 0; p < kPhaseCount; ++p) e.phase_ns[p] = static_cast<uint64_t>(us[p] * 1000 * kSteps);
    e.send_steps = e.recv_steps = kSteps;
    e.send_ops = e.recv_ops = 1;
    e.send_bytes = e.recv_bytes = kSteps * 524288;
    obs.edges.push_back(e);
  }
  void kernel_late(int rank, double mean_us, uint32_t samples = 20) {
    obs.comm_ranks[static_cast<size_t>(rank)].kernel_late_sum_ns = static_cast<int64_t>(mean_us * 1000 * samples);
    obs.comm_ranks[static_cast<size_t>(rank)].kernel_samples = samples;
  }
  // Every hop with the phases `others`, except node `special`'s with `phases`.
  void hops(int special, const std::array<double, kPhaseCount>& phases, const std::array<double, kPhaseCount>& others) {
    for (int node = 0; node < nodes; ++node) {
      const auto& p = node == special ? phases : others;
      hop(node, p[0], p[1], p[2], p[3], p[4], p[5]);
    }
  }
  // The hop's wire: busy time per step after the first completion, and shortest SendWait.
  void wire(int node, double busy_us, double shortest_us) {
    EdgeSummary& e = obs.edges.at(static_cast<size_t>(node));
    e.send_wire_steps = kSteps - 1;
    e.send_wire_busy_ns = static_cast<uint64_t>(busy_us * 1000 * (kSteps - 1));
    e.send_wait_min_ops = 1;
    e.send_wait_min_sum_ns = static_cast<uint64_t>(shortest_us * 1000);
  }
  // Own work between kernels (KernelCh clocks), the same for every rank unless set.
  void gaps(double mean_us, double period_us, uint32_t samples = 20) {
    for (GlobalCommRank& c : obs.comm_ranks) gap(c.rank, mean_us, period_us, samples);
  }
  void gap(int rank, double mean_us, double period_us, uint32_t samples = 20) {
    GlobalCommRank& c = obs.comm_ranks.at(static_cast<size_t>(rank));
    c.gap_sum_ns = static_cast<uint64_t>(mean_us * 1000 * samples);
    c.gap_period_sum_ns = static_cast<uint64_t>(period_us * 1000 * samples);
    c.gap_samples = samples;
  }
  void all_kernels_sampled() {
    for (int r = 0; r < ranks(); ++r)
      if (!obs.comm_ranks[static_cast<size_t>(r)].kernel_samples) kernel_late(r, (r % 3) * 2.0);
  }
};

int deepest_chain(const Attribution& a, uint32_t root) {
  int depth = 0;
  for (const ProcessRow& p : a.processes)
    if (p.attributed_root == root) depth = std::max(depth, p.chain_depth);
  return depth;
}

TEST(Attribution, SlowLinkBetweenHealthyEndsIsNamedWithItsPeer) {
  RingBuilder ring(4, 2);
  // Hop out of node 1 (rank 3 -> 4) is slow: its sender's GPU is ready, SendWait is huge;
  // everyone else starves for data.
  for (int node = 0; node < 4; ++node) {
    if (node == 1) ring.hop(node, 2, 4, 2600, 2650, 1.5, 2);
    else ring.hop(node, 2600, 0.2, 50, 2650, 1.5, 2);
  }
  Attribution a = attribute(ring.obs);
  ASSERT_EQ(a.culprits.size(), 1u);
  EXPECT_EQ(a.culprits[0].process_id, 3u);
  EXPECT_EQ(a.culprits[0].culprit_class, "network_link");
  EXPECT_EQ(a.culprits[0].peer_process_id, 4);
  EXPECT_EQ(a.culprits[0].victims, 7u);
  EXPECT_GE(deepest_chain(a, 3), 3);  // victims several hops downstream still reach it
  bool flagged = false;
  for (const EdgeRow& e : a.edges) flagged |= e.src_rank == 3 && e.verdict == "slow_link";
  EXPECT_TRUE(flagged);
}

TEST(Attribution, SlowQueuePairNamesTheWireEvenWhenSendWaitIsInconclusive) {
  RingBuilder ring(4, 2);
  for (int node = 0; node < 4; ++node) ring.hop(node, 270, 0.2, 65, 335, 1.5, 2);
  // probing's nccl.net_qp: every sender's queue pair moves 1 GB in 1 MB sends, 100 of which
  // found it idle; rank 3's idle sends took 3x as long as the others' 100 us.
  const auto queue_pairs = [&](double rank3_slower) {
    ring.obs.qps.clear();
    for (int node = 0; node < 4; ++node) {
      QpObservation q;
      q.process = static_cast<uint32_t>(node * 2 + 1);
      q.qp_num = static_cast<uint32_t>(100 + node);
      q.count = 1000;
      q.bytes = 1000000000;
      q.wr_length = 1000000;
      q.idle_sends = 100;
      const double idle_ns = 100000 * (node == 1 ? rank3_slower : 1.0 + 0.01 * node);
      q.idle_log_ns_sum = 100 * std::log(idle_ns);
      ring.obs.qps.push_back(q);
    }
  };
  queue_pairs(3.0);
  Attribution a = attribute(ring.obs);
  ASSERT_EQ(a.culprits.size(), 1u);
  EXPECT_EQ(a.culprits[0].process_id, 3u);
  EXPECT_EQ(a.culprits[0].culprit_class, "network_link");
  EXPECT_EQ(a.culprits[0].peer_process_id, 4);

  // Within the spread links of one kind show (10 %), nobody.
  queue_pairs(1.04);
  EXPECT_TRUE(attribute(ring.obs).culprits.empty());
}

TEST(Attribution, SaturatedHealthyLinkIsNotASlowLink) {
  RingBuilder ring(4, 2);
  // Catching up after a stall, one link runs saturated (8 sends queued: SendWait = 8 x wire
  // time) while the others starve: that is a healthy wire at full speed, not a fault.
  for (int node = 0; node < 4; ++node) {
    if (node == 2) ring.hop(node, 2, 4, 330, 335, 1.5, 2);
    else ring.hop(node, 270, 0.2, 65, 335, 1.5, 2);
  }
  Attribution a = attribute(ring.obs);
  for (const CulpritRow& c : a.culprits) EXPECT_NE(c.culprit_class, "network_link");
}

TEST(Attribution, SlowWireLengthensBothItsBusyTimeAndItsShortestSend) {
  RingBuilder ring(4, 2);
  ring.hops(1, {2, 4, 400, 450, 1.5, 2}, {400, 0.2, 50, 450, 1.5, 2});
  for (int node = 0; node < 4; ++node) ring.wire(node, node == 1 ? 380 : 42, node == 1 ? 390 : 49);
  Attribution a = attribute(ring.obs);
  ASSERT_EQ(a.culprits.size(), 1u);
  EXPECT_EQ(a.culprits[0].process_id, 3u);
  EXPECT_EQ(a.culprits[0].culprit_class, "network_link");
  EXPECT_EQ(a.culprits[0].peer_process_id, 4);
}

TEST(Attribution, QueuedOrCreditPacedSendsOnAHealthyWireAreNoSlowLink) {
  RingBuilder ring(4, 2);
  for (int node = 0; node < 4; ++node) ring.hop(node, 270, 0.2, node == 1 ? 330 : 50, 335, 1.5, 2);
  // Hop 1 carries a backlog: every recorded send queued (its shortest SendWait is long),
  // but the wire completes one chunk per transfer time.
  for (int node = 0; node < 4; ++node) ring.wire(node, 42, node == 1 ? 300 : 49);
  for (const CulpritRow& c : attribute(ring.obs).culprits) EXPECT_NE(c.culprit_class, "network_link");
  // Hop 1 paced one send at a time by credit: each busy step carries latency as well, its
  // shortest send is a healthy one.
  for (int node = 0; node < 4; ++node) ring.wire(node, node == 1 ? 70 : 42, 49);
  for (const CulpritRow& c : attribute(ring.obs).culprits) EXPECT_NE(c.culprit_class, "network_link");
}

TEST(Attribution, LatePostBlamesNobodyWhenTheReceiversOwnWorkIsMeasuredAndInOrder) {
  RingBuilder ring(8, 1);
  // Rank 6 posts its buffers late (its sender waits for credit) but frees them promptly; the
  // other receivers wait for their data, some a little longer than others.
  for (int node = 0; node < 8; ++node) {
    if (node == 5) {
      ring.hop(node, 2, 1600, 49, 52, 1.5, 2);
    } else {
      ring.hop(node, 1630, 0.1, 49, 1675 + 20 * (node % 3), 1.5, 2);
    }
  }
  // Without kernel clocks the late post is the only hint, far beyond the other receivers':
  // rank 6 is named.
  Attribution blind = attribute(ring.obs);
  ASSERT_FALSE(blind.culprits.empty());
  EXPECT_EQ(blind.culprits[0].process_id, 6u);
  // Every GPU's own work measured and alike: rank 6 was elsewhere, not slow.
  ring.gaps(2000, 4000);
  EXPECT_TRUE(attribute(ring.obs).culprits.empty());
  // Its own work 3x longer: it is the straggler, found by its gaps.
  ring.gap(6, 6000, 8000);
  Attribution a = attribute(ring.obs);
  ASSERT_FALSE(a.culprits.empty());
  EXPECT_EQ(a.culprits[0].process_id, 6u);
  EXPECT_EQ(a.culprits[0].culprit_class, "gpu_producer");
}

// Four pipelines of four stages (send/recv-only communicators, one per GPU index): the
// first and last stages make half the NCCL calls of the middle ones for the same work, so
// their mean gap is twice as long. Only a GPU slower than the others of its stage is a
// straggler.
TEST(Attribution, PipelineStagesAreComparedWithinTheirRole) {
  Observations obs;
  const int stages = 4, pipelines = 4;
  for (int node = 0; node < stages; ++node)
    for (int g = 0; g < pipelines; ++g) obs.processes.push_back({"node" + std::to_string(node), 1000 + g, -1, ""});
  const double jitter[16] = {1.00, 0.95, 1.06, 0.98, 1.03, 0.97, 1.05, 0.94,
                             1.02, 0.99, 0.96, 1.04, 1.01, 0.93, 1.07, 1.00};
  auto build = [&](int straggler) {
    obs.comm_ranks.clear();
    for (int node = 0; node < stages; ++node)
      for (int g = 0; g < pipelines; ++g) {
        const int p = node * pipelines + g;
        GlobalCommRank c;
        c.comm_hash = 0x1000 + static_cast<uint64_t>(g);
        c.rank = node;
        c.process = static_cast<uint32_t>(p);
        c.has_collective = false;
        const bool end_stage = node == 0 || node == stages - 1;
        const uint32_t samples = end_stage ? 8 : 16;
        double mean = (end_stage ? 1500.0 : 750.0) * jitter[p] * (p == straggler ? 3.0 : 1.0);
        c.gap_samples = samples;
        c.gap_sum_ns = static_cast<uint64_t>(mean * 1000 * samples);
        c.gap_period_sum_ns = static_cast<uint64_t>(2.0 * mean * 1000 * samples);
        obs.comm_ranks.push_back(c);
      }
    return attribute(obs);
  };
  EXPECT_TRUE(build(-1).culprits.empty());
  Attribution a = build(6);  // stage 1, pipeline 2
  ASSERT_EQ(a.culprits.size(), 1u);
  EXPECT_EQ(a.culprits[0].process_id, 6u);
  EXPECT_EQ(a.culprits[0].culprit_class, "gpu_producer");
}

// A pipeline of four stages (one send/recv communicator, rank = stage) whose stage 2
// stopped: stage 1 posted a Send to it and stage 3 a Recv from it that it never matched;
// stage 0's Send waits for stage 1, stuck behind. With a world collective after every
// iteration, all four lag there; only the stage that waits for nobody stopped.
TEST(Attribution, StoppedPipelineStageIsTheOneItsPartnersWaitForThatWaitsForNobody) {
  constexpr uint64_t kPp = 0x77;
  auto build = [&](bool with_world) {
    Observations obs;
    for (int s = 0; s < 4; ++s) {
      obs.processes.push_back({"node" + std::to_string(s), 2000 + s, -1, ""});
      GlobalCommRank pp;
      pp.comm_hash = kPp;
      pp.rank = s;
      pp.process = static_cast<uint32_t>(s);
      obs.comm_ranks.push_back(pp);
      if (with_world) {
        // Another pipeline (processes 4..7) reached collective 5 and waits there for these.
        for (int lane = 0; lane < 2; ++lane) {
          GlobalCommRank w;
          w.comm_hash = kComm;
          w.rank = s * 2 + lane;
          w.process = static_cast<uint32_t>(lane == 0 ? s : 4 + s);
          w.has_collective = true;
          w.newest_seq = lane == 0 ? 4 : 5;
          obs.comm_ranks.push_back(w);
        }
      }
    }
    if (with_world)
      for (int s = 0; s < 4; ++s) obs.processes.push_back({"node" + std::to_string(s), 3000 + s, -1, ""});
    auto calls = [&](int rank, int peer, bool send, uint64_t n) {
      P2pCallCount c;
      c.comm_hash = kPp;
      c.rank = rank;
      c.peer = peer;
      c.is_send = send ? 1 : 0;
      c.calls = n;
      c.process = static_cast<uint32_t>(rank);
      obs.p2p_calls.push_back(c);
    };
    calls(0, 1, true, 18);  // stage 0 -> 1: one Send stage 1 has not received yet
    calls(1, 0, false, 17);
    calls(1, 2, true, 17);  // stage 1 -> 2: stage 2 never posted the 17th Recv
    calls(2, 1, false, 16);
    calls(2, 3, true, 16);  // stage 2 -> 3: stage 3 waits for a 17th Send
    calls(3, 2, false, 17);
    calls(3, 2, true, 16);  // backward: matched
    calls(2, 3, false, 16);
    calls(2, 1, true, 16);
    calls(1, 2, false, 16);
    return attribute(obs);
  };
  for (bool with_world : {false, true}) {
    SCOPED_TRACE(with_world ? "pipeline + world" : "pipeline only");
    Attribution a = build(with_world);
    ASSERT_EQ(a.culprits.size(), 1u);
    EXPECT_EQ(a.culprits[0].process_id, 2u);
    EXPECT_EQ(a.culprits[0].culprit_class, "hang");
  }
}

TEST(Attribution, SlowConsumerIsTheReceiverThatWithholdsCredit) {
  RingBuilder ring(4, 2);
  for (int node = 0; node < 4; ++node) {
    if (node == 2) ring.hop(node, 2, 1600, 49, 52, 1.5, 1600);  // rank 5 -> 6: no credit
    else ring.hop(node, 1630, 0.1, 49, 1675, 1.5, 2);
  }
  Attribution a = attribute(ring.obs);
  ASSERT_FALSE(a.culprits.empty());
  EXPECT_EQ(a.culprits[0].process_id, 6u);
  EXPECT_EQ(a.culprits[0].culprit_class, "gpu_consumer");
  EXPECT_EQ(a.culprits.size(), 1u);
}

TEST(Attribution, SlowFlushIsClassedAsFlush) {
  RingBuilder ring(4, 2);
  for (int node = 0; node < 4; ++node) {
    if (node == 0) ring.hop(node, 2, 1140, 49, 52, 1140, 2);  // rank 1 -> 2: flush at 2
    else ring.hop(node, 1150, 0.1, 49, 1195, 1.5, 2);
  }
  Attribution a = attribute(ring.obs);
  ASSERT_EQ(a.culprits.size(), 1u);
  EXPECT_EQ(a.culprits[0].process_id, 2u);
  EXPECT_EQ(a.culprits[0].culprit_class, "flush");
}

TEST(Attribution, InteriorStragglerFoundByKernelClockAndAllRanksAreItsVictims) {
  RingBuilder ring(4, 4);
  for (int node = 0; node < 4; ++node) ring.hop(node, 270, 0.2, 65, 335, 1.5, 2);
  ring.kernel_late(6, 900.0);  // node 1, local 2: no network hop of its own
  ring.all_kernels_sampled();
  Attribution a = attribute(ring.obs);
  ASSERT_EQ(a.culprits.size(), 1u);
  EXPECT_EQ(a.culprits[0].process_id, 6u);
  EXPECT_EQ(a.culprits[0].culprit_class, "gpu_producer");
  EXPECT_EQ(a.culprits[0].victims, 15u);
  // A victim on node 3 reaches the root through node 2 and node 1: at least three hops.
  EXPECT_GE(a.processes[12].chain_depth, 3);
  EXPECT_EQ(a.processes[12].attributed_root, 6);
  // Its chain in /chains starts at the victim and ends at the root.
  std::vector<uint32_t> chain;
  for (const ChainRow& c : a.chains)
    if (c.victim == 12) chain.push_back(c.process_id);
  ASSERT_GE(chain.size(), 4u);
  EXPECT_EQ(chain.front(), 12u);
  EXPECT_EQ(chain.back(), 6u);
}

TEST(Attribution, HealthyNoisyRingHasNoCulprit) {
  RingBuilder ring(8, 2);
  const double noise[8] = {1.00, 0.93, 1.08, 0.97, 1.05, 0.90, 1.10, 1.02};
  for (int node = 0; node < 8; ++node)
    ring.hop(node, 100 * noise[node], 1.5 * noise[7 - node], 230 / noise[node], 332 * noise[(node + 3) % 8],
             1.5, 2.3 * noise[(node + 5) % 8]);
  for (int r = 0; r < ring.ranks(); ++r) ring.kernel_late(r, 30.0 * noise[r % 8] - 30.0);
  Attribution a = attribute(ring.obs);
  EXPECT_TRUE(a.culprits.empty());
  for (const ProcessRow& p : a.processes) EXPECT_EQ(p.role, "healthy");
}

TEST(Attribution, MissingHalfIsKeptAndNoted) {
  RingBuilder ring(4, 2);
  for (int node = 0; node < 4; ++node) ring.hop(node, 100, 1, 230, 330, 1.5, 2);
  ring.obs.edges[1].recv_steps = 0;  // the receiving node sent no data
  for (int p = kRecvWait; p < kPhaseCount; ++p) ring.obs.edges[1].phase_ns[p] = 0;
  Attribution a = attribute(ring.obs);
  EXPECT_EQ(a.edges.size(), 4u);
  ASSERT_FALSE(a.notes.empty());
  EXPECT_NE(a.notes[0].find("one end only"), std::string::npos);
}

TEST(WaitGraph, CycleCollapsesAndTheStrongestEvidenceIsTheRoot) {
  // 0 -> 1 -> 2 -> 0 (a ring of waits), 3 -> 0. Evidence on 1 only.
  std::vector<WaitEdge> edges = {{0, 1, 5, ""}, {1, 2, 5, ""}, {2, 0, 5, ""}, {3, 0, 1, ""}};
  std::vector<RootCandidate> c(4);
  c[1].evidence_ns = 100;
  std::vector<uint32_t> roots = find_roots(4, edges, c, 1.0);
  ASSERT_EQ(roots.size(), 1u);
  EXPECT_EQ(roots[0], 1u);
}

TEST(WaitGraph, SinkWithoutEvidenceIsNoRootAndEvidenceUpstreamOfASinkIsExplained) {
  // 0 -> 1 -> 2; evidence on 1 and 2: 1 waits on 2, so 2 is the root; no evidence on 4.
  std::vector<WaitEdge> edges = {{0, 1, 5, ""}, {1, 2, 5, ""}, {3, 4, 5, ""}};
  std::vector<RootCandidate> c(5);
  c[1].evidence_ns = 50;
  c[2].evidence_ns = 10;
  std::vector<uint32_t> roots = find_roots(5, edges, c, 1.0);
  ASSERT_EQ(roots.size(), 1u);
  EXPECT_EQ(roots[0], 2u);
}

TEST(WaitGraph, AWaitOnlyOnSinksWithoutEvidenceExplainsNothing) {
  // 1 has evidence (a slow flush) and its credit wait was explained as backpressure from 2,
  // which shows nothing and waits on 3, which shows nothing either: nothing the data sees
  // stands behind 1, so 1 is the root. 4 waits on 1. 5 -> 6 are evidence-less throughout.
  std::vector<WaitEdge> edges = {{1, 2, 5, ""}, {2, 3, 5, ""}, {4, 1, 5, ""}, {5, 6, 5, ""}};
  std::vector<RootCandidate> c(7);
  c[1].evidence_ns = 50;
  std::vector<uint32_t> roots = find_roots(7, edges, c, 1.0);
  ASSERT_EQ(roots.size(), 1u);
  EXPECT_EQ(roots[0], 1u);
  // A seen sink behind it still wins: evidence on 3 makes 3 the root and 1 its victim.
  c[3].evidence_ns = 10;
  roots = find_roots(7, edges, c, 1.0);
  ASSERT_EQ(roots.size(), 1u);
  EXPECT_EQ(roots[0], 3u);
  // Below min_evidence_ns evidence counts as none: 3 is blind again.
  roots = find_roots(7, edges, c, 20.0);
  ASSERT_EQ(roots.size(), 1u);
  EXPECT_EQ(roots[0], 1u);
}

TEST(WaitGraph, VictimsGoToTheNearestRootWithTheirPath) {
  // Flow: 0 <- 1 <- 2 <- 3 <- 4 (each depends on the previous), roots 0 and 4 is not a root.
  std::vector<WaitEdge> flow = {{1, 0, 1, ""}, {2, 1, 1, ""}, {3, 2, 1, ""}, {4, 3, 1, ""}, {5, 6, 1, ""}};
  GraphVerdict v = attribute_to_roots(7, flow, {0, 3});
  EXPECT_EQ(v.attributed_root[1], 0);
  EXPECT_EQ(v.attributed_root[2], 0);
  EXPECT_EQ(v.attributed_root[4], 3);
  EXPECT_EQ(v.attributed_root[5], -1);
  EXPECT_EQ(chain_of(v, 2), (std::vector<uint32_t>{2, 1, 0}));
  EXPECT_EQ(chain_of(v, 4), (std::vector<uint32_t>{4, 3}));
  EXPECT_EQ(chain_of(v, 0), (std::vector<uint32_t>{0}));
  EXPECT_TRUE(chain_of(v, 5).empty());
}

}  // namespace
}  // namespace culprit
