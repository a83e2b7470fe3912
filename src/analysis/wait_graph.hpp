// The wait-for graph between GPU processes (Boost.Graph): an edge u -> v says "u spent
// time waiting for v", weighted by that excess time. Roots are found in the condensation
// (strong components collapse wait cycles such as rings); every victim is attributed to the
// nearest root it waits on, with the path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace culprit {

struct WaitEdge {
  uint32_t from = 0;
  uint32_t to = 0;
  double weight_ns = 0;
  std::string why;  // late_data | no_credit | input_wait | backpressure | node_interior
};

struct RootCandidate {
  double evidence_ns = 0;  // unexplained self delay (0 if none)
  bool stopped = false;    // a hang: outranks any delay
};

struct GraphVerdict {
  std::vector<uint32_t> roots;               // process ids of the roots
  std::vector<int64_t> attributed_root;      // per process, -1 if none
  // Per process: the next process on its path to its root (-1 for a root, or with no root).
  // Paths share their tails (a breadth-first tree from the roots), so one hop each keeps
  // every chain in memory linear in the processes, however deep a ring makes them.
  std::vector<int64_t> next_hop;
  std::vector<double> wait_ns;               // per process: sum of its out-edge weights
};

// Process `p`'s chain: itself, each next hop, its root last; {p} for a root; empty when it
// is attributed to no root.
std::vector<uint32_t> chain_of(const GraphVerdict& verdict, uint32_t p);

// Roots: `edges` are anomaly wait-for edges (u is held up by v). `candidates` has one entry
// per process. A sink component of the condensation that holds a stopped process or self
// evidence of `min_evidence_ns` or more yields one root: its stopped member, else its member
// with the most evidence (ties: most waited on). A sink without evidence is only a victim that
// waits on something the data cannot see, and names no culprit; a wait on it explains
// nothing, so a component with evidence whose every wait leads only to such sinks is a sink
// for this purpose, and yields a root.
std::vector<uint32_t> find_roots(size_t n_processes, const std::vector<WaitEdge>& edges,
                                 const std::vector<RootCandidate>& candidates,
                                 double min_evidence_ns);

// Victims: `flow` edges say "u's input comes from v" (u depends on v). Every process that
// depends, directly or through others, on a root is attributed to the nearest one (fewest
// hops), with the path; wait_ns of the verdict is left empty.
GraphVerdict attribute_to_roots(size_t n_processes, const std::vector<WaitEdge>& flow,
                                const std::vector<uint32_t>& roots);

}  // namespace culprit
