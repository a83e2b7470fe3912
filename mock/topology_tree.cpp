// Tree AllReduce in the general engine (docs/simulator.md, "Trees"): NCCL's double binary
// tree across the nodes (src/graph/trees.cc), a chain of GPUs inside each node, channels
// c < channels/2 on tree 0 and the others on its mirror; runTreeSplit with SIMPLE chunks.
#include <memory>
#include <stdexcept>

#include "mock/topology.hpp"

namespace culprit::mock {

namespace {

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

// The tree of every channel over the comm ranks: parent, children, and the connections to
// them (up: child -> parent, down: parent -> child; both indexed by the child).
struct TreeEdges {
  std::vector<std::vector<int>> up;                 // [channel][comm rank] -> parent, -1 at the root
  std::vector<std::vector<std::vector<int>>> down;  // [channel][comm rank] -> children
  std::vector<std::vector<int>> up_conn, down_conn;
};

// Parent and children of every comm rank on channel c: chains inside the nodes
// (BALANCED_TREE pattern: the parent is reached from the first GPU of the chain, the children
// from the last), the node-level double binary tree between them.
void channel_tree(const FlowBuilder& b, const std::vector<std::vector<int>>& groups, int c, TreeEdges& e) {
  const int half = b.channels() / 2, tree = c / half, nN = int(groups.size());
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
      e.up[c][a] = i > 0 ? chain[j][i - 1] : (pu >= 0 ? chain[pu].back() : -1);
      if (i < m - 1) {
        e.down[c][a].push_back(chain[j][i + 1]);
      } else {
        for (int k : kids) e.down[c][a].push_back(chain[k].front());
      }
    }
  }
}

// One rank's lanes on channel c. The root: one thread group reduces from the children and
// broadcasts back. Others (runTreeSplit): one group reduces up, the other broadcasts down,
// concurrently.
void add_tree_lanes(FlowBuilder& b, const TreeEdges& e, int task, int c, int a, int nchunks) {
  std::vector<int> from_kids, to_kids;
  for (int d : e.down[c][a]) {
    from_kids.push_back(e.up_conn[c][d]);
    to_kids.push_back(e.down_conn[c][d]);
  }
  if (e.up[c][a] < 0) {
    b.add_lane(task, c, FlowLaneProgram::lockstep(from_kids, to_kids, nchunks));
    return;
  }
  b.add_lane(task, c, FlowLaneProgram::lockstep(from_kids, {e.up_conn[c][a]}, nchunks));
  b.add_lane(task, c, FlowLaneProgram::lockstep({e.down_conn[c][a]}, to_kids, nchunks));
}

void build_tree_allreduce(FlowBuilder& b, int comm, const std::vector<int>& tasks) {
  const int C = b.channels(), nr = int(tasks.size());
  uint64_t per = b.scenario().bytes / uint64_t(C);
  if (per == 0) per = 1;
  const uint64_t max_chunk = b.params().max_chunk;
  int nchunks = int((per + max_chunk - 1) / max_chunk);
  if (nchunks < 1) nchunks = 1;
  const uint64_t chunk = (per + nchunks - 1) / nchunks;
  TreeEdges e;
  e.up.assign(C, std::vector<int>(nr, -1));
  e.down.assign(C, std::vector<std::vector<int>>(nr));
  e.up_conn.assign(C, std::vector<int>(nr, -1));
  e.down_conn.assign(C, std::vector<int>(nr, -1));
  const auto groups = b.node_groups(comm);
  for (int c = 0; c < C; ++c) {
    channel_tree(b, groups, c, e);
    for (int a = 0; a < nr; ++a) {
      if (e.up[c][a] < 0) continue;
      e.up_conn[c][a] = b.add_conn(tasks[a], tasks[e.up[c][a]], c, nchunks, chunk, "tree_up");
      e.down_conn[c][a] = b.add_conn(tasks[e.up[c][a]], tasks[a], c, nchunks, chunk, "tree_down");
    }
  }
  for (int a = 0; a < nr; ++a) {
    FlowTask& t = b.task(tasks[a]);
    t.chunk = chunk;
    for (int c = 0; c < C; ++c) t.channels.push_back(c);
    const int first = b.next_lane();
    for (int c = 0; c < C; ++c) add_tree_lanes(b, e, tasks[a], c, a, nchunks);
    b.finish_task_lanes(tasks[a], first);
    // The order NCCL saves tree proxy ops: receives from the children, send to the parent,
    // receive from the parent, sends to the children.
    for (int c = 0; c < C; ++c) {
      for (int d : e.down[c][a]) b.add_op(tasks[a], e.up_conn[c][d], false);
      if (e.up[c][a] >= 0) b.add_op(tasks[a], e.up_conn[c][a], true);
      if (e.up[c][a] >= 0) b.add_op(tasks[a], e.down_conn[c][a], false);
      for (int d : e.down[c][a]) b.add_op(tasks[a], e.down_conn[c][d], true);
    }
  }
}

class TreeTopology final : public DataParallelTopology {
 protected:
  const char* algorithm() const override { return "TREE"; }
  void check(const FlowBuilder& b) const override {
    if (b.channels() % 2 != 0)
      throw std::invalid_argument("mock key 'channels': topology=tree needs an even number of channels "
                                  "(channels c and c+channels/2 carry the two mirrored trees)");
  }
  void allreduce(FlowBuilder& b, int comm, const std::vector<int>& tasks) const override {
    build_tree_allreduce(b, comm, tasks);
  }
};

}  // namespace

std::unique_ptr<Topology> make_tree_topology() { return std::make_unique<TreeTopology>(); }

}  // namespace culprit::mock
