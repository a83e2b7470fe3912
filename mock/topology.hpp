// The topologies of the general engine (docs/simulator.md, "The general engine"), one file
// each: topology_ring.cpp (ring AllReduce), topology_tree.cpp (NCCL's double binary tree
// AllReduce), topology_pipeline.cpp (pipeline parallelism). A topology describes its job to a
// FlowBuilder: its communicators, then one phase at a time the operations of every rank in
// program order and the connections, lanes and proxy ops of each operation, each with the
// index the whole run's build order gives it (flow_builder.hpp).
//
// A phase is a part of an iteration that depends on earlier phases only: a rank's operations,
// the proxy ops on a connection end and each connection's steps run in phase order, and a
// connection joins operations of the same phase. The engine simulates a phase completely
// before building the next (flow_phases.cpp), so what one phase holds is what it costs.
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
  // Phases per iteration (after begin()).
  virtual int phases() const = 0;
  // Phase `phase` of iteration `it`, in order: its operations and their connections.
  virtual void build_phase(FlowBuilder& b, int it, int phase) = 0;
};

// The topology of scenario.topology (ring, tree or pipeline).
std::unique_ptr<Topology> make_topology(const Scenario& sc);

// Ring and tree jobs (data parallelism): a world communicator and, with comms=world+dp, one
// DP communicator per local GPU index across the nodes; every iteration runs a DP AllReduce
// (after the training compute) and then the world AllReduce. Each AllReduce is a phase. The
// subclass says how one AllReduce runs.
class DataParallelTopology : public Topology {
 public:
  void begin(FlowBuilder& b) final;
  int phases() const final { return int(dp_comm_.size()) + 1; }
  void build_phase(FlowBuilder& b, int it, int phase) final;

 protected:
  virtual const char* algorithm() const = 0;  // RING | TREE
  virtual void check(const FlowBuilder& b) const = 0;
  // The connections, lanes and proxy ops of one AllReduce of `comm` (tasks by comm rank).
  virtual void allreduce(FlowBuilder& b, int comm, const std::vector<int>& tasks) const = 0;

 private:
  bool with_dp_ = false;
  int world_ = -1;
  std::vector<int> dp_comm_;  // per local GPU index (none without DP)
};

std::unique_ptr<Topology> make_ring_topology();
std::unique_ptr<Topology> make_tree_topology();
std::unique_ptr<Topology> make_pipeline_topology();

// Ring AllReduce of `comm` over its tasks (by comm rank), also the pipeline's world AllReduce;
// and the connections, lanes, primitives and proxy ops it adds (the operations excluded).
void build_ring_allreduce(FlowBuilder& b, int comm, const std::vector<int>& tasks);
FlowBuilder::Index ring_allreduce_size(const FlowBuilder& b, int comm);

}  // namespace culprit::mock
