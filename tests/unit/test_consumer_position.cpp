// consumer_position: which GPU of a node consumes slowly, from where its channels' data waits
// (the passage lags of pipeline/passage_lag.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "analysis/consumer_position.hpp"
#include "pass_fixtures.hpp"

namespace culprit {
namespace {

constexpr uint64_t kComm = 0x5150ull;

// A ring over two nodes of three GPUs (nodeA: 0 1 2, nodeB: 3 4 5) on one channel: 2 -> 3
// enters nodeB, 3 passes to 4 and 4 to 5 over NVLink (unrecorded), 5 -> 0 leaves it. GPU 3's
// network receives are slow to consume, so the receive explanations named it gpu_consumer.
struct Ring {
  Observations obs;
  std::vector<EdgeFacts> facts;
  std::vector<Evidence> evidence = std::vector<Evidence>(6);
  std::vector<uint32_t> roots{3};

  Ring() {
    test::add_collective_processes(obs, kComm, {"nodeA", "nodeA", "nodeA", "nodeB", "nodeB", "nodeB"});
    test::add_connection(obs, facts, kComm, 2, 3, 0, 10).slow_consume = true;
    test::add_connection(obs, facts, kComm, 5, 0, 0, 10);
    evidence[3].offer(5e6, CulpritClass::kGpuConsumer, std::nullopt, 8.0);
  }
  GlobalCommRank& rank(uint32_t process) {
    for (GlobalCommRank& c : obs.comm_ranks)
      if (c.process == process) return c;
    throw std::out_of_range("no such rank");
  }
  void entry_lags(uint32_t process, const std::vector<double>& lags) {
    for (double x : lags) {
      rank(process).entry_lag_sum += x;
      rank(process).entry_lag_sq_sum += x * x;
      rank(process).entry_lag_samples += 1;
    }
  }
  void exit_shortfalls(uint32_t process, const std::vector<double>& shortfalls) {
    for (double x : shortfalls) {
      rank(process).exit_shortfall_sum += x;
      rank(process).exit_shortfall_sq_sum += x * x;
      rank(process).exit_shortfall_samples += 1;
    }
  }
  std::vector<ConsumerPlacement> place() {
    ProcessContext context(obs);
    return place_slow_consumers(obs, facts, context, evidence, roots);
  }
  // The lags concluded nothing: one placement, with its readings only.
  bool concludes_nothing() {
    const std::vector<ConsumerPlacement> placed = place();
    return placed.size() == 1 && !placed[0].concluded() && !placed[0].readings.empty();
  }
  std::vector<std::string> apply(const std::vector<ConsumerPlacement>& placements) {
    ProcessContext context(obs);
    std::vector<std::string> notes;
    apply_consumer_placements(placements, context, evidence, roots, notes);
    return notes;
  }
};

TEST(ConsumerPosition, AnEntryThatFreesItsSlotsAfterTheExitSentTheDataIsTheSlowConsumer) {
  Ring ring;
  ring.entry_lags(3, {-7.4, -6.9, -7.8, -7.1, -6.6});
  ring.exit_shortfalls(5, {-15.2, -14.8, -15.5, -15.0, -14.9});
  const auto placed = ring.place();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].named, 3u);
  EXPECT_EQ(placed[0].placed, 3u);
  EXPECT_EQ(placed[0].left, 1u);
}

TEST(ConsumerPosition, AnExitWithEveryBufferBeforeItFullIsTheSlowConsumer) {
  Ring ring;
  ring.entry_lags(3, {8.3, 7.9, 8.6, 8.1, 8.0});
  ring.exit_shortfalls(5, {0.3, -0.1, 0.6, 0.1, 0.0});
  const auto placed = ring.place();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].placed, 5u);
  EXPECT_EQ(placed[0].left, 1u);

  const std::vector<std::string> notes = ring.apply(placed);
  EXPECT_EQ(ring.roots, std::vector<uint32_t>{5});
  EXPECT_FALSE(ring.evidence[3].any());
  EXPECT_EQ(ring.evidence[5].culprit_class, CulpritClass::kGpuConsumer);
  EXPECT_DOUBLE_EQ(ring.evidence[5].ns, 5e6);
  EXPECT_DOUBLE_EQ(ring.evidence[5].identified_share, 1.0);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("held by"), std::string::npos);
}

