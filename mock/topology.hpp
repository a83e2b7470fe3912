// The topologies of the general engine (docs/simulator.md, "The general engine"), one file
// each: topology_ring.cpp (ring AllReduce), topology_tree.cpp (NCCL's double binary tree
// AllReduce), topology_pipeline.cpp (pipeline parallelism). A topology describes its job to a
// FlowBuilder: its communicators, then one iteration at a time every rank's operations in
// program order and the connections, lanes and proxy ops of each operation, each with the
// index the whole run's build order gives it (flow_builder.hpp).
#pragma once

#include <memory>
#include <vector>

#include "mock/flow_builder.hpp"

namespace culprit::mock {

class Topology {
 public:
  virtual ~Topology() = default;
  // The communicators. Throws std::invalid_argument when the scenario does not fit the
  // topology.
  virtual void begin(FlowBuilder& b) = 0;
  // Iteration `it` (0, 1, ... in order): its operations and their connections.
  virtual void build_iteration(FlowBuilder& b, int it) = 0;
};

// The topology of scenario.topology (ring, tree or pipeline).
std::unique_ptr<Topology> make_topology(const Scenario& sc);

// Ring and tree jobs (data parallelism): a world communicator and, with comms=world+dp, one
// DP communicator per local GPU index across the nodes; every iteration runs a DP AllReduce
// (after the training compute) and then the world AllReduce. The subclass says how one
// AllReduce runs.
class DataParallelTopology : public Topology {
 public:
  void begin(FlowBuilder& b) final;
  void build_iteration(FlowBuilder& b, int it) final;

 protected:
  virtual const char* algorithm() const = 0;  // RING | TREE
  virtual void check(const FlowBuilder& b) const = 0;
  // The connections, lanes and proxy ops of one AllReduce of `comm` (tasks by comm rank).
  virtual void allreduce(FlowBuilder& b, int comm, const std::vector<int>& tasks) const = 0;

 private:
  bool with_dp_ = false;
  int world_ = -1;
  std::vector<int> dp_comm_;  // per local GPU index
};

std::unique_ptr<Topology> make_ring_topology();
std::unique_ptr<Topology> make_tree_topology();
std::unique_ptr<Topology> make_pipeline_topology();

// Ring AllReduce of `comm` over its tasks (by comm rank), also the pipeline's world AllReduce.
void build_ring_allreduce(FlowBuilder& b, int comm, const std::vector<int>& tasks);

}  // namespace culprit::mock
