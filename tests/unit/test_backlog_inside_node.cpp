// backlog_inside_node: a network receive held behind a backlog on its node is its node's slow
// consumption, though its quickest step is as quick as anyone's.
#include <gtest/gtest.h>

#include <initializer_list>
#include <utility>
#include <vector>

#include "analysis/backlog_inside_node.hpp"
#include "pass_fixtures.hpp"

namespace culprit {
namespace {

constexpr uint64_t kComm = 0xb10cull;
constexpr uint64_t kSteps = 16;
constexpr double kCycleNs = 45'000;  // a step on the wire

// Six network receives of a tree, one per receiver (process i + 1 sends to i). Receiver 1, the
// entry of a node of six GPUs whose fourth consumes 4.3x slowly, holds 469 us a step, its
// peers 2-40 us. Every receiver's quickest step took 2 us: the entry's first steps of each
// collective filled the buffers after it.
struct Tree {
  Observations obs;
  std::vector<EdgeFacts> facts;
  std::vector<EdgeView> views;
  Tree() {
    test::add_collective_processes(obs, kComm, {"n0", "n1", "n2", "n3", "n4", "n5", "n6"});
    const double hold_us[] = {2.3, 469.5, 39.5, 30.0, 2.3, 2.4};
    for (uint32_t i = 0; i < 6; ++i) {
      test::add_connection(obs, facts, kComm, i + 1, i, 0, kSteps);
      EdgeSummary& e = obs.edges.back();
      e.phase_ns[kRecvGpuWait] = static_cast<uint64_t>(hold_us[i] * 1000 * kSteps);
      e.recv_ops = e.send_ops = 1;
      e.recv_gpu_wait_min_ops = 1;
      e.recv_gpu_wait_min_ns = 2000;
    }
  }
  // Its lags as an entry, one per collective, each at `ns_per_step` (its pace in that collective).
  void entry_lags(uint32_t process, const std::vector<double>& lags, double ns_per_step = 20'000) {
    for (GlobalCommRank& c : obs.comm_ranks)
      if (c.process == process)
        for (double x : lags) {
          c.entry_lag_sum += x;
          c.entry_lag_sq_sum += x * x;
          c.entry_lag_ns_sum += x * ns_per_step;
          c.entry_lag_ns_sq_sum += x * ns_per_step * x * ns_per_step;
          c.entry_step_ns_sum += ns_per_step;
          c.entry_lag_samples += 1;
        }
  }
  // Its lags where it turns a tree's data back (the root's GPU that meets the child).
  void turn_lags(uint32_t process, const std::vector<double>& lags) {
    for (GlobalCommRank& c : obs.comm_ranks)
      if (c.process == process)
        for (double x : lags) {
          c.loop_lag_sum += x;
          c.loop_lag_sq_sum += x * x;
          c.loop_lag_samples += 1;
        }
  }
  // Eight collectives whose lags spread a tenth of a step about `mean`.
  void steady_lags(uint32_t process, double mean) {
    entry_lags(process, {mean - 0.1, mean, mean + 0.1, mean, mean - 0.05, mean + 0.05, mean, mean});
  }
  // Likewise for several entries: (process, mean lag).
  void steady_lags(std::initializer_list<std::pair<uint32_t, double>> means) {
    for (const auto& [process, mean] : means) steady_lags(process, mean);
  }
  // The facts of connection i after the rule.
  EdgeFacts judge(size_t i) {
    views.clear();
    for (const EdgeSummary& e : obs.edges) views.push_back(view_of(e));
    for (size_t k = 0; k < facts.size(); ++k) facts[k].view = views[k];
    AttributionConfig cfg;
    ReceiverPeers peers(views, cfg);
    EdgeFacts f = facts[i];
    f.view = views[i];
    const ProcessContext context(obs);
    take_hold_behind_backlog(BacklogReadings(obs, facts, context, cfg), peers, kCycleNs, context, i, f);
    return f;
  }
};

TEST(BacklogInsideNode, AnEntryWhoseDataWaitsABufferOnItsNodeIsItsNodesSlowConsumption) {
  Tree tree;
  EXPECT_FALSE(tree.judge(1).slow_consume);  // without lags: its quickest step acquits it
  // Measured: 9.57 +- 0.12 steps over 8 collectives (a slow GPU two after the entry).
  tree.entry_lags(1, {9.4, 9.7, 9.5, 9.8, 9.6, 9.3, 9.7, 9.6});
  const EdgeFacts f = tree.judge(1);
  EXPECT_TRUE(f.slow_consume);
  EXPECT_GT(f.anomaly[kRecvGpuWait], 400'000);
  EXPECT_GT(f.margin[kRecvGpuWait], 1);
}

// Its node's sends wait for credit more than for their data: the data is held beyond the node,
// which fills every buffer of it (up-entries of an LL tree paced by a slow GPU elsewhere read
// 5-25 steps against the down-entries' 2.5).
TEST(BacklogInsideNode, ANodeHeldFromBeyondHasNoBacklogOfItsOwn) {
  Tree tree;
  tree.entry_lags(1, {9.4, 9.7, 9.5, 9.8, 9.6, 9.3, 9.7, 9.6});
  tree.obs.edges[0].phase_ns[kSendPeerWait] = 9'000'000;  // process 1's send to n0
  tree.obs.edges[0].phase_ns[kSendGpuWait] = 1'000'000;
  EXPECT_FALSE(tree.judge(1).slow_consume);
  tree.obs.edges[0].phase_ns[kSendPeerWait] = 1'000'000;  // waiting for its data: held inside
  tree.obs.edges[0].phase_ns[kSendGpuWait] = 9'000'000;
  EXPECT_TRUE(tree.judge(1).slow_consume);
}

TEST(BacklogInsideNode, AHoldLikeItsPeersIsNoSlowConsumptionWhateverTheLag) {
  Tree tree;
  tree.entry_lags(3, {9.4, 9.7, 9.5, 9.8, 9.6, 9.3, 9.7, 9.6});
  EXPECT_FALSE(tree.judge(3).slow_consume);
}

TEST(BacklogInsideNode, AnEntryThatPassesItsDataStraightThroughHoldsForNoGpuOfItsNode) {
  Tree tree;
  tree.entry_lags(1, {0.4, 0.6, 0.5, 0.3, 0.7, 0.5, 0.4, 0.6});  // the passage alone
  EXPECT_FALSE(tree.judge(1).slow_consume);
  Tree noisy;
  noisy.entry_lags(1, {9.0, -2.0, 11.0, 0.5, 7.0});  // not above half a buffer at 1e-3
  EXPECT_FALSE(noisy.judge(1).slow_consume);
}

// A ring of five GPUs per node whose third is 2.78x slow in its own work: every entry's passage
// reads 3.1-3.7 steps, as each GPU takes long over a step. The entry before the slow GPU
// reads 4.26: no buffer waits beyond the straight passage.
TEST(BacklogInsideNode, TheBacklogIsCountedBeyondTheCommunicatorsStraightPassage) {
  Tree tree;
  tree.entry_lags(1, {4.26, 4.25, 4.27, 4.26, 4.26, 4.25, 4.27, 4.26});
  tree.entry_lags(2, {3.67, 3.66, 3.68, 3.67});
  tree.entry_lags(3, {3.10, 3.11, 3.09, 3.10});
  tree.entry_lags(4, {3.38, 3.37, 3.39, 3.38});
  EXPECT_FALSE(tree.judge(1).slow_consume);
  // Above the straight passage by more than half a buffer, it is a backlog.
  Tree held;
  held.entry_lags(1, {12.3, 12.4, 12.2, 12.3, 12.5, 12.3, 12.4, 12.2});
  held.entry_lags(2, {3.67, 3.66, 3.68, 3.67});
  held.entry_lags(3, {3.10, 3.11, 3.09, 3.10});
  EXPECT_TRUE(held.judge(1).slow_consume);
}

// A root's GPU that meets its child turns the child's data back: its lag crosses the node's
// chain up and back, twice the one-way straight passage, plus the backlog. Measured: a 2.88x
// consumer on the top GPU of a root node of five (a tree 10x5x2 under LL, 47 % slower, fresh
// seed 11105) made the turn read 22.1-25.5 steps, the other entries 0.84-0.94: three buffers.
TEST(BacklogInsideNode, ATurnsBacklogIsCountedBeyondTwiceTheStraightPassage) {
  Tree tree;
  tree.turn_lags(1, {22.1, 23.3, 24.2, 24.6, 24.6, 24.6, 24.8, 25.5});
  tree.steady_lags({{2, 0.94}, {3, 0.84}, {4, 0.92}});
  const EntryPassages passages(tree.obs);
  EXPECT_TRUE(passages.reads_turn(1, kComm));
  EXPECT_FALSE(passages.reads_turn(2, kComm));
  ASSERT_TRUE(passages.measured_straight(kComm).has_value());
  EXPECT_NEAR(*passages.measured_straight(kComm), 0.88, 1e-9);  // the lower quartile
  ASSERT_TRUE(passages.backlog_steps(1, kComm).has_value());
  EXPECT_NEAR(*passages.backlog_steps(1, kComm), 24.2125 - 2 * 0.88, 1e-9);
  // Its holds then name it, as an entry's would.
  EXPECT_TRUE(tree.judge(1).slow_consume);
  // The backlog alone is judged against one-way entries only: a turn is no such lag.
  EXPECT_FALSE(passages.backlog_above_all(1, kComm).has_value());
  // A turn that crosses the chain straight (the slow GPU right after it) has no backlog; but a
  // straight turn is not known closely enough to say that none waits after it (a turn that holds
  // its slots may read as long).
  Tree straight;
  straight.turn_lags(1, {1.75, 1.8, 1.7, 1.78, 1.72, 1.76});
  straight.steady_lags({{2, 0.94}, {3, 0.84}, {4, 0.92}});
  EXPECT_FALSE(EntryPassages(straight.obs).backlog_steps(1, kComm).has_value());
  EXPECT_FALSE(EntryPassages(straight.obs).no_backlog_after(1, kComm));
}

// Each estimate of a straight turn errs long (a backlog only lengthens a passage), so the least
// stands: in a tree of three nodes of two GPUs paced by a 3.04x consumer under LL (fresh seed
// 11115) the entries read 2.3 steps and more, the other tree's root turned its data in 0.44-1.73,
// and the consumer's root turned it in 0.43-0.54, the GPU after it slow. Against twice the
// entries' passage the turn read as holding its slots.
TEST(BacklogInsideNode, AnotherRootsTurnSetsTheStraightTurnWhereItIsShorter) {
  Tree tree;
  tree.turn_lags(1, {0.43, 0.46, 0.46, 0.47, 0.47, 0.47, 0.52, 0.54});
  tree.turn_lags(4, {0.44, 0.47, 0.47, 0.48, 0.50, 1.45, 1.57, 1.73});
  tree.steady_lags({{2, 2.3}, {3, 2.4}});
  const EntryPassages passages(tree.obs);
  EXPECT_FALSE(passages.backlog_steps(1, kComm).has_value());
  EXPECT_FALSE(passages.no_backlog_after(1, kComm));  // never said of a turn, whatever its reference
  ASSERT_TRUE(passages.straight_turn(1, kComm).has_value());
  EXPECT_NEAR(*passages.straight_turn(1, kComm), 0.88875, 1e-9);  // the other root's mean
  // Nor is the turn of a node held from beyond, whose buffers fill whatever its GPUs do (the
  // other root of a tree of two nodes, whose sends waited on the consumer's node, turned its data
  // in 16-33 steps, fresh seed 11127), or of the same node, which the slow GPU may hold.
  const NodesHeldFromBeyond held = {{tree.obs.processes[4].host, kComm}};
  EXPECT_NEAR(*EntryPassages(tree.obs, held).straight_turn(1, kComm), 2 * 2.325, 1e-9);
  tree.obs.processes[4].host = tree.obs.processes[1].host;
  EXPECT_NEAR(*EntryPassages(tree.obs).straight_turn(1, kComm), 2 * 2.325, 1e-9);
}

// A turn whose lags wander by more than a quarter of a buffer carries the queue of the way down,
// which crosses the slow GPU again at its own pace: a 4.76x consumer two GPUs up the chain of a
// root of six (a tree 4x6x2, 17 % slower, fresh seed 11115) read 12.6-25.8 steps.
TEST(BacklogInsideNode, ATurnWhoseLagsWanderIsNotRead) {
  Tree tree;
  tree.turn_lags(1, {12.55, 12.90, 13.43, 14.64, 14.81, 17.70, 18.18, 25.75});
  tree.steady_lags({{2, 0.2}, {3, 0.5}, {4, 1.26}, {5, 1.9}});
  const EntryPassages passages(tree.obs);
  EXPECT_FALSE(passages.straight_turn(1, kComm).has_value());
  EXPECT_FALSE(passages.backlog_steps(1, kComm).has_value());
  EXPECT_FALSE(passages.reads_turn(1, kComm));
}

// With fewer than two entries to measure the straight passage by, and no other root's turn, a
// turn is not read: the table's passage (0) is one way's, and twice an unknown passage may be a
// whole buffer (an LL tree of eight GPUs a node crosses a chain in about 4.3 steps).
TEST(BacklogInsideNode, ATurnWithoutAMeasuredStraightPassageIsNotRead) {
  Tree tree;
  tree.turn_lags(1, {22.1, 23.3, 24.2, 24.6, 24.6, 24.6, 24.8, 25.5});
  tree.steady_lags(2, 0.94);
  const EntryPassages passages(tree.obs);
  EXPECT_FALSE(passages.measured_straight(kComm).has_value());
  EXPECT_FALSE(passages.backlog_steps(1, kComm).has_value());
  EXPECT_FALSE(passages.no_backlog_after(1, kComm));
}

// An LL tree paced by a 1.81x consumer: three up-entries held from beyond their nodes read
// 36-39 steps, the down-entries 1.7-1.8. The straight passage is the bottom of the lags, so
// the consumer's entry at 9.6 carries a backlog (a median, 6.5 with its node's other entry,
// hid it).
TEST(BacklogInsideNode, EntriesHeldFromBeyondTheirNodeDoNotSetTheStraightPassage) {
  Tree tree;
  tree.steady_lags({{1, 9.6}, {0, 6.5}, {2, 36.8}, {3, 36.4}, {4, 38.6}, {5, 1.65}, {6, 1.75}});
  EXPECT_TRUE(tree.judge(1).slow_consume);
}

// Entries that hold their slots (a slow flush's node: -31 to -2 steps) pass nothing on: they
// do not set the straight passage, which would give a healthy entry at 2.7 a backlog.
TEST(BacklogInsideNode, EntriesThatHoldTheirSlotsAreNoPassage) {
  Tree tree;
  tree.steady_lags({{1, 2.73}, {0, -31.2}, {2, -19.7}, {3, -5.36}, {4, -2.12}, {5, 0.31}, {6, 0.38}});
  EXPECT_FALSE(tree.judge(1).slow_consume);
}

// A tree node of four GPUs (1-4 on nodeB) whose GPU 3 is 2.51x slow in its own work: a backlog
// after entry 1 is GPU 3's, which frees its slots late as a slow consumer would. A late GPU of
// another node, or of the node but outside the communicator, is no cause.
TEST(BacklogInsideNode, ABacklogWaitsOnTheNodesGpuLateByItsOwnWork) {
  Observations obs;
  test::add_collective_processes(obs, kComm, {"nodeA", "nodeB", "nodeB", "nodeB", "nodeB", "nodeC"});
  obs.processes.push_back({"nodeB", 200, 6, ""});  // process 6: on nodeB, in no communicator of these
  const ProcessContext context(obs);
  std::vector<double> late_ns(7, 0);
  EXPECT_FALSE(late_gpu_behind(context, late_ns, 1, kComm).has_value());
  late_ns[5] = 9e6;
  late_ns[6] = 9e6;
  EXPECT_FALSE(late_gpu_behind(context, late_ns, 1, kComm).has_value());
  late_ns[3] = 5e7;
  late_ns[2] = 1e6;
  EXPECT_EQ(late_gpu_behind(context, late_ns, 1, kComm), 3u);
  EXPECT_FALSE(late_gpu_behind(context, late_ns, 1, 0xdeadull).has_value());
}

// A tree's only interior node (a tree 4x8x2 under LL128 whose GPU 6 after the entry consumes
// 4.36x slowly, 92 % slower; fresh seed 11023): the entry holds like its peers (its buffers
// after it take each collective's 16 steps whole), but its data waited 39.02 +- 1.07 steps on
// its node, the other entries' 0.27-0.29. A backlog a buffer above every other entry's is the
// node's slow consumption by itself: its cost is those steps at the entry's pace.
TEST(BacklogInsideNode, ABacklogABufferAboveEveryOtherEntryIsSlowConsumptionWithoutPeers) {
  auto interior = [](double highest_other) {
    Tree tree;
    tree.entry_lags(3, {38.1, 40.2, 37.5, 39.9, 41.0, 36.8, 39.3, 39.4});
    tree.steady_lags(0, 0.27);
    tree.steady_lags(4, 0.28);
    tree.steady_lags(5, highest_other);
    return tree;
  };
  Tree tree = interior(0.29);
  const LagSummary own = summarize(312.2, 12198.0, 8);
  const EdgeFacts f = tree.judge(3);
  EXPECT_TRUE(f.slow_consume);
  EXPECT_TRUE(f.behind_backlog);
  // Over the straight passage (the lower quartile of the others, 0.275), at 20 us a step, over
  // its 8 samples, spread over its 16 receive steps.
  EXPECT_NEAR(f.anomaly[kRecvGpuWait], (own.mean - 0.275) * 20'000 * 8 / kSteps, 1);
  EXPECT_NEAR(f.margin[kRecvGpuWait], (own.mean - 0.29) / (8 + noise_at_tail(own)), 1e-9);
  EXPECT_GT(f.margin[kRecvGpuWait], 3);
  // Another entry within a buffer of it (a passage as long): no backlog of its own by this alone.
  EXPECT_FALSE(interior(33.0).judge(3).slow_consume);
  // Unless that entry's node is held from beyond (its GPU 5 sends waiting for credit): its
  // buffers fill from beyond whatever its GPUs do, and its lag is no passage. Measured: an LL
  // tree 12x8x4 whose 4.96x consumer sat five GPUs after an up-entry (253 % slower, fresh seed
  // 11105) read 31.6 steps there, 55 at the up-entries of four nodes whose sends waited for
  // credit, and 0.9-2.5 at every other entry; it was named by nobody.
  Tree beside_held = interior(33.0);
  beside_held.obs.edges[4].phase_ns[kSendPeerWait] = 200'000 * kSteps;
  EXPECT_TRUE(beside_held.judge(3).slow_consume);
  // Without two other entries to set it against, nothing.
  Tree alone;
  alone.entry_lags(3, {38.1, 40.2, 37.5, 39.9, 41.0, 36.8, 39.3, 39.4});
  alone.steady_lags(0, 0.27);
  EXPECT_FALSE(alone.judge(3).slow_consume);
}

// The lag of a collective whose pace at the entry was unusual reads long in its own steps: a
// 3.78x consumer five GPUs after the entry of a ring 4x7x1 (31 % slower, fresh seed 11041) read
// 23-27 steps in seven collectives and 68.7 in one at a third of their time per step. Its mean
// in steps, 30.6 +- 5.5, was too noisy at 1e-3; in ns (819-1081 us) a buffer at its mean pace
// stands far below it.
TEST(BacklogInsideNode, ABacklogIsJudgedInNsNotInAnUnusualCollectivesSteps) {
  Tree tree;
  const double lags[] = {26.80, 26.66, 24.15, 25.10, 24.89, 68.72, 24.79, 23.35};
  const double paces[] = {35877, 38569, 44761, 41116, 40218, 11925, 41241, 43202};
  for (int k = 0; k < 8; ++k) tree.entry_lags(3, {lags[k]}, paces[k]);
  tree.steady_lags({{0, 0.54}, {4, 0.25}, {5, 0.61}});
  EXPECT_TRUE(tree.judge(3).slow_consume);
  const LagSummary in_steps = summarize(244.46, 9143.95, 8);
  EXPECT_FALSE(significantly_above(in_steps, 0.61 + 8));
}

// A healthy ring of five GPUs a node under LL128 (fresh seed 11031): the entries' lags ramp
// from 1.35 to 12.29 steps around the ring, each within a buffer of the next highest.
TEST(BacklogInsideNode, LagsThatRampAcrossTheJobSetNoEntryABufferAboveTheOthers) {
  Tree tree;
  tree.steady_lags({{3, 12.29}, {0, 10.51}, {4, 9.14}, {5, 6.0}, {6, 1.35}});
  EXPECT_FALSE(tree.judge(3).slow_consume);
}

// Where another GPU of the entry's node sends the lane's data on with its data ready at once,
// the data passed the node in time, whatever the entry's lags read (lanes.hpp).
TEST(BacklogInsideNode, AnExitWithItsDataReadyAcquitsTheNodeOfABacklog) {
  Tree tree;
  tree.entry_lags(3, {38.1, 40.2, 37.5, 39.9, 41.0, 36.8, 39.3, 39.4});
  tree.steady_lags({{0, 0.27}, {4, 0.28}, {5, 0.29}});
  EXPECT_TRUE(tree.judge(3).slow_consume);
  tree.obs.processes[2].host = "n3";  // process 2 joins the entry's node and sends to n0
  test::add_connection(tree.obs, tree.facts, kComm, 2, 0, 0, kSteps);
  EdgeSummary& exit = tree.obs.edges.back();
  exit.phase_ns[kSendGpuWait] = 1000 * kSteps;
  exit.phase_ns[kSendWait] = 40'000 * kSteps;
  EXPECT_FALSE(tree.judge(3).slow_consume);
  exit.phase_ns[kSendGpuWait] = 300'000 * kSteps;  // waiting for its data: held inside the node
  EXPECT_TRUE(tree.judge(3).slow_consume);
}

}  // namespace
}  // namespace culprit
