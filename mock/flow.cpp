// The general engine of the simulator (docs/simulator.md, "The general engine"): double
// binary tree AllReduce, pipeline-parallel send/recv, several communicators per process, and
// the ring again (for world+dp, or engine=flow).
//
// Every process runs a stream of operations in order. An operation starts (its kernel starts)
// when the previous one on the same GPU finished plus the compute in between; its host
// enqueues it a little earlier and its proxy schedules the network ops. Inside an operation
// each channel runs one or more lanes (NCCL's thread groups): ordered primitives that receive
// steps from connections (once the data arrived and was flushed) and send steps to connections
// (once the slot is free). The physics of a connection are the ring engine's: 8 slots
// (NCCL_STEPS), receive buffers posted as the receiving GPU frees them, an isend accepted when
// the data is ready and the clear-to-send arrived, a serial wire, a serial flush, NVLink hops
// without a proxy. Values are computed as soon as their inputs are known (a work list); the
// noise is a hash of what it applies to, so the timeline does not depend on evaluation order.
#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>

#include "mock/sim_internal.hpp"

namespace culprit::mock {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline bool known(double x) { return !std::isnan(x); }

constexpr uint64_t kItemRank = 0, kItemLane = 1, kItemConn = 2;

// NCCL's binary tree over nranks nodes (src/graph/trees.cc, ncclGetBtree): the tree of the
// lowest set bit. Node 0 is the root with one child; children are d0 then d1 (-1 = none).
void btree(int nranks, int rank, int& up, int& d0, int& d1) {
  int bit = 1;
  for (bit = 1; bit < nranks; bit <<= 1)
    if (bit & rank) break;
  if (rank == 0) {
    up = -1;
    d0 = -1;
    d1 = nranks > 1 ? bit >> 1 : -1;
    return;
  }
  up = (rank ^ bit) | (bit << 1);
  if (up >= nranks) up = rank ^ bit;
  int lowbit = bit >> 1;
  d0 = lowbit == 0 ? -1 : rank - lowbit;
  d1 = lowbit == 0 ? -1 : rank + lowbit;
  while (d1 >= nranks) {
    lowbit >>= 1;
    d1 = lowbit == 0 ? -1 : rank + lowbit;
  }
}

// NCCL's double binary tree (ncclGetDtree): tree 0 is the binary tree; tree 1 is the same tree
// mirrored (even node count) or shifted by one (odd), so that a node that is a leaf in one
// tree is interior in the other.
void dtree(int nranks, int rank, int tree, int& up, std::vector<int>& down) {
  int u = -1, d0 = -1, d1 = -1;
  down.clear();
  if (tree == 0) {
    btree(nranks, rank, u, d0, d1);
  } else if (nranks % 2 == 1) {
    const int shifted = (rank - 1 + nranks) % nranks;
    btree(nranks, shifted, u, d0, d1);
    u = u == -1 ? -1 : (u + 1) % nranks;
    d0 = d0 == -1 ? -1 : (d0 + 1) % nranks;
    d1 = d1 == -1 ? -1 : (d1 + 1) % nranks;
  } else {
    btree(nranks, nranks - 1 - rank, u, d0, d1);
    u = u == -1 ? -1 : nranks - 1 - u;
    d0 = d0 == -1 ? -1 : nranks - 1 - d0;
    d1 = d1 == -1 ? -1 : nranks - 1 - d1;
  }
  up = u;
  if (d0 >= 0) down.push_back(d0);
  if (d1 >= 0) down.push_back(d1);
}

}  // namespace

// ---- building the job -----------------------------------------------------------------------