// Two slow consumers of one node: the exit is a root of its own, slower, and the entry's own
// time per gated step stood out (own_holds.hpp), so the entry stays where it is. Were it
// placed on the exit anyway, the exit's stronger evidence would stay.
TEST(ConsumerPosition, AnEntryWhoseOwnHoldsStoodOutStaysAndAStrongerRootKeepsItsEvidence) {
  Ring ring;
  ring.entry_lags(3, {8.3, 7.9, 8.6, 8.1, 8.0});
  ring.exit_shortfalls(5, {0.3, -0.1, 0.6, 0.1, 0.0});
  ring.evidence[5].offer(7e6, CulpritClass::kGpuConsumer, std::nullopt, 12.0);
  ring.roots = {3, 5};
  ProcessContext context(ring.obs);
  EXPECT_TRUE(place_slow_consumers(ring.obs, ring.facts, context, ring.evidence, {3}, {3}).empty());

  const auto placed = place_slow_consumers(ring.obs, ring.facts, context, ring.evidence, {3});
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].placed, 5u);
  ring.apply(placed);
  EXPECT_EQ(ring.roots, std::vector<uint32_t>{5});
  EXPECT_DOUBLE_EQ(ring.evidence[5].ns, 7e6);
  EXPECT_DOUBLE_EQ(ring.evidence[5].margin, 12.0);
}

TEST(ConsumerPosition, FullBuffersBehindAnExitThatWaitsForCreditAreHeldBeyondTheNode) {
  Ring ring;
  ring.entry_lags(3, {-0.5, -0.6, -0.4, -0.5, -0.7, -0.5, -0.4, -0.6});  // too close to call
  ring.exit_shortfalls(5, {0.3, -0.1, 0.6, 0.1, 0.0});
  // GPU 5's sends to nodeA wait for credit (a slow flush on the next node, say) far more than
  // for their data: every buffer of nodeB fills whichever of its GPUs consumes slowly.
  ring.obs.edges[1].phase_ns[kSendPeerWait] = 9'000'000;
  ring.obs.edges[1].phase_ns[kSendGpuWait] = 1'000'000;
  EXPECT_TRUE(ring.concludes_nothing());
  // Waiting for its data instead, the exit is what holds them.
  ring.obs.edges[1].phase_ns[kSendPeerWait] = 1'000'000;
  ring.obs.edges[1].phase_ns[kSendGpuWait] = 9'000'000;
  const auto placed = ring.place();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].placed, 5u);
}

TEST(ConsumerPosition, WhereEveryOtherGpuPassesItsDataOnTheOneLeftIsPlaced) {
  Ring ring;
  // GPU 3 passes its data on (lag about a passage); a second channel enters nodeB at 5, which
  // passes it on too: only 4 is left.
  ring.entry_lags(3, {0.4, 0.1, 0.6, 0.3, 0.2, 0.5, 0.2, 0.3});
  test::add_connection(ring.obs, ring.facts, kComm, 1, 5, 1, 10).slow_consume = true;
  ring.entry_lags(5, {8.2, 8.0, 8.5, 7.9, 8.1});
  ring.exit_shortfalls(5, {-7.7, -7.9, -7.5, -8.0, -7.6});
  const auto placed = ring.place();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].placed, 4u);
  EXPECT_EQ(placed[0].left, 1u);
}

TEST(ConsumerPosition, GpusTheLagsCannotTellApartShareTheScore) {
  Ring ring;
  ring.entry_lags(3, {0.4, 0.1, 0.6, 0.3, 0.2, 0.5, 0.2, 0.3});  // not the entry: 4 or 5
  const auto placed = ring.place();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].left, 2u);
  EXPECT_NE(placed[0].placed, 3u);
  ring.apply(placed);
  EXPECT_DOUBLE_EQ(ring.evidence[placed[0].placed].identified_share, 0.5);
}

