#include "analysis/wait_graph.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/reverse_graph.hpp>
#include <boost/graph/strong_components.hpp>

#include <algorithm>
#include <map>
#include <tuple>

namespace culprit {
namespace {

struct EdgeProps {
  double weight_ns = 0;
};
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS,
                                    boost::no_property, EdgeProps>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;

// Parallel edges between the same pair are summed into one; self loops are dropped.
Graph build_graph(size_t n, const std::vector<WaitEdge>& edges, std::vector<double>* waited_on) {
  std::map<std::pair<uint32_t, uint32_t>, double> merged;
  for (const WaitEdge& e : edges) {
    if (e.from == e.to || e.from >= n || e.to >= n || e.weight_ns < 0) continue;
    merged[{e.from, e.to}] += e.weight_ns;
  }
  Graph g(n);
  if (waited_on) waited_on->assign(n, 0.0);
  for (const auto& [pair, w] : merged) {
    boost::add_edge(pair.first, pair.second, EdgeProps{w}, g);
    if (waited_on) (*waited_on)[pair.second] += w;
  }
  return g;
}

// Records BFS predecessors on the reversed graph: from the roots outwards, the first root
// to reach a vertex is its nearest (in hops) root.
class NearestRootVisitor : public boost::default_bfs_visitor {
 public:
  NearestRootVisitor(std::vector<int64_t>& parent, std::vector<uint32_t>& reached)
      : parent_(parent), reached_(reached) {}
  template <typename E, typename G>
  void tree_edge(E e, const G& g) const {
    parent_[boost::target(e, g)] = static_cast<int64_t>(boost::source(e, g));
  }
  template <typename V, typename G>
  void discover_vertex(V v, const G&) const {
    reached_.push_back(static_cast<uint32_t>(v));
  }

 private:
  std::vector<int64_t>& parent_;
  std::vector<uint32_t>& reached_;  // in the order the search reached them: parents first
};

}  // namespace

std::vector<uint32_t> find_roots(size_t n, const std::vector<WaitEdge>& edges,
                                 const std::vector<RootCandidate>& candidates,
                                 double min_evidence_ns) {
  std::vector<double> waited_on;
  Graph g = build_graph(n, edges, &waited_on);
  std::vector<int> component(n);
  int n_components = n ? boost::strong_components(
                             g, boost::make_iterator_property_map(
                                    component.begin(), boost::get(boost::vertex_index, g)))
                       : 0;
  std::vector<bool> has_exit(static_cast<size_t>(n_components), false);
  for (auto [it, end] = boost::edges(g); it != end; ++it)
    if (component[boost::source(*it, g)] != component[boost::target(*it, g)])
      has_exit[static_cast<size_t>(component[boost::source(*it, g)])] = true;

  std::vector<std::vector<uint32_t>> members(static_cast<size_t>(n_components));
  for (uint32_t v = 0; v < n; ++v) members[static_cast<size_t>(component[v])].push_back(v);
  std::vector<uint32_t> roots;
  for (int c = 0; c < n_components; ++c) {
    if (has_exit[static_cast<size_t>(c)]) continue;  // it waits on something else
    const std::vector<uint32_t>& m = members[static_cast<size_t>(c)];
    uint32_t best = m.front();
    auto rank = [&](uint32_t x) {
      return std::make_tuple(candidates[x].stopped, candidates[x].evidence_ns, waited_on[x]);
    };
    for (uint32_t v : m)
      if (rank(v) > rank(best)) best = v;
    if (candidates[best].stopped || candidates[best].evidence_ns >= min_evidence_ns) roots.push_back(best);
  }
  return roots;
}

GraphVerdict attribute_to_roots(size_t n, const std::vector<WaitEdge>& flow,
                                const std::vector<uint32_t>& roots) {
  GraphVerdict verdict;
  verdict.roots = roots;
  verdict.attributed_root.assign(n, -1);
  verdict.next_hop.assign(n, -1);
  if (roots.empty()) return verdict;
  Graph g = build_graph(n, flow, nullptr);
  auto reversed = boost::make_reverse_graph(g);
  std::vector<int64_t> parent(n, -1);
  std::vector<uint32_t> reached;
  reached.reserve(n);
  std::vector<boost::default_color_type> colors(n, boost::white_color);
  auto color_map = boost::make_iterator_property_map(colors.begin(), boost::get(boost::vertex_index, g));
  boost::queue<Vertex> queue;
  std::vector<Vertex> sources(roots.begin(), roots.end());
  boost::breadth_first_search(reversed, sources.begin(), sources.end(), queue,
                              NearestRootVisitor(parent, reached), color_map);
  // Every vertex reached has its parent reached before it: one pass hands each its root.
  for (uint32_t r : roots) verdict.attributed_root[r] = r;
  for (uint32_t v : reached) {
    if (parent[v] < 0) continue;  // a root
    verdict.attributed_root[v] = verdict.attributed_root[static_cast<size_t>(parent[v])];
    verdict.next_hop[v] = parent[v];
  }
  return verdict;
}

std::vector<uint32_t> chain_of(const GraphVerdict& verdict, uint32_t p) {
  if (p >= verdict.attributed_root.size() || verdict.attributed_root[p] < 0) return {};
  std::vector<uint32_t> path{p};
  for (int64_t at = verdict.next_hop[p]; at >= 0 && path.size() <= verdict.next_hop.size();
       at = verdict.next_hop[static_cast<size_t>(at)])
    path.push_back(static_cast<uint32_t>(at));
  return path;
}

}  // namespace culprit
