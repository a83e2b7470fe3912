// Ring AllReduce in the general engine (docs/simulator.md, "Rings" and "The pipeline"): per
// channel a ring over the communicator, nodes in order, the order inside a node rotated per
// channel; each rank's share moves in loops of K = 2(n-1) messages: per loop one send, K-1
// recv-reduce-sends, one final receive.
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

void build_ring_allreduce(FlowBuilder& b, int comm, const std::vector<int>& tasks) {
  const int C = b.channels();
  const int nr = int(tasks.size());
  const int K = 2 * (nr - 1);
  uint64_t per = b.scenario().bytes / (uint64_t(C) * uint64_t(nr));
  if (per == 0) per = 1;
  const uint64_t max_chunk = b.params().max_chunk;
  int lp = int((per + max_chunk - 1) / max_chunk);
  if (lp < 1) lp = 1;
  const uint64_t chunk = (per + lp - 1) / lp;
  const int N = K * lp;
  std::vector<std::vector<int>> send_conn(C, std::vector<int>(nr)), recv_conn(C, std::vector<int>(nr));
  for (int c = 0; c < C; ++c) {
    const std::vector<int> order = b.ring_order(comm, c);
    for (int i = 0; i < nr; ++i) {
      const int a = order[i], bb = order[(i + 1) % nr];
      const int ci = b.add_conn(tasks[a], tasks[bb], c, N, chunk, "ring");
      send_conn[c][a] = ci;
      recv_conn[c][bb] = ci;
    }
  }
  for (int a = 0; a < nr; ++a) {
    FlowTask& t = b.task(tasks[a]);
    t.chunk = chunk;
    for (int c = 0; c < C; ++c) t.channels.push_back(c);
    const int first = b.next_lane();
    for (int c = 0; c < C; ++c) b.add_lane(tasks[a], c, FlowLaneProgram::ring(recv_conn[c][a], send_conn[c][a], K, lp));
    b.finish_task_lanes(tasks[a], first);
    // NCCL's save order per channel: the receive from the previous rank, then the send.
    for (int c = 0; c < C; ++c) {
      b.add_op(tasks[a], recv_conn[c][a], false);
      b.add_op(tasks[a], send_conn[c][a], true);
    }
  }
}

}  // namespace culprit::mock
