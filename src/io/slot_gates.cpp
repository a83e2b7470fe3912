#include "io/slot_gates.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <span>

#include "core/records.hpp"

namespace culprit {
namespace {

// The proxy sees a step handed over within its polling: two events of one GPU primitive
// (an input freed, an output ready) are one moment to within this.
constexpr int64_t kPollToleranceNs = 1000;
// Of an exit's steps overlapping a receive's, the share that must fall inside the receive's
// step (arrived .. freed). A ring's last receive of each chunk goes nowhere (its data is
// final), one step in 2(n - 1): in a ring of two ranks every other step, and the send of the
// step after it carries the next chunk's own data, ready whenever its input is. A tree's
// lanes forward every step.
constexpr double kInsideShare = 0.5;
// Fewer common steps than this prove nothing about a lane: a ring of two ranks' AllReduce of
// two chunks has four steps, three of them followed by a send one step on.
constexpr size_t kMinCommonSteps = 3;
// Shifts from an input step to the output step made from it: a tree's lanes forward step k
// as step k, a ring's as step k + 1.
constexpr int kMaxShift = 1;

const StepSpan* step_of(const GateOp& op, int64_t step) {
  auto it = std::lower_bound(op.steps.begin(), op.steps.end(), step,
                             [](const StepSpan& s, int64_t k) { return s.step < k; });
  return it != op.steps.end() && it->step == step ? &*it : nullptr;
}

int64_t median(std::vector<int64_t>& v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// How closely `exit`, `shift` steps on, follows `input`: the median time between the exit's
// step being ready and the input's step being freed, where nearly all of its steps are ready
// inside the input's (arrived .. freed); nothing where they are not.
std::optional<int64_t> follow_gap(const GateOp& input, const GateOp& exit, int shift, std::vector<int64_t>& gaps) {
  gaps.clear();
  size_t inside = 0;
  for (const StepSpan& in : input.steps) {
    const StepSpan* out = step_of(exit, in.step + shift);
    if (!out) continue;
    gaps.push_back(in.to > out->to ? in.to - out->to : out->to - in.to);
    if (out->to + kPollToleranceNs >= in.from && out->to <= in.to + kPollToleranceNs) ++inside;
  }
  if (gaps.size() < kMinCommonSteps ||
      static_cast<double>(inside) < kInsideShare * static_cast<double>(gaps.size()))
    return std::nullopt;
  return median(gaps);
}

// Whether exits `a` and `b` are fed by one primitive: their steps are ready at the same
// moments.
bool fed_together(const GateOp& a, const GateOp& b, std::vector<int64_t>& gaps) {
  gaps.clear();
  for (const StepSpan& s : a.steps)
    if (const StepSpan* t = step_of(b, s.step)) gaps.push_back(s.to > t->to ? s.to - t->to : t->to - s.to);
  return gaps.size() >= kMinCommonSteps && median(gaps) <= kPollToleranceNs;
}

struct LaneOf {
  size_t exit = 0;  // the exit that follows the input most closely
  int shift = 0;
};

std::optional<LaneOf> lane_of(std::span<const GateOp> ops, size_t input, std::vector<int64_t>& scratch) {
  std::optional<LaneOf> best;
  int64_t best_gap = std::numeric_limits<int64_t>::max();
  for (size_t x = 0; x < ops.size(); ++x) {
    if (!ops[x].is_send || ops[x].channel != ops[input].channel) continue;
    for (int shift = 0; shift <= kMaxShift; ++shift)
      if (const auto gap = follow_gap(ops[input], ops[x], shift, scratch); gap && *gap < best_gap) {
        best_gap = *gap;
        best = LaneOf{x, shift};
      }
  }
  return best;
}

// The input's own time over its steps whose every gate is recorded or was never used.
GatedHold gate_input(std::span<const GateOp> ops, size_t input, const std::vector<size_t>& exits,
                     const std::vector<size_t>& inputs, int shift) {
  GatedHold g;
  for (const StepSpan& in : ops[input].steps) {
    const int64_t gated_step = in.step + shift - kSlotsPerConnection;
    int64_t gate = std::numeric_limits<int64_t>::min();
    bool known = true;
    // Before step kSlotsPerConnection - shift every output slot is still unused: no gate.
    for (size_t x : exits) {
      if (gated_step < 0) break;
      const StepSpan* out = step_of(ops[x], gated_step);
      if (!out || out->done <= 0) {
        known = false;
        break;
      }
      gate = std::max(gate, out->done);
    }
    if (!known || in.to < in.from) continue;
    int64_t start = in.from;
    for (size_t other : inputs)
      if (const StepSpan* s = step_of(ops[other], in.step)) start = std::max(start, s->from);
    const int64_t ready = std::max(start, gate);
    // A channel's primitive works its steps in order: step k starts once step k - 1 was freed.
    const StepSpan* before = step_of(ops[input], in.step - 1);
    const int64_t work_start = before ? std::max(ready, before->to) : ready;
    ++g.steps;
    g.own_ns += static_cast<uint64_t>(std::max<int64_t>(0, in.to - ready));
    g.work_ns += static_cast<uint64_t>(std::max<int64_t>(0, in.to - work_start));
  }
  return g;
}

}  // namespace

std::vector<std::optional<GatedHold>> gated_holds(std::span<const GateOp> ops) {
  std::vector<int64_t> scratch;
  std::vector<std::optional<LaneOf>> lanes(ops.size());
  for (size_t i = 0; i < ops.size(); ++i)
    if (!ops[i].is_send) lanes[i] = lane_of(ops, i, scratch);
  std::vector<std::optional<GatedHold>> out(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!lanes[i]) continue;
    const LaneOf lane = *lanes[i];
    std::vector<size_t> exits, inputs;
    for (size_t x = 0; x < ops.size(); ++x)
      if (ops[x].is_send && ops[x].channel == ops[i].channel &&
          (x == lane.exit || fed_together(ops[lane.exit], ops[x], scratch)))
        exits.push_back(x);
    for (size_t j = 0; j < ops.size(); ++j)
      if (j != i && lanes[j] && lanes[j]->shift == lane.shift &&
          std::find(exits.begin(), exits.end(), lanes[j]->exit) != exits.end())
        inputs.push_back(j);
    const GatedHold g = gate_input(ops, i, exits, inputs, lane.shift);
    if (g.steps > 0) out[i] = g;
  }
  return out;
}

}  // namespace culprit
