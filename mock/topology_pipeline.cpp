// Pipeline parallelism in the general engine (docs/simulator.md, "Pipelines"): stage s holds
// global ranks s*M .. s*M+M-1; the GPU at position p of every stage forms the pipeline
// communicator pp<p>. Per iteration (GPipe) every microbatch forward, then every microbatch
// backward; every Send and Recv is its own operation; comms=pp+world ends each iteration with
// a world ring AllReduce.
#include <map>
#include <memory>
#include <stdexcept>
#include <tuple>

#include "mock/topology.hpp"

namespace culprit::mock {

namespace {

// The operations of the job, before their connections exist: p2p pairs (send task, recv
// task) and the world AllReduces (tasks by rank, one per iteration).
struct PipelineProgram {
  std::vector<std::pair<int, int>> pairs;
  std::vector<std::vector<int>> world_members;
};

class PipelineTopology final : public Topology {
 public:
  void build(FlowBuilder& b) const override {
    const Scenario& sc = b.scenario();
    if (b.channels() > 16)
      throw std::invalid_argument("mock key 'channels': topology=pipeline uses at most 16 channels per peer");
    const int n = b.ranks();
    const int S = sc.stages > 0 ? sc.stages : sc.nodes;
    if (S < 2 || n % S != 0)
      throw std::invalid_argument("mock key 'stages': " + std::to_string(S) + " stages do not divide " +
                                  std::to_string(n) + " GPUs into at least 2 stages");
    const bool with_world = sc.comms.find("world") != std::string::npos;
    const int stage_size = n / S;
    int world = -1;
    if (with_world) {
      std::vector<int> all(n);
      for (int r = 0; r < n; ++r) all[r] = r;
      world = b.add_comm("world", "RING", all);
    }
    std::vector<int> pp_comm(stage_size, -1);
    for (int p = 0; p < stage_size; ++p) {
      std::vector<int> ranks;
      for (int s = 0; s < S; ++s) ranks.push_back(s * stage_size + p);
      pp_comm[p] = b.add_comm("pp" + std::to_string(p), "P2P", ranks);
    }
    const PipelineProgram prog = program(b, S, pp_comm, world);
    // The world AllReduces' connections first, then the sends' and receives'.
    if (with_world)
      for (int it = 0; it < sc.seqs; ++it) build_ring_allreduce(b, world, prog.world_members[it]);
    for (const auto& [send_task, recv_task] : prog.pairs) p2p(b, send_task, recv_task);
  }

 private:
  // Every rank's stream (GPipe): every microbatch forward (receive from stage s-1, forward
  // compute, send to s+1), then (backward=1) every microbatch backward (receive from s+1,
  // backward compute, send to s-1); the compute of a stage sits between its receive and its
  // send. A receive pairs with the send of the same (iteration, microbatch, direction) from
  // its peer; each rank's operations are added in its own program order.
  static PipelineProgram program(FlowBuilder& b, int S, const std::vector<int>& pp_comm, int world) {
    const Scenario& sc = b.scenario();
    const Params& p = b.params();
    const int n = b.ranks(), stage_size = n / S, M = sc.microbatches;
    std::map<std::tuple<int, int, int, int>, int> pending_send;  // it, mb, dir, src rank -> task
    struct Recv {
      int it, mb, dir, src, recv_task;
    };
    std::vector<Recv> recvs;
    PipelineProgram prog;
    prog.world_members.assign(world >= 0 ? sc.seqs : 0, std::vector<int>(n, -1));
    for (int r = 0; r < n; ++r) {
      const int s = r / stage_size, comm = pp_comm[r % stage_size];
      double pend = 0;  // compute not yet charged to an operation
      auto step = [&](int it, int mb, int dir) {
        const int from = dir == 0 ? s - 1 : s + 1, to = dir == 0 ? s + 1 : s - 1;
        if (from >= 0 && from < S) {
          recvs.push_back({it, mb, dir, r + (from - s) * stage_size,
                           b.add_task(r, comm, kTaskRecv, it, from, sc.bytes, pend)});
          pend = 0;
        }
        pend += dir == 0 ? p.pp_forward : p.pp_backward;
        if (to >= 0 && to < S) {
          pending_send[{it, mb, dir, r}] = b.add_task(r, comm, kTaskSend, it, to, sc.bytes, pend);
          pend = 0;
        }
      };
      for (int it = 0; it < sc.seqs; ++it) {
        pend += p.gap / 4;
        for (int mb = 0; mb < M; ++mb) step(it, mb, 0);
        if (sc.backward)
          for (int mb = 0; mb < M; ++mb) step(it, mb, 1);
        if (world >= 0) {
          prog.world_members[it][r] = b.add_task(r, world, kTaskCollective, it, -1, sc.bytes, pend + p.gap_inner);
          pend = 0;
        }
      }
    }
    for (const Recv& q : recvs) prog.pairs.emplace_back(pending_send.at({q.it, q.mb, q.dir, q.src}), q.recv_task);
    return prog;
  }

  // One Send/Recv pair: `channels` connections (NCCL's p2p channels 16 + (delta*C + part) mod
  // 16, the same at both ends), 128 KiB steps, one lane and one proxy op per channel and side.
  static void p2p(FlowBuilder& b, int send_task, int recv_task) {
    const int C = b.channels();
    const FlowTask& st = b.task(send_task);
    const int nranks = b.comm_size(st.comm);
    const int me = b.comm_rank(st.comm, st.rank);
    const int delta = ((st.peer - me) % nranks + nranks) % nranks;
    uint64_t per = (b.scenario().bytes + uint64_t(C) - 1) / uint64_t(C);
    if (per == 0) per = 1;
    const uint64_t chunk = std::min<uint64_t>(b.params().p2p_chunk, per);
    const int N = int((per + chunk - 1) / chunk);
    std::vector<int> conn(C);
    for (int part = 0; part < C; ++part) {
      const int channel = b.params().p2p_channel_base + (delta * C + part) % 16;
      conn[part] = b.add_conn(send_task, recv_task, channel, N, chunk, "p2p");
    }
    for (int side = 0; side < 2; ++side) {
      const int task = side == 0 ? send_task : recv_task;
      FlowTask& t = b.task(task);
      t.chunk = chunk;
      for (int part = 0; part < C; ++part) t.channels.push_back(b.conn_channel(conn[part]));
      const int first = b.next_lane();
      for (int part = 0; part < C; ++part) {
        const int lane = b.begin_lane(task, part);
        for (int k = 0; k < N; ++k) {
          if (side == 0) b.add_prim(lane, {}, {{conn[part], k}});
          else b.add_prim(lane, {{conn[part], k}}, {});
        }
      }
      b.finish_task_lanes(task, first);
      for (int part = 0; part < C; ++part) b.add_op(task, conn[part], side == 0);
    }
  }
};

}  // namespace

std::unique_ptr<Topology> make_pipeline_topology() { return std::make_unique<PipelineTopology>(); }

}  // namespace culprit::mock
