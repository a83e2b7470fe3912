// What the simulator keeps of its timeline to render files (docs/simulator.md, "Memory"):
// per node, every operation of its processes and every proxy op they record, each proxy op
// with only what the example plugin and probing print of its steps. A proxy op of a 16k-GPU
// ring has 32766 steps, of which the plugin prints 16; the renderers never need more than
// the 32 most recent steps that started, the number that moved data and per-phase sums.
#pragma once

#include <array>
#include <vector>

#include "mock/simulator.hpp"

namespace culprit::mock {

// The steps of one proxy op, summed up as the engine computes them. Steps are computed in
// step order (a receive step's posting, arrival and flush first, the GPU's release later), and
// a step that never started (a hang) never gets any time: its posting waits for step k-8,
// which is the only way a step starts.
struct StepSummary {
  static constexpr int kKept = 32;  // two plugin slot generations: a step and its predecessor
  int n_steps = 0;
  int started = 0;      // steps whose posting (t0) was reached: a prefix
  int transferred = 0;  // steps that moved data: send isend accepted (t2), receive arrived (t1)
  // Sums over all steps of each phase: SendGpuWait, SendPeerWait, SendWait (send),
  // RecvWait, RecvFlushWait (receive); probing's per-op columns.
  double phase[5] = {0, 0, 0, 0, 0};
  double last = 0;      // the latest finite time of any step (0: none)
  std::array<SimStep, kKept> recent{};  // steps [started-kKept, started), at step % kKept

  // Step k as the engine left it (k >= started - kKept): a step that never started has no
  // time at all (+inf).
  SimStep step(int k) const;
};

// Collects a StepSummary, and every step where the whole timeline is kept.
class StepLog {
 public:
  StepLog() = default;
  StepLog(int n_steps, bool keep_all);
  void sent(int k, const SimStep& s);  // a send step: slot posted, data ready, accepted, done
  void received(int k, double posted, double arrived, double flushed);
  void freed(int k, double t);         // the receiving GPU released step k's slot
  const StepSummary& summary() const { return sum_; }
  std::vector<SimStep> take_all() { return std::move(all_); }  // empty unless keep_all

 private:
  void see(double t);
  bool start(int k, double posted);  // counts a started step; false if k never started

  StepSummary sum_;
  std::vector<SimStep> all_;
};

// One operation of one process as the renderers need it.
struct OperationRecord {
  SimCollective col;
  int index = 0;  // its index in collectives(): the general engine keys its noise by it
  int comm = 0;   // its communicator's index in communicators()
  bool started = true;  // the host reached it (the general engine records those it never did)
  std::vector<double> channel_start_ns;  // general engine: each channel's kernel start
  std::vector<int> ops;  // general engine: its proxy ops (proxy_ops() indices), in print order
};

struct ProxyOpRecord {
  SimProxyOp op;  // without steps
  int index = 0;  // its index in proxy_ops()
  StepSummary steps;
  std::vector<SimStep> every_step;  // Retention::every_step: all its steps in step order; else empty
};

// Everything the processes of one node did, in collectives() and proxy_ops() order.
struct NodeTimeline {
  int node = 0;
  std::vector<OperationRecord> operations;
  std::vector<ProxyOpRecord> proxy_ops;

  const OperationRecord* operation(int index) const;  // null if not one of the node's
  const ProxyOpRecord* proxy_op(int index) const;
};

}  // namespace culprit::mock
