// passage_lag: where along a node's GPUs a channel's data waits, from the entry's slot frees
// and the exit's sends set on one GPU clock.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/nccl_trace_reader.hpp"
#include "local_node_fixture.hpp"
#include "mock/simulator.hpp"
#include "pipeline/local_stage.hpp"
#include "pipeline/passage_lag.hpp"

namespace culprit {
namespace {

constexpr uint64_t kComm = 0x77ull;

HandoffLine handoff(uint32_t process, int32_t rank, bool is_send, int64_t mean_ns) {
  HandoffLine line;
  line.comm_hash = kComm;
  line.seq = 1;
  line.process = process;
  line.rank = rank;
  line.channel = 0;
  line.is_send = is_send ? 1 : 0;
  line.steps = 12;
  line.mean_ns = mean_ns;
  line.step_mean = 85;
  line.ns_per_step = 10'000;  // the channel's pace
  return line;
}

KernelStartRecord kernel(uint32_t process, int32_t rank, uint64_t gpu_ns, int64_t host_ns) {
  KernelStartRecord k;
  k.comm_hash = kComm;
  k.seq = 1;
  k.process = process;
  k.rank = rank;
  k.start_gpu_clk_ns = gpu_ns;
  k.start_host_ns = host_ns;
  return k;
}

// One node of three GPUs of a ring: GPU 0 receives the channel from the network, GPU 2 sends it
// on. Process 0's GPU clock runs 5 ms ahead of its own clock, process 2's 1 ms.
struct Node {
  LocalData data;
  std::vector<GlobalCommRank> ranks;
  Node() {
    test::add_node_gpus(data, ranks, "n0", kComm, 3);
    data.kernel_starts.push_back(kernel(0, 0, 10'000'000, 5'000'000));
    data.kernel_starts.push_back(kernel(2, 2, 10'000'000, 9'000'000));
    // The entry frees step 85's slot at 6.00 ms on the GPU clock; the exit hands step 88 (the
    // same data, three GPUs on) to its proxy at 6.08 ms: eight steps of 10 us later.
    data.handoffs.push_back(handoff(0, 0, false, 1'000'000));
    data.handoffs.push_back(handoff(2, 2, true, 5'050'000));
  }
  void measure() { measure_passage_lags(data, {}, ranks); }
  void measure_in(const std::vector<CommWindow>& windows) { measure_passage_lags(data, windows, ranks); }
};

TEST(PassageLag, TheLagIsMeasuredOnTheGpusClockInStepsOfTheChannelsPace) {
  Node node;
  node.measure();
  EXPECT_EQ(node.ranks[0].entry_lag_samples, 1u);
  EXPECT_NEAR(node.ranks[0].entry_lag_sum, 8.0, 1e-9);
  EXPECT_NEAR(node.ranks[0].entry_lag_sq_sum, 64.0, 1e-6);
  // The same in ns, and the entry's pace.
  EXPECT_NEAR(node.ranks[0].entry_lag_ns_sum, 80'000.0, 1e-3);
  EXPECT_NEAR(node.ranks[0].entry_lag_ns_sq_sum, 6.4e9, 1.0);
  EXPECT_NEAR(node.ranks[0].entry_step_ns_sum, 10'000.0, 1e-9);
  // As the exit: eight steps is the full backlog of one GPU between it and the entry.
  EXPECT_EQ(node.ranks[2].exit_shortfall_samples, 1u);
  EXPECT_NEAR(node.ranks[2].exit_shortfall_sum, 0.0, 1e-9);
  EXPECT_EQ(node.ranks[1].entry_lag_samples + node.ranks[1].exit_shortfall_samples, 0u);
}

TEST(PassageLag, AChannelWithTwoReceivesOnTheNodeIsNoPassage) {
  Node node;
  node.data.handoffs.push_back(handoff(1, 1, false, 1'000'000));  // a tree: up and down
  node.measure();
  EXPECT_EQ(node.ranks[0].entry_lag_samples, 0u);
  EXPECT_EQ(node.ranks[2].exit_shortfall_samples, 0u);
}

TEST(PassageLag, WithoutTheKernelsHostTimeTheClocksCannotBeJoined) {
  Node node;
  node.data.kernel_starts[1].start_host_ns = 0;
  node.measure();
  EXPECT_EQ(node.ranks[0].entry_lag_samples, 0u);
}

TEST(PassageLag, AChannelWhoseExitHasNoHandoffLineGivesNoSample) {
  Node node;
  node.data.handoffs.pop_back();  // probing's sums, or fewer than three steps
  node.measure();
  EXPECT_EQ(node.ranks[0].entry_lag_samples, 0u);
}

TEST(PassageLag, CollectivesBeforeTheWindowAreLeftOut) {
  Node node;
  node.measure_in({{kComm, 2}});
  EXPECT_EQ(node.ranks[0].entry_lag_samples, 0u);
  node.measure_in({{kComm, 1}});
  EXPECT_EQ(node.ranks[0].entry_lag_samples, 1u);
}

// A node of three GPUs at a tree's root: GPU 2 meets the only child, receiving its data and
// sending the result back down to it, on channel 0. Its free of step 85 at 1 ms on its clock.
struct Root {
  LocalData data;
  std::vector<GlobalCommRank> ranks;
  Root() { test::add_node_gpus(data, ranks, "n0", kComm, 3); }
  // Collective `seq`: GPU 2 sends step 85 back `lag` steps after it freed it.
  void collective(uint64_t seq, double lag, bool tree = true) {
    KernelStartRecord k = kernel(2, 2, 10'000'000, 5'000'000);
    k.seq = seq;
    k.tree = tree ? 1 : 0;
    data.kernel_starts.push_back(k);
    HandoffLine receive = handoff(2, 2, false, 1'000'000);
    HandoffLine send = handoff(2, 2, true, 1'000'000 + static_cast<int64_t>(lag * 10'000));
    receive.seq = send.seq = seq;
    data.handoffs.push_back(receive);
    data.handoffs.push_back(send);
  }
  void measure() { measure_passage_lags(data, {}, ranks); }
};

TEST(PassageLag, AtATreesRootTheDataTurnsBackAtTheGpuThatMeetsTheChild) {
  Root root;
  root.collective(1, 4.0);
  root.collective(2, 3.0);
  root.measure();
  EXPECT_EQ(root.ranks[2].loop_lag_samples, 2u);
  EXPECT_NEAR(root.ranks[2].loop_lag_sum, 7.0, 1e-9);
  EXPECT_NEAR(root.ranks[2].loop_lag_sq_sum, 25.0, 1e-9);
  // A turn is no one-way passage.
  EXPECT_EQ(root.ranks[2].entry_lag_samples + root.ranks[2].exit_shortfall_samples, 0u);
}

// A leaf's GPU meets its parent alike, but sends step k up before the parent's step k can come
// down: its lag is negative. One collective that reads so makes the channel no turn.
TEST(PassageLag, ALeafsSendComesBeforeItsFreeAndIsNoTurn) {
  Root leaf;
  leaf.collective(1, -2.8);
  leaf.measure();
  EXPECT_EQ(leaf.ranks[2].loop_lag_samples, 0u);
  Root mixed;
  mixed.collective(1, 4.0);
  mixed.collective(2, -0.5);
  mixed.measure();
  EXPECT_EQ(mixed.ranks[2].loop_lag_samples, 0u);
}

TEST(PassageLag, OnlyATreesDataTurnsBack) {
  Root ring;
  ring.collective(1, 4.0, /*tree=*/false);
  ring.measure();
  EXPECT_EQ(ring.ranks[2].loop_lag_samples, 0u);
}

// The communicator ranks of node `node` of the simulated `spec`, with their lags, read from its
// rendered traces as the tool reads them.
std::vector<GlobalCommRank> node_ranks_read(const std::string& spec, int node) {
  mock::Simulation sim(mock::Scenario::parse(spec));
  const std::string host = "node00" + std::to_string(node);
  LocalData data;
  for (const mock::RenderedFile& f : sim.render_host_nccl_json(node))
    read_nccl_trace_buffer(f.content, f.name, host, data);
  return run_local_stage(data, {}, ReducePath::kCpu).summary.comm_ranks;
}

// The simulator's ring of three nodes of three GPUs: the lags of the middle node, read from its
// rendered traces as the tool reads them, with a slow consumer at each position of its channel.
struct Lags {
  double entry = 0, exit_shortfall = 0;
};

Lags simulated_lags(int position) {
  const std::string base = "topology=ring,nodes=3,gpus=3,channels=1,seqs=6,bytes=16M,jitter=0.05,hetero=0,seed=3";
  mock::Simulation healthy(mock::Scenario::parse(base));
  std::vector<int> order;  // the middle node's GPUs in channel 0's order
  for (int r = 3; r < 6; ++r)
    if (healthy.is_network_hop(healthy.ring_prev(0, r), r)) order.push_back(r);
  while (order.size() < 3) order.push_back(healthy.ring_next(0, order.back()));
  const std::string fault = ",fault=slow_consumer:" + std::to_string(order[position]) + ":4";
  Lags lags;
  for (const GlobalCommRank& r : node_ranks_read(base + fault, 1)) {
    if (r.rank == order[0] && r.entry_lag_samples) lags.entry = r.entry_lag_sum / r.entry_lag_samples;
    if (r.rank == order[2] && r.exit_shortfall_samples)
      lags.exit_shortfall = r.exit_shortfall_sum / r.exit_shortfall_samples;
  }
  return lags;
}

TEST(PassageLag, TheSimulatorsSlowConsumerIsFoundWhereTheDataWaits) {
  const Lags at_entry = simulated_lags(0), in_middle = simulated_lags(1), at_exit = simulated_lags(2);
  // The entry holds each slot a buffer after it passed the data on.
  EXPECT_LT(at_entry.entry, -kSlotsPerConnection / 2.0);
  // The GPU after the entry holds it: the data crosses the node unhindered.
  EXPECT_GT(in_middle.entry, -1.0);
  EXPECT_LT(in_middle.entry, kSlotsPerConnection / 2.0);
  EXPECT_LT(in_middle.exit_shortfall, -kSlotsPerConnection / 2.0);
  // The exit holds it: the buffer of the GPU before it is full.
  EXPECT_GT(at_exit.exit_shortfall, -kSlotsPerConnection / 2.0);
}

// The simulator's tree of three nodes of three GPUs: node 2 is channel 0's interior node, its
// chain of GPUs 6, 7, 8 between its parent (node 0, met by GPU 6) and its child (node 1, met
// by GPU 8). Data from the child crosses it from GPU 8 to GPU 6, data from the parent from 6
// to 8. The lags of its GPUs, with a slow consumer at `rank`.
struct TreeLags {
  double entry[3] = {0, 0, 0}, exit_shortfall[3] = {0, 0, 0};  // of GPUs 6, 7, 8
  uint32_t entry_samples[3] = {0, 0, 0};
};

TreeLags simulated_tree_lags(int rank) {
  const std::string spec = "topology=tree,nodes=3,gpus=3,channels=2,seqs=6,bytes=16M,jitter=0.05,hetero=0,seed=3,"
                           "fault=slow_consumer:" + std::to_string(rank) + ":4";
  TreeLags lags;
  for (const GlobalCommRank& r : node_ranks_read(spec, 2)) {
    const int i = r.rank - 6;
    if (i < 0 || i > 2) continue;
    lags.entry_samples[i] = r.entry_lag_samples;
    if (r.entry_lag_samples) lags.entry[i] = r.entry_lag_sum / r.entry_lag_samples;
    if (r.exit_shortfall_samples) lags.exit_shortfall[i] = r.exit_shortfall_sum / r.exit_shortfall_samples;
  }
  return lags;
}

TEST(PassageLag, ATreesChainIsCrossedBothWays) {
  const TreeLags at_child_end = simulated_tree_lags(8), in_middle = simulated_tree_lags(7),
                 at_parent_end = simulated_tree_lags(6);
  // Both ends of the chain are an entry (one way) and an exit (the other); the middle GPU is
  // neither.
  EXPECT_GT(at_child_end.entry_samples[0], 0u);
  EXPECT_GT(at_child_end.entry_samples[2], 0u);
  EXPECT_EQ(at_child_end.entry_samples[1], 0u);
  // The GPU facing the child holds what it receives well after passing it on (-5.5 steps),
  // and the GPU facing the parent passes its data on. (No backlog builds on the way down: the
  // parent's data comes at the pace the slow GPU let the children's go up.)
  EXPECT_LT(at_child_end.entry[2], -kSlotsPerConnection / 2.0);
  EXPECT_GT(at_child_end.entry[0], -1.0);
  // The middle GPU holds it: the data crosses to it unhindered from either end.
  for (int end : {0, 2}) {
    EXPECT_GT(in_middle.entry[end], -1.0) << end;
    EXPECT_LT(in_middle.entry[end], kSlotsPerConnection / 2.0) << end;
    EXPECT_LT(in_middle.exit_shortfall[end], -kSlotsPerConnection / 2.0) << end;
  }
  // The GPU facing the parent holds what comes from the parent, and the children's data fills
  // every buffer on its way up to it.
  EXPECT_LT(at_parent_end.entry[0], -kSlotsPerConnection / 2.0);
  EXPECT_GT(at_parent_end.exit_shortfall[0], -kSlotsPerConnection / 2.0);
  EXPECT_GT(at_parent_end.entry[2], -1.0);
}

}  // namespace
}  // namespace culprit

namespace culprit {
namespace {

// The simulator's tree of three nodes of three GPUs: node 0 is channel 0's root, its chain 0,
// 1, 2 from the top; GPU 2 meets its only child (node 2). The turn's mean lag at GPU 2 with a
// 4x consumer at `rank` (-100: no turn read). 64 steps a channel: with 16, the buffer before
// the top only half fills (4.3 steps), which the analysis reads as no whole number of buffers.
double simulated_turn_lag(int rank) {
  const std::string spec = "topology=tree,nodes=3,gpus=3,channels=2,seqs=6,bytes=64M,jitter=0.05,hetero=0,seed=3,"
                           "fault=slow_consumer:" + std::to_string(rank) + ":4";
  for (const GlobalCommRank& r : node_ranks_read(spec, 0))
    if (r.rank == 2 && r.loop_lag_samples) return r.loop_lag_sum / r.loop_lag_samples;
  return -100;
}

TEST(PassageLag, ARootsTurnCarriesTheBacklogUpItsChain) {
  const double next = simulated_turn_lag(1), top = simulated_turn_lag(0);
  // The GPU after the turn: the passage up and back alone (0.21 steps); the top, a buffer more
  // (8.14).
  EXPECT_GT(next, 0);
  EXPECT_LT(next, kSlotsPerConnection / 4.0);
  EXPECT_GT(top, next + kSlotsPerConnection * 0.75);
}

}  // namespace
}  // namespace culprit
