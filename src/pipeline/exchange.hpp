// What every analyzer process sends to rank 0, and how it travels: one flat byte blob
// (pipeline/exchange_wire.hpp: trivially copyable records as they are, strings and lists
// length-prefixed), through Communicator::gather_bytes to rank 0 (sizes first, then data).
#pragma once

#include <vector>

#include "comm/communicator.hpp"
#include "io/local_data.hpp"
#include "analysis/observations.hpp"

namespace culprit {

struct NodeSummary {
  std::vector<GlobalProcess> processes;
  std::vector<GlobalCommRank> comm_ranks;  // process = index into this node's processes
  std::vector<EdgeSummary> edges;
  std::vector<InputReport> inputs;
  std::vector<QpObservation> qps;          // process = index into this node's processes
  std::vector<P2pCallCount> p2p_calls;     // process = index into this node's processes
  std::vector<InflightRecord> inflight;    // process = index into this node's processes
  std::vector<FrGroupState> fr_groups;     // process = index into this node's processes
  std::vector<FrMemberRun> fr_members;     // runs of each group's members, each once
  std::vector<FrOpRecord> fr_ops;          // process = index into this node's processes
};

std::vector<char> pack_node_summary(const NodeSummary& summary);
NodeSummary unpack_node_summary(const std::vector<char>& bytes);  // throws on a bad blob

// Collective: gathers every node's summary to rank 0 (only it analyses); there returns the merged observations
// (processes deduplicated by host, pid, rank and label, edge halves merged) and every input report.
// Other ranks get empty results.
void gather_observations(Communicator& comm, const NodeSummary& mine, int seq_window,
                         Observations* observations, std::vector<InputReport>* inputs);

}  // namespace culprit