void Simulation::Impl::build_flow() {
  Flow& F = flow;
  const bool pipeline = sc.topology == "pipeline";
  const std::string comms = sc.comms.empty() ? (pipeline ? "pp" : "world") : sc.comms;
  const bool with_world = comms.find("world") != std::string::npos;
  const bool with_dp = comms.find("dp") != std::string::npos;
  if (sc.topology == "tree" && C % 2 != 0)
    throw std::invalid_argument("mock key 'channels': topology=tree needs an even number of channels "
                                "(channels c and c+channels/2 carry the two mirrored trees)");
  if (pipeline && C > 16)
    throw std::invalid_argument("mock key 'channels': topology=pipeline uses at most 16 channels per peer");
  if (with_dp && sc.nodes < 2)
    throw std::invalid_argument("mock key 'comms': world+dp needs at least 2 nodes (a DP communicator spans the nodes)");
  const int S = pipeline ? (sc.stages > 0 ? sc.stages : sc.nodes) : 0;
  if (pipeline && (S < 2 || n % S != 0))
    throw std::invalid_argument("mock key 'stages': " + std::to_string(S) + " stages do not divide " +
                                std::to_string(n) + " GPUs into at least 2 stages");
  const int stage_size = pipeline ? n / S : 0;

  // ---- communicators ----
  std::vector<std::vector<int>> comm_rank_of;  // [comm][global rank] -> comm rank, -1 if not a member
  auto add_comm = [&](const std::string& name, const std::string& algorithm, const std::vector<int>& ranks) {
    FlowComm fc;
    const int idx = int(F.comms.size());
    if (idx == 0) {
      fc.info.hash = comm_hash;
    } else {
      uint64_t h = mix(sc.seed, uint64_t(idx), 0x636f6d6d68ull);
      // Alternate the top bit so that several communicators exceed 2^63 and several do not.
      h = idx % 2 == 1 ? (h | (1ull << 63)) : (h & ~(1ull << 63));
      fc.info.hash = h;
    }
    fc.info.name = name;
    fc.info.algorithm = algorithm;
    fc.info.ranks = ranks;
    fc.algorithm = algorithm;
    F.comms.push_back(fc);
    std::vector<int> map(n, -1);
    for (size_t i = 0; i < ranks.size(); ++i) map[ranks[i]] = int(i);
    comm_rank_of.push_back(map);
    return idx;
  };
  const std::string coll_algo = sc.topology == "tree" ? "TREE" : "RING";
  int world = -1;
  std::vector<int> dp_comm(sc.gpus, -1), pp_comm(pipeline ? stage_size : 0, -1);
  std::vector<int> all(n);
  for (int r = 0; r < n; ++r) all[r] = r;
  if (pipeline) {
    if (with_world) world = add_comm("world", "RING", all);
    for (int p = 0; p < stage_size; ++p) {
      std::vector<int> ranks;
      for (int s = 0; s < S; ++s) ranks.push_back(s * stage_size + p);
      pp_comm[p] = add_comm("pp" + std::to_string(p), "P2P", ranks);
    }
  } else {
    world = add_comm("world", coll_algo, all);
    if (with_dp)
      for (int l = 0; l < sc.gpus; ++l) {
        std::vector<int> ranks;
        for (int node = 0; node < sc.nodes; ++node) ranks.push_back(node * sc.gpus + l);
        dp_comm[l] = add_comm("dp" + std::to_string(l), coll_algo, ranks);
      }
  }
  truth.comm_hash = F.comms[0].info.hash;
  for (const auto& fc : F.comms) comm_list.push_back(fc.info);

  // ---- operations (every rank's stream, in program order) ----
  F.stream.assign(n, {});
  std::map<std::tuple<int, int, int, int, int>, int> seq_counter;  // comm, rank, kind, peer, 0
  auto add_task = [&](int rank, int comm, int kind, int iter, int peer, uint64_t bytes, double compute) {
    FlowTask t;
    t.rank = rank;
    t.comm = comm;
    t.kind = kind;
    t.iter = iter;
    t.peer = peer;
    t.bytes = bytes;
    t.compute = compute;
    t.seq = seq_counter[{comm, rank, kind == 0 ? 0 : kind, kind == 0 ? -1 : peer, 0}]++;
    const int idx = int(F.tasks.size());
    F.tasks.push_back(std::move(t));
    F.stream[rank].push_back(idx);
    return idx;
  };
  // Collective instances: (comm, tasks by comm rank).
  std::vector<std::pair<int, std::vector<int>>> instances;
  // P2P pairs: (send task, recv task).
  std::vector<std::pair<int, int>> pairs;

  if (!pipeline) {
    for (int it = 0; it < sc.seqs; ++it) {
      if (with_dp) {
        for (int l = 0; l < sc.gpus; ++l) {
          std::vector<int> members;
          for (int node = 0; node < sc.nodes; ++node)
            members.push_back(add_task(node * sc.gpus + l, dp_comm[l], 0, it, -1, sc.bytes, p.gap));
          instances.emplace_back(dp_comm[l], members);
        }
      }
      std::vector<int> members;
      for (int r = 0; r < n; ++r) members.push_back(add_task(r, world, 0, it, -1, sc.bytes, with_dp ? p.gap_inner : p.gap));
      instances.emplace_back(world, members);
    }
  } else {
    // GPipe: every microbatch forward, then (backward=1) every microbatch backward; the
    // compute of a stage sits between its receive and its send.
    const int M = sc.microbatches;
    std::map<std::tuple<int, int, int, int>, int> pending_send;  // it, mb, dir, src rank -> task
    std::vector<double> pending(n, 0.0);
    std::vector<std::vector<int>> world_members(sc.seqs, std::vector<int>(n, -1));
    // Sends are created in each rank's program order; a receive pairs with the send of the same
    // (iteration, microbatch, direction) from its peer. Program order per rank is kept because
    // every rank's tasks are appended in its own order.
    struct Pending {
      int it, mb, dir, src, dst, recv_task;
    };
    std::vector<Pending> recvs;
    for (int r = 0; r < n; ++r) {
      const int s = r / stage_size, pos = r % stage_size, comm = pp_comm[pos];
      double pend = 0;
      for (int it = 0; it < sc.seqs; ++it) {
        pend += p.gap / 4;
        for (int mb = 0; mb < M; ++mb) {
          if (s > 0) {
            int t = add_task(r, comm, 2, it, s - 1, sc.bytes, pend);
            pend = 0;
            recvs.push_back({it, mb, 0, r - stage_size, r, t});
          }
          pend += p.pp_forward;
          if (s < S - 1) {
            pending_send[{it, mb, 0, r}] = add_task(r, comm, 1, it, s + 1, sc.bytes, pend);
            pend = 0;
          }
        }
        if (sc.backward) {
          for (int mb = 0; mb < M; ++mb) {
            if (s < S - 1) {
              int t = add_task(r, comm, 2, it, s + 1, sc.bytes, pend);
              pend = 0;
              recvs.push_back({it, mb, 1, r + stage_size, r, t});
            }
            pend += p.pp_backward;
            if (s > 0) {
              pending_send[{it, mb, 1, r}] = add_task(r, comm, 1, it, s - 1, sc.bytes, pend);
              pend = 0;
            }
          }
        }
        if (with_world) {
          world_members[it][r] = add_task(r, world, 0, it, -1, sc.bytes, pend + p.gap_inner);
          pend = 0;
        }
      }
    }
    for (const Pending& q : recvs) pairs.emplace_back(pending_send.at({q.it, q.mb, q.dir, q.src}), q.recv_task);
    if (with_world)
      for (int it = 0; it < sc.seqs; ++it) instances.emplace_back(world, world_members[it]);
  }

  // ---- connections, lanes, primitives, proxy ops ----
  auto add_conn = [&](int src_task, int dst_task, int channel, int n_steps, uint64_t chunk, const char* role) {
    FlowConn c;
    c.src_task = src_task;
    c.dst_task = dst_task;
    c.src = F.tasks[src_task].rank;
    c.dst = F.tasks[dst_task].rank;
    c.channel = channel;
    c.net = net_hop(c.src, c.dst);
    c.role = role;
    c.n_steps = n_steps;
    c.chunk = chunk;
    c.prod.assign(n_steps, kNaN);
    c.F.assign(n_steps, kNaN);
    c.freed.assign(n_steps, kNaN);
    c.sd.assign(n_steps, kNaN);
    F.conns.push_back(std::move(c));
    return int(F.conns.size()) - 1;
  };
  std::map<std::tuple<int, int, int, int, int>, int> last_op;  // rank, comm, channel, is_send, peer
  auto add_op = [&](int task, int conn, bool is_send) {
    FlowConn& c = F.conns[conn];
    if (!c.net) return;
    const FlowTask& t = F.tasks[task];
    SimProxyOp op;
    op.seq = t.seq;
    op.channel = c.channel;
    op.rank = is_send ? c.src : c.dst;
    op.peer = is_send ? c.dst : c.src;
    op.is_send = is_send;
    op.n_steps = c.n_steps;
    op.chunk_bytes = c.chunk;
    op.steps.resize(c.n_steps);
    for (int k = 0; k < c.n_steps; ++k) op.steps[k] = SimStep{k, kInf, kInf, kInf, kInf};
    op.sched_ns = kInf;
    op.progress_ns = kNaN;
    op.end_ns = kNaN;
    op.comm_hash = F.comms[t.comm].info.hash;
    op.comm_rank = comm_rank_of[t.comm][op.rank];
    op.comm_peer = comm_rank_of[t.comm][op.peer];
    op.is_p2p = t.kind != 0;
    op.task = task;
    const int oi = int(ops.size());
    ops.push_back(std::move(op));
    (is_send ? c.send_op : c.recv_op) = oi;
    F.op_conn.push_back(conn);
    F.op_next.push_back(-1);
    auto key = std::make_tuple(ops[oi].rank, t.comm, c.channel, int(is_send), ops[oi].peer);
    auto it = last_op.find(key);
    F.op_prev.push_back(it == last_op.end() ? -1 : it->second);
    if (it != last_op.end()) F.op_next[it->second] = oi;
    last_op[key] = oi;
    F.tasks[task].ops.push_back(oi);
  };
  auto begin_lane = [&](int task, int ch) {
    FlowLane l;
    l.task = task;
    l.ch = ch;
    l.prim_begin = l.prim_end = l.next = uint32_t(F.prims.size());
    F.lanes.push_back(l);
    return int(F.lanes.size()) - 1;
  };
  auto add_prim_v = [&](int lane, const std::vector<FlowIO>& in, const std::vector<FlowIO>& out) {
    FlowPrim pr;
    pr.io = uint32_t(F.ios.size());
    pr.n_in = uint16_t(in.size());
    pr.n_out = uint16_t(out.size());
    for (const FlowIO& x : in) {
      F.ios.push_back(x);
      F.conns[x.conn].dst_lane = lane;
    }
    for (const FlowIO& x : out) {
      F.ios.push_back(x);
      F.conns[x.conn].src_lane = lane;
    }
    F.prims.push_back(pr);
    F.lanes[lane].prim_end = uint32_t(F.prims.size());
  };
  auto add_prim = [&](int lane, std::initializer_list<FlowIO> in, std::initializer_list<FlowIO> out) {
    add_prim_v(lane, std::vector<FlowIO>(in), std::vector<FlowIO>(out));
  };
  auto finish_task_lanes = [&](int task, int first_lane) {
    F.tasks[task].lane_begin = first_lane;
    F.tasks[task].lane_end = int(F.lanes.size());
  };

  // Comm ranks grouped by node, in comm-rank order: the node-level view of a communicator.
  auto node_groups = [&](int comm) {
    std::vector<std::vector<int>> groups;
    std::vector<int> node_of_group;
    for (size_t i = 0; i < F.comms[comm].info.ranks.size(); ++i) {
      const int node = procs[F.comms[comm].info.ranks[i]].node;
      auto g = std::find(node_of_group.begin(), node_of_group.end(), node);
      if (g == node_of_group.end()) {
        node_of_group.push_back(node);
        groups.push_back({int(i)});
      } else {
        groups[size_t(g - node_of_group.begin())].push_back(int(i));
      }
    }
    return groups;
  };
  // Ring of channel c: nodes in order; inside a node the order rotated by c*size/C (the ring
  // engine's rings for the world).
  auto ring_order = [&](int comm, int c) {
    std::vector<int> order;
    for (const auto& g : node_groups(comm)) {
      const int m = int(g.size());
      const int rot = (c * m / C) % m;
      for (int i = 0; i < m; ++i) order.push_back(g[(rot + i) % m]);
    }
    return order;
  };

  auto ring_allreduce = [&](int comm, const std::vector<int>& tasks) {
    const int nr = int(tasks.size());
    const int K = 2 * (nr - 1);
    uint64_t per = sc.bytes / (uint64_t(C) * uint64_t(nr));
    if (per == 0) per = 1;
    int lp = int((per + p.max_chunk - 1) / p.max_chunk);
    if (lp < 1) lp = 1;
    const uint64_t chunk = (per + lp - 1) / lp;
    const int N = K * lp;
    std::vector<std::vector<int>> send_conn(C, std::vector<int>(nr)), recv_conn(C, std::vector<int>(nr));
    for (int c = 0; c < C; ++c) {
      const std::vector<int> order = ring_order(comm, c);
      for (int i = 0; i < nr; ++i) {
        const int a = order[i], b = order[(i + 1) % nr];
        const int ci = add_conn(tasks[a], tasks[b], c, N, chunk, "ring");
        send_conn[c][a] = ci;
        recv_conn[c][b] = ci;
      }
    }
    for (int a = 0; a < nr; ++a) {
      FlowTask& t = F.tasks[tasks[a]];
      t.chunk = chunk;
      for (int c = 0; c < C; ++c) t.channels.push_back(c);
      const int first = int(F.lanes.size());
      for (int c = 0; c < C; ++c) {
        const int lane = begin_lane(tasks[a], c);
        const int in = recv_conn[c][a], out = send_conn[c][a];
        for (int o = 0; o < lp * (K + 1); ++o) {
          const int l = o / (K + 1), j = o % (K + 1), base = l * K;
          if (j == 0) add_prim(lane, {}, {{out, base}});
          else if (j == K) add_prim(lane, {{in, base + K - 1}}, {});
          else add_prim(lane, {{in, base + j - 1}}, {{out, base + j}});
        }
      }
      finish_task_lanes(tasks[a], first);
      for (int c = 0; c < C; ++c) {
        add_op(tasks[a], recv_conn[c][a], false);
        add_op(tasks[a], send_conn[c][a], true);
      }
    }
  };

  auto tree_allreduce = [&](int comm, const std::vector<int>& tasks) {
    const int nr = int(tasks.size());
    const auto groups = node_groups(comm);
    const int nN = int(groups.size());
    const int half = C / 2;
    uint64_t per = sc.bytes / uint64_t(C);
    if (per == 0) per = 1;
    int nchunks = int((per + p.max_chunk - 1) / p.max_chunk);
    if (nchunks < 1) nchunks = 1;
    const uint64_t chunk = (per + nchunks - 1) / nchunks;
    // Per channel and comm rank: parent, children, and the connections to them.
    std::vector<std::vector<int>> up(C, std::vector<int>(nr, -1));
    std::vector<std::vector<std::vector<int>>> down(C, std::vector<std::vector<int>>(nr));
    std::vector<std::vector<int>> up_conn(C, std::vector<int>(nr, -1)), down_conn(C, std::vector<int>(nr, -1));
    for (int c = 0; c < C; ++c) {
      const int tree = c / half;
      // Chains inside the nodes (BALANCED_TREE pattern: the parent is reached from the first
      // GPU of the chain, the children from the last).
      std::vector<std::vector<int>> chain(nN);
      for (int j = 0; j < nN; ++j) {
        const int m = int(groups[j].size());
        const int rot = ((c % half) * m / half) % m;
        for (int i = 0; i < m; ++i) chain[j].push_back(groups[j][(rot + i) % m]);
      }
      for (int j = 0; j < nN; ++j) {
        int pu = -1;
        std::vector<int> kids;
        dtree(nN, j, tree, pu, kids);
        const int m = int(chain[j].size());
        for (int i = 0; i < m; ++i) {
          const int a = chain[j][i];
          up[c][a] = i > 0 ? chain[j][i - 1] : (pu >= 0 ? chain[pu].back() : -1);
          if (i < m - 1) {
            down[c][a].push_back(chain[j][i + 1]);
          } else {
            for (int k : kids) down[c][a].push_back(chain[k].front());
          }
        }
      }
      for (int a = 0; a < nr; ++a) {
        if (up[c][a] < 0) continue;
        up_conn[c][a] = add_conn(tasks[a], tasks[up[c][a]], c, nchunks, chunk, "tree_up");
        down_conn[c][a] = add_conn(tasks[up[c][a]], tasks[a], c, nchunks, chunk, "tree_down");
      }
    }
    for (int a = 0; a < nr; ++a) {
      FlowTask& t = F.tasks[tasks[a]];
      t.chunk = chunk;
      for (int c = 0; c < C; ++c) t.channels.push_back(c);
      const int first = int(F.lanes.size());
      for (int c = 0; c < C; ++c) {
        std::vector<FlowIO> in, out;
        if (up[c][a] < 0) {
          // The root: one thread group reduces from the children and broadcasts back.
          const int lane = begin_lane(tasks[a], c);
          for (int k = 0; k < nchunks; ++k) {
            in.clear();
            out.clear();
            for (int d : down[c][a]) {
              in.push_back({up_conn[c][d], k});
              out.push_back({down_conn[c][d], k});
            }
            add_prim_v(lane, in, out);
          }
        } else {
          // runTreeSplit: one group reduces up, the other broadcasts down, concurrently.
          const int reduce = begin_lane(tasks[a], c);
          for (int k = 0; k < nchunks; ++k) {
            in.clear();
            for (int d : down[c][a]) in.push_back({up_conn[c][d], k});
            add_prim_v(reduce, in, {{up_conn[c][a], k}});
          }
          const int bcast = begin_lane(tasks[a], c);
          for (int k = 0; k < nchunks; ++k) {
            out.clear();
            for (int d : down[c][a]) out.push_back({down_conn[c][d], k});
            add_prim_v(bcast, {{down_conn[c][a], k}}, out);
          }
        }
      }
      finish_task_lanes(tasks[a], first);
      // The order NCCL saves tree proxy ops: receives from the children, send to the parent,
      // receive from the parent, sends to the children.
      for (int c = 0; c < C; ++c) {
        for (int d : down[c][a]) add_op(tasks[a], up_conn[c][d], false);
        if (up[c][a] >= 0) add_op(tasks[a], up_conn[c][a], true);
        if (up[c][a] >= 0) add_op(tasks[a], down_conn[c][a], false);
        for (int d : down[c][a]) add_op(tasks[a], down_conn[c][d], true);
      }
    }
  };

  auto p2p = [&](int send_task, int recv_task) {
    const FlowTask& st = F.tasks[send_task];
    const int nranks = int(F.comms[st.comm].info.ranks.size());
    const int me = comm_rank_of[st.comm][st.rank];
    const int delta = ((st.peer - me) % nranks + nranks) % nranks;
    uint64_t per = (sc.bytes + uint64_t(C) - 1) / uint64_t(C);
    if (per == 0) per = 1;
    const uint64_t chunk = std::min<uint64_t>(p.p2p_chunk, per);
    const int N = int((per + chunk - 1) / chunk);
    std::vector<int> conn(C);
    for (int part = 0; part < C; ++part) {
      const int channel = p.p2p_channel_base + (delta * C + part) % 16;
      conn[part] = add_conn(send_task, recv_task, channel, N, chunk, "p2p");
    }
    for (int side = 0; side < 2; ++side) {
      const int task = side == 0 ? send_task : recv_task;
      FlowTask& t = F.tasks[task];
      t.chunk = chunk;
      for (int part = 0; part < C; ++part) t.channels.push_back(F.conns[conn[part]].channel);
      const int first = int(F.lanes.size());
      for (int part = 0; part < C; ++part) {
        const int lane = begin_lane(task, part);
        for (int k = 0; k < N; ++k) {
          if (side == 0) add_prim(lane, {}, {{conn[part], k}});
          else add_prim(lane, {{conn[part], k}}, {});
        }
      }
      finish_task_lanes(task, first);
      for (int part = 0; part < C; ++part) add_op(task, conn[part], side == 0);
    }
  };

  for (const auto& [comm, tasks] : instances) {
    if (F.comms[comm].algorithm == "TREE") tree_allreduce(comm, tasks);
    else ring_allreduce(comm, tasks);
  }
  for (const auto& [s_task, r_task] : pairs) p2p(s_task, r_task);

  // The world ring, for ring_next/ring_prev.
  if (world >= 0 && F.comms[world].algorithm == "RING") {
    next.assign(C, std::vector<int>(n));
    prev.assign(C, std::vector<int>(n));
    for (int c = 0; c < C; ++c) {
      const std::vector<int> order = ring_order(world, c);
      for (int i = 0; i < n; ++i) {
        next[c][order[i]] = order[(i + 1) % n];
        prev[c][order[(i + 1) % n]] = order[i];
      }
    }
  }

  // ---- slow links: resolve the default peer, check the connection exists ----
  size_t li = 0;
  for (TruthRoot& root : truth.roots) {
    if (root.culprit_class != "network_link") continue;
    auto& [s, d, mag] = slow_links.at(li++);
    if (d < 0) {
      for (const FlowConn& c : F.conns)
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
      for (const FlowConn& c : F.conns) used |= c.src == s && c.dst == d;
      if (!used)
        throw std::invalid_argument("mock key 'fault': slow_link " + std::to_string(s) + "-" + std::to_string(d) +
                                    " is not a connection of this topology");
    }
    root.peer = d;
  }
  truth.spec = sc.to_spec();
}

