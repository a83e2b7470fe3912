// ReceiverPeers: a receiver's held credit, flush and consumption judged against receivers of its own kind.
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <utility>
#include <vector>

#include "analysis/receiver_peers.hpp"

namespace culprit {
namespace {

constexpr uint64_t kComm = 0xC0FFEEull;
constexpr uint64_t kSteps = 10;
constexpr double kCycleNs = 10000;  // the communicator's step scale: 10 us on the wire

// A connection with both halves; phases per step in microseconds.
EdgeSummary conn(int32_t src, int32_t dst, int32_t channel, const std::array<double, kPhaseCount>& us) {
  EdgeSummary e;
  e.key.comm_hash = kComm;
  e.key.src_rank = src;
  e.key.dst_rank = dst;
  e.key.channel = channel;
  for (int p = 0; p < kPhaseCount; ++p) e.phase_ns[p] = static_cast<uint64_t>(us[p] * 1000 * kSteps);
  e.send_steps = e.recv_steps = kSteps;
  e.send_ops = e.recv_ops = 1;
  return e;
}

std::vector<EdgeView> views_of(const std::vector<EdgeSummary>& edges) {
  std::vector<EdgeView> views;
  for (const EdgeSummary& e : edges) views.push_back(view_of(e));
  return views;
}

const std::array<double, kPhaseCount> kQuiet = {5, 1, 10, 5, 1, 1};

// Six single-input receivers of a ring: five robust peers for each.
std::vector<EdgeSummary> ring_of_six() {
  std::vector<EdgeSummary> edges;
  for (int r = 0; r < 6; ++r) edges.push_back(conn(r, (r + 1) % 6, 0, kQuiet));
  return edges;
}

TEST(ReceiverPeers, AReceiverWithholdingCreditStandsOutAmongItsPeers) {
  std::vector<EdgeSummary> edges = ring_of_six();
  edges[2].phase_ns[kSendPeerWait] = 31 * 1000 * kSteps;  // receiver 3 gives credit 30 us late per step
  std::vector<EdgeView> views = views_of(edges);
  AttributionConfig cfg;
  ReceiverPeers peers(views, cfg);
  // Median 1 us, no spread: the excess is 30 us, above the whole step (credit_rel_floor 1).
  EXPECT_DOUBLE_EQ(peers.anomaly(views[2], kSendPeerWait, kCycleNs).ns, 30000);
  for (size_t i : {0u, 1u, 3u, 4u, 5u}) EXPECT_DOUBLE_EQ(peers.anomaly(views[i], kSendPeerWait, kCycleNs).ns, 0);
  EXPECT_FALSE(peers.combining(edges[2].key));
}

TEST(ReceiverPeers, HeldBuffersCountAboveAWholeStepButAFlushAboveAQuarter) {
  std::vector<EdgeSummary> edges = ring_of_six();
  // 8 us more than the peers: under one step (10 us), over a quarter step (2.5 us).
  edges[4].phase_ns[kSendPeerWait] = 9 * 1000 * kSteps;
  edges[4].phase_ns[kRecvGpuWait] = 9 * 1000 * kSteps;
  edges[4].phase_ns[kRecvFlushWait] = 9 * 1000 * kSteps;
  std::vector<EdgeView> views = views_of(edges);
  AttributionConfig cfg;
  ReceiverPeers peers(views, cfg);
  EXPECT_DOUBLE_EQ(peers.anomaly(views[4], kSendPeerWait, kCycleNs).ns, 0);
  EXPECT_DOUBLE_EQ(peers.anomaly(views[4], kRecvGpuWait, kCycleNs).ns, 0);
  EXPECT_DOUBLE_EQ(peers.anomaly(views[4], kRecvFlushWait, kCycleNs).ns, 8000);
  // With held buffers judged at a quarter step too, the same 8 us counts.
  AttributionConfig strict_cfg;
  strict_cfg.credit_rel_floor = strict_cfg.rel_floor;
  ReceiverPeers strict(views, strict_cfg);
  EXPECT_DOUBLE_EQ(strict.anomaly(views[4], kRecvGpuWait, kCycleNs).ns, 8000);
}

TEST(ReceiverPeers, ACombiningReceiversHoldIsExplainedByItsLaterSiblingInput) {
  // Rank 0 is a tree parent: inputs from 1 and 2 on channel 0. It holds the input from 1
  // (RecvGpuWait 50 us, credit withheld 50 us) while the input from 2 arrives 45 us later.
  std::vector<EdgeSummary> edges = {conn(1, 0, 0, {5, 50, 10, 5, 1, 50}), conn(2, 0, 0, {5, 1, 10, 50, 1, 1}),
                                    conn(3, 4, 0, kQuiet), conn(4, 5, 0, kQuiet), conn(1, 0, 1, kQuiet)};
  std::vector<EdgeView> views = views_of(edges);
  AttributionConfig cfg;
  ReceiverPeers peers(views, cfg);
  EXPECT_TRUE(peers.combining(edges[0].key));
  EXPECT_TRUE(peers.combining(edges[1].key));
  EXPECT_FALSE(peers.combining(edges[2].key));
  EXPECT_FALSE(peers.combining(edges[4].key));  // the same pair on another channel: one input there
  // 50 - 45 us explained leaves 5 us: under the whole-step floor.
  EXPECT_DOUBLE_EQ(peers.anomaly(views[0], kRecvGpuWait, kCycleNs).ns, 0);
  EXPECT_DOUBLE_EQ(peers.anomaly(views[0], kSendPeerWait, kCycleNs).ns, 0);

  // The sibling on time: nothing explains the hold, and no other combining receiver is
  // there to compare with, so the whole 50 us stands out (small-sample rule: above 10 us).
  edges[1].phase_ns[kRecvWait] = 5 * 1000 * kSteps;
  views = views_of(edges);
  ReceiverPeers unexplained(views, cfg);
  EXPECT_DOUBLE_EQ(unexplained.anomaly(views[0], kRecvGpuWait, kCycleNs).ns, 50000);
  EXPECT_DOUBLE_EQ(unexplained.anomaly(views[0], kSendPeerWait, kCycleNs).ns, 50000);
  EXPECT_DOUBLE_EQ(unexplained.anomaly(views[1], kRecvGpuWait, kCycleNs).ns, 0);
}

TEST(ReceiverPeers, WithFewPeersAHoldItsLaterSiblingInputExplainsIsNoBar) {
  // A simulated tree 4x8x2 under LL128 (us per step, fresh seed 11159): the GPU after rank 15
  // on its node consumes 4.38x slowly, and rank 15 holds both of its network inputs 1639 us a
  // step. Rank 23, the other combining receiver, holds one input as long, but only because
  // its other input arrives 1660 us later, behind rank 15's node. Read whole, that hold hid
  // rank 15 (named by nobody, 80 % slower). Two peers: each is a bar rank 15's hold must clear.
  const std::vector<EdgeSummary> edges = {
      conn(0, 15, 1, {2.3, 1629, 55, 58, 0, 1639}), conn(16, 15, 1, {2.4, 1628, 57, 60, 0, 1638}),
      conn(8, 23, 0, {1664, 0, 56.6, 1718, 0, 2.5}), conn(24, 23, 0, {2.5, 1639, 55.7, 58.7, 0, 1662})};
  std::vector<EdgeView> views = views_of(edges);
  AttributionConfig cfg;
  ReceiverPeers peers(views, cfg);
  // Rank 23's explained hold leaves 1662 - (1718 - 58.7) = 2.7 us, its loudest input. Rank 15
  // stands above that by its own holds less their own explained part (2 us on the first input).
  EXPECT_NEAR(peers.anomaly(views[0], kRecvGpuWait, kCycleNs).ns, (1639 - 2 - 2.7) * 1000, 1);
  EXPECT_NEAR(peers.anomaly(views[1], kRecvGpuWait, kCycleNs).ns, (1638 - 2.7) * 1000, 1);
  for (size_t i : {2u, 3u}) EXPECT_DOUBLE_EQ(peers.anomaly(views[i], kRecvGpuWait, kCycleNs).ns, 0) << i;
  // Rank 23's other input on time: its hold is its own, and rank 15 no longer stands out.
  std::vector<EdgeSummary> unexplained = edges;
  unexplained[2].phase_ns[kRecvWait] = static_cast<uint64_t>(58.7 * 1000 * kSteps);
  views = views_of(unexplained);
  ReceiverPeers alike(views, cfg);
  EXPECT_DOUBLE_EQ(alike.anomaly(views[0], kRecvGpuWait, kCycleNs).ns, 0);
}

TEST(ReceiverPeers, ReplicatedPipelinesAreOneKindAndTheirStagesNeverCombine) {
  // Four pipelines of four stages (a send/recv communicator each), forward and backward
  // connections on two channels: a middle stage receives from both neighbours on each. Stage 2 of
  // pipeline 0 flushes 40 us per step on both of its inputs. Within its own pipeline it is
  // half of the middle stages' inputs and would not stand out; among the four pipelines'
  // receivers it does. Its two inputs are not combined.
  std::vector<EdgeSummary> edges;
  std::map<uint64_t, int32_t> p2p;
  WireGroups replicas;  // as wire_groups_of maps them: one kind, size and chunk
  for (uint64_t pipeline = 0; pipeline < 4; ++pipeline) {
    const uint64_t comm = 0x9000 + pipeline;
    p2p[comm] = 4;
    replicas[comm] = 0x9000;
    for (int32_t stage = 0; stage < 3; ++stage)
      for (auto [src, dst] : {std::pair{stage, stage + 1}, std::pair{stage + 1, stage}})
        for (int32_t channel = 0; channel < 2; ++channel) {
          EdgeSummary e = conn(src, dst, channel, kQuiet);
          e.key.comm_hash = comm;
          if (pipeline == 0 && dst == 2) e.phase_ns[kRecvFlushWait] = 40 * 1000 * kSteps;
          edges.push_back(e);
        }
  }
  std::vector<EdgeView> views = views_of(edges);
  AttributionConfig cfg;
  ReceiverPeers pooled(views, cfg, p2p, replicas);
  ReceiverPeers per_comm(views, cfg);
  for (size_t i = 0; i < edges.size(); ++i) {
    const bool slow = edges[i].key.comm_hash == 0x9000 && edges[i].key.dst_rank == 2;
    EXPECT_EQ(pooled.anomaly(views[i], kRecvFlushWait, kCycleNs).ns > 0, slow) << i;
    EXPECT_FALSE(pooled.combining(edges[i].key)) << i;
  }
  // Judged per communicator as a tree would be (its stages combining), the slow stage is
  // half of its pipeline's middle-stage inputs; against the other middle stage's alone it
  // still stands out (39 us above the loudest of them).
  const size_t slow_input = 4;  // pipeline 0: 0>1 and 1>0 on both channels, then 1>2
  ASSERT_EQ(edges[slow_input].key.dst_rank, 2);
  EXPECT_DOUBLE_EQ(per_comm.anomaly(views[slow_input], kRecvFlushWait, kCycleNs).ns, 39000);
  EXPECT_TRUE(per_comm.combining(edges[slow_input].key));
}

TEST(ReceiverPeers, DataParallelPairsAreJudgedWithTheirReplicas) {
  // Four data-parallel pairs (a collective communicator each, ranks 0 and 1) over three
  // channels. Rank 1 of pair 0 consumes 40 us late per step on all its inputs: half of its
  // pair's connections. Among the four pairs' receivers it stands out; within its pair alone
  // too, against its partner's connections (its own are no reference for it).
  std::vector<EdgeSummary> edges;
  WireGroups replicas;
  for (uint64_t pair = 0; pair < 4; ++pair) {
    const uint64_t comm = 0xD000 + pair;
    replicas[comm] = 0xD000;
    for (auto [src, dst] : {std::pair{0, 1}, std::pair{1, 0}})
      for (int32_t channel = 0; channel < 3; ++channel) {
        EdgeSummary e = conn(src, dst, channel, kQuiet);
        e.key.comm_hash = comm;
        if (pair == 0 && dst == 1) e.phase_ns[kRecvGpuWait] = 41 * 1000 * kSteps;
        edges.push_back(e);
      }
  }
  std::vector<EdgeView> views = views_of(edges);
  AttributionConfig cfg;
  ReceiverPeers pooled(views, cfg, {}, replicas);
  ReceiverPeers per_comm(views, cfg);
  for (size_t i = 0; i < edges.size(); ++i) {
    const bool slow = edges[i].key.comm_hash == 0xD000 && edges[i].key.dst_rank == 1;
    EXPECT_EQ(pooled.anomaly(views[i], kRecvGpuWait, kCycleNs).ns > 0, slow) << i;
  }
  EXPECT_DOUBLE_EQ(per_comm.anomaly(views[0], kRecvGpuWait, kCycleNs).ns, 40000);  // 0xD000: 0 -> 1, channel 0
  EXPECT_DOUBLE_EQ(per_comm.anomaly(views[3], kRecvGpuWait, kCycleNs).ns, 0);      // 0xD000: 1 -> 0
}

TEST(ReceiverPeers, AReceiverIsNeverItsOwnReference) {
  // A tree of three GPUs, one per node, on two trees of three channels each: in each tree the
  // middle GPU combines two inputs and the other two receive one input each. GPU 1 consumes
  // every step 1.3 ms late on all six of its inputs, which are half of the single-input
  // receivers' twelve connections: with them in its baseline the median would sit halfway to
  // it and its spread swallow the excess.
  std::vector<EdgeSummary> edges;
  for (int32_t channel = 0; channel < 6; ++channel) {
    const int32_t middle = channel < 3 ? 2 : 0;
    for (int32_t leaf : {0, 1, 2}) {
      if (leaf == middle) continue;
      edges.push_back(conn(leaf, middle, channel, kQuiet));
      edges.push_back(conn(middle, leaf, channel, kQuiet));
    }
  }
  for (EdgeSummary& e : edges) {
    e.recv_gpu_wait_min_ops = 1;
    e.recv_gpu_wait_min_ns = 1000;
    if (e.key.dst_rank == 1) {
      e.phase_ns[kRecvGpuWait] = 1300 * 1000 * kSteps;
      e.recv_gpu_wait_min_ns = 1250 * 1000;
    }
  }
  std::vector<EdgeView> views = views_of(edges);
  AttributionConfig cfg;
  ReceiverPeers peers(views, cfg);
  size_t slow = 0;
  for (size_t i = 0; i < edges.size(); ++i) {
    const double excess = peers.anomaly(views[i], kRecvGpuWait, kCycleNs).ns;
    if (edges[i].key.dst_rank == 1) {
      ++slow;
      EXPECT_FALSE(peers.combining(edges[i].key)) << i;
      EXPECT_DOUBLE_EQ(excess, 1299000) << i;
    } else {
      EXPECT_DOUBLE_EQ(excess, 0) << i;
    }
  }
  EXPECT_EQ(slow, 6u);
}

TEST(ReceiverPeers, WithFewPeersAnOutlierMustStandAboveEveryOtherReceiver) {
  // Three receivers: rank 2 on two channels (one input each), ranks 3 and 4 on one.
  std::vector<EdgeSummary> edges = {conn(1, 2, 0, {5, 31, 10, 5, 1, 1}), conn(1, 2, 1, {5, 31, 10, 5, 1, 1}),
                                    conn(2, 3, 0, {5, 1, 10, 5, 1, 1}), conn(3, 4, 0, {5, 13, 10, 5, 1, 1})};
  std::vector<EdgeView> views = views_of(edges);
  AttributionConfig cfg;
  ReceiverPeers peers(views, cfg);
  // A slow receiver is slow on all of its inputs alike: its other input is no reference,
  // the loudest other receiver (13 us) is. 18 us clears max(rel_floor x 4 x cycle, abs floor) = 10 us.
  EXPECT_DOUBLE_EQ(peers.anomaly(views[0], kSendPeerWait, kCycleNs).ns, 18000);
  EXPECT_DOUBLE_EQ(peers.anomaly(views[1], kSendPeerWait, kCycleNs).ns, 18000);
  EXPECT_DOUBLE_EQ(peers.anomaly(views[2], kSendPeerWait, kCycleNs).ns, 0);
  // 13 us against 31 us elsewhere: below, not above.
  EXPECT_DOUBLE_EQ(peers.anomaly(views[3], kSendPeerWait, kCycleNs).ns, 0);
  // Rank 2 quiet again (1 us): rank 4's 12 us above the loudest other clears the 10 us floor.
  edges[0].phase_ns[kSendPeerWait] = edges[1].phase_ns[kSendPeerWait] = 1 * 1000 * kSteps;
  views = views_of(edges);
  ReceiverPeers quiet(views, cfg);
  EXPECT_DOUBLE_EQ(quiet.anomaly(views[3], kSendPeerWait, kCycleNs).ns, 12000);
  EXPECT_DOUBLE_EQ(quiet.anomaly(views[0], kSendPeerWait, kCycleNs).ns, 0);
}

TEST(ReceiverPeers, WithFewPeersAHoldItsBlockedOutputExplainsIsNoBar) {
  // A simulated tree of three nodes of one GPU under LL (us per step): GPU 1, 2.42x slow to
  // consume, holds its inputs 84-86 us while its sends wait 0-4 us for credit; GPUs 0 and 2
  // hold some of theirs as long, each waiting 87 us for the other's or GPU 1's credit.
  const std::vector<EdgeSummary> edges = {
      conn(0, 1, 1, {1.0, 86.3, 12.3, 15.3, 0, 84.3}), conn(0, 2, 0, {1.0, 87.0, 12.4, 15.4, 0, 85.2}),
      conn(0, 2, 1, {87.1, 0, 12.5, 98.5, 0, 1.1}),    conn(1, 0, 1, {87.3, 0, 12.2, 98.5, 0, 1.0}),
      conn(1, 2, 0, {1.1, 4.0, 33.9, 36.9, 0, 2.7}),   conn(2, 0, 0, {12.0, 31.6, 16.8, 22.5, 0, 74.9}),
      conn(2, 0, 1, {1.1, 87.3, 12.0, 15.0, 0, 85.2}), conn(2, 1, 0, {1.1, 87.8, 12.1, 15.1, 0, 86.2})};
  std::vector<EdgeView> views = views_of(edges);
  AttributionConfig cfg;
  ReceiverPeers peers(views, cfg);
  // GPU 1's inputs stand above the others' holds less their blocked output (none left).
  EXPECT_NEAR(peers.anomaly(views[0], kRecvGpuWait, 12000).ns, 84300, 1);
  EXPECT_NEAR(peers.anomaly(views[7], kRecvGpuWait, 12000).ns, 86200 - 4000, 1);
  // GPUs 0 and 2 held theirs for their blocked output: nobody's consumption.
  for (size_t i : {1u, 2u, 3u, 4u, 5u, 6u}) EXPECT_DOUBLE_EQ(peers.anomaly(views[i], kRecvGpuWait, 12000).ns, 0) << i;
  // A healthy loop of credit: every GPU holds 34 us a step, its sends waiting 36 for credit.
  std::vector<EdgeSummary> loop;
  for (int r = 0; r < 3; ++r) loop.push_back(conn(r, (r + 1) % 3, 0, {1, 36, 12, 15, 0, 34}));
  views = views_of(loop);
  ReceiverPeers healthy(views, cfg);
  for (size_t i = 0; i < views.size(); ++i) EXPECT_DOUBLE_EQ(healthy.anomaly(views[i], kRecvGpuWait, 12000).ns, 0) << i;
}

// A binary tree under LL (us per step, a healthy 26-node data-parallel tree, seed 242621).
// On channel 0 the root meets its one child alone and holds the child's data 31 us while its
// own sends back down wait 33 us for the child's credit (`root_credit_us`); leaves, its peers
// by kind (one input each), hold the broadcast 1 us. On channel 1, the other tree, the root is
// a leaf under rank 1 and holds that broadcast `root_leaf_hold_us`.
std::vector<EdgeSummary> tree_root_and_leaves(double root_credit_us, double root_leaf_hold_us, double leaf_hold_us) {
  std::vector<EdgeSummary> edges = {
      conn(16, 0, 0, {1, 33, 12, 15, 0, 31}), conn(0, 16, 0, {1, root_credit_us, 12, 15, 0, 32}),
      conn(1, 0, 1, {34, 0, 12, 45, 0, root_leaf_hold_us}), conn(0, 1, 1, {1, 33, 12, 15, 0, 1})};
  for (int32_t parent : {2, 6, 10, 14, 18, 22})
    for (int32_t leaf : {parent - 1, parent + 1}) {
      edges.push_back(conn(parent, leaf, 0, {34, 0, 12, 45, 0, leaf == 3 ? leaf_hold_us : 1}));
      edges.push_back(conn(leaf, parent, 0, {1, 33, 12, 15, 0, 31}));
    }
  for (int32_t child : {8, 24}) {  // the root's child combines its own children's data
    edges.push_back(conn(child, 16, 0, {1, 33, 12, 15, 0, 31}));
    edges.push_back(conn(16, child, 0, {34, 0, 12, 45, 0, 1}));
  }
  return edges;
}

TEST(ReceiverPeers, AHoldForCreditFromTheSenderItReturnsTheDataToIsNoConsumption) {
  AttributionConfig cfg;
  const std::vector<EdgeSummary> healthy_tree = tree_root_and_leaves(33, 1, 1);
  std::vector<EdgeView> views = views_of(healthy_tree);
  ReceiverPeers healthy(views, cfg);
  for (size_t i = 0; i < views.size(); ++i) EXPECT_DOUBLE_EQ(healthy.anomaly(views[i], kRecvGpuWait, 12000).ns, 0) << i;
  // The same hold with the child's credit at once is the root's own consumption.
  const std::vector<EdgeSummary> credit_at_once = tree_root_and_leaves(2, 1, 1);
  views = views_of(credit_at_once);
  EXPECT_NEAR(ReceiverPeers(views, cfg).anomaly(views[0], kRecvGpuWait, 12000).ns, 31000 - 2000 - 1000, 1);
  // A root that holds even its quickest input longer than the communicator's receivers
  // typically hold theirs (11 us against 1) is slow to consume: its hold counts whole.
  const std::vector<EdgeSummary> slow_root = tree_root_and_leaves(33, 11, 1);
  views = views_of(slow_root);
  EXPECT_NEAR(ReceiverPeers(views, cfg).anomaly(views[0], kRecvGpuWait, 12000).ns, 31000 - 1000, 1);
  // So is a leaf that holds its one input long: the records show it as they show a root.
  const std::vector<EdgeSummary> slow_leaf_tree = tree_root_and_leaves(33, 1, 80);
  views = views_of(slow_leaf_tree);
  ReceiverPeers slow_leaf(views, cfg);
  EXPECT_NEAR(slow_leaf.anomaly(views[6], kRecvGpuWait, 12000).ns, 80000 - 1000, 1);
  for (size_t i = 0; i < views.size(); ++i) {
    if (i == 6) continue;
    EXPECT_DOUBLE_EQ(slow_leaf.anomaly(views[i], kRecvGpuWait, 12000).ns, 0) << i;
  }
}

TEST(ReceiverPeers, SlowConsumptionMustBeInEveryStep) {
  // Receiver 3 consumes 30 us per step on average, 29 us above its peers: enough by the mean.
  std::vector<EdgeSummary> edges = ring_of_six();
  edges[2].phase_ns[kRecvGpuWait] = 30 * 1000 * kSteps;
  auto with_shortest = [&](double receiver3_us) {
    for (size_t i = 0; i < edges.size(); ++i) {
      edges[i].recv_gpu_wait_min_ops = 1;
      edges[i].recv_gpu_wait_min_ns = static_cast<uint64_t>((i == 2 ? receiver3_us : 1.0) * 1000);
    }
    return views_of(edges);
  };
  AttributionConfig cfg;
  // Its quickest step as quick as anyone's (1 us): it held some slots while waiting for
  // something else (an input over NVLink, an output slot), it is not slow to consume.
  std::vector<EdgeView> views = with_shortest(1.0);
  EXPECT_DOUBLE_EQ(ReceiverPeers(views, cfg).anomaly(views[2], kRecvGpuWait, kCycleNs).ns, 0);
  // Every step 3 us slower than the peers' quickest: above a quarter step (2.5 us), slow.
  views = with_shortest(4.0);
  EXPECT_DOUBLE_EQ(ReceiverPeers(views, cfg).anomaly(views[2], kRecvGpuWait, kCycleNs).ns, 29000);
  // 2 us: under a quarter step, so not in every step.
  views = with_shortest(3.0);
  EXPECT_DOUBLE_EQ(ReceiverPeers(views, cfg).anomaly(views[2], kRecvGpuWait, kCycleNs).ns, 0);
  // Without the every-step guard (a hold behind a backlog on its node) its holds stand out.
  views = with_shortest(1.0);
  EXPECT_DOUBLE_EQ(ReceiverPeers(views, cfg).anomaly(views[2], kRecvGpuWait, kCycleNs, false).ns, 29000);
  // The rule judges consumption only: withheld credit and flush are the mean's alone.
  edges[2].phase_ns[kSendPeerWait] = 31 * 1000 * kSteps;
  views = with_shortest(1.0);
  EXPECT_DOUBLE_EQ(ReceiverPeers(views, cfg).anomaly(views[2], kSendPeerWait, kCycleNs).ns, 30000);
  // Without step times (probing's sums) the mean alone judges.
  for (EdgeSummary& e : edges) e.recv_gpu_wait_min_ops = 0;
  views = views_of(edges);
  EXPECT_DOUBLE_EQ(ReceiverPeers(views, cfg).anomaly(views[2], kRecvGpuWait, kCycleNs).ns, 29000);
}

TEST(ReceiverPeers, SlowConsumptionMustBeInEveryOperation) {
  // Five receive ops of two steps each per connection. Receiver 3 holds 30 us a step on average,
  // 29 us above its peers: enough by the mean.
  std::vector<EdgeSummary> edges = ring_of_six();
  auto with_worst_op = [&](double receiver3_worst_op_us_per_step) {
    for (size_t i = 0; i < edges.size(); ++i) {
      EdgeSummary& e = edges[i];
      e.recv_ops = 5;
      e.recv_worst_op_steps = 2;
      e.recv_worst_op_step_ns = static_cast<uint64_t>((i == 2 ? receiver3_worst_op_us_per_step : 1.0) * 1000);
      e.recv_worst_op_gpu_wait_ns = 2 * e.recv_worst_op_step_ns;
    }
    return views_of(edges);
  };
  edges[2].phase_ns[kRecvGpuWait] = 30 * 1000 * kSteps;
  AttributionConfig cfg;
  // One operation held 146 us a step and the other four 1 us, as quick as the peers: a hold of
  // one operation (a late kernel, a stall), not a GPU slow to consume.
  std::vector<EdgeView> views = with_worst_op(146.0);
  EXPECT_DOUBLE_EQ(views[2].consume_typical_ns, 1000);
  EXPECT_DOUBLE_EQ(ReceiverPeers(views, cfg).anomaly(views[2], kRecvGpuWait, kCycleNs).ns, 0);
  // Every operation slow (31 us a step at worst, 29.75 in the other four): 28.75 us above them.
  views = with_worst_op(31.0);
  EXPECT_DOUBLE_EQ(views[2].consume_typical_ns, 29750);
  EXPECT_DOUBLE_EQ(ReceiverPeers(views, cfg).anomaly(views[2], kRecvGpuWait, kCycleNs).ns, 28750);
  // With two operations one is half of what is known: nothing is left out.
  for (EdgeSummary& e : edges) e.recv_ops = 2;
  views = views_of(edges);
  EXPECT_DOUBLE_EQ(views[2].consume_typical_ns, 30000);
  EXPECT_DOUBLE_EQ(ReceiverPeers(views, cfg).anomaly(views[2], kRecvGpuWait, kCycleNs).ns, 29000);
}

}  // namespace
}  // namespace culprit
