// Report pass of the graph stage: the GPUs that waits lead to but that nothing of their own
// explains, said in the notes.
//
// A hold (withheld credit, backpressure, a GPU of the node) is a wait of one process on
// another. Where the waits end at a process with no evidence of its own, the chain has a
// head but no cause: without kernel clocks and with too few GPUs playing its part to judge
// it by (late_posters.hpp, last_arrivals.hpp), a GPU late or slow to consume is not told from
// the slowest healthy one, which others wait for too, nor from one held by what no record
// shows (the receiver of a slow link holds the credit of the data it still waits for). It
// names no culprit, so the report would otherwise say nothing of it; a user whose job runs
// twice as slow wants to know where the waits lead. A 2.48x GPU of a ring of two nodes that
// doubled the job in probing's form: its sender waited for its credit, no test could judge
// it, and the report said "No culprit".
//
// What it cannot tell apart: a faulty GPU from the slowest healthy one, or from one held by
// what the records do not show (it says so).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/process_context.hpp"
#include "analysis/self_evidence.hpp"
#include "analysis/wait_graph.hpp"

namespace culprit {

// A process that holds lead to, with no evidence and no hold of its own, and how long the
// holds on it waited in all.
struct UnexplainedWaitTarget {
  uint32_t process = 0;
  double waited_ns = 0;
};

// Those processes whose own work no kernel clock measured (`work_measured`, per process: one
// whose work was measured and in order was waited for by its program's schedule), the longest
// waited on first.
std::vector<UnexplainedWaitTarget> unexplained_wait_targets(const std::vector<WaitEdge>& holds,
                                                            const std::vector<Evidence>& evidence,
                                                            const std::vector<bool>& work_measured);

// One note naming up to three of them (nothing where there are none), each with its share of
// `all_waiting_ns`, every process's waiting in the job (data_flow.hpp's waited_per_process
// summed): a healthy job's slowest GPU is waited on for a few percent of it at most, as a
// rule, but nothing makes that a yardstick.
void note_unexplained_wait_targets(const std::vector<UnexplainedWaitTarget>& targets, double all_waiting_ns,
                                   const ProcessContext& context, std::vector<std::string>& notes);

}  // namespace culprit