// ---- the work list ---------------------------------------------------------------------------

void Simulation::Impl::flow_push_lane(int l) {
  FlowLane& lane = flow.lanes[l];
  if (lane.queued) return;
  lane.queued = true;
  flow.queue.push_back((uint64_t(l) << 2) | kItemLane);
}

void Simulation::Impl::flow_push_conn(int c) {
  FlowConn& conn = flow.conns[c];
  if (conn.queued) return;
  conn.queued = true;
  flow.queue.push_back((uint64_t(c) << 2) | kItemConn);
}

void Simulation::Impl::flow_push_rank(int r) { flow.queue.push_back((uint64_t(r) << 2) | kItemRank); }

// The next operation of a rank starts once the previous one finished (plus the compute in
// between); a rank never starts the iteration it hangs at.
void Simulation::Impl::flow_activate(int r) {
  Flow& F = flow;
  int& nx = F.stream_next[r];
  if (nx >= int(F.stream[r].size())) return;
  const int ti = F.stream[r][nx];
  double base = F.kend_prev[r];
  if (nx > 0) {
    const FlowTask& prev_task = F.tasks[F.stream[r][nx - 1]];
    if (!prev_task.done) return;
    base = prev_task.kend;
  }
  FlowTask& T = F.tasks[ti];
  if (T.iter >= hang_seq[r]) return;
  ++nx;
  T.active = true;
  T.kstart = base + T.compute * hash_factor(mix(sc.seed, uint64_t(ti), 0x676170ull), sc.jitter) * gpu_factor[r];
  const double lead = p.host_lead_min + (p.host_lead_max - p.host_lead_min) * unit(mix(sc.seed, uint64_t(ti), 0x6c656164ull));
  const double sdel = p.sched_min + (p.sched_max - p.sched_min) * unit(mix(sc.seed, uint64_t(ti), 0x73646c79ull));
  T.enq = std::max(F.enq_prev[r] + 5e3, T.kstart - lead);
  F.enq_prev[r] = T.enq;
  T.sched = T.enq + sdel;
  T.ch_start.resize(T.channels.size());
  for (size_t ci = 0; ci < T.channels.size(); ++ci)
    T.ch_start[ci] = T.kstart + 300.0 * double(ci) + 500.0 * unit(mix(sc.seed, uint64_t(ti), ci, 0x736b63ull));
  T.lanes_left = T.lane_end - T.lane_begin;
  for (int l = T.lane_begin; l < T.lane_end; ++l) {
    FlowLane& lane = F.lanes[l];
    lane.gpu_free = T.ch_start[lane.ch];
    if (lane.prim_begin == lane.prim_end) --T.lanes_left;
    else flow_push_lane(l);
  }
  for (int oi : T.ops) {
    ops[oi].sched_ns = T.sched;
    flow_push_conn(F.op_conn[oi]);
  }
  if (T.lanes_left == 0) {
    T.done = true;
    T.kend = T.kstart;
    flow_push_rank(r);
  }
}

