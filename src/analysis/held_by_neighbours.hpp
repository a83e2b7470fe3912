// Pass 5 of the attribution, explanations of weaker evidence by a stronger neighbour, as
// wait-for edges:
//   - starved_by_link: withheld credit with no slowness of its own (class gpu_producer
//     without kernel evidence) is what a slow wire does to the GPUs around it in the same
//     communicator (starved inputs, stalled combines). It is held by the strongest slow wire
//     there, when that is stronger.
//   - node_interior: GPUs of one node are chained by invisible NVLink hops, so a weaker
//     GPU-side delay on a node that also holds a stronger one is most likely that one's
//     backpressure or starvation. A slow wire starves the node it feeds as much as it holds
//     up its sender's node, so it counts on both ends' nodes. A GPU whose own work is
//     measurably slow (kernel clocks) explains the GPU-side delays of its node peers, and
//     the reverse cannot happen (a slow consumer does not lengthen another GPU's own work),
//     so kernel evidence outranks proxy-derived evidence, and a hold set against the output
//     slots outranks the rest (own_holds.hpp, queued_holds.hpp). Not a consumer's, though: a GPU late
//     by its own work withholds its node peers' credit at the start of each collective, and
//     its steps inside the kernel are short beside a transfer, while a GPU named slow to
//     consume held its inputs at every step (in traces the receive explanations ask that of
//     every recorded step; probing's sums cannot tell). Flushes and hangs are their own.
//     Only a GPU that shares a communicator with it can hold another: GPUs of one node in
//     separate pipelines (or data-parallel groups alone) exchange no data at all.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "analysis/process_context.hpp"
#include "analysis/self_evidence.hpp"
#include "analysis/wait_graph.hpp"

namespace culprit {

// `kernel_late_ns`: per process, its own delay measured by kernel clocks (0: none).
void add_starved_by_link_holds(const ProcessContext& context, const std::vector<Evidence>& evidence,
                               const std::vector<double>& kernel_late_ns, std::vector<WaitEdge>& holds);

// `own_holders`: the GPUs whose hold set against their output slots stood out (own_holds.hpp,
// queued_holds.hpp). What such a GPU held after its inputs had arrived and its output slots
// were free is its own; its node peers' holds cannot make it, and it makes theirs.
void add_node_interior_holds(const ProcessContext& context, const std::vector<Evidence>& evidence,
                             const std::vector<double>& kernel_late_ns, std::vector<WaitEdge>& holds,
                             const std::set<uint32_t>& own_holders = {});

}  // namespace culprit
