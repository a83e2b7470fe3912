// Pass between the explanations and the wait-for graph: a process whose own time is measurably
// slow is a root whatever it also waits for, so its holds (wait-for edges) are dropped.
//
// Physics: waiting on others lengthens neither the work between a GPU's kernels (the gap
// test, own_work_stragglers.hpp) nor the time a wire takes to move a chunk (its busy time and
// shortest send, slow_wire.hpp and its peers: both are measured from the send accepted to its
// completion, after any wait for data or credit). A process may be a victim of one fault and
// the root of another at once, as in a pipeline whose stage waits for its next stage's credit
// while its own link back to the previous one is slow. Kept as a victim there, it would hide
// the second fault: the graph's roots are the sinks of the holds.
//
// So is a process that stopped (a hang): whatever it waited for before it stopped, everyone
// now waits for it, and it waits for nobody (a member inside some operation at a snapshot is
// blocked there, not stopped: inflight_hang.hpp). Kept waiting on an earlier credit, a GPU
// that never entered a pipeline+world job's AllReduce (seed 2222) passed its whole hang on to
// a neighbouring stage's late post.
//
// The same holds for a GPU slow to consume, where its per-step traces set its holds against
// its output slots (own_holds.hpp): with two slow consumers on one node, the weaker one was
// kept as the stronger one's victim (node_interior) and its own fault was never named.
//
// What it cannot tell apart: two faults on one process (its root carries both).
#pragma once

#include <vector>

#include "analysis/connection_facts.hpp"
#include "analysis/own_delay.hpp"
#include "analysis/own_holds.hpp"
#include "analysis/self_evidence.hpp"
#include "analysis/wait_graph.hpp"

namespace culprit {

// Drops the holds of every GPU whose kernel gaps the gap test found slow (own_delay, where
// any gaps were compared) and of every process that sends on a slow wire (facts).
void drop_holds_of_own_time_roots(const OwnDelay& own_delay, const std::vector<EdgeFacts>& facts,
                                  std::vector<WaitEdge>& holds);

// Drops the holds of every GPU whose work per gated step stands out in a communicator
// (own_holds.hpp): what a GPU holds after its inputs arrived, its output slots were free and
// its step before was done waits on nobody, neither a slower node peer nor the GPUs its sends feed.
void drop_holds_of_slow_own_holds(const std::vector<OwnHoldVerdict>& verdicts, std::vector<WaitEdge>& holds);

// Drops the holds of every process whose evidence says it stopped.
void drop_holds_of_stopped(const std::vector<Evidence>& evidence, std::vector<WaitEdge>& holds);

}  // namespace culprit
