// judge_queued_holds / merge_own_hold_verdicts: a receiver whose inputs wait behind a queue of
// its own earlier steps while its output slots are free is the bottleneck of its lane.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/queued_holds.hpp"
#include "pass_fixtures.hpp"

namespace culprit {
namespace {

constexpr uint64_t kComm = 0x7171ull;
constexpr uint64_t kGatedSteps = 63;

// One GPU per node; GPU p's gated steps held `own_us[p]` a step, `work_us[p]` of it after it
// had freed the step before. A GPU with no figures has no gated steps (its exit is another
// GPU's, over NVLink). The communicator's step (median SendWait) is `step_us`.
struct Job {
  Observations obs;
  std::vector<EdgeFacts> facts;
  std::map<uint64_t, CommBaseline> baselines;

  Job(const std::vector<double>& own_us, const std::vector<double>& work_us, double step_us) {
    std::vector<std::string> hosts;
    for (size_t p = 0; p < own_us.size(); ++p) hosts.push_back("node" + std::to_string(p));
    test::add_collective_processes(obs, kComm, hosts);
    for (uint32_t p = 0; p < own_us.size(); ++p) {
      test::add_connection(obs, facts, kComm, (p + 1) % static_cast<uint32_t>(own_us.size()), p, 0, 128);
      if (own_us[p] <= 0) continue;
      GlobalCommRank& r = obs.comm_ranks[p];
      r.gated_steps = kGatedSteps;
      r.gated_own_sum_ns = static_cast<uint64_t>(kGatedSteps * own_us[p] * 1000);
      r.gated_work_sum_ns = static_cast<uint64_t>(kGatedSteps * work_us[p] * 1000);
    }
    baselines[kComm].cycle_ns = step_us * 1000;
  }
  std::vector<OwnHoldVerdict> judged() const { return judge_queued_holds(obs, baselines, AttributionConfig{}); }
};

// A tree 2x4x8 under LL whose 4.33x consumer made the job 5 % slower (fresh seed 11115): its
// steps were the only ones of the communicator gated, each held 167.5 us after it had arrived
// with its output slots free, 22.9 us of it its own work (a queue of about seven steps); the
// wires took 14.5 us a step. Nobody was named before: the own-hold test has no peers for it.
TEST(QueuedHolds, AConsumerAloneInItsCommunicatorIsToldByItsQueue) {
  const Job job({167.5, 0, 0, 0}, {22.9, 0, 0, 0}, 14.5);
  const std::vector<OwnHoldVerdict> named = job.judged();
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].process, 0u);
  EXPECT_EQ(named[0].comm, kComm);
  EXPECT_NEAR(named[0].excess.ns, 22900, 1);
  // The margin is the lesser of the work's over a quarter step (3.6 us) and the queue's over 4.
  EXPECT_NEAR(named[0].excess.margin, (167.5 / 22.9) / kQueuedHoldRatio, 1e-3);
}

// Healthy receivers of 608 healthy randomized runs (fresh seed 11129): own time at most 2.7 times
// the work; their inputs come when the GPU is ready for them.
TEST(QueuedHolds, ReceiversThatKeepUpAreNotNamed) {
  EXPECT_TRUE(Job({2.8, 2.7, 6.1}, {1.0, 1.1, 2.5}, 12).judged().empty());
  // A queue of three steps is not half the slots, however long the work.
  EXPECT_TRUE(Job({90}, {30}, 12).judged().empty());
}

// A healthy data-parallel root under LL whose host ran ahead (fresh seed 11061): its child's
// eight steps had all arrived when its kernel started and it worked them 1.35 us apart. The
// queue is there, but the work is a small part of the 12 us step, and it drains.
TEST(QueuedHolds, ABurstDrainedByQuickWorkIsNotNamed) {
  EXPECT_TRUE(Job({9.4}, {1.35}, 12).judged().empty());
  // Work beyond the two microsecond floor but within a quarter of the step: still no consumer.
  EXPECT_TRUE(Job({20}, {2.9}, 12).judged().empty());
  // Nor without gated steps enough for one op.
  Job few({167.5}, {22.9}, 14.5);
  few.obs.comm_ranks[0].gated_steps = kSlotsPerConnection - 1;
  EXPECT_TRUE(few.judged().empty());
}

TEST(QueuedHolds, MergedWithThePeerTestOneVerdictPerRankTheLargerExcess) {
  const std::vector<OwnHoldVerdict> peers = {{0, kComm, {100, 2}}, {1, kComm, {50, 3}}};
  const std::vector<OwnHoldVerdict> queued = {{1, kComm, {80, 1.5}}, {1, kComm + 1, {10, 1.1}}};
  const std::vector<OwnHoldVerdict> merged = merge_own_hold_verdicts(peers, queued);
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_DOUBLE_EQ(merged[0].excess.ns, 100);
  EXPECT_DOUBLE_EQ(merged[1].excess.ns, 80);
  EXPECT_DOUBLE_EQ(merged[1].excess.margin, 1.5);
  EXPECT_EQ(merged[2].comm, kComm + 1);
}

}  // namespace
}  // namespace culprit
