// render_map: the cluster map as SVG (html_map.hpp). Geometry first (where each node box and
// GPU cell lies), then the layers in drawing order: wires under the boxes' labels, GPU cells,
// and an empty layer on top that the page's script fills with the highlighted chains.
#include "output/html_map.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <unordered_map>

#include "output/text_format.hpp"

namespace culprit::html {
namespace {

constexpr int kCell = 22, kGap = 4, kPad = 8, kHeader = 16, kGpusPerRow = 8;
constexpr int kBoxGapX = 56, kBoxGapY = 44, kMargin = 16;
constexpr int kNodeCell = 12, kNodeGap = 2, kRowLabel = 130;
constexpr std::size_t kMaxOverviewWires = 300;  // aggregated map: flagged wires drawn at most
constexpr double kBoxScale = 1.6;               // GPU cells of 22 units are small on a screen

const char* role_class(Role r) { return r == Role::kRoot ? "root" : r == Role::kVictim ? "victim" : "healthy"; }

// A victim's fill: light to dark orange with its wait; roots and healthy GPUs are flat.
std::string fill(Role role, double wait_level) {
  if (role == Role::kRoot) return "#d62728";
  if (role == Role::kHealthy) return "#dce8d4";
  const double t = std::clamp(wait_level, 0.0, 1.0);
  const auto mix = [&](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * t)); };
  return format("rgb(%d,%d,%d)", mix(253, 230), mix(224, 85), mix(197, 13));
}

struct Point {
  double x = 0, y = 0;
};

// Where each drawn node's box and each of its GPUs' cells lie.
struct Geometry {
  std::map<std::size_t, std::pair<Point, Point>> boxes;  // node -> (top left, size)
  std::unordered_map<std::size_t, Point> cells;          // gpu index -> top left
  double width = 0, height = 0;
};

Geometry lay_out_boxes(const Model& m, const std::vector<std::size_t>& nodes) {
  Geometry g;
  std::size_t widest = 1;
  for (std::size_t n : nodes) widest = std::max(widest, m.nodes[n].gpus.size());
  const int per_row = static_cast<int>(std::min<std::size_t>(widest, kGpusPerRow));
  const int box_w = 2 * kPad + per_row * kCell + (per_row - 1) * kGap;
  const std::size_t columns =
      std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(std::sqrt(static_cast<double>(nodes.size())))));
  double y = kMargin, row_h = 0;
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    if (k && k % columns == 0) {
      y += row_h + kBoxGapY;
      row_h = 0;
    }
    const Node& node = m.nodes[nodes[k]];
    const int rows = static_cast<int>((node.gpus.size() + kGpusPerRow - 1) / kGpusPerRow);
    const double box_h = kHeader + kPad + std::max(rows, 1) * (kCell + kGap) - kGap + kPad;
    const double x = kMargin + static_cast<double>(k % columns) * (box_w + kBoxGapX);
    g.boxes[nodes[k]] = {{x, y}, {static_cast<double>(box_w), box_h}};
    for (std::size_t i = 0; i < node.gpus.size(); ++i)
      g.cells[node.gpus[i]] = {x + kPad + static_cast<double>(i % kGpusPerRow) * (kCell + kGap),
                               y + kHeader + kPad + static_cast<double>(i / kGpusPerRow) * (kCell + kGap)};
    row_h = std::max(row_h, box_h);
    g.width = std::max(g.width, x + box_w + kMargin);
  }
  g.height = y + row_h + kMargin;
  return g;
}

// `scale`: how much larger than its user units it is drawn (never wider than the page).
void open_svg(std::ostringstream& out, const char* id, double w, double h, double scale, const char* label) {
  out << format(
      "<svg id=\"%s\" class=\"map\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" role=\"img\" aria-label=\"%s\">\n", id, w,
      h, w * scale, label);
  out << "<defs>";
  for (const char* v : {"normal", "late_data", "no_credit", "slow_flush", "slow_link", "culprit"})
    out << format(
        "<marker id=\"%s-arrow-%s\" class=\"arrow-%s\" viewBox=\"0 0 8 8\" refX=\"7\" refY=\"4\" "
        "markerWidth=\"5\" markerHeight=\"5\" orient=\"auto\"><path d=\"M0,0L8,4L0,8z\"/></marker>",
        id, v, v);
  out << "</defs>\n";
}

// A curved wire from a to b, bent to one side so that opposite directions stay apart.
void wire(std::ostringstream& out, const char* svg, Point a, Point b, const std::string& verdict, bool culprit,
          const std::string& title) {
  const double mx = (a.x + b.x) / 2, my = (a.y + b.y) / 2, dx = b.x - a.x, dy = b.y - a.y;
  const double len = std::max(std::hypot(dx, dy), 1.0), bend = std::min(40.0, 0.15 * len);
  const double cx = mx - dy / len * bend, cy = my + dx / len * bend;
  const std::string kind = culprit ? "culprit" : verdict;
  out << format("<path class=\"wire v-%s%s\" d=\"M%.1f,%.1f Q%.1f,%.1f %.1f,%.1f\" marker-end=\"url(#%s-arrow-%s)\">",
                verdict.c_str(), culprit ? " culprit-wire" : "", a.x, a.y, cx, cy, b.x, b.y, svg, kind.c_str())
      << "<title>" << escape(title) << "</title></path>\n";
}

