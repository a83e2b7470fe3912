// Builds the general engine's job (flow.cpp): communicators, every rank's operations in
// program order, and each operation's connections, lanes, primitives and proxy ops. The
// topologies (topology.hpp) describe their jobs through it. The order of the calls fixes
// every index, and the engine's noise is keyed by those indices: reordering calls changes
// the simulated timeline.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "mock/sim_internal.hpp"

namespace culprit::mock {

// Kinds of operation (FlowTask::kind).
inline constexpr int kTaskCollective = 0, kTaskSend = 1, kTaskRecv = 2;

class FlowBuilder {
 public:
  explicit FlowBuilder(Simulation::Impl& sim) : sim_(sim), F_(sim.flow) {}

  const Scenario& scenario() const { return sim_.sc; }
  const Params& params() const { return sim_.p; }
  int ranks() const { return sim_.n; }
  int channels() const { return sim_.C; }

  // A communicator over these global ranks (comm rank = position); returns its index.
  int add_comm(const std::string& name, const std::string& algorithm, const std::vector<int>& ranks);
  int comm_rank(int comm, int global_rank) const { return F_.comm_rank_of[comm][global_rank]; }
  int comm_size(int comm) const { return int(F_.comms[comm].info.ranks.size()); }
  const std::string& comm_algorithm(int comm) const { return F_.comms[comm].algorithm; }

  // The next operation of `rank`'s stream: `compute` ns of GPU work (healthy speed) before it.
  int add_task(int rank, int comm, int kind, int iter, int peer, uint64_t bytes, double compute);
  FlowTask& task(int t) { return F_.tasks[t]; }

  // A connection from one operation to another: n_steps steps of `chunk` bytes.
  int add_conn(int src_task, int dst_task, int channel, int n_steps, uint64_t chunk, const char* role);
  int conn_channel(int conn) const { return F_.conns[conn].channel; }
  // The proxy op of `task` on a network connection (nothing on NVLink), in print order.
  void add_op(int task, int conn, bool is_send);

  // Lanes (thread groups) of an operation: begin each, add its primitives in order, then
  // close the operation's lanes (they run from `first_lane` to the last one begun).
  int next_lane() const { return int(F_.lanes.size()); }
  int begin_lane(int task, int ch);
  void add_prim(int lane, const std::vector<FlowIO>& in, const std::vector<FlowIO>& out);
  void finish_task_lanes(int task, int first_lane);

  // Comm ranks grouped by node, in comm-rank order: the node-level view of a communicator.
  std::vector<std::vector<int>> node_groups(int comm) const;
  // Ring of channel c: nodes in order; inside a node the order rotated by c*size/C (the ring
  // engine's rings for the world).
  std::vector<int> ring_order(int comm, int channel) const;

 private:
  Simulation::Impl& sim_;
  Flow& F_;
  std::map<std::tuple<int, int, int, int>, int> seq_counter_;        // comm, rank, kind, peer
  std::map<std::tuple<int, int, int, int, int>, int> last_op_;       // rank, comm, channel, is_send, peer
};

}  // namespace culprit::mock
