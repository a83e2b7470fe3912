// judge_own_holds / offer_slow_own_holds: a receiver's work per gated step against its
// communicator's and its replicas' other receivers'.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/own_holds.hpp"
#include "pass_fixtures.hpp"

namespace culprit {
namespace {

constexpr uint64_t kComm = 0x5151ull;
constexpr uint64_t kSteps = 128;

// The two-node LL tree+dp of a simulated 3.11x slow consumer (GPU 0) that made the job 139 %
// slower: each GPU held the other's data 115 us a step, in a loop of credit, so their holds
// named nobody. Set against their output slots, GPU 0 held each step 114.8 us after it could
// start, GPU 1 1.1 us. The wires took 12 us a step. Each GPU's work per step is `work_us`, its
// own time per step as much (no queue of earlier steps) unless `own_us` says otherwise.
struct Job {
  Observations obs;
  std::vector<EdgeFacts> facts;
  std::map<uint64_t, CommBaseline> baselines;

  explicit Job(const std::vector<double>& work_us, std::vector<double> own_us = {}) {
    if (own_us.empty()) own_us = work_us;
    std::vector<std::string> hosts;
    for (size_t p = 0; p < own_us.size(); ++p) hosts.push_back("node" + std::to_string(p));
    test::add_collective_processes(obs, kComm, hosts);
    for (uint32_t p = 0; p < work_us.size(); ++p) {
      test::add_connection(obs, facts, kComm, (p + 1) % static_cast<uint32_t>(work_us.size()), p, 0, kSteps);
      GlobalCommRank& r = obs.comm_ranks[p];
      r.gated_steps = 72;
      r.gated_own_sum_ns = static_cast<uint64_t>(72 * own_us[p] * 1000);
      r.gated_work_sum_ns = static_cast<uint64_t>(72 * work_us[p] * 1000);
    }
    baselines[kComm].cycle_ns = 12000;
  }
  std::vector<Evidence> evidence() const {
    std::vector<Evidence> e(obs.processes.size());
    offer_slow_own_holds(obs, judge_own_holds(obs, baselines, AttributionConfig{}), e);
    return e;
  }
};

TEST(OwnHolds, AConsumerInALoopOfCreditIsToldByItsOwnTime) {
  const Job job({114.8, 1.1});
  const std::vector<OwnHoldVerdict> verdicts = judge_own_holds(job.obs, job.baselines, AttributionConfig{});
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_EQ(verdicts[0].process, 0u);
  EXPECT_NEAR(verdicts[0].excess.ns, 113700, 1);
  // With one other receiver only the floors guard: a quarter of the 12 us step.
  EXPECT_NEAR(verdicts[0].excess.margin, 113700.0 / 3000.0, 1e-6);
  const std::vector<Evidence> e = job.evidence();
  EXPECT_EQ(e[0].culprit_class, CulpritClass::kGpuConsumer);
  EXPECT_NEAR(e[0].ns, 113700.0 * kSteps, 1);
  EXPECT_FALSE(e[1].any());
}

TEST(OwnHolds, HealthyReceiversAndALoneOneNameNobody) {
  // Within the floors of each other (3 us a step here).
  EXPECT_TRUE(judge_own_holds(Job({1.1, 3.9, 1.4}).obs, Job({1.1, 3.9, 1.4}).baselines, AttributionConfig{}).empty());
  // One receiver measured has nobody to be judged against.
  Job alone({114.8, 1.1});
  alone.obs.comm_ranks[1].gated_steps = 0;
  EXPECT_TRUE(judge_own_holds(alone.obs, alone.baselines, AttributionConfig{}).empty());
  // Too few gated steps (under one op's) measure nothing.
  Job few({114.8, 1.1});
  few.obs.comm_ranks[0].gated_steps = 4;
  EXPECT_TRUE(judge_own_holds(few.obs, few.baselines, AttributionConfig{}).empty());
}

// The root of a healthy data-parallel tree under LL whose host ran ahead (fresh seed 11061): its
// child's data had all arrived when its kernel started, and it worked the steps 1.35 us apart,
// so counted from the kernel's start it held them 5 us a step, its peers 1.0-1.3 us. Its own
// time so stood out by 3.9 us (margin 1.24) and it was named a consumer at 0.95. Its work per
// step did not stand out: the queue was its late start, which the gap test judges.
TEST(OwnHolds, AQueueAtTheKernelsStartIsNoSlowConsumption) {
  const Job job({1.35, 1.07, 1.23, 1.13, 1.10, 1.20, 1.05, 1.30}, {4.99, 1.07, 1.23, 1.13, 1.10, 1.20, 1.05, 1.30});
  EXPECT_TRUE(judge_own_holds(job.obs, job.baselines, AttributionConfig{}).empty());
  const Job counted_as_own({4.99, 1.07, 1.23, 1.13, 1.10, 1.20, 1.05, 1.30});
  EXPECT_EQ(judge_own_holds(counted_as_own.obs, counted_as_own.baselines, AttributionConfig{}).size(), 1u);
}

TEST(OwnHolds, AmongManyTheSpreadOfTheOthersGuards) {
  // Eight receivers whose own times spread widely (robust deviation 14.8 us): 20 us above the
  // others' median stays inside mad_k (5) of them, 104 us does not.
  const std::vector<double> spread = {1, 6, 11, 16, 21, 26, 31};
  std::vector<double> within = spread, beyond = spread;
  within.push_back(36);
  beyond.push_back(120);
  const Job quiet(within), loud(beyond);
  EXPECT_TRUE(judge_own_holds(quiet.obs, quiet.baselines, AttributionConfig{}).empty());
  const std::vector<OwnHoldVerdict> named = judge_own_holds(loud.obs, loud.baselines, AttributionConfig{});
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].process, 7u);
}

// A ring+dp job of two nodes: each data-parallel communicator holds two GPUs, and in one of
// them only the slow consumer's steps were gated (3.57x: 205 us a step). Judged with its
// communicator alone it has nobody beside it; with the other data-parallel communicators,
// replicas that run the same collectives, it stands out.
TEST(OwnHolds, AReceiverAloneInItsCommunicatorIsJudgedAmongItsReplicas) {
  Job job({205, 1.1, 1.4, 2.0});
  for (uint32_t p = 0; p < 4; ++p) job.obs.comm_ranks[p].comm_hash = kComm + p;
  for (uint32_t p = 0; p < 4; ++p) job.baselines[kComm + p] = job.baselines[kComm];
  EXPECT_TRUE(judge_own_holds(job.obs, job.baselines, AttributionConfig{}).empty());
  const WireGroups replicas = {{kComm, kComm}, {kComm + 1, kComm}, {kComm + 2, kComm}, {kComm + 3, kComm}};
  const std::vector<OwnHoldVerdict> named = judge_own_holds(job.obs, job.baselines, AttributionConfig{}, replicas);
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].process, 0u);
  EXPECT_EQ(named[0].comm, kComm);
  EXPECT_NEAR(named[0].excess.ns, 205000 - 1100, 1);  // beyond the quickest of fewer than five
}

}  // namespace
}  // namespace culprit
