// Data flow, for finding victims: who gets its input from whom. In a collective every rank
// ends up waiting for the data that passes through the root, so victims are found along the
// data flow rather than along the anomaly edges: a receiver depends on its network sender;
// inside a node, data that leaves came in through the node's receivers and its interior
// GPUs (a pure network receiver's input comes from the network, a pure network sender feeds
// nobody on its node).
#pragma once

#include <vector>

#include "analysis/connection_facts.hpp"
#include "analysis/wait_graph.hpp"

namespace culprit {

// Edges u -> v meaning "u's input comes from v", for attribute_to_roots.
std::vector<WaitEdge> data_flow_edges(const Observations& observations, const std::vector<EdgeFacts>& facts,
                                      const ProcessContext& context);

// Per process: what it waited (its measured RecvWait, SendGpuWait and SendPeerWait), ns.
std::vector<double> waited_per_process(const Observations& observations, const std::vector<EdgeFacts>& facts,
                                       size_t n_processes);

}  // namespace culprit