double Simulation::Impl::flow_op_progress(int oi) {
  Flow& F = flow;
  SimProxyOp& op = ops[oi];
  if (F.op_progress_known[oi]) return op.progress_ns;
  if (!F.tasks[op.task].active) return kNaN;
  // The proxy progresses the op once it has it and the previous op on the same connection
  // finished.
  double pr = op.sched_ns + 1000 + 1000 * unit(mix(sc.seed, uint64_t(oi), 0x70726f67ull));
  const int prev_op = F.op_prev[oi];
  if (prev_op >= 0) {
    if (!known(ops[prev_op].end_ns)) return kNaN;
    pr = std::max(pr, ops[prev_op].end_ns + 500);
  }
  op.progress_ns = pr;
  F.op_progress_known[oi] = 1;
  return pr;
}

void Simulation::Impl::flow_op_ended(int oi, double t) {
  ops[oi].end_ns = t;
  const int nx = flow.op_next[oi];
  if (nx >= 0) flow_push_conn(flow.op_conn[nx]);
}

void Simulation::Impl::flow_run_lane(int l) {
  Flow& F = flow;
  FlowLane& L = F.lanes[l];
  L.queued = false;
  FlowTask& T = F.tasks[L.task];
  if (!T.active || L.next >= L.prim_end) return;
  const int r = T.rank;
  const double compute_base = double(T.chunk) / p.compute_bw + p.compute_fixed;
  while (L.next < L.prim_end) {
    const FlowPrim& P = F.prims[L.next];
    const FlowIO* io = &F.ios[P.io];
    double t = L.gpu_free;
    for (int i = 0; i < P.n_in; ++i) {
      const double f = F.conns[io[i].conn].F[io[i].step];
      if (!known(f)) return;
      t = std::max(t, f);
    }
    for (int i = P.n_in; i < P.n_in + P.n_out; ++i) {
      const FlowConn& c = F.conns[io[i].conn];
      const int k = io[i].step;
      if (k < kNcclSteps) continue;
      if (c.net) {
        // The GPU may write slot k once send k-8 is done (non-shared buffers).
        const double sd8 = c.sd[k - kNcclSteps];
        if (!known(sd8)) return;
        t = std::max(t, sd8);
      } else {
        // NVLink: the GPU writes straight into the receiver's slot once it was freed.
        const double fr8 = c.freed[k - kNcclSteps];
        if (!known(fr8)) return;
        t = std::max(t, fr8 + p.nvl_lat);
      }
    }
    const uint64_t pid = L.next;
    const double end = t + compute_base * hash_factor(mix(sc.seed, uint64_t(l), pid, 0x636d70ull), sc.jitter) * gpu_factor[r];
    L.gpu_free = end;
    for (int i = 0; i < P.n_in; ++i) {
      const int ci = io[i].conn, k = io[i].step;
      FlowConn& c = F.conns[ci];
      double fr = end;
      if (consumer_mag[r] > 0) {
        const double delay = consumer_mag[r] * double(c.chunk) / p.net_bw;
        fr = std::max(fr, L.freed_prev) +
             delay * hash_factor(mix(sc.seed, uint64_t(l), pid * 8 + uint64_t(i), 0x636f6eull), sc.jitter);
      }
      L.freed_prev = std::max(L.freed_prev, fr);
      c.freed[k] = fr;
      if (c.recv_op >= 0) {
        ops[c.recv_op].steps[k].t3 = fr;
        if (k == c.n_steps - 1) flow_op_ended(c.recv_op, fr);
      }
      if (c.net) flow_push_conn(ci);
      else if (c.src_lane >= 0) flow_push_lane(c.src_lane);
    }
    for (int i = P.n_in; i < P.n_in + P.n_out; ++i) {
      const int ci = io[i].conn, k = io[i].step;
      FlowConn& c = F.conns[ci];
      if (c.net) {
        c.prod[k] = end;
        flow_push_conn(ci);
      } else {
        const double xfer = double(c.chunk) / p.nvl_bw * hash_factor(mix(sc.seed, uint64_t(ci), uint64_t(k), 0x786672ull), sc.jitter);
        const double ws = std::max(end, c.wire_free);
        const double arr = ws + p.nvl_lat + xfer;
        c.wire_free = ws + xfer;
        c.sd[k] = arr;
        c.F[k] = arr;
        if (c.dst_lane >= 0) flow_push_lane(c.dst_lane);
      }
    }
    ++L.next;
    if (L.next == L.prim_end && --T.lanes_left == 0) {
      double ke = T.kstart;
      for (int q = T.lane_begin; q < T.lane_end; ++q) ke = std::max(ke, F.lanes[q].gpu_free);
      T.kend = ke;
      T.done = true;
      flow_push_rank(r);
    }
  }
}

