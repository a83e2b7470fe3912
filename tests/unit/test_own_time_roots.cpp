// drop_holds_of_own_time_roots, drop_holds_of_slow_own_holds, drop_holds_of_stopped: a root
// whatever it also waits for.
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

// Two slow consumers of one tree+dp node (seed 42424: 1.82x and 2.27x, each costing 52 % and
// 20 % alone): the first was kept as a victim of its node peer's backpressure. Its own time
// per gated step stood out (by 55 us and 95 us in its two communicators), and a GPU's time
// after its inputs arrived and its output slots were free waits on nobody.
TEST(OwnTimeRoots, AConsumerWhoseOwnHoldsStandOutKeepsNoHold) {
  std::vector<WaitEdge> holds = {{0, 1, 5e6, "backpressure"}, {0, 2, 5e6, "node_interior"},
                                 {3, 0, 4e6, "no_credit"}, {1, 2, 1e6, "node_interior"}};
  OwnHoldVerdict slow;
  slow.process = 0;
  slow.comm = 0x77;
  slow.excess = {55000, 17.7};
  drop_holds_of_slow_own_holds({slow}, holds);
  ASSERT_EQ(holds.size(), 2u);
  EXPECT_EQ(holds[0].from, 3u);  // its victims keep waiting on it
  EXPECT_EQ(holds[1].from, 1u);
  drop_holds_of_slow_own_holds({}, holds);
  EXPECT_EQ(holds.size(), 2u);
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