// A ring's slow consumer stops last of its node's GPUs in every collective it slows
// (pipeline/chain_places.hpp). Measured: a ring 8x8x2 whose 2.04x consumer cost 34 % stopped
// last in eight collectives of eight (fresh seed 11093).
TEST(ConsumerPosition, InARingTheGpuThatStopsLastEveryTimeIsTheSlowConsumer) {
  Ring ring;
  ring.entry_lags(3, {0.4, 0.1, 0.6, 0.3, 0.2, 0.5, 0.2, 0.3});  // not the entry: 4 or 5
  for (uint32_t p : {3u, 4u, 5u}) ring.rank(p).last_stop_samples = 8;
  ring.rank(4).last_stops = 8;
  std::vector<ConsumerPlacement> placed = ring.place();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].placed, 4u);
  EXPECT_EQ(placed[0].left, 1u);
  // Last in seven collectives of eight: no GPU is placed, the two left share the score.
  ring.rank(4).last_stops = 7;
  ring.rank(5).last_stops = 1;
  placed = ring.place();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].left, 2u);
  // The entry itself last every time is not one of the GPUs left (it passes its data on).
  ring.rank(4).last_stops = 0;
  ring.rank(5).last_stops = 0;
  ring.rank(3).last_stops = 8;
  EXPECT_EQ(ring.place()[0].left, 2u);
}

// The chain from `c`'s GPU (comm ranks, processes here), as its node read it.
void set_chain(GlobalCommRank& c, const std::vector<int32_t>& ranks) {
  std::ranges::copy(ranks, std::begin(c.chain_from));
  c.chain_length = static_cast<uint32_t>(ranks.size());
}

// A tree node of five GPUs (nodeB: 1-5) whose chain, by the order the GPUs end their
// collectives, is 5 4 3 2 1: 1 meets the children and receives their data (its receives slow
// to consume), which leaves at 5. Its lags as the entry: `lags`.
struct TreeNode {
  Observations obs;
  std::vector<EdgeFacts> facts;
  std::vector<Evidence> evidence = std::vector<Evidence>(6);
  explicit TreeNode(const std::vector<double>& lags) {
    test::add_collective_processes(obs, kComm, {"nodeA", "nodeB", "nodeB", "nodeB", "nodeB", "nodeB"});
    test::add_connection(obs, facts, kComm, 0, 1, 0, 10).slow_consume = true;
    test::add_connection(obs, facts, kComm, 5, 0, 0, 10);
    for (GlobalCommRank& c : obs.comm_ranks) {
      if (c.process == 0) continue;
      if (c.process == 1) set_chain(c, {1, 2, 3, 4, 5});
      for (double lag : lags) {
        if (c.process != 1) break;
        c.entry_lag_sum += lag;
        c.entry_lag_sq_sum += lag * lag;
        c.entry_lag_samples += 1;
      }
    }
    evidence[1].offer(5e6, CulpritClass::kGpuConsumer, std::nullopt, 8.0);
  }
  std::vector<ConsumerPlacement> place() const {
    return place_slow_consumers(obs, facts, ProcessContext(obs), evidence, {1});
  }
};

// The entry passes its data on, which then waits two buffers: the slow GPU is three after it.
TEST(ConsumerPosition, TheLagsDistanceAlongTheNodesChainNamesAGpuInsideIt) {
  TreeNode node({16.4, 16.9, 15.8, 16.2, 16.5});
  std::vector<ConsumerPlacement> placed = node.place();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].placed, 4u);
  EXPECT_EQ(placed[0].left, 1u);
  // Where the node's exit waits for credit more than for its data, every buffer of the node
  // fills from beyond whichever GPU is slow (a healthy LL tree: every up-entry 22 steps).
  node.obs.edges[1].phase_ns[kSendPeerWait] = 9'000'000;
  node.obs.edges[1].phase_ns[kSendGpuWait] = 1'000'000;
  EXPECT_EQ(node.place()[0].left, 4u);
  node.obs.edges[1].phase_ns[kSendPeerWait] = 0;
  // Without a chain read (the GPUs' places vary), the GPUs left share the score.
  for (GlobalCommRank& c : node.obs.comm_ranks) c.chain_length = 0;
  placed = node.place();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].left, 4u);
}

