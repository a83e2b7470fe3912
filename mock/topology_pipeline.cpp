// Pipeline parallelism in the general engine (docs/simulator.md, "Pipelines"): stage s holds
// global ranks s*M .. s*M+M-1; the GPU at position p of every stage forms the pipeline
// communicator pp<p>. Per iteration (GPipe) every microbatch forward, then every microbatch
// backward; every Send and Recv is its own operation; comms=pp+world ends each iteration with
// a world ring AllReduce.
//
// Phases: each microbatch forward, each backward, then the world AllReduce: a microbatch's
// sends and receives depend only on the stages' earlier operations, so one phase holds one
// Send/Recv pair per link of the pipelines, however many microbatches and iterations.
//
// The whole run's build order, which the indices keep (flow_builder.hpp): every rank's
// operations of every iteration, rank after rank; then the world AllReduces, iteration after
// iteration; then the Send/Recv pairs in the order of their receives (receiver after
// receiver, each in its program order). So a phase is built with seeks: each rank's
// operations where its block and their position in its iteration put them, the world
// AllReduce in its block, each pair where its receive's rank and position put it.
#include <algorithm>
#include <memory>
#include <stdexcept>

#include "mock/topology.hpp"

namespace culprit::mock {

namespace {

// One Send/Recv pair: `channels` connections of `steps` steps of `chunk` bytes
// (NCCL_P2P_NET_CHUNKSIZE at most).
struct P2pShape {
  uint64_t chunk = 0;
  int steps = 0;
};

P2pShape p2p_shape(const FlowBuilder& b) {
  const uint64_t C = uint64_t(b.channels());
  uint64_t per = (b.scenario().bytes + C - 1) / C;
  if (per == 0) per = 1;
  P2pShape shape;
  shape.chunk = std::min<uint64_t>(b.params().p2p_chunk, per);
  shape.steps = int((per + shape.chunk - 1) / shape.chunk);
  return shape;
}

// A receive of the phase being built, waiting for its pair.
struct PendingRecv {
  int rank = 0, src = 0, task = 0;
};

class PipelineTopology final : public Topology {
 public:
  void begin(FlowBuilder& b) override {
    const Scenario& sc = b.scenario();
    if (b.channels() > 16)
      throw std::invalid_argument("mock key 'channels': topology=pipeline uses at most 16 channels per peer");
    n_ = b.ranks();
    S_ = sc.stages > 0 ? sc.stages : sc.nodes;
    if (S_ < 2 || n_ % S_ != 0)
      throw std::invalid_argument("mock key 'stages': " + std::to_string(S_) + " stages do not divide " +
                                  std::to_string(n_) + " GPUs into at least 2 stages");
    stage_size_ = n_ / S_;
    channels_ = b.channels();
    if (sc.comms.find("world") != std::string::npos) {
      std::vector<int> all(n_);
      for (int r = 0; r < n_; ++r) all[r] = r;
      world_ = b.add_comm("world", "RING", all);
    }
    pp_comm_.assign(stage_size_, -1);
    for (int p = 0; p < stage_size_; ++p) {
      std::vector<int> ranks;
      for (int s = 0; s < S_; ++s) ranks.push_back(s * stage_size_ + p);
      pp_comm_[p] = b.add_comm("pp" + std::to_string(p), "P2P", ranks);
    }
    shape_ = p2p_shape(b);
    count_blocks(b);
    pend_.assign(n_, 0.0);
  }

  int phases() const override { return fwd_bwd_phases_ + (world_ >= 0 ? 1 : 0); }