bool is_culprit_link(const AnalysisResults& r, uint32_t src, uint32_t dst) {
  for (const CulpritRow& c : r.culprits)
    if (c.culprit_class == "network_link" && c.process_id == src && c.peer_process_id == static_cast<int64_t>(dst))
      return true;
  return false;
}

// Wires between the GPUs of the drawn nodes: one per GPU pair and direction, its worst verdict.
void gpu_wires(std::ostringstream& out, const char* svg, const AnalysisResults& r, const Model& m, const Geometry& g) {
  struct Pair {
    std::string verdict = "normal";
    std::size_t connections = 0;
  };
  std::map<std::pair<std::size_t, std::size_t>, Pair> pairs;
  for (const Wire& w : m.wires) {
    if (!g.boxes.count(w.node_a) || !g.boxes.count(w.node_b)) continue;
    for (std::size_t e : w.edges) {
      const EdgeRow& edge = r.edges[e];
      Pair& p = pairs[{m.gpu_of.at(edge.src_process), m.gpu_of.at(edge.dst_process)}];
      ++p.connections;
      if (verdict_severity(edge.verdict) > verdict_severity(p.verdict)) p.verdict = edge.verdict;
    }
  }
  const double half = kCell / 2.0;
  for (const auto& [key, p] : pairs) {
    const Gpu& src = m.gpus[key.first];
    const Gpu& dst = m.gpus[key.second];
    const Point a = g.cells.at(key.first), b = g.cells.at(key.second);
    const bool culprit = is_culprit_link(r, src.process_id, dst.process_id);
    wire(out, svg, {a.x + half, a.y + half}, {b.x + half, b.y + half}, p.verdict, culprit,
         src.name + " -> " + dst.name + ": " + plural(p.connections, "connection", "connections") + ", " + p.verdict +
             (culprit ? " (the culprit link)" : ""));
  }
}

std::string gpu_title(const Gpu& gpu) {
  std::string t = gpu.name + "\nrole: " + role_class(gpu.role);
  if (gpu.role == Role::kRoot)
    t += " (" + gpu.culprit_class + "), blame " + duration(static_cast<double>(gpu.blame_ns));
  if (gpu.wait_ns) t += "\nwaited " + duration(static_cast<double>(gpu.wait_ns));
  if (gpu.role == Role::kVictim && gpu.chain_depth)
    t += format("\n%d hops from its root (click: show the chain)", gpu.chain_depth);
  return t;
}

// The node boxes with their host names, drawn under the wires.
void boxes(std::ostringstream& out, const Model& m, const Geometry& g) {
  for (const auto& [n, box] : g.boxes)
    out << format(
               "<g class=\"node-box\" data-node=\"%zu\"><rect class=\"box\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
               "height=\"%.1f\" rx=\"6\"/><text class=\"host\" x=\"%.1f\" y=\"%.1f\">",
               n, box.first.x, box.first.y, box.second.x, box.second.y, box.first.x + kPad, box.first.y + 12.0)
        << escape(m.nodes[n].host) << "</text></g>\n";
}

// The GPU cells, drawn over the wires.
void cells(std::ostringstream& out, const Model& m, const Geometry& g) {
  for (const auto& entry : g.boxes) {
    const std::size_t n = entry.first;
    for (std::size_t i : m.nodes[n].gpus) {
      const Gpu& gpu = m.gpus[i];
      const Point c = g.cells.at(i);
      out << format(
          "<g class=\"gpu role-%s\" id=\"gpu-%u\" data-pid=\"%u\" data-node=\"%zu\" data-cx=\"%.1f\" "
          "data-cy=\"%.1f\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\" rx=\"3\" fill=\"%s\"/>",
          role_class(gpu.role), gpu.process_id, gpu.process_id, n, c.x + kCell / 2.0, c.y + kCell / 2.0, c.x, c.y,
          kCell, kCell, fill(gpu.role, gpu.wait_level).c_str());
      const std::string label =
          gpu.short_label.size() > 4 ? gpu.short_label.substr(gpu.short_label.size() - 4) : gpu.short_label;
      out << format("<text%s x=\"%.1f\" y=\"%.1f\">", label.size() > 3 ? " class=\"long\"" : "", c.x + kCell / 2.0,
                    c.y + kCell / 2.0 + 3.5)
          << escape(label) << "</text><title>" << escape(gpu_title(gpu)) << "</title></g>\n";
    }
  }
}