// A backlog between two whole buffers says nothing of how far either: a buffer after the
// slow GPU only partly full, or the slow GPU's own queue. Measured: a 3.14x consumer five GPUs
// after the up-entry of a tree 10x8x2 under LL (18 % slower, fresh seed 11105) left a backlog of
// 36.4 steps, 4.55 buffers; rounded, it named the GPU after the slow one at 0.98.
TEST(ConsumerPosition, ABacklogBetweenWholeBuffersSaysNothingOfHowFar) {
  std::vector<ConsumerPlacement> placed = TreeNode({20.2, 19.8, 20.5, 19.9, 20.1}).place();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].left, 4u);
  placed = TreeNode({17.5, 17.7, 17.6, 17.4, 17.8}).place();  // 2.2 buffers: within a quarter
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].placed, 4u);
  EXPECT_EQ(placed[0].left, 1u);
}

// An entry held at all is held behind full buffers up to the slow GPU: with no backlog (its lag
// the passage's, under half a buffer), the slow GPU is the next one. Measured: a 3.95x consumer
// right after the entry of a tree 22x5x2 under LL128 (97 % slower), its entry's lag 0.18 steps.
TEST(ConsumerPosition, WithoutABacklogTheGpuRightAfterTheEntryIsTheSlowOne) {
  std::vector<ConsumerPlacement> placed = TreeNode({0.17, 0.18, 0.19, 0.18, 0.17, 0.19, 0.18, 0.18}).place();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].placed, 2u);
  EXPECT_EQ(placed[0].left, 1u);
  // A lag between no backlog and a buffer's says nothing of how far.
  placed = TreeNode({3.1, 4.2, 5.0, 3.8, 4.4}).place();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].left, 4u);
}

// The root node of a tree (nodeB: 1-5), whose chain, by the order its GPUs end their
// collectives, is 5 4 3 2 1 from its top: 1 meets the only child (nodeA), receives its data
// (its receives slow to consume) and sends the result back down to it. Two other nodes' entries
// (6, 7) pass their data straight on in 0.84-0.94 steps. GPU 1's lags where it turns the
// child's data back: `lags`.
struct RootNode {
  Observations obs;
  std::vector<EdgeFacts> facts;
  std::vector<Evidence> evidence = std::vector<Evidence>(8);
  explicit RootNode(const std::vector<double>& lags) {
    test::add_collective_processes(obs, kComm,
                                   {"nodeA", "nodeB", "nodeB", "nodeB", "nodeB", "nodeB", "nodeC", "nodeD"});
    test::add_connection(obs, facts, kComm, 0, 1, 0, 10).slow_consume = true;
    test::add_connection(obs, facts, kComm, 1, 0, 0, 10);
    for (GlobalCommRank& c : obs.comm_ranks) {
      if (c.process == 1) set_chain(c, {1, 2, 3, 4, 5});
      const std::vector<double> straight = c.process == 6 ? std::vector<double>{0.93, 0.94, 0.92, 0.93}
                                                          : std::vector<double>{0.84, 0.85, 0.83, 0.84};
      for (double lag : c.process >= 6 ? straight : std::vector<double>{}) {
        c.entry_lag_sum += lag;
        c.entry_lag_sq_sum += lag * lag;
        c.entry_lag_samples += 1;
      }
      for (double lag : c.process == 1 ? lags : std::vector<double>{}) {
        c.loop_lag_sum += lag;
        c.loop_lag_sq_sum += lag * lag;
        c.loop_lag_samples += 1;
      }
    }
    evidence[1].offer(5e6, CulpritClass::kGpuConsumer, std::nullopt, 8.0);
  }
  std::vector<ConsumerPlacement> place() const {
    return place_slow_consumers(obs, facts, ProcessContext(obs), evidence, {1});
  }
};

