#include "mock/flow_builder.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "mock/topology.hpp"

namespace culprit::mock {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

// ---- lane programs ---------------------------------------------------------------------------

FlowLaneProgram FlowLaneProgram::ring(int in, int out, int K, int loops) {
  FlowLaneProgram prog;
  prog.kind = kRing;
  prog.n_in = prog.n_out = 1;
  prog.in[0] = in;
  prog.out[0] = out;
  prog.K = K;
  prog.loops = loops;
  return prog;
}

FlowLaneProgram FlowLaneProgram::lockstep(const std::vector<int>& in, const std::vector<int>& out, int steps) {
  if (in.size() > size_t(kLaneConns) || out.size() > size_t(kLaneConns))
    throw std::logic_error("mock: a lane with more connections than kLaneConns");
  FlowLaneProgram prog;
  prog.kind = kLockstep;
  prog.steps = steps;
  prog.n_in = uint8_t(in.size());
  prog.n_out = uint8_t(out.size());
  std::copy(in.begin(), in.end(), prog.in);
  std::copy(out.begin(), out.end(), prog.out);
  return prog;
}

uint32_t FlowLaneProgram::size() const { return kind == kRing ? uint32_t(loops) * uint32_t(K + 1) : uint32_t(steps); }

void FlowLaneProgram::prim(uint32_t j, FlowIO* io, int& ni, int& no) const {
  if (kind == kLockstep) {
    ni = n_in;
    no = n_out;
    for (int i = 0; i < n_in; ++i) io[i] = {in[i], int(j)};
    for (int i = 0; i < n_out; ++i) io[n_in + i] = {out[i], int(j)};
    return;
  }
  // Ring loop l: a send of message l*K, K-1 recv-reduce-sends, a final receive.
  const int jj = int(j % uint32_t(K + 1)), base = int(j / uint32_t(K + 1)) * K;
  ni = jj == 0 ? 0 : 1;
  no = jj == K ? 0 : 1;
  if (ni) io[0] = {in[0], base + jj - 1};
  if (no) io[ni] = {out[0], base + jj};
}

// ---- the builder -----------------------------------------------------------------------------

int FlowBuilder::add_comm(const std::string& name, const std::string& algorithm, const std::vector<int>& ranks) {
  FlowComm fc;
  const int idx = int(F_.comms.size());
  if (idx == 0) {
    fc.info.hash = sim_.comm_hash;
  } else {
    uint64_t h = mix(sim_.sc.seed, uint64_t(idx), 0x636f6d6d68ull);
    // Alternate the top bit so that several communicators exceed 2^63 and several do not.
    h = idx % 2 == 1 ? (h | (1ull << 63)) : (h & ~(1ull << 63));
    fc.info.hash = h;
  }
  fc.info.name = name;
  fc.info.algorithm = algorithm;
  fc.info.ranks = ranks;
  fc.algorithm = algorithm;
  F_.comms.push_back(fc);
  std::vector<int> map(sim_.n, -1);
  for (size_t i = 0; i < ranks.size(); ++i) map[ranks[i]] = int(i);
  F_.comm_rank_of.push_back(std::move(map));
  return idx;
}

int FlowBuilder::add_task(int rank, int comm, int kind, int iter, int peer, uint64_t bytes, double compute) {
  FlowTask t;
  t.rank = rank;
  t.comm = comm;
  t.kind = kind;
  t.iter = iter;
  t.peer = peer;
  t.bytes = bytes;
  t.compute = compute;
  t.index = next_.task++;
  // SeqNum counts per communicator and rank, p2p per peer and direction.
  t.seq = seq_counter_[{comm, rank, kind, kind == kTaskCollective ? -1 : peer}]++;
  const int idx = int(F_.tasks.size());
  F_.tasks.push_back(std::move(t));
  F_.stream[rank].push_back(idx);
  return idx;
}

int FlowBuilder::add_conn(int src_task, int dst_task, int channel, int n_steps, uint64_t chunk, const char* role) {
  FlowConn c;
  c.src_task = src_task;
  c.dst_task = dst_task;
  c.src = F_.tasks[src_task].rank;
  c.dst = F_.tasks[dst_task].rank;
  c.channel = channel;
  c.index = next_.conn++;
  c.net = sim_.net_hop(c.src, c.dst);
  c.role = role;
  c.n_steps = n_steps;
  c.chunk = chunk;
  // Point-to-point runs SIMPLE whatever the collectives' protocol.
  const bool p2p = std::strcmp(role, "p2p") == 0;
  c.wire_chunk = p2p ? chunk : sim_.coll_wire_bytes(chunk);
  c.flushed = p2p || sim_.p.coll_flush;
  if (collect_links_) add_link(c, F_.tasks[src_task].comm);
  F_.conns.push_back(c);
  return int(F_.conns.size()) - 1;
}

bool FlowBuilder::LinkKey::operator<(const LinkKey& o) const {
  if (comm_hash != o.comm_hash) return comm_hash < o.comm_hash;
  if (channel != o.channel) return channel < o.channel;
  if (src != o.src) return src < o.src;
  if (dst != o.dst) return dst < o.dst;
  return std::strcmp(role, o.role) < 0;
}

// links() lists every connection of the topology once, where its first connection is in the
// whole run's build order (phases do not build in that order: a pipeline's world AllReduce
// comes first in it and last in an iteration).
void FlowBuilder::add_link(const FlowConn& c, int comm) {
  const uint64_t h = F_.comms[comm].info.hash;
  auto [it, added] = links_seen_.try_emplace(LinkKey{h, c.channel, c.src, c.dst, c.role}, links_.size());
  if (added) links_.emplace_back(c.index, SimLink{h, c.channel, c.src, c.dst, c.net, c.role});
  else links_[it->second].first = std::min(links_[it->second].first, c.index);
}

std::vector<SimLink> FlowBuilder::take_links() {
  std::sort(links_.begin(), links_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<SimLink> out;
  for (auto& [index, link] : links_) out.push_back(std::move(link));
  links_.clear();
  links_seen_.clear();
  return out;
}

void FlowBuilder::add_op(int task, int conn, bool is_send) {
  FlowConn& c = F_.conns[conn];
  if (!c.net) return;
  const FlowTask& t = F_.tasks[task];
  SimProxyOp op;
  op.seq = t.seq;
  op.channel = c.channel;
  op.rank = is_send ? c.src : c.dst;
  op.peer = is_send ? c.dst : c.src;
  op.is_send = is_send;
  op.n_steps = c.n_steps;
  op.chunk_bytes = c.wire_chunk;
  op.sched_ns = kInf;
  op.progress_ns = kNaN;
  op.end_ns = kNaN;
  op.comm_hash = F_.comms[t.comm].info.hash;
  op.comm_rank = F_.comm_rank_of[t.comm][op.rank];
  op.comm_peer = F_.comm_rank_of[t.comm][op.peer];
  op.is_p2p = t.kind != kTaskCollective;
  op.task = int(t.index);
  const int oi = int(F_.ops.size());
  // The op that precedes it on the same connection end: its end gates this one's progress.
  LastOp& last = last_op_.try_emplace(std::make_tuple(op.rank, t.comm, c.channel, int(is_send), op.peer),
                                      LastOp{-1, -kInf}).first->second;
  F_.ops.push_back(std::move(op));
  F_.op_recorded.push_back(0);
  F_.op_log.push_back(-1);
  F_.op_index.push_back(next_.op++);
  F_.op_task.push_back(task);
  F_.op_conn.push_back(conn);
  F_.op_next.push_back(-1);
  F_.op_prev.push_back(last.local);
  F_.op_prev_end.push_back(last.local >= 0 ? -kInf : last.end);
  if (last.local >= 0) F_.op_next[last.local] = oi;
  last.local = oi;
  (is_send ? c.send_op : c.recv_op) = oi;
  F_.tasks[task].ops.push_back(oi);
}

void FlowBuilder::end_phase() {
  for (auto& [key, last] : last_op_) {
    if (last.local < 0) continue;
    last.end = F_.ops[last.local].end_ns;  // NaN: it never ended, nor will what follows it
    last.local = -1;
  }
}

void FlowBuilder::add_lane(int task, int ch, const FlowLaneProgram& prog) {
  FlowLane l;
  l.task = task;
  l.ch = ch;
  l.index = next_.lane++;
  l.prog = prog;
  l.n_prims = prog.size();
  l.prim_base = uint64_t(next_.prim);
  next_.prim += l.n_prims;
  const int lane = int(F_.lanes.size());
  for (int i = 0; i < prog.n_in; ++i) F_.conns[prog.in[i]].dst_lane = lane;
  for (int i = 0; i < prog.n_out; ++i) F_.conns[prog.out[i]].src_lane = lane;
  F_.lanes.push_back(l);
}

void FlowBuilder::finish_task_lanes(int task, int first_lane) {
  F_.tasks[task].lane_begin = first_lane;
  F_.tasks[task].lane_end = int(F_.lanes.size());
}

std::vector<std::vector<int>> FlowBuilder::node_groups(int comm) const {
  std::vector<std::vector<int>> groups;
  std::vector<int> node_of_group;
  const std::vector<int>& ranks = F_.comms[comm].info.ranks;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const int node = sim_.procs[ranks[i]].node;
    auto g = std::find(node_of_group.begin(), node_of_group.end(), node);
    if (g == node_of_group.end()) {
      node_of_group.push_back(node);
      groups.push_back({int(i)});
    } else {
      groups[size_t(g - node_of_group.begin())].push_back(int(i));
    }
  }
  return groups;
}

std::vector<int> FlowBuilder::ring_order(int comm, int c) const {
  std::vector<int> order;
  for (const auto& g : node_groups(comm)) {
    const int m = int(g.size());
    const int rot = (c * m / sim_.C) % m;
    for (int i = 0; i < m; ++i) order.push_back(g[(rot + i) % m]);
  }
  return order;
}

FlowJob::FlowJob(Simulation::Impl& sim, Flow& flow, std::unique_ptr<Topology> topology, bool collect_links)
    : builder_(sim, flow, collect_links), topology_(std::move(topology)) {}
FlowJob::~FlowJob() = default;

void FlowJobDeleter::operator()(FlowJob* job) const { delete job; }

}  // namespace culprit::mock
