// Normalisation: per-step means of every connection's phases, and robust baselines (median
// and MAD over the connections of one communicator) against which an excess is judged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>
#include <optional>
#include <vector>

#include "core/records.hpp"

namespace culprit {

struct AttributionConfig {
  // A per-step value is an outlier when it departs from its communicator's median by more
  // than all of: mad_k robust standard deviations, rel_floor of the communicator's step
  // cycle, and abs_floor_ns. The three guards keep noise, tiny jobs and idle links quiet.
  double mad_k = 5.0;
  double rel_floor = 0.25;
  double abs_floor_ns = 2000.0;
  // Kernel start lateness (mean per collective) must exceed this fraction of the median
  // collective duration and kernel_abs_floor_ns, as well as mad_k robust deviations.
  double kernel_rel_floor = 0.10;
  double kernel_abs_floor_ns = 20000.0;
  // A GPU of collectives alone in its role among pipeline stages (collectives use the gap
  // test, own_work_stragglers.hpp; stages the stage-work test, stage_work.hpp): the share of
  // its time on its own work must exceed the others' by this fraction to make it a straggler
  // (GPUs of one job differ a little in speed).
  double gap_rel_floor = 0.5;
  // Sums only: a wire is slow when even with all NCCL_STEPS (8) sends queued on it, one
  // send's share of its SendWait exceeds link_ratio x the communicator's median SendWait. A
  // healthy link that is merely saturated queues up to 8 sends and stays below the median per
  // send. With wire times, link_ratio x the quickest guards where too few connections measure
  // their spread (slow_wire.hpp).
  double link_ratio = 1.5;
  int nccl_steps = 8;
  // Withheld credit (SendPeerWait) and slow consumption (RecvGpuWait) count only above this
  // fraction of the step scale (rel_floor applies to the other phases).
  double credit_rel_floor = 1.0;
};

inline constexpr size_t kMinRobustSample = 5;

// Whether `count` of a link's `channels` are most of them, more than half. A link's channels
// share its NICs and route, so a slow link slows every channel it carries, and one channel out
// of line with its link's others is jitter (slow_wire.hpp, busy_wire_peers.cpp).
inline bool most_channels(size_t count, size_t channels) { return 2 * count > channels; }

struct Robust {
  double median = 0;
  double minimum = 0;
  double maximum = 0;
  double sigma = 0;  // 1.4826 x MAD: a standard deviation for normal data
  size_t n = 0;
};

Robust robust_of(std::vector<double> values);

// What a value is judged against: the median, or with fewer than kMinRobustSample values
// (where the median is pulled towards the outlier) the quietest value: the minimum when
// looking for high outliers, the maximum when looking for low ones.
double low_reference(const Robust& r);
double high_reference(const Robust& r);

// Per-step view of one connection.
// The share of a send's steps that must have queued behind the previous one for its wire to
// count as saturated. A wire paced by its sender's data queues only the steps that jitter
// brings early (about half, where the pace is near the latency plus a transfer), and
// those steps' spacing mixes the pace into the transfer time.
constexpr double kSaturatedShare = 0.9;
constexpr double kSaturatedDepth = 2.0;

struct EdgeView {
  const EdgeSummary* edge = nullptr;
  bool has_send = false, has_recv = false;
  double step_ns[kPhaseCount] = {0, 0, 0, 0, 0, 0};  // mean per step of each phase
  double send_cycle_ns = 0;  // sum of the send phases per step
  double recv_cycle_ns = 0;  // sum of the receive phases per step
  // Time the wire was busy per step (0 when unknown): one chunk's transfer, plus latency
  // where nothing was queued; free of waiting for data, credit or other sends.
  double wire_ns = 0;
  // The shortest send a wire is judged by (0 when unknown). A slow wire lengthens every send of
  // every op; a healthy one's queue, which traffic bunched in time fills now and then, lengthens
  // the sends of some ops only. So it is the quicker of:
  //   - the mean over send ops of their shortest step SendWait, without the op whose shortest
  //     step was the longest where kMinOpsForWorstLeftOut or more ops have one (a healthy
  //     tree+dp under LL, fresh seed 11139: one op of eight at 46 us, the others 12-13, was
  //     named a slow link first, ahead of the true one);
  //   - its quickest op's SendWait per step, where its send ops carry steps and it is positive
  //     (0 would mark the shortest send unknown). A healthy tree under LL, fresh seed 11149: a
  //     link's sends queued at every step of four ops of eight while bursts of credit came, its
  //     ops' shortest steps 39-42 us there and 12 us in the others, mean 18.7 against its
  //     group's 11.7; it was named a slow link first, at 0.98.
  double send_wait_min_ns = 0;
  // Nearly every step of its sends queued behind the previous one (kSaturatedShare), several
  // sends in flight (kSaturatedDepth), and its sends waited longer in the wire's queue than
  // for the receiver's credit: the wire never waited for the sender, so its busy time per
  // step is one transfer, with no latency in it. Where steps found the wire idle, wire_ns
  // also holds the latency; where the sends were paced by credit and overlapped only because
  // one send outlasts the pace (latency), it is the receiver's pace.
  bool wire_saturated = false;
  // Shortest single-step RecvGpuWait over the window's receive ops, where the input times
  // steps (unknown for probing's sums).
  std::optional<double> consume_min_ns;
  // The quickest send op's SendWait per step, where its send ops carry steps
  // (EdgeSummary::send_op_wait_min_ns).
  std::optional<double> quickest_op_send_wait_ns;
  // RecvGpuWait per step without its worst receive op, where it has kMinOpsForWorstLeftOut or
  // more receive ops (EdgeSummary::recv_worst_op_*); else its RecvGpuWait per step.
  double consume_typical_ns = 0;
};

// Ops of a connection (receive ops for its hold, send ops for its shortest send) needed before
// its worst one is left out: with fewer, one op is a third of what is known or more.
inline constexpr uint64_t kMinOpsForWorstLeftOut = 3;

EdgeView view_of(const EdgeSummary& e);

// Baselines of one communicator.
struct CommBaseline {
  Robust phase[kPhaseCount];
  // The scale of a step: the median time a step spends on the wire (SendWait), i.e. what a
  // transfer costs when nothing waits. Waiting phases are not used: every fault inflates
  // them, and a guard that grows with the fault would hide it. Falls back to the median
  // step cycle when no connection has its send half.
  double cycle_ns = 0;
  double op_ns = 0;           // median time of one proxy op (a collective's share)
  Robust wire;                // wire time per step, over its wire group's connections where known
  Robust send_wait_min;       // shortest step SendWait, likewise
};

// Communicators whose wires carry the same traffic and are compared with each other: each
// communicator is mapped to a representative (absent: itself). The communicators of one kind,
// size and chunk in a job are replicas (pipeline stages, the data-parallel groups of the
// model's shards), and one of two ranks has only two links, too few to compare
// (wire_groups.hpp).
using WireGroups = std::map<uint64_t, uint64_t>;
uint64_t wire_group_of(uint64_t comm, const WireGroups& groups);

// Per communicator; the wire baselines (wire, send_wait_min) over its wire group.
std::map<uint64_t, CommBaseline> baselines_of(const std::vector<EdgeView>& views, const WireGroups& wire_groups = {});

// An excess that cleared its guards: its size, and its margin, how many times the largest of
// its guards it is (> 1; the score's evidence, blame.hpp). Both 0 when it did not clear them.
struct Excess {
  double ns = 0;
  double margin = 0;
};

// `excess` against `guard`: itself and its margin where it is above the guard, else none.
Excess beyond_guard(double excess, double guard);

// How many times the excess a ratio guard asks for (ratio - 1 of the reference) `value`'s
// excess over `reference` is (infinite where the reference asks for nothing).
double ratio_margin(double value, double reference, double ratio);

// Whether a send's data was ready at once: its SendGpuWait under rel_floor of its step. Its GPU
// is then ahead of its wire, and what holds the send is beyond its node.
bool data_ready_at_once(const EdgeView& view, const AttributionConfig& config);

// Excess of `value` above (positive ns) or below (negative) the baseline, where it clears the
// guards of `config`.
Excess significant_excess(double value, const Robust& base, double cycle_ns, const AttributionConfig& config);

}  // namespace culprit