std::string detailed_svg(const AnalysisResults& r, const Model& m, const std::vector<std::size_t>& nodes,
                         const char* id, const char* label) {
  const Geometry g = lay_out_boxes(m, nodes);
  std::ostringstream out;
  open_svg(out, id, g.width, g.height, kBoxScale, label);
  out << "<g class=\"boxes\">\n";
  boxes(out, m, g);
  out << "</g>\n<g class=\"wires\">\n";
  gpu_wires(out, id, r, m, g);
  out << "</g>\n<g class=\"cells\">\n";
  cells(out, m, g);
  out << "</g>\n<g class=\"chain-layer\"></g>\n</svg>\n";
  return out.str();
}

// Aggregated: one cell per node in rows, flagged wires between node cells.
std::string overview_svg(const Model& m) {
  const std::size_t rows = (m.nodes.size() + kNodesPerRow - 1) / kNodesPerRow;
  const double w = kMargin * 2 + kRowLabel + static_cast<double>(kNodesPerRow) * (kNodeCell + kNodeGap);
  const double h = kMargin * 2 + static_cast<double>(rows) * (kNodeCell + kNodeGap);
  auto centre = [&](std::size_t n) {
    return Point{kMargin + kRowLabel + static_cast<double>(n % kNodesPerRow) * (kNodeCell + kNodeGap) + kNodeCell / 2.0,
                 kMargin + static_cast<double>(n / kNodesPerRow) * (kNodeCell + kNodeGap) + kNodeCell / 2.0};
  };
  std::ostringstream out;
  open_svg(out, "overview", w, h, 1.0, "every node of the job, one cell each");
  std::vector<bool> hot(m.nodes.size(), false);
  for (std::size_t n : m.hot_nodes) hot[n] = true;
  out << "<g class=\"cells\">\n";
  for (std::size_t row = 0; row < rows; ++row) {
    const std::size_t first = row * kNodesPerRow, last = std::min(first + kNodesPerRow, m.nodes.size()) - 1;
    out << format("<text class=\"row-label\" x=\"%d\" y=\"%.1f\">", kMargin, centre(first).y + 4)
        << escape(m.nodes[first].host + (last > first ? " .. " + m.nodes[last].host : "")) << "</text>\n";
  }
  for (std::size_t n = 0; n < m.nodes.size(); ++n) {
    const Node& node = m.nodes[n];
    const Point c = centre(n);
    std::size_t roots = 0, victims = 0;
    for (std::size_t i : node.gpus) {
      roots += m.gpus[i].role == Role::kRoot;
      victims += m.gpus[i].role == Role::kVictim;
    }
    out << format(
               "<rect class=\"node-cell role-%s%s\" id=\"node-%zu\" data-node=\"%zu\" data-cx=\"%.1f\" "
               "data-cy=\"%.1f\" "
               "x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"%s\"><title>",
               role_class(node.worst), hot[n] ? " hot" : "", n, n, c.x, c.y, c.x - kNodeCell / 2.0,
               c.y - kNodeCell / 2.0, kNodeCell, kNodeCell, fill(node.worst, node.wait_level).c_str())
        << escape(node.host + ": " + plural(node.gpus.size(), "GPU", "GPUs") + ", " + std::to_string(roots) +
                  " root, " + std::to_string(victims) + " victim (click: the chain of its most-waiting GPU)")
        << "</title></rect>\n";
  }
  out << "</g>\n<g class=\"wires\">\n";
  std::size_t drawn = 0;
  for (const Wire& wr : m.wires) {
    if (!wr.flagged || drawn++ >= kMaxOverviewWires) continue;
    wire(out, "overview", centre(wr.node_a), centre(wr.node_b), wr.verdict, false,
         m.nodes[wr.node_a].host + " - " + m.nodes[wr.node_b].host + ": " +
             plural(wr.connections, "connection", "connections") + ", " + std::to_string(wr.flagged) + " flagged (" +
             wr.verdict + ")");
  }
  out << "</g>\n<g class=\"chain-layer\"></g>\n</svg>\n";
  return out.str();
}

}  // namespace

std::string render_map(const AnalysisResults& r, const Model& m) {
  if (m.nodes.empty()) return "<p class=\"empty\">No process to draw.</p>\n";
  if (!m.aggregated) {
    std::vector<std::size_t> all(m.nodes.size());
    for (std::size_t n = 0; n < all.size(); ++n) all[n] = n;
    return detailed_svg(r, m, all, "map", "the cluster: nodes, their GPUs and the network wires");
  }
  std::string out = "<p class=\"hint\">" + plural(m.nodes.size(), "node", "nodes") + ": one cell each, in rows of " +
                    std::to_string(kNodesPerRow) +
                    "; only flagged wires are drawn. The hot spots below are drawn in full.</p>\n" + overview_svg(m);
  if (!m.hot_nodes.empty())
    out +=
        "<h3>Hot spots</h3>\n" + detailed_svg(r, m, m.hot_nodes, "map", "the nodes holding a root or a flagged wire");
  return out;
}

}  // namespace culprit::html
