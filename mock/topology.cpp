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
  dp_comm_.assign(sc.gpus, -1);
  if (with_dp_)
    for (int l = 0; l < sc.gpus; ++l) {
      std::vector<int> ranks;
      for (int node = 0; node < sc.nodes; ++node) ranks.push_back(node * sc.gpus + l);
      dp_comm_[l] = b.add_comm("dp" + std::to_string(l), algorithm(), ranks);
    }
}

// The whole run was built with every operation first, iteration after iteration, then each
// AllReduce's connections, lanes and proxy ops in the same order: every kind of index runs on
// from one iteration to the next, so the builder's counters need no seek.
void DataParallelTopology::build_iteration(FlowBuilder& b, int it) {
  const Scenario& sc = b.scenario();
  const Params& p = b.params();
  std::vector<std::pair<int, std::vector<int>>> instances;  // comm, tasks by comm rank
  if (with_dp_)
    for (int l = 0; l < sc.gpus; ++l) {
      std::vector<int> members;
      for (int node = 0; node < sc.nodes; ++node)
        members.push_back(b.add_task(node * sc.gpus + l, dp_comm_[l], kTaskCollective, it, -1, sc.bytes, p.gap));
      instances.emplace_back(dp_comm_[l], members);
    }
  std::vector<int> members;
  for (int r = 0; r < b.ranks(); ++r)
    members.push_back(b.add_task(r, world_, kTaskCollective, it, -1, sc.bytes, with_dp_ ? p.gap_inner : p.gap));
  instances.emplace_back(world_, members);
  for (const auto& [comm, tasks] : instances) allreduce(b, comm, tasks);
}

}  // namespace culprit::mock
