// Ring AllReduce in the general engine (docs/simulator.md, "Rings" and "The pipeline"): per
// channel a ring over the communicator, nodes in order, the order inside a node rotated per
// channel; each rank's share moves in loops of K = 2(n-1) messages: per loop one send, K-1
// recv-reduce-sends, one final receive.
#include <algorithm>
#include <memory>

#include "mock/topology.hpp"

namespace culprit::mock {

namespace {

class RingTopology final : public DataParallelTopology {
 protected:
  const char* algorithm() const override { return "RING"; }
  void check(const FlowBuilder&) const override {}
  void allreduce(FlowBuilder& b, int comm, const std::vector<int>& tasks) const override {
    build_ring_allreduce(b, comm, tasks);
  }
};

}  // namespace

std::unique_ptr<Topology> make_ring_topology() { return std::make_unique<RingTopology>(); }

namespace {

// Per channel, each rank's share moves in `loops` loops of K = 2(n-1) messages of `chunk`
// bytes: N = K * loops steps a connection.
struct RingShape {
  int K = 0, loops = 1, N = 0;
  uint64_t chunk = 0;
};

RingShape ring_shape(const FlowBuilder& b, int nr) {
  RingShape s;
  s.K = 2 * (nr - 1);
  uint64_t per = b.scenario().bytes / (uint64_t(b.channels()) * uint64_t(nr));
  if (per == 0) per = 1;
  const uint64_t max_chunk = b.params().max_chunk;
  s.loops = std::max(1, int((per + max_chunk - 1) / max_chunk));
  s.chunk = (per + s.loops - 1) / s.loops;
  s.N = s.K * s.loops;
  return s;
}

}  // namespace

void build_ring_allreduce(FlowBuilder& b, int comm, const std::vector<int>& tasks) {
  const int C = b.channels();
  const int nr = int(tasks.size());
  const RingShape sh = ring_shape(b, nr);
  std::vector<std::vector<int>> send_conn(C, std::vector<int>(nr)), recv_conn(C, std::vector<int>(nr));
  for (int c = 0; c < C; ++c) {
    const std::vector<int> order = b.ring_order(comm, c);
    for (int i = 0; i < nr; ++i) {
      const int a = order[i], bb = order[(i + 1) % nr];
      const int ci = b.add_conn(tasks[a], tasks[bb], c, sh.N, sh.chunk, "ring");
      send_conn[c][a] = ci;
      recv_conn[c][bb] = ci;
    }
  }
  for (int a = 0; a < nr; ++a) {
    FlowTask& t = b.task(tasks[a]);
    t.chunk = sh.chunk;
    for (int c = 0; c < C; ++c) t.channels.push_back(c);
    const int first = b.next_lane();
    for (int c = 0; c < C; ++c)
      b.add_lane(tasks[a], c, FlowLaneProgram::ring(recv_conn[c][a], send_conn[c][a], sh.K, sh.loops));
    b.finish_task_lanes(tasks[a], first);
    // NCCL's save order per channel: the receive from the previous rank, then the send.
    for (int c = 0; c < C; ++c) {
      b.add_op(tasks[a], recv_conn[c][a], false);
      b.add_op(tasks[a], send_conn[c][a], true);
    }
  }
}

// Per channel a connection and a lane for every rank, each lane loops * (K+1) primitives, and
// two proxy ops on every connection between nodes.
FlowBuilder::Index ring_allreduce_size(const FlowBuilder& b, int comm) {
  const int C = b.channels(), nr = b.comm_size(comm);
  const RingShape sh = ring_shape(b, nr);
  FlowBuilder::Index size;
  size.conn = size.lane = int64_t(C) * nr;
  size.prim = size.lane * sh.loops * (sh.K + 1);
  for (int c = 0; c < C; ++c) {
    const std::vector<int> order = b.ring_order(comm, c);
    for (int i = 0; i < nr; ++i)
      size.op += b.net_hop(b.global_rank(comm, order[i]), b.global_rank(comm, order[(i + 1) % nr])) ? 2 : 0;
  }
  return size;
}

}  // namespace culprit::mock
