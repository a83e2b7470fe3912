#include "mock/flow_builder.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "mock/topology.hpp"

namespace culprit::mock {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

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
  c.net = sim_.net_hop(c.src, c.dst);
  c.role = role;
  c.n_steps = n_steps;
  c.chunk = chunk;
  c.prod.assign(n_steps, kNaN);
  c.F.assign(n_steps, kNaN);
  c.freed.assign(n_steps, kNaN);
  c.sd.assign(n_steps, kNaN);
  F_.conns.push_back(std::move(c));
  return int(F_.conns.size()) - 1;
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
  op.chunk_bytes = c.chunk;
  op.sched_ns = kInf;
  op.progress_ns = kNaN;
  op.end_ns = kNaN;
  op.comm_hash = F_.comms[t.comm].info.hash;
  op.comm_rank = F_.comm_rank_of[t.comm][op.rank];
  op.comm_peer = F_.comm_rank_of[t.comm][op.peer];
  op.is_p2p = t.kind != kTaskCollective;
  op.task = task;
  std::vector<SimProxyOp>& ops = F_.ops;
  const int oi = int(ops.size());
  ops.push_back(std::move(op));
  F_.op_steps.emplace_back(c.n_steps, sim_.keep.timeline);
  (is_send ? c.send_op : c.recv_op) = oi;
  F_.op_conn.push_back(conn);
  F_.op_next.push_back(-1);
  // The op that precedes it on the same connection: its end gates this one's progress.
  auto key = std::make_tuple(ops[oi].rank, t.comm, c.channel, int(is_send), ops[oi].peer);
  auto it = last_op_.find(key);
  F_.op_prev.push_back(it == last_op_.end() ? -1 : it->second);
  if (it != last_op_.end()) F_.op_next[it->second] = oi;
  last_op_[key] = oi;
  F_.tasks[task].ops.push_back(oi);
}

int FlowBuilder::begin_lane(int task, int ch) {
  FlowLane l;
  l.task = task;
  l.ch = ch;
  l.prim_begin = l.prim_end = l.next = uint32_t(F_.prims.size());
  F_.lanes.push_back(l);
  return int(F_.lanes.size()) - 1;
}

void FlowBuilder::add_prim(int lane, const std::vector<FlowIO>& in, const std::vector<FlowIO>& out) {
  FlowPrim pr;
  pr.io = uint32_t(F_.ios.size());
  pr.n_in = uint16_t(in.size());
  pr.n_out = uint16_t(out.size());
  for (const FlowIO& x : in) {
    F_.ios.push_back(x);
    F_.conns[x.conn].dst_lane = lane;
  }
  for (const FlowIO& x : out) {
    F_.ios.push_back(x);
    F_.conns[x.conn].src_lane = lane;
  }
  F_.prims.push_back(pr);
  F_.lanes[lane].prim_end = uint32_t(F_.prims.size());
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

// ---- the job of the general engine ------------------------------------------------------------

void Simulation::Impl::build_flow() {
  flow.stream.assign(n, {});
  FlowBuilder b(*this);
  make_topology(sc)->build(b);
  truth.comm_hash = flow.comms[0].info.hash;
  for (const auto& fc : flow.comms) comm_list.push_back(fc.info);
  // The world ring, for ring_next/ring_prev.
  if (flow.comms[0].info.name == "world" && flow.comms[0].algorithm == "RING") {
    next.assign(C, std::vector<int>(n));
    prev.assign(C, std::vector<int>(n));
    for (int c = 0; c < C; ++c) {
      const std::vector<int> order = b.ring_order(0, c);
      for (int i = 0; i < n; ++i) {
        next[c][order[i]] = order[(i + 1) % n];
        prev[c][order[(i + 1) % n]] = order[i];
      }
    }
  }
  resolve_flow_slow_links();
  truth.spec = sc.to_spec();
}

// slow_link faults: the default peer is the sender's first network connection in build order;
// a named link must be a connection of the topology.
void Simulation::Impl::resolve_flow_slow_links() {
  size_t li = 0;
  for (TruthRoot& root : truth.roots) {
    if (root.culprit_class != "network_link") continue;
    auto& [s, d, mag] = slow_links.at(li++);
    if (d < 0) {
      for (const FlowConn& c : flow.conns)
        if (c.src == s && c.net) {
          d = c.dst;
          break;
        }
      if (d < 0)
        throw std::invalid_argument("mock key 'fault': slow_link rank " + std::to_string(s) +
                                    " sends to no other node; name the link as slow_link:S-D");
    } else {
      if (!net_hop(s, d))
        throw std::invalid_argument("mock key 'fault': slow_link " + std::to_string(s) + "-" + std::to_string(d) +
                                    " is not a network link (same node)");
      bool used = false;
      for (const FlowConn& c : flow.conns) used |= c.src == s && c.dst == d;
      if (!used)
        throw std::invalid_argument("mock key 'fault': slow_link " + std::to_string(s) + "-" + std::to_string(d) +
                                    " is not a connection of this topology");
    }
    root.peer = d;
  }
}

}  // namespace culprit::mock