// The turn crosses the chain up and back: twice the straight passage (0.86 one way) plus the
// backlog. Measured: a 2.88x consumer on the top GPU of a root node of five (a tree 10x5x2 under
// LL, 47 % slower, fresh seed 11105) made the turn read 24.2 steps: 2.8 buffers beyond 1.7, the
// slow GPU four up the chain from the GPU that meets the child, the top.
TEST(ConsumerPosition, AtATreesRootTheTurnsBacklogNamesAGpuUpTheChainToItsTop) {
  std::vector<ConsumerPlacement> placed = RootNode({22.1, 23.3, 24.2, 24.6, 24.6, 24.6, 24.8, 25.5}).place();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].placed, 5u);
  EXPECT_EQ(placed[0].left, 1u);
  // Two buffers: three up the chain (a 4.96x consumer of a tree 3x6x2, 212 % slower: 16.5 steps
  // with a straight passage of 0.18).
  placed = RootNode({17.3, 17.6, 17.5, 17.4, 17.8, 17.5}).place();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].placed, 4u);
  // No backlog: the GPU right after it, or the turn's own (a straight turn is known within a step
  // or two, not closely enough to tell): nothing is concluded.
  placed = RootNode({1.78, 1.74, 1.8, 1.76, 1.77, 1.75}).place();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_FALSE(placed[0].concluded());
}

// Without entries to measure the straight passage by, the turn tells nothing.
TEST(ConsumerPosition, ATurnWithoutAMeasuredStraightPassagePlacesNothing) {
  RootNode node({22.1, 23.3, 24.2, 24.6, 24.6, 24.6, 24.8, 25.5});
  for (GlobalCommRank& c : node.obs.comm_ranks) c.entry_lag_samples = c.process == 7 ? 0 : c.entry_lag_samples;
  const std::vector<ConsumerPlacement> placed = node.place();
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_FALSE(placed[0].concluded());
}

TEST(ConsumerPosition, NoisyOrTooFewLagsMoveNothing) {
  Ring ring;
  ring.entry_lags(3, {-3.0, 4.0, -2.0, 5.0, 0.5});  // neither below nor above -1 at 1e-3
  EXPECT_TRUE(ring.concludes_nothing());
  Ring few;
  few.entry_lags(3, {0.4, 0.3});  // two samples
  EXPECT_TRUE(few.concludes_nothing());
}

TEST(ConsumerPosition, TwoGpusThatEachLookSlowMoveNothing) {
  Ring ring;
  ring.entry_lags(3, {-7.4, -6.9, -7.8, -7.1, -6.6});
  ring.exit_shortfalls(5, {0.3, -0.1, 0.6, 0.1, 0.0});
  EXPECT_TRUE(ring.concludes_nothing());
  std::vector<uint32_t> roots = ring.roots;
  ring.apply(ring.place());
  EXPECT_EQ(ring.roots, roots);  // nothing moved
  EXPECT_EQ(ring.evidence[3].culprit_class, CulpritClass::kGpuConsumer);
}

TEST(ConsumerPosition, NothingIsMovedOntoAGpuThatStopped) {
  Ring ring;
  ring.entry_lags(3, {8.3, 7.9, 8.6, 8.1, 8.0});
  ring.exit_shortfalls(5, {0.3, -0.1, 0.6, 0.1, 0.0});
  ring.evidence[5].stop();  // a hang outranks any delay
  EXPECT_TRUE(ring.concludes_nothing());
}

TEST(ConsumerPosition, OnlyARootNamedGpuConsumerIsPlaced) {
  Ring ring;
  ring.entry_lags(3, {0.4, 0.1, 0.6, 0.3, 0.2, 0.5, 0.2, 0.3});
  ring.evidence[3] = Evidence{};
  ring.evidence[3].offer(5e6, CulpritClass::kGpuProducer, std::nullopt, 8.0);
  EXPECT_TRUE(ring.place().empty());
}

}  // namespace
}  // namespace culprit