// Puts the steps of a network connection on the wire, in order, as far as everything they
// depend on is known (data produced, send slot posted, receive buffer posted).
void Simulation::Impl::flow_transmit(int ci) {
  Flow& F = flow;
  FlowConn& c = F.conns[ci];
  c.queued = false;
  if (!c.net) return;
  const double bw = p.net_bw / link_factor(c.src, c.dst);
  while (c.next_tx < c.n_steps) {
    const int k = c.next_tx;
    if (!known(c.prod[k])) return;
    const double ps = flow_op_progress(c.send_op);
    if (!known(ps)) return;
    const double pr = flow_op_progress(c.recv_op);
    if (!known(pr)) return;
    double P = pr;
    if (k >= kNcclSteps) {
      const double fr8 = c.freed[k - kNcclSteps];
      if (!known(fr8)) return;
      P = std::max(P, fr8);
    }
    double G = ps;
    if (k >= kNcclSteps) G = std::max(G, c.sd[k - kNcclSteps]);
    const double D = std::max(c.prod[k], G);
    const double A = std::max({D, P + p.ctrl_lat, c.A_prev});
    c.A_prev = A;
    const double xfer = double(c.chunk) / bw * hash_factor(mix(sc.seed, uint64_t(ci), uint64_t(k), 0x786672ull), sc.jitter);
    const double ws = std::max(A, c.wire_free);
    const double arr = ws + p.net_lat + xfer;
    c.wire_free = ws + xfer;
    const double sd = arr + p.ack_lat;
    const double Fk = std::max(arr, c.flush_prev) +
                      p.flush * hash_factor(mix(sc.seed, uint64_t(ci), uint64_t(k), 0x666c73ull), sc.jitter) * flush_factor[c.dst];
    c.flush_prev = Fk;
    c.sd[k] = sd;
    c.F[k] = Fk;
    ops[c.send_op].steps[k] = SimStep{k, G, D, A, sd};
    SimStep& rs = ops[c.recv_op].steps[k];
    rs.t0 = P;
    rs.t1 = arr;
    rs.t2 = Fk;
    ++c.next_tx;
    if (k == c.n_steps - 1) flow_op_ended(c.send_op, sd);
    if (c.src_lane >= 0) flow_push_lane(c.src_lane);
    if (c.dst_lane >= 0) flow_push_lane(c.dst_lane);
  }
}

