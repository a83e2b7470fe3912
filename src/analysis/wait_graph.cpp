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

// Per component of the condensation: how many of its edges lead to another component that the
// data can see, i.e. one that holds evidence or waits, through others, on one that does. A
// component without evidence that waits on nothing seen is blind: the data shows no cause
// there (a victim of something no record shows), so an edge into it explains nothing, and a
// waiter with evidence of its own whose every exit leads to blind components is a root. The
// blind are peeled from the sinks up, each edge visited once (linear in the graph).
template <typename HasEvidence>
std::vector<size_t> exits_to_seen_components(const Graph& g, const std::vector<int>& component, size_t nc,
                                             HasEvidence has_evidence) {
  std::vector<size_t> exits(nc, 0);
  std::vector<std::vector<size_t>> entered_from(nc);  // per component: the components of its in-edges
  for (auto [it, end] = boost::edges(g); it != end; ++it) {
    const auto from = static_cast<size_t>(component[boost::source(*it, g)]);
    const auto to = static_cast<size_t>(component[boost::target(*it, g)]);
    if (from == to) continue;
    ++exits[from];
    entered_from[to].push_back(from);
  }
  std::vector<size_t> blind;
  for (size_t c = 0; c < nc; ++c)
    if (exits[c] == 0 && !has_evidence(c)) blind.push_back(c);
  while (!blind.empty()) {
    const size_t c = blind.back();
    blind.pop_back();
    for (size_t w : entered_from[c])
      if (--exits[w] == 0 && !has_evidence(w)) blind.push_back(w);
  }
  return exits;
}

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
  const auto nc = static_cast<size_t>(n_components);
  std::vector<std::vector<uint32_t>> members(nc);
  for (uint32_t v = 0; v < n; ++v) members[static_cast<size_t>(component[v])].push_back(v);
  auto rank = [&](uint32_t x) { return std::make_tuple(candidates[x].stopped, candidates[x].evidence_ns, waited_on[x]); };
  std::vector<uint32_t> best(nc);
  for (size_t c = 0; c < nc; ++c) {
    best[c] = members[c].front();
    for (uint32_t v : members[c])
      if (rank(v) > rank(best[c])) best[c] = v;
  }
  auto has_evidence = [&](size_t c) {
    return candidates[best[c]].stopped || candidates[best[c]].evidence_ns >= min_evidence_ns;
  };
  const std::vector<size_t> live_exits = exits_to_seen_components(g, component, nc, has_evidence);
  std::vector<uint32_t> roots;
  for (size_t c = 0; c < nc; ++c)
    if (live_exits[c] == 0 && has_evidence(c)) roots.push_back(best[c]);
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