  void build_phase(FlowBuilder& b, int it, int phase) override {
    sends_.assign(n_, -1);
    recvs_.clear();
    world_members_.assign(world_ >= 0 ? n_ : 0, -1);
    for (int r = 0; r < n_; ++r) {
      // As many operations in every microbatch phase of a rank, one in the world's.
      FlowBuilder::Index at = b.next_index();
      at.task = block_[r].task + it * per_it_[r].task + int64_t(phase) * ops_per_mb_[r];
      b.seek(at);
      rank_phase(b, r, it, phase);
      if (b.next_index().task != at.task + (phase == fwd_bwd_phases_ ? 1 : ops_per_mb_[r]))
        throw std::logic_error("mock: a pipeline rank's operations do not match their count");
    }
    if (phase == fwd_bwd_phases_) {
      b.seek(in_block(b.next_index(), world_block_, it));
      build_ring_allreduce(b, world_, world_members_);
      if (b.next_index().op != world_block_.op * (it + 1) || b.next_index().prim != world_block_.prim * (it + 1))
        throw std::logic_error("mock: the world AllReduce does not take the indices counted for it");
      return;
    }
    // The pairs come after every iteration's world AllReduce; a receive's position in its
    // rank's iteration follows from the phase (forward receives first).
    const int M = b.scenario().microbatches, dir = phase < M ? 0 : 1, mb = dir == 0 ? phase : phase - M;
    const FlowBuilder::Index pairs = in_block(b.next_index(), world_block_, b.scenario().seqs);
    for (const PendingRecv& rv : recvs_) {
      const int64_t q = dir == 0 ? mb : (fwd_recv_[rv.rank] ? M : 0) + mb;
      const int64_t net_q = dir == 0 ? mb * fwd_net_[rv.rank] : M * fwd_net_[rv.rank] + mb * bwd_net_[rv.rank];
      b.seek(pair_index(pairs, block_[rv.rank].conn + it * per_it_[rv.rank].conn + q,
                        block_[rv.rank].op + it * per_it_[rv.rank].op + net_q));
      p2p(b, sends_.at(rv.src), rv.task);
    }
  }

 private:
  // Per rank and iteration: operations (task), receives (conn), receives over the network
  // (op); block_: the same summed over the ranks before it and every iteration.
  struct Counts {
    int64_t task = 0, conn = 0, op = 0;
  };

  void count_blocks(const FlowBuilder& b) {
    const Scenario& sc = b.scenario();
    const int M = sc.microbatches, bw = sc.backward ? 1 : 0;
    fwd_bwd_phases_ = M * (1 + bw);
    per_it_.assign(n_, Counts{});
    block_.assign(n_, Counts{});
    ops_per_mb_.assign(n_, 0);
    fwd_recv_.assign(n_, 0);
    fwd_net_.assign(n_, 0);
    bwd_net_.assign(n_, 0);
    Counts sum;
    for (int r = 0; r < n_; ++r) {
      const int s = r / stage_size_;
      const bool first = s == 0, last = s == S_ - 1;
      fwd_recv_[r] = !first;
      fwd_net_[r] = !first && b.net_hop(r, r - stage_size_);
      bwd_net_[r] = !last && bw && b.net_hop(r, r + stage_size_);
      ops_per_mb_[r] = (first ? 0 : 1) + (last ? 0 : 1);  // a receive and a send, forward or backward
      Counts& c = per_it_[r];
      c.task = int64_t(fwd_bwd_phases_) * ops_per_mb_[r] + (world_ >= 0 ? 1 : 0);
      c.conn = int64_t(M) * ((first ? 0 : 1) + (last ? 0 : bw));
      c.op = int64_t(M) * (fwd_net_[r] + bwd_net_[r]);
      block_[r] = sum;
      sum.task += c.task * sc.seqs;
      sum.conn += c.conn * sc.seqs;
      sum.op += c.op * sc.seqs;
    }
    if (world_ >= 0) world_block_ = ring_allreduce_size(b, world_);
  }

  // `at` moved to the start of block k of the blocks of `size` connections, lanes,
  // primitives and proxy ops from index 0 (its operations' index stays).
  static FlowBuilder::Index in_block(FlowBuilder::Index at, const FlowBuilder::Index& size, int64_t k) {
    at.conn = size.conn * k;
    at.lane = size.lane * k;
    at.prim = size.prim * k;
    at.op = size.op * k;
    return at;
  }

  // Pair `pair` (the net_pair-th over the network): `channels` connections, two lanes and, over
  // the network, two proxy ops per connection.
  FlowBuilder::Index pair_index(const FlowBuilder::Index& pairs, int64_t pair, int64_t net_pair) const {
    const int64_t C = channels_;
    FlowBuilder::Index at = pairs;
    at.conn += pair * C;
    at.lane += pair * 2 * C;
    at.prim += pair * 2 * C * shape_.steps;
    at.op += net_pair * 2 * C;
    return at;
  }

