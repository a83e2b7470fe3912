// The pipeline-stage work signal on hand-built stages (stage_work.hpp): who is compared with
// whom, and how the spread between healthy GPUs sets what is significant.
#include "analysis/stage_work.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

namespace culprit {
namespace {

// `pipelines` replicas of a pipeline of `stages` stages; stage s does stage_ms[s] of work over
// the window in 20 gaps, times speed(gpu) (gpu = pipeline * stages + stage).
std::vector<StageWork> pipelines(int pipelines, int stages, const std::vector<double>& stage_ms,
                                 const std::function<double(int)>& speed) {
  std::vector<StageWork> out;
  for (int g = 0; g < pipelines * stages; ++g) {
    const int stage = g % stages;
    StageWork s;
    s.process = static_cast<uint32_t>(g);
    s.role = {{stages, stage}};
    s.work_ns = stage_ms[static_cast<size_t>(stage)] * 1e6 * speed(g);
    s.gaps = 20;
    s.period_ns = 3 * s.work_ns;
    out.push_back(s);
  }
  return out;
}

// A deterministic spread of GPU speeds: +-`spread` around 1, different for every GPU.
std::function<double(int)> spread_of(double spread, int straggler = -1, double factor = 1.0) {
  return [=](int g) { return (g == straggler ? factor : 1.0) * (1 + spread * std::sin(g * 2.3 + 0.4)); };
}

std::vector<uint32_t> named(const std::vector<StageWork>& stages) {
  std::vector<uint32_t> out;
  for (const OwnWorkStraggler& s : slow_stages(stages)) out.push_back(s.process);
  return out;
}

TEST(StageWork, ReplicasOfAStageAreComparedWithEachOtherWhateverTheStagesWork) {
  // Four pipelines of four stages whose work differs by design (the first stage twice the
  // others'): GPU 9 (pipeline 2, stage 1) at 1.25x among GPUs within +-3 % is named, with
  // its work beyond its replicas'; nobody else, and nobody in the healthy job.
  const std::vector<double> work{20, 10, 10, 12};
  EXPECT_TRUE(named(pipelines(4, 4, work, spread_of(0.03))).empty());
  std::vector<OwnWorkStraggler> judged;
  const std::vector<OwnWorkStraggler> slow = slow_stages(pipelines(4, 4, work, spread_of(0.03, 9, 1.25)), {}, &judged);
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0].process, 9u);
  EXPECT_NEAR(slow[0].excess_ns, 0.25 * 10e6, 0.06 * 10e6);
  EXPECT_GT(slow[0].t, slow[0].critical_t);
  EXPECT_GE(judged.size(), slow.size());
}

TEST(StageWork, TheSpreadOfHealthyGpusSetsWhatIsSignificant) {
  // The same 1.25x straggler where healthy GPUs differ by +-15 %: not named; 2.5x is.
  const std::vector<double> work{20, 10, 10, 12};
  EXPECT_TRUE(named(pipelines(4, 4, work, spread_of(0.15, 9, 1.25))).empty());
  EXPECT_EQ(named(pipelines(4, 4, work, spread_of(0.15, 9, 2.5))), std::vector<uint32_t>{9});
}

TEST(StageWork, OfTwoReplicasTheSlowerIsNamedNotItsPartner) {
  // Two pipelines of eight stages: each stage's pair is one comparison.
  const std::vector<double> work(8, 10);
  EXPECT_EQ(named(pipelines(2, 8, work, spread_of(0.02, 11, 1.5))), std::vector<uint32_t>{11});
  EXPECT_EQ(named(pipelines(2, 8, work, spread_of(0.02, 3, 1.5))), std::vector<uint32_t>{3});
}

TEST(StageWork, AStragglerIsNoPartOfItsOwnYardstick) {
  // Two pipelines of eight stages whose pairs depart (scaled) by the values a simulated
  // pipeline 8x2x1 showed; stage 1 of pipeline 1 is a 1.4x GPU (0.238). In its own yardstick
  // it stays inside the first clip (4 deviations of the chi-square median) and widens the
  // spread until its t is 3; against the other seven pairs it is named.
  const std::vector<double> scaled{0.003, 0.238, 0.059, 0.051, 0.024, 0.059, 0.032, 0.012};
  std::vector<StageWork> stages = pipelines(2, 8, std::vector<double>(8, 10), [](int) { return 1.0; });
  for (size_t stage = 0; stage < 8; ++stage) stages[8 + stage].work_ns *= std::exp(std::sqrt(2.0) * scaled[stage]);
  EXPECT_EQ(named(stages), std::vector<uint32_t>{9});
}

TEST(StageWork, ASinglePipelineComparesItsStagesWithEachOther) {
  // One pipeline of eight stages (no replicas): stage 5 at 1.4x among +-3 % is named.
  const std::vector<double> work(8, 10);
  EXPECT_TRUE(named(pipelines(1, 8, work, spread_of(0.03))).empty());
  EXPECT_EQ(named(pipelines(1, 8, work, spread_of(0.03, 5, 1.4))), std::vector<uint32_t>{5});
}

TEST(StageWork, AFewStagesAreJudgedByThePriorAlone) {
  // Three stages cannot measure their spread robustly (the straggler would set it): the
  // prior (healthy GPUs within a few percent) judges, so a small job needs a larger
  // departure: 1.2x is not named, 2x is.
  const std::vector<double> work(3, 10);
  EXPECT_TRUE(named(pipelines(1, 3, work, spread_of(0.01, 1, 1.2))).empty());
  EXPECT_EQ(named(pipelines(1, 3, work, spread_of(0.01, 1, 2.0))), std::vector<uint32_t>{1});
}

TEST(StageWork, WorkTooSmallToMatterIsNotNamed) {
  // 3x, but its extra time is under min_excess_ns per gap (stages of 10 us of work per gap).
  std::vector<StageWork> tiny = pipelines(4, 4, std::vector<double>(4, 0.0002), spread_of(0.02, 6, 3.0));
  EXPECT_TRUE(named(tiny).empty());
  // And a stage without work (no gaps measured) is no reference.
  std::vector<StageWork> with_idle = pipelines(4, 4, std::vector<double>(4, 10), spread_of(0.02, 6, 2.0));
  with_idle[0].work_ns = 0;
  EXPECT_EQ(named(with_idle), std::vector<uint32_t>{6});
}

}  // namespace
}  // namespace culprit
