// Slot gates: how much of a receive's hold is its GPU's own time.
//
// A GPU frees its input slot of step k when it has consumed the data, but it can start on
// step k only once every input of that step has arrived and its output slots of the step are
// free: an output slot of step j is written again only after the send of step
// j - kSlotsPerConnection completed (NCCL_STEPS slots per connection). A GPU whose onward
// sends wait for a slow receiver therefore holds its inputs as long as that receiver holds
// its own: backpressure, not consumption. Sums over an op's recorded steps cannot tell the two
// apart, since the gate of step k is the send of step k - 8, and the profiler records only
// an op's last steps; the per-step times of one collective on one GPU can.
//
// Which sends carry a receive's data on, the records do not say. The GPU produces an onward
// step from its inputs: the step's data is ready for the send (SendGpuWait ends) after the
// input arrived and no later than the input's slot is freed (RecvGpuWait ends). So an exit
// that carries the data on, d steps later (a tree's lanes: 0; a ring: 1), has its step k + d
// ready inside [input k arrived, input k freed] for every step it forwards (all of a tree's,
// all but the last of each chunk in a ring: every other one in a ring of two ranks, so half
// the common steps are asked for); of the exits that do, the one ready closest to the
// freeing is the lane's, and every exit ready at the same moments is fed by the same
// primitive (a tree's parent feeds both children). The inputs assigned the same exits and
// shift form the lane's inputs: a step starts when the last of them arrived.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace culprit {

// One recorded step of a proxy op, on its process's clock. A receive: `from` when its data
// was there for the GPU (RecvGpuWait begins, no earlier than the kernel), `to` when the GPU
// freed the slot. A send: `to` when the GPU handed the data over (SendGpuWait ends), `done`
// when the send completed and its slot was free again (SendWait ends).
struct StepSpan {
  int64_t step = -1;
  int64_t from = 0;
  int64_t to = 0;
  int64_t done = 0;
};

// One network proxy op of a collective, on one channel of one GPU.
struct GateOp {
  bool is_send = false;
  int32_t channel = -1;
  std::vector<StepSpan> steps;  // ascending step
};

// Of one receive op: its steps whose gates are all recorded or were never used (a step below
// kSlotsPerConnection writes output slots no earlier send held), and their own time: the hold
// after the step's inputs were all in and its output slots free, and the part of that after
// the GPU freed the step before too (its work on the step alone: a channel's primitive works
// its steps in order, so inputs that queued, behind a kernel that started after they arrived
// or behind a slow consumer's earlier steps, count one step's work each).
struct GatedHold {
  uint32_t steps = 0;
  uint64_t own_ns = 0;
  uint64_t work_ns = 0;
};

// For each op of one collective on one GPU (all channels), in order: its gated holds where it
// is a receive whose lane's exits were found and recorded; nothing otherwise.
std::vector<std::optional<GatedHold>> gated_holds(std::span<const GateOp> ops);

}  // namespace culprit