  // Rank r's operations of one phase of iteration `it` (GPipe: every microbatch forward, then
  // with backward=1 every microbatch backward, then the world AllReduce). A forward microbatch
  // receives from stage s-1, computes, sends to s+1; a backward one receives from s+1,
  // computes, sends to s-1. The compute of a stage sits between its receive and its send, and
  // what no operation follows is charged to the next one. A receive pairs with the send of the
  // same phase from its peer.
  void rank_phase(FlowBuilder& b, int r, int it, int phase) {
    const Scenario& sc = b.scenario();
    const Params& p = b.params();
    double& pend = pend_[r];
    if (phase == 0) pend += p.gap / 4;
    if (phase == fwd_bwd_phases_) {
      world_members_[r] = b.add_task(r, world_, kTaskCollective, it, -1, sc.bytes, pend + p.gap_inner);
      pend = 0;
      return;
    }
    const int s = r / stage_size_, comm = pp_comm_[r % stage_size_];
    const int dir = phase < sc.microbatches ? 0 : 1;
    const int from = dir == 0 ? s - 1 : s + 1, to = dir == 0 ? s + 1 : s - 1;
    if (from >= 0 && from < S_) {
      recvs_.push_back({r, r + (from - s) * stage_size_, b.add_task(r, comm, kTaskRecv, it, from, sc.bytes, pend)});
      pend = 0;
    }
    pend += dir == 0 ? p.pp_forward : p.pp_backward;
    if (to >= 0 && to < S_) {
      sends_[r] = b.add_task(r, comm, kTaskSend, it, to, sc.bytes, pend);
      pend = 0;
    }
  }

  // One Send/Recv pair: `channels` connections (NCCL's p2p channels 16 + (delta*C + part) mod
  // 16, the same at both ends), 128 KiB steps, one lane and one proxy op per channel and side.
  void p2p(FlowBuilder& b, int send_task, int recv_task) const {
    const int C = b.channels();
    const FlowTask& st = b.task(send_task);
    const int nranks = b.comm_size(st.comm);
    const int me = b.comm_rank(st.comm, st.rank);
    const int delta = ((st.peer - me) % nranks + nranks) % nranks;
    std::vector<int> conn(C);
    for (int part = 0; part < C; ++part) {
      const int channel = b.params().p2p_channel_base + (delta * C + part) % 16;
      conn[part] = b.add_conn(send_task, recv_task, channel, shape_.steps, shape_.chunk, "p2p");
    }
    for (int side = 0; side < 2; ++side) {
      const int task = side == 0 ? send_task : recv_task;
      FlowTask& t = b.task(task);
      t.chunk = shape_.chunk;
      for (int part = 0; part < C; ++part) t.channels.push_back(b.conn_channel(conn[part]));
      const int first = b.next_lane();
      for (int part = 0; part < C; ++part) {
        if (side == 0) b.add_lane(task, part, FlowLaneProgram::lockstep({}, {conn[part]}, shape_.steps));
        else b.add_lane(task, part, FlowLaneProgram::lockstep({conn[part]}, {}, shape_.steps));
      }
      b.finish_task_lanes(task, first);
      for (int part = 0; part < C; ++part) b.add_op(task, conn[part], side == 0);
    }
  }

  int n_ = 0, S_ = 0, stage_size_ = 0, channels_ = 0, world_ = -1;
  std::vector<int> pp_comm_;
  P2pShape shape_;
  int fwd_bwd_phases_ = 0;  // the microbatch phases of an iteration (the world's comes after)
  std::vector<Counts> per_it_, block_;
  std::vector<int> ops_per_mb_;  // per rank: its operations in a microbatch phase
  // Per rank: whether it receives forward, and whether its forward and backward receives come
  // over the network.
  std::vector<int> fwd_recv_, fwd_net_, bwd_net_;
  FlowBuilder::Index world_block_;  // the indices one world AllReduce takes
  std::vector<double> pend_;        // per rank: compute not yet charged to an operation
  // The phase being built: its sends by rank, its receives in the whole run's order, the world
  // AllReduce's operations by rank.
  std::vector<int> sends_;
  std::vector<PendingRecv> recvs_;
  std::vector<int> world_members_;
};

}  // namespace

std::unique_ptr<Topology> make_pipeline_topology() { return std::make_unique<PipelineTopology>(); }

}  // namespace culprit::mock
