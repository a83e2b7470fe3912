// entry_holds_slots: an entry that frees its slots after its node's exit sent their data on
// consumes slowly itself, whatever its peers hold.
#include <gtest/gtest.h>

#include <vector>

#include "analysis/entry_holds_slots.hpp"
#include "pass_fixtures.hpp"

namespace culprit {
namespace {

constexpr uint64_t kComm = 0xe1717ull;
constexpr uint64_t kSteps = 16;

// The numbers of a tree 10x4x2 under LL whose children's entry on node n1 (process 1) consumes
// 1.45x slowly (46 % slower, fresh seed 11053): it holds its inputs 107 us a step, as every
// interior entry of the tree does; its lag is -5.72 +- 0.04 steps, the other entries' 0.6-0.8.
struct Tree {
  Observations obs;
  std::vector<EdgeFacts> facts;
  Tree() {
    test::add_collective_processes(obs, kComm, {"n0", "n1", "n2", "n3"});
    for (uint32_t i = 0; i < 3; ++i) {  // i + 1 -> i
      test::add_connection(obs, facts, kComm, i + 1, i, 0, kSteps);
      obs.edges.back().phase_ns[kRecvGpuWait] = 107'000 * kSteps;
    }
    lags(1, -5.72);
    lags(0, 0.70);
    lags(2, 0.62);
  }
  void lags(uint32_t process, double mean) {
    for (GlobalCommRank& c : obs.comm_ranks)
      if (c.process == process)
        for (double x : {mean - 0.1, mean, mean + 0.1, mean, mean - 0.05, mean + 0.05, mean, mean}) {
          c.entry_lag_sum += x;
          c.entry_lag_sq_sum += x * x;
          c.entry_lag_samples += 1;
        }
  }
  EdgeFacts judge(size_t i) {
    std::vector<EdgeView> views;
    for (const EdgeSummary& e : obs.edges) views.push_back(view_of(e));
    for (size_t k = 0; k < facts.size(); ++k) facts[k].view = views[k];
    const ProcessContext context(obs);
    EdgeFacts f = facts[i];
    take_slots_held_by_entry(BacklogReadings(obs, facts, context, AttributionConfig{}), context, f);
    return f;
  }
};

TEST(EntryHoldsSlots, AnEntryThatFreesItsSlotsAfterItsDataLeftTheNodeConsumesSlowly) {
  Tree tree;
  const EdgeFacts f = tree.judge(1);  // 2 -> 1
  EXPECT_TRUE(f.slow_consume);
  EXPECT_FALSE(f.behind_backlog);
  EXPECT_DOUBLE_EQ(f.anomaly[kRecvGpuWait], 107'000);
  const LagSummary own = summarize(8 * -5.72, 8 * 5.72 * 5.72 + 0.025, 8);
  EXPECT_NEAR(f.margin[kRecvGpuWait], 5.72 / (1 + noise_at_tail(own)), 1e-3);
  // Entries that pass their data on hold for something else.
  EXPECT_FALSE(tree.judge(0).slow_consume);
  EXPECT_FALSE(tree.judge(2).slow_consume);
}

TEST(EntryHoldsSlots, WithinAStepOfZeroOrTooNoisyNothingIsConcluded) {
  Tree tree;
  for (GlobalCommRank& c : tree.obs.comm_ranks) c.entry_lag_sum = c.entry_lag_sq_sum = c.entry_lag_samples = 0;
  tree.lags(1, -0.8);
  EXPECT_FALSE(tree.judge(1).slow_consume);
  Tree noisy;
  for (GlobalCommRank& c : noisy.obs.comm_ranks)
    if (c.process == 1) {
      c.entry_lag_sum = -6.0 * 4;  // -6 +- 5 steps over four collectives
      c.entry_lag_sq_sum = 4 * 36.0 + 3 * 100.0;
      c.entry_lag_samples = 4;
    }
  EXPECT_FALSE(noisy.judge(1).slow_consume);
}

// A slow flush holds the slot too and is judged by its own phase; a node whose sends wait for
// credit more than for their data is held from beyond it.
TEST(EntryHoldsSlots, AFlushOrANodeHeldFromBeyondTakesNothing) {
  Tree flush;
  flush.facts[1].slow_flush = true;
  EdgeFacts f = flush.facts[1];
  std::vector<EdgeView> views;
  for (const EdgeSummary& e : flush.obs.edges) views.push_back(view_of(e));
  f.view = views[1];
  const ProcessContext context(flush.obs);
  take_slots_held_by_entry(BacklogReadings(flush.obs, flush.facts, context, AttributionConfig{}), context, f);
  EXPECT_FALSE(f.slow_consume);
  Tree held;
  held.obs.edges[0].phase_ns[kSendPeerWait] = 9'000'000;  // process 1's send to n0 waits for credit
  held.obs.edges[0].phase_ns[kSendGpuWait] = 1'000'000;
  EXPECT_FALSE(held.judge(1).slow_consume);
}

}  // namespace
}  // namespace culprit
