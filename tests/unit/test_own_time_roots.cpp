// drop_holds_of_own_time_roots, drop_holds_of_stopped: a root whatever it also waits for.
#include <gtest/gtest.h>

#include <vector>

#include "analysis/own_time_roots.hpp"

namespace culprit {
namespace {

// A pipeline of four stages: stage 1 waits for stage 2's credit (a slow flush there) and
// stage 0 waits for stage 1's data; stage 3 waits for stage 2's data.
std::vector<WaitEdge> pipeline_holds() {
  return {{1, 2, 5e6, "no_credit"}, {0, 1, 3e6, "late_data"}, {3, 2, 4e6, "late_data"}};
}

OwnDelay no_slow_gpu(size_t processes) {
  OwnDelay d;
  d.late_ns.assign(processes, 0.0);
  d.have_gaps = true;
  return d;
}

EdgeFacts connection(uint32_t src, uint32_t dst, bool slow_link) {
  EdgeFacts f;
  f.src = src;
  f.dst = dst;
  f.slow_link = slow_link;
  return f;
}

TEST(OwnTimeRoots, ASenderOnASlowWireKeepsNoHold) {
  // Stage 1's link back to stage 0 is slow: it is a root although it waits for stage 2.
  // Stage 0, the receiver of that link, is its victim and keeps its hold on stage 1.
  std::vector<WaitEdge> holds = pipeline_holds();
  drop_holds_of_own_time_roots(no_slow_gpu(4), {connection(1, 2, false), connection(1, 0, true)}, holds);
  ASSERT_EQ(holds.size(), 2u);
  EXPECT_EQ(holds[0].from, 0u);
  EXPECT_EQ(holds[0].to, 1u);
  EXPECT_EQ(holds[1].from, 3u);
}

TEST(OwnTimeRoots, NothingSlowOnItsOwnKeepsEveryHold) {
  std::vector<WaitEdge> holds = pipeline_holds();
  drop_holds_of_own_time_roots(no_slow_gpu(4), {connection(1, 2, false), connection(0, 1, false)}, holds);
  EXPECT_EQ(holds.size(), 3u);
}

TEST(OwnTimeRoots, AGpuWithSlowGapsKeepsNoHoldWhereGapsWereCompared) {
  std::vector<WaitEdge> holds = pipeline_holds();
  OwnDelay delay = no_slow_gpu(4);
  delay.late_ns[3] = 2e6;
  drop_holds_of_own_time_roots(delay, {}, holds);
  ASSERT_EQ(holds.size(), 2u);
  for (const WaitEdge& h : holds) EXPECT_NE(h.from, 3u);
  // Without gaps compared (no kernel clocks), late_ns holds other lateness: holds stay.
  holds = pipeline_holds();
  delay.have_gaps = false;
  drop_holds_of_own_time_roots(delay, {}, holds);
  EXPECT_EQ(holds.size(), 3u);
}

TEST(OwnTimeRoots, AStoppedProcessKeepsNoHold) {
  // Stage 1 stopped (a hang) after waiting for stage 2's credit: it waits for nobody now.
  // Stage 0's wait on it stays; a stage slow in its own way keeps its holds here.
  std::vector<WaitEdge> holds = pipeline_holds();
  std::vector<Evidence> evidence(4);
  evidence[1].stop();
  evidence[3].offer(1e6, CulpritClass::kGpuProducer);
  drop_holds_of_stopped(evidence, holds);
  ASSERT_EQ(holds.size(), 2u);
  EXPECT_EQ(holds[0].from, 0u);
  EXPECT_EQ(holds[0].to, 1u);
  EXPECT_EQ(holds[1].from, 3u);
}

}  // namespace
}  // namespace culprit
