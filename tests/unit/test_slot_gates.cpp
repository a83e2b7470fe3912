// gated_holds (io/slot_gates.hpp): a receive's hold set against its GPU's output slots, from
// one collective's per-step times on one GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "io/slot_gates.hpp"

namespace culprit {
namespace {

constexpr int64_t kUs = 1000;

// An op with steps first..last, each step's times from `times(k)`.
GateOp op_of(bool is_send, int32_t channel, int64_t first, int64_t last,
             const std::function<StepSpan(int64_t)>& times) {
  GateOp op;
  op.is_send = is_send;
  op.channel = channel;
  for (int64_t k = first; k <= last; ++k) {
    StepSpan s = times(k);
    s.step = k;
    op.steps.push_back(s);
  }
  return op;
}

StepSpan received(int64_t from, int64_t to) { return {-1, from, to, 0}; }
StepSpan sent(int64_t ready, int64_t done) { return {-1, 0, ready, done}; }

// An interior GPU of a tree whose parent stalled (the last 16 steps, 46..61, recorded): its
// children's data of steps 46..61 arrives 5 us apart from t = 0; its sends up of steps 46..53
// waited for the parent's credit until 500 us and then completed 5 us apart; so the GPU,
// whose output slot of step k is free once the send of step k - 8 completed, frees its inputs
// of steps 54..61 1 us after those completions. Its sends down to a child (the other lane)
// hand over their data at 900 us on.
TEST(SlotGates, AnInputHeldForAFreeOutputSlotIsBackpressureNotOwnTime) {
  auto up_done = [](int64_t k) { return 500 * kUs + (k - 46) * 5 * kUs; };
  auto freed = [&](int64_t k) { return k >= 54 ? up_done(k - 8) + kUs : 400 * kUs + (k - 46) * kUs; };
  auto child = [&](int64_t k) { return received((k - 46) * 5 * kUs, freed(k)); };
  std::vector<GateOp> ops;
  ops.push_back(op_of(false, 0, 46, 61, child));  // from the first child
  ops.push_back(op_of(false, 0, 46, 61, child));  // from the second child
  ops.push_back(op_of(true, 0, 46, 61, [&](int64_t k) { return sent(freed(k), up_done(k)); }));  // up
  ops.push_back(op_of(true, 0, 46, 61, [](int64_t k) { return sent(900 * kUs + k * kUs, 950 * kUs + k * kUs); }));
  const auto holds = gated_holds(ops);
  ASSERT_EQ(holds.size(), 4u);
  for (size_t input : {0u, 1u}) {
    ASSERT_TRUE(holds[input].has_value()) << input;
    EXPECT_EQ(holds[input]->steps, 8u);  // steps 54..61: their gates, sends 46..53, are recorded
    // Held 461 us a step, of which 1 us after the output slot was free.
    EXPECT_EQ(holds[input]->own_ns, 8u * kUs);
    EXPECT_EQ(holds[input]->work_ns, 8u * kUs);
  }
  EXPECT_FALSE(holds[2].has_value());  // sends have no holds
  EXPECT_FALSE(holds[3].has_value());
}

// A GPU slow to consume makes its output as soon as its input is there, then frees the input
// 30 us after the previous one; its sends complete 10 us after the data is ready. All of its
// hold is its own, whichever of its outputs (the same step's or the next one's, both made while
// it held the input) is taken for the lane; its work is 30 us a step (the first step's whole
// hold, 100 us, having no step before it): the rest is the queue its slowness built up.
TEST(SlotGates, AGpuSlowToConsumeHoldsEachStepForOneConsumption) {
  auto arrival = [](int64_t k) { return k * 2 * kUs; };
  auto freed = [](int64_t k) { return 100 * kUs + k * 30 * kUs; };
  std::vector<GateOp> ops;
  ops.push_back(op_of(false, 1, 0, 15, [&](int64_t k) { return received(arrival(k), freed(k)); }));
  ops.push_back(op_of(true, 1, 0, 15, [&](int64_t k) {
    return sent(arrival(k) + kUs / 10, arrival(k) + 10 * kUs);
  }));
  const auto holds = gated_holds(ops);
  ASSERT_TRUE(holds[0].has_value());
  ASSERT_EQ(holds[0]->steps, 16u);  // no gate is ever used: every output slot completes in time
  uint64_t held = 0;
  for (int64_t k = 0; k < 16; ++k) held += static_cast<uint64_t>(freed(k) - arrival(k));
  EXPECT_EQ(holds[0]->own_ns, held);
  EXPECT_EQ(holds[0]->work_ns, static_cast<uint64_t>(100 * kUs + 15 * 30 * kUs));
}

// The root of a data-parallel tree whose one child's data all arrived before its kernel started
// (its host ran ahead; measured on a healthy tree+dp under LL, fresh seed 11061): every input's
// hold begins at the kernel's start, and the GPU then works them 1.35 us apart. Counted from the
// kernel's start, the eighth input was held 10.8 us, and the GPU's own time stood at 5 us a step
// against its peers' 1 us, a consumer at 0.95. Each step waited for the one before: its work is
// 1.35 us a step.
TEST(SlotGates, InputsQueuedAtTheKernelsStartCostOneStepEach) {
  constexpr int64_t kernel_start = 1000 * kUs, work = 1350;
  auto freed = [](int64_t k) { return kernel_start + (k + 1) * work; };
  std::vector<GateOp> ops;
  // RecvGpuWait begins no earlier than the kernel (the reader clips it): all at its start.
  ops.push_back(op_of(false, 4, 0, 7, [&](int64_t k) { return received(kernel_start, freed(k)); }));
  ops.push_back(op_of(true, 4, 0, 7, [&](int64_t k) { return sent(freed(k), freed(k) + 12 * kUs); }));
  const auto holds = gated_holds(ops);
  ASSERT_TRUE(holds[0].has_value());
  ASSERT_EQ(holds[0]->steps, 8u);
  EXPECT_EQ(holds[0]->own_ns, static_cast<uint64_t>(36 * work));  // 1 + 2 + ... + 8 steps' work
  EXPECT_EQ(holds[0]->work_ns, static_cast<uint64_t>(8 * work));
}

// A ring sends step k + 1 from its input of step k: the input's step 7 is gated by the send
// of step 0, and steps 0..6 by none (their output slots were never used), so all 16 steps
// count. Each input is freed 2 us after its arrival, the moment the next step's data is ready;
// that send completes 6 us later.
TEST(SlotGates, ARingForwardsEachStepAsTheNext) {
  auto arrival = [](int64_t k) { return 100 * kUs + k * 10 * kUs; };
  std::vector<GateOp> ops;
  ops.push_back(op_of(false, 0, 0, 15, [&](int64_t k) { return received(arrival(k), arrival(k) + 2 * kUs); }));
  ops.push_back(op_of(true, 0, 0, 15, [&](int64_t k) {
    return sent(arrival(k - 1) + 2 * kUs, arrival(k - 1) + 8 * kUs);
  }));
  const auto holds = gated_holds(ops);
  ASSERT_TRUE(holds[0].has_value());
  EXPECT_EQ(holds[0]->steps, 16u);
  EXPECT_EQ(holds[0]->own_ns, 16u * 2 * kUs);
  EXPECT_EQ(holds[0]->work_ns, 16u * 2 * kUs);
}

// Without a send on its channel whose data it could have made, a receive has no gate.
TEST(SlotGates, AnInputWithoutAnExitOfItsOwnIsNotGated) {
  std::vector<GateOp> ops;
  ops.push_back(op_of(false, 0, 0, 15, [](int64_t k) { return received(k * 10 * kUs, k * 10 * kUs + kUs); }));
  ops.push_back(op_of(true, 1, 0, 15, [](int64_t k) { return sent(k * 10 * kUs + kUs, k * 10 * kUs + 5 * kUs); }));
  // On its channel, a send whose data is ready before the input ever arrived.
  ops.push_back(op_of(true, 0, 0, 15, [](int64_t k) { return sent(k * 10 * kUs - 5 * kUs, k * 10 * kUs); }));
  const auto holds = gated_holds(ops);
  EXPECT_FALSE(holds[0].has_value());
}

}  // namespace
}  // namespace culprit
