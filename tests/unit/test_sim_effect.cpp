// Simulation::measure_effect: the ground truth's counterfactual slowdown (the same run
// without the fault, same noise), which the accuracy harness judges sensitivity by.
#include <gtest/gtest.h>

#include "mock/simulator.hpp"

namespace culprit::mock {
namespace {

GroundTruth effect_of(const std::string& spec) {
  Simulation sim(Scenario::parse(spec));
  sim.measure_effect();
  return sim.truth();
}

const std::string kRing = "topology=ring,nodes=4,gpus=4,channels=2,seqs=8,bytes=16M,jitter=0.1";

TEST(SimulationEffect, HealthyRunHasNoSlowdown) {
  GroundTruth t = effect_of(kRing);
  EXPECT_GT(t.job_ns, 0);
  EXPECT_DOUBLE_EQ(t.job_ns, t.healthy_job_ns);  // same noise: the counterfactual is itself
  EXPECT_DOUBLE_EQ(t.slowdown, 0.0);
}

TEST(SimulationEffect, ASlowerGpuSlowsTheJobMoreTheSlowerItIs) {
  double mild = effect_of(kRing + ",fault=slow_gpu:6:1.2").slowdown;
  double gross = effect_of(kRing + ",fault=slow_gpu:6:3").slowdown;
  EXPECT_GT(mild, 0.0);
  EXPECT_GT(gross, mild);
  GroundTruth t = effect_of(kRing + ",fault=slow_gpu:6:3");
  ASSERT_EQ(t.roots.size(), 1u);
  EXPECT_DOUBLE_EQ(t.roots[0].slowdown_alone, t.slowdown);
}

TEST(SimulationEffect, EachOfTwoFaultsHasItsOwnCost) {
  GroundTruth both = effect_of(kRing + ",fault=slow_gpu:6:2,fault=slow_link:3-4:4");
  ASSERT_EQ(both.roots.size(), 2u);
  EXPECT_DOUBLE_EQ(both.roots[0].slowdown_alone, effect_of(kRing + ",fault=slow_gpu:6:2").slowdown);
  EXPECT_DOUBLE_EQ(both.roots[1].slowdown_alone, effect_of(kRing + ",fault=slow_link:3-4:4").slowdown);
  EXPECT_GE(both.slowdown, std::max(both.roots[0].slowdown_alone, both.roots[1].slowdown_alone) * 0.99);
}

TEST(SimulationEffect, AHangHasNoFiniteSlowdown) {
  GroundTruth t = effect_of(kRing + ",fault=hang:6");
  EXPECT_DOUBLE_EQ(t.slowdown, 0.0);
  EXPECT_GT(t.healthy_job_ns, 0);
}

}  // namespace
}  // namespace culprit::mock
