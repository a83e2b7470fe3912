// What the HTML page shows, derived from the results alone (what the HDF5 file holds), so that
// the page drawn by `analyze --html` and by `report --html` is the same. The model is plain
// data: html_map.cpp draws the cluster map from it and html_page.cpp the rest of the page.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/results.hpp"

namespace culprit::html {

// Above this many nodes the map draws each node as one cell in rows (aggregated), with the
// nodes that matter drawn in full beside it as hot spots.
constexpr std::size_t kDetailedMapMaxNodes = 64;
// At most this many hot-spot nodes are drawn in full in an aggregated map.
constexpr std::size_t kMaxHotNodes = 24;
// At most this many connections are listed in the table (the flagged and the culprits' first).
constexpr std::size_t kMaxTableEdges = 1500;

enum class Role { kHealthy, kVictim, kRoot };

struct Gpu {
  uint32_t process_id = 0;
  std::size_t node = 0;     // index into Model::nodes
  std::string name;         // "node001:pid 4702", "rank 5", ... as the text report names it
  std::string short_label;  // what fits in the cell: global or widest-communicator rank, else pid
  Role role = Role::kHealthy;
  std::string culprit_class;
  int64_t root = -1;      // process id of its root (-1: none)
  int64_t next_hop = -1;  // the next process on its chain to its root (-1: none)
  int32_t chain_depth = 0;
  uint64_t wait_ns = 0;
  uint64_t blame_ns = 0;
  double wait_level = 0;  // wait_ns over the largest wait in the job, in [0, 1]
};

struct Node {
  std::string host;               // "?" when no input names it
  std::vector<std::size_t> gpus;  // indices into Model::gpus, in local order
  Role worst = Role::kHealthy;    // the most serious role of its GPUs
  double wait_level = 0;          // the largest wait_level of its GPUs
};

// Network connections between two nodes (either direction), for the map's wires.
struct Wire {
  std::size_t node_a = 0, node_b = 0;        // node_a < node_b
  std::string verdict = "normal";            // the most serious verdict of its connections
  std::size_t connections = 0, flagged = 0;  // flagged: verdict other than normal
  std::vector<std::size_t> edges;            // indices into results.edges
};

// One culprit, as its card tells it.
struct Card {
  std::size_t culprit = 0;  // index into results.culprits (= its rank, 0 first)
  uint32_t process_id = 0;
  std::string name;
  std::string culprit_class;
  std::string peer_name;  // network_link: the other end
  double blame_share = 0, job_share = 0, score = 0;
  uint64_t blame_ns = 0;
  uint32_t victims = 0;
  std::vector<std::string> evidence;  // one sentence each, checkable in the table
};

struct Model {
  std::unordered_map<uint32_t, std::size_t> gpu_of;  // process id -> index into gpus
  std::vector<Gpu> gpus;                             // one per process row
  std::vector<Node> nodes;                           // in host order (natural: node2 before node10)
  std::vector<Wire> wires;                           // network wires between nodes
  std::vector<Card> cards;                           // most blame first
  std::vector<std::size_t> table_edges;              // indices into results.edges, in table order
  std::vector<uint32_t> default_chain_victims;       // per culprit: the victim with the longest chain
  std::vector<std::size_t> hot_nodes;                // nodes that hold a root or a flagged wire's end
  bool aggregated = false;                           // the map draws nodes as cells (more than kDetailedMapMaxNodes)
  uint64_t max_wait_ns = 0;
};

// Derives the page's model from the results. Never throws on odd results: process ids that
// name no row, chains that break off and empty tables all give a smaller model.
Model build_model(const AnalysisResults& results);

// Whether a connection has a culprit (or a culprit link's far end) at either end.
bool touches_culprit(const AnalysisResults& results, const EdgeRow& edge);

// How serious an edge verdict is (normal 0 .. slow_link 4): a wire shows its worst.
int verdict_severity(const std::string& verdict);

// "gpu_producer" -> what it means, in a few words (CONTRACT.md's classes).
std::string describe_class(const std::string& culprit_class);

// "1.37 s", "12.0 ms", "850 ns".
std::string duration(double ns);

// Escapes & < > " ' for HTML text and attribute values.
std::string escape(const std::string& text);

// Orders host names as a person does: "node2" before "node10".
bool natural_less(const std::string& a, const std::string& b);

}  // namespace culprit::html
