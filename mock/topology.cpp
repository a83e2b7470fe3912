#include "mock/topology.hpp"

#include <stdexcept>
#include <utility>

namespace culprit::mock {

std::unique_ptr<Topology> make_topology(const Scenario& sc) {
  if (sc.topology == "tree") return make_tree_topology();
  if (sc.topology == "pipeline") return make_pipeline_topology();
  return make_ring_topology();
}

void DataParallelTopology::build(FlowBuilder& b) const {
  const Scenario& sc = b.scenario();
  const bool with_dp = sc.comms.find("dp") != std::string::npos;
  check(b);
  if (with_dp && sc.nodes < 2)
    throw std::invalid_argument("mock key 'comms': world+dp needs at least 2 nodes (a DP communicator spans the nodes)");

  std::vector<int> all(b.ranks());
  for (int r = 0; r < b.ranks(); ++r) all[r] = r;
  const int world = b.add_comm("world", algorithm(), all);
  std::vector<int> dp_comm(sc.gpus, -1);
  if (with_dp)
    for (int l = 0; l < sc.gpus; ++l) {
      std::vector<int> ranks;
      for (int node = 0; node < sc.nodes; ++node) ranks.push_back(node * sc.gpus + l);
      dp_comm[l] = b.add_comm("dp" + std::to_string(l), algorithm(), ranks);
    }

  // Every operation first (the streams), then each AllReduce's connections.
  std::vector<std::pair<int, std::vector<int>>> instances;  // comm, tasks by comm rank
  const Params& p = b.params();
  for (int it = 0; it < sc.seqs; ++it) {
    if (with_dp)
      for (int l = 0; l < sc.gpus; ++l) {
        std::vector<int> members;
        for (int node = 0; node < sc.nodes; ++node)
          members.push_back(b.add_task(node * sc.gpus + l, dp_comm[l], kTaskCollective, it, -1, sc.bytes, p.gap));
        instances.emplace_back(dp_comm[l], members);
      }
    std::vector<int> members;
    for (int r = 0; r < b.ranks(); ++r)
      members.push_back(b.add_task(r, world, kTaskCollective, it, -1, sc.bytes, with_dp ? p.gap_inner : p.gap));
    instances.emplace_back(world, members);
  }
  for (const auto& [comm, tasks] : instances) allreduce(b, comm, tasks);
}

}  // namespace culprit::mock
