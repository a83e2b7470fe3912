// Builds the general engine's job (flow.cpp) one phase at a time (flow_phases.cpp):
// communicators once, then per phase (a part of an iteration, topology.hpp) its operations in
// each rank's program order and their connections, lanes and proxy ops. The topologies
// (topology.hpp) describe their jobs through it.
//
// Indices: the engine's noise is keyed by the index each entity had when the whole run was
// built at once (operations, connections, lanes, primitives, proxy ops, each counted in build
// order). The builder hands them out from running counters; a topology whose whole-run order
// is not phase by phase (the pipeline) moves the counters with seek() to where an entity would
// have been. Entities themselves are stored per phase: the ids the builder returns are local
// to it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "mock/sim_internal.hpp"

namespace culprit::mock {

class Topology;

// Kinds of operation (FlowTask::kind).
inline constexpr int kTaskCollective = 0, kTaskSend = 1, kTaskRecv = 2;

class FlowBuilder {
 public:
  // The next whole-run index of each kind of entity.
  struct Index {
    int64_t task = 0, conn = 0, lane = 0, prim = 0, op = 0;
  };

  // Builds into `flow`; with collect_links, also lists the topology's connections (links()).
  FlowBuilder(Simulation::Impl& sim, Flow& flow, bool collect_links)
      : sim_(sim), F_(flow), collect_links_(collect_links) {}

  const Scenario& scenario() const { return sim_.sc; }
  const Params& params() const { return sim_.p; }
  int ranks() const { return sim_.n; }
  int channels() const { return sim_.C; }
  bool net_hop(int a, int b) const { return sim_.net_hop(a, b); }

  // A communicator over these global ranks (comm rank = position); returns its index.
  int add_comm(const std::string& name, const std::string& algorithm, const std::vector<int>& ranks);
  int comm_rank(int comm, int global_rank) const { return F_.comm_rank_of[comm][global_rank]; }
  int comm_size(int comm) const { return int(F_.comms[comm].info.ranks.size()); }
  int global_rank(int comm, int comm_rank) const { return F_.comms[comm].info.ranks[comm_rank]; }
  const std::string& comm_algorithm(int comm) const { return F_.comms[comm].algorithm; }

  const Index& next_index() const { return next_; }
  void seek(const Index& at) { next_ = at; }

  // The next operation of `rank`'s stream: `compute` ns of GPU work (healthy speed) before it.
  int add_task(int rank, int comm, int kind, int iter, int peer, uint64_t bytes, double compute);
  FlowTask& task(int t) { return F_.tasks[t]; }

  // A connection from one operation to another: n_steps steps of `chunk` bytes.
  int add_conn(int src_task, int dst_task, int channel, int n_steps, uint64_t chunk, const char* role);
  int conn_channel(int conn) const { return F_.conns[conn].channel; }
  // The proxy op of `task` on a network connection (nothing on NVLink), in print order.
  void add_op(int task, int conn, bool is_send);

  // Lanes (thread groups) of an operation: add each with its program, then close the
  // operation's lanes (they run from `first_lane` to the last one added).
  int next_lane() const { return int(F_.lanes.size()); }
  void add_lane(int task, int ch, const FlowLaneProgram& prog);
  void finish_task_lanes(int task, int first_lane);

  // Comm ranks grouped by node, in comm-rank order: the node-level view of a communicator.
  std::vector<std::vector<int>> node_groups(int comm) const;
  // Ring of channel c: nodes in order; inside a node the order rotated by c*size/C (the ring
  // engine's rings for the world).
  std::vector<int> ring_order(int comm, int channel) const;

  // The phase's proxy ops are final: what follows them on the same connection end only needs
  // their end (flow_phases.cpp calls it before the next phase is built).
  void end_phase();
  // The connections seen (collect_links), each once, in the whole run's build order.
  std::vector<SimLink> take_links();

 private:
  void add_link(const FlowConn& c, int comm);

  // The previous proxy op on a connection end: in this phase (local id), or the end of one of
  // an earlier phase.
  struct LastOp {
    int local = -1;
    double end = 0;
  };
  // A connection of the topology once (links()): its communicator's hash, channel, ends, role.
  // (A link is listed where its first connection in the whole run's order is.)
  struct LinkKey {
    uint64_t comm_hash;
    int channel, src, dst;
    const char* role;
    bool operator<(const LinkKey& o) const;
  };

  Simulation::Impl& sim_;
  Flow& F_;
  const bool collect_links_;
  Index next_;
  std::map<std::tuple<int, int, int, int>, int> seq_counter_;   // comm, rank, kind, peer
  std::map<std::tuple<int, int, int, int, int>, LastOp> last_op_;  // rank, comm, channel, is_send, peer
  std::map<LinkKey, size_t> links_seen_;  // -> its place in links_
  std::vector<std::pair<int64_t, SimLink>> links_;  // with the index of its first connection
};

// The topology of a run and its builder, alive from the first phase's build to the last.
class FlowJob {
 public:
  FlowJob(Simulation::Impl& sim, Flow& flow, std::unique_ptr<Topology> topology, bool collect_links);
  ~FlowJob();
  FlowBuilder& builder() { return builder_; }
  Topology& topology() { return *topology_; }

 private:
  FlowBuilder builder_;
  std::unique_ptr<Topology> topology_;
};

}  // namespace culprit::mock