void Simulation::Impl::simulate_flow() {
  Flow& F = flow;
  F.stream_next.assign(n, 0);
  F.kend_prev.resize(n);
  F.enq_prev.assign(n, -kInf);
  F.op_progress_known.assign(ops.size(), 0);
  for (int r = 0; r < n; ++r) F.kend_prev[r] = p.start_skew * unit(mix(sc.seed, r, 0x736b6577ull));
  for (int r = n - 1; r >= 0; --r) flow_push_rank(r);
  while (!F.queue.empty()) {
    const uint64_t item = F.queue.back();
    F.queue.pop_back();
    const int idx = int(item >> 2);
    switch (item & 3) {
      case kItemRank: flow_activate(idx); break;
      case kItemLane: flow_run_lane(idx); break;
      default: flow_transmit(idx); break;
    }
  }

  F.complete = true;
  for (const FlowTask& t : F.tasks) F.complete = F.complete && t.done;
  bool hang = false;
  for (int r = 0; r < n; ++r) hang |= hang_seq[r] != INT_MAX;
  if (!F.complete && !hang) throw std::logic_error("mock: the simulated job deadlocked without a hang fault (simulator bug)");

  // The timeline, in the public shape: one SimCollective per operation (index = operation).
  colls.clear();
  colls.reserve(F.tasks.size());
  for (size_t ti = 0; ti < F.tasks.size(); ++ti) {
    const FlowTask& t = F.tasks[ti];
    SimCollective col;
    col.seq = t.seq;
    col.rank = t.rank;
    col.comm_hash = F.comms[t.comm].info.hash;
    col.comm_rank = -1;
    const auto& cr = F.comms[t.comm].info.ranks;
    for (size_t i = 0; i < cr.size(); ++i)
      if (cr[i] == t.rank) col.comm_rank = int(i);
    col.name = t.kind == 0 ? "AllReduce" : (t.kind == 1 ? "Send" : "Recv");
    col.algorithm = t.kind == 0 ? F.comms[t.comm].algorithm : "P2P";
    col.peer = t.peer;
    col.iter = t.iter;
    col.channels = t.channels;
    col.enqueue_ns = t.active ? t.enq : kInf;
    col.kernel_start_ns = t.active ? t.kstart : kInf;
    col.channel_end_ns.assign(t.channels.size(), t.active ? -kInf : kInf);
    for (int l = t.lane_begin; l < t.lane_end && t.active; ++l) {
      const FlowLane& lane = F.lanes[l];
      double& ce = col.channel_end_ns[lane.ch];
      ce = lane.next == lane.prim_end ? std::max(ce, lane.gpu_free) : kInf;
    }
    for (size_t ci = 0; ci < t.channels.size() && t.active; ++ci)
      if (col.channel_end_ns[ci] == -kInf) col.channel_end_ns[ci] = t.ch_start[ci];
    double end = kInf;
    if (t.done) {
      end = -kInf;
      for (size_t ci = 0; ci < t.channels.size(); ++ci)
        end = std::max(end, col.channel_end_ns[ci] + p.poll * unit(mix(sc.seed, ti, ci, 0x6b6368ull)));
      for (int oi : t.ops) end = known(ops[oi].end_ns) ? std::max(end, ops[oi].end_ns) : kInf;
      if (std::isfinite(end)) end += 500 + 1000 * unit(mix(sc.seed, ti, 0x656e64ull));
    }
    col.end_ns = end;
    colls.push_back(std::move(col));
  }
  for (SimProxyOp& op : ops) {
    if (!known(op.progress_ns)) op.progress_ns = kInf;
    if (!known(op.end_ns)) op.end_ns = kInf;
  }

  kill_ns = kInf;
  if (!F.complete) {
    double last = last_activity_ns(colls, ops, [](const SimProxyOp&) { return true; });
    kill_ns = last + p.hang_dump_after;
  }
}

}  // namespace culprit::mock
