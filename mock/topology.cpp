#include "mock/topology.hpp"

#include <stdexcept>
#include <utility>

namespace culprit::mock {

std::unique_ptr<Topology> make_topology(const Scenario& sc) {
  if (sc.topology == "tree") return make_tree_topology();
  if (sc.topology == "pipeline") return make_pipeline_topology();
  return make_ring_topology();
}

void DataParallelTopology::begin(FlowBuilder& b) {
  const Scenario& sc = b.scenario();
  with_dp_ = sc.comms.find("dp") != std::string::npos;
  check(b);
  if (with_dp_ && sc.nodes < 2)
    throw std::invalid_argument("mock key 'comms': world+dp needs at least 2 nodes (a DP communicator spans the nodes)");
  std::vector<int> all(b.ranks());
  for (int r = 0; r < b.ranks(); ++r) all[r] = r;
  world_ = b.add_comm("world", algorithm(), all);
  dp_comm_.clear();
  if (with_dp_)
    for (int l = 0; l < sc.gpus; ++l) {
      std::vector<int> ranks;
      for (int node = 0; node < sc.nodes; ++node) ranks.push_back(node * sc.gpus + l);
      dp_comm_.push_back(b.add_comm("dp" + std::to_string(l), algorithm(), ranks));
    }
}

// The whole run was built with every operation first, iteration after iteration (the DP
// AllReduces, then the world's), then each AllReduce's connections, lanes and proxy ops in the
// same order: every kind of index runs on from one AllReduce to the next, so the builder's
// counters need no seek.
void DataParallelTopology::build_phase(FlowBuilder& b, int it, int phase) {
  const Scenario& sc = b.scenario();
  const Params& p = b.params();
  std::vector<int> members;  // tasks by comm rank
  if (phase < int(dp_comm_.size())) {
    for (int node = 0; node < sc.nodes; ++node)
      members.push_back(b.add_task(node * sc.gpus + phase, dp_comm_[phase], kTaskCollective, it, -1, sc.bytes, p.gap));
    allreduce(b, dp_comm_[phase], members);
    return;
  }
  for (int r = 0; r < b.ranks(); ++r)
    members.push_back(b.add_task(r, world_, kTaskCollective, it, -1, sc.bytes, with_dp_ ? p.gap_inner : p.gap));
  allreduce(b, world_, members);
}

}  // namespace culprit::mock
