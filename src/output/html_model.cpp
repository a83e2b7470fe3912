// build_model: from the results to what the page shows (html_model.hpp). Everything here is
// read off the results; the evidence sentences quote the connection table, so a user can
// check each one in the page's own table.
#include "output/html_model.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>

#include "output/process_directory.hpp"
#include "output/text_format.hpp"

namespace culprit::html {
namespace {

Role role_of(const ProcessRow& p) {
  if (p.role == "culprit") return Role::kRoot;
  if (p.role == "victim") return Role::kVictim;
  return Role::kHealthy;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  double m = v[mid];
  if (v.size() % 2 == 0) m = (m + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
  return m;
}

double per_step(uint64_t ns, uint64_t steps) {
  return steps ? static_cast<double>(ns) / static_cast<double>(steps) : 0;
}

// GPUs grouped into nodes by host, each node's GPUs in local order: global rank where an
// input names it, else the rank in its widest communicator, else pid, else process id.
void place_gpus(const AnalysisResults& r, const ProcessDirectory& dir, Model& m) {
  std::map<std::string, std::vector<std::size_t>, bool (*)(const std::string&, const std::string&)> by_host(
      natural_less);
  m.gpus.resize(r.processes.size());
  for (std::size_t i = 0; i < r.processes.size(); ++i) {
    const ProcessRow& p = r.processes[i];
    Gpu& g = m.gpus[i];
    g.process_id = p.process_id;
    g.name = dir.name(p.process_id);
    const int32_t widest = dir.widest_rank(p.process_id);
    g.short_label = p.rank >= 0   ? std::to_string(p.rank)
                    : widest >= 0 ? std::to_string(widest)
                    : p.pid >= 0  ? std::to_string(p.pid)
                                  : std::to_string(p.process_id);
    g.role = role_of(p);
    g.culprit_class = p.culprit_class;
    g.root = p.attributed_root;
    g.chain_depth = p.chain_depth;
    g.wait_ns = p.wait_ns;
    g.blame_ns = p.blame_ns;
    m.max_wait_ns = std::max(m.max_wait_ns, p.wait_ns);
    by_host[ProcessDirectory::host(p.host)].push_back(i);
  }
  for (auto& [host, members] : by_host) {
    auto key = [&](std::size_t i) {
      const ProcessRow& p = r.processes[i];
      return std::make_tuple(p.rank < 0, p.rank, dir.widest_rank(p.process_id) < 0, dir.widest_rank(p.process_id),
                             p.pid < 0, p.pid, p.process_id);
    };
    std::sort(members.begin(), members.end(), [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
    Node node;
    node.host = host;
    node.gpus = members;
    for (std::size_t i : members) m.gpus[i].node = m.nodes.size();
    m.nodes.push_back(std::move(node));
  }
  for (Gpu& g : m.gpus)
    g.wait_level = m.max_wait_ns ? static_cast<double>(g.wait_ns) / static_cast<double>(m.max_wait_ns) : 0;
  for (Node& node : m.nodes)
    for (std::size_t i : node.gpus) {
      node.worst = std::max(node.worst, m.gpus[i].role);
      node.wait_level = std::max(node.wait_level, m.gpus[i].wait_level);
    }
}

// Each victim's next hop: hop 1 of its chain in the /chains table. Only those rows are read:
// a ring's chains are as long as the ring, and the page needs one hop per GPU.
void link_chains(const AnalysisResults& r, Model& m) {
  for (const ChainRow& row : r.chains) {
    if (row.hop != 1) continue;
    if (auto it = m.gpu_of.find(row.victim); it != m.gpu_of.end()) m.gpus[it->second].next_hop = row.process_id;
  }
}

// Per culprit, the victim with the longest chain to it (either end of a link; ties: the
// lowest id), from the process table's chain depths.
void choose_default_chains(const AnalysisResults& r, Model& m) {
  for (const CulpritRow& c : r.culprits) {
    const Gpu* deepest = nullptr;
    for (const Gpu& g : m.gpus) {
      const bool to_it =
          g.root == static_cast<int64_t>(c.process_id) || (c.peer_process_id >= 0 && g.root == c.peer_process_id);
      if (to_it && g.process_id != static_cast<uint32_t>(g.root) && g.chain_depth >= 1 &&
          (!deepest || g.chain_depth > deepest->chain_depth ||
           (g.chain_depth == deepest->chain_depth && g.process_id < deepest->process_id)))
        deepest = &g;
    }
    if (deepest) m.default_chain_victims.push_back(deepest->process_id);
  }
}

void collect_wires(const AnalysisResults& r, Model& m) {
  std::map<std::pair<std::size_t, std::size_t>, Wire> wires;
  for (std::size_t e = 0; e < r.edges.size(); ++e) {
    const EdgeRow& edge = r.edges[e];
    auto src = m.gpu_of.find(edge.src_process), dst = m.gpu_of.find(edge.dst_process);
    if (src == m.gpu_of.end() || dst == m.gpu_of.end()) continue;
    const std::size_t a = m.gpus[src->second].node, b = m.gpus[dst->second].node;
    if (a == b) continue;  // inside one node: no network wire to draw
    Wire& w = wires[{std::min(a, b), std::max(a, b)}];
    w.node_a = std::min(a, b);
    w.node_b = std::max(a, b);
    ++w.connections;
    w.flagged += edge.verdict != "normal";
    if (verdict_severity(edge.verdict) > verdict_severity(w.verdict)) w.verdict = edge.verdict;
    w.edges.push_back(e);
  }
  for (auto& [key, w] : wires) m.wires.push_back(std::move(w));
}

// The wait of a connection that its verdict is about (for ordering the table).
uint64_t verdict_wait(const EdgeRow& e) {
  if (e.verdict == "late_data") return e.recv_wait_ns;
  if (e.verdict == "no_credit") return e.send_peer_wait_ns;
  if (e.verdict == "slow_link") return e.send_wait_ns;
  if (e.verdict == "slow_flush") return e.recv_flush_wait_ns;
  return std::max({e.send_gpu_wait_ns, e.send_peer_wait_ns, e.send_wait_ns, e.recv_wait_ns, e.recv_flush_wait_ns,
                   e.recv_gpu_wait_ns});
}

// The culprits' connections first, then the flagged ones, then the rest, each by its wait.
void choose_table_edges(const AnalysisResults& r, Model& m) {
  std::vector<std::tuple<int, uint64_t, std::size_t>> order;
  order.reserve(r.edges.size());
  for (std::size_t e = 0; e < r.edges.size(); ++e) {
    const EdgeRow& edge = r.edges[e];
    const int rank = touches_culprit(r, edge) ? 0 : edge.verdict != "normal" ? 1 : 2;
    order.emplace_back(rank, ~verdict_wait(edge), e);
  }
  const std::size_t keep = std::min(order.size(), kMaxTableEdges);
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end());
  for (std::size_t k = 0; k < keep; ++k) m.table_edges.push_back(std::get<2>(order[k]));
}

std::string ratio_words(double value, double reference) {
  if (reference <= 0) return "";
  return format(" (%.2fx the median connection's %s)", value / reference, duration(reference).c_str());
}

// One sentence that quotes the phase the culprit's class is about, from the table.
std::string phase_sentence(const AnalysisResults& r, const CulpritRow& c, const ProcessDirectory& dir) {
  auto sentence = [&](const char* what, auto selects, auto value, const char* unit) -> std::string {
    std::vector<double> all, mine;
    for (const EdgeRow& e : r.edges) {
      const double v = value(e);
      all.push_back(v);
      if (selects(e)) mine.push_back(v);
    }
    if (mine.empty()) return "";
    double sum = 0;
    for (double v : mine) sum += v;
    const double mean = sum / static_cast<double>(mine.size());
    return format("%s: %s %s on average over %s", what, duration(mean).c_str(), unit,
                  plural(mine.size(), "connection", "connections").c_str()) +
           ratio_words(mean, median(all)) + ".";
  };
  const uint32_t p = c.process_id;
  if (c.culprit_class == "network_link" && c.peer_process_id >= 0) {
    const auto peer = static_cast<uint32_t>(c.peer_process_id);
    return sentence(("The wire from " + dir.name(p) + " to " + dir.name(peer) + " (SendWait per MB)").c_str(),
                    [&](const EdgeRow& e) { return e.src_process == p && e.dst_process == peer; },
                    [](const EdgeRow& e) {
                      return e.bytes ? 1e6 * static_cast<double>(e.send_wait_ns) / static_cast<double>(e.bytes) : 0.0;
                    },
                    "per MB");
  }
  if (c.culprit_class == "gpu_producer")
    return sentence(
        "Its GPU kept its sends waiting for data (SendGpuWait)", [&](const EdgeRow& e) { return e.src_process == p; },
        [](const EdgeRow& e) { return per_step(e.send_gpu_wait_ns, e.send_steps); }, "per step");
  if (c.culprit_class == "gpu_consumer")
    return sentence(
        "Its senders waited for its free buffers (SendPeerWait)", [&](const EdgeRow& e) { return e.dst_process == p; },
        [](const EdgeRow& e) { return per_step(e.send_peer_wait_ns, e.send_steps); }, "per step");
  if (c.culprit_class == "flush")
    return sentence(
        "Its receives waited for their flush (RecvFlushWait)", [&](const EdgeRow& e) { return e.dst_process == p; },
        [](const EdgeRow& e) { return per_step(e.recv_flush_wait_ns, e.recv_steps); }, "per step");
  if (c.culprit_class == "hang") {
    std::vector<double> all, mine;
    for (const EdgeRow& e : r.edges) {
      const double steps = static_cast<double>(std::max(e.send_steps, e.recv_steps));
      all.push_back(steps);
      if (e.src_process == p || e.dst_process == p) mine.push_back(steps);
    }
    if (mine.empty()) return "";                 // named from dumps or snapshots: the notes say where it stopped
    if (median(mine) >= median(all)) return "";  // its stop shows in its peers' waits, not in its own steps
    return format("Its connections completed %.0f steps at the median, the job's connections %.0f.", median(mine),
                  median(all));
  }
  return "";
}

// Its own wait against that of the processes it holds back.
std::string wait_sentence(const AnalysisResults& r, const CulpritRow& c, const ProcessDirectory& dir) {
  const ProcessRow* self = dir.find(c.process_id);
  if (!self || c.culprit_class == "network_link") return "";
  std::vector<double> victims;
  for (const ProcessRow& p : r.processes)
    if (p.attributed_root == static_cast<int64_t>(c.process_id) && p.process_id != c.process_id)
      victims.push_back(static_cast<double>(p.wait_ns));
  if (victims.empty() || (self->wait_ns == 0 && median(victims) == 0)) return "";  // no wait measured (dumps)
  return "It waited " + duration(static_cast<double>(self->wait_ns)) + " itself, while the " +
         plural(victims.size(), "process", "processes") + " it holds back waited " + duration(median(victims)) +
         " at the median.";
}

// The run notes that name it (a Flight Recorder verdict says there where the rank stopped).
std::vector<std::string> notes_naming(const AnalysisResults& r, const std::string& name) {
  std::vector<std::string> out;
  for (const std::string& note : r.info.notes)
    for (std::size_t at = note.find(name); at != std::string::npos; at = note.find(name, at + 1)) {
      const std::size_t end = at + name.size();
      const bool whole = (at == 0 || !std::isalnum(static_cast<unsigned char>(note[at - 1]))) &&
                         (end == note.size() || !std::isdigit(static_cast<unsigned char>(note[end])));
      if (whole) {
        out.push_back(note);
        break;
      }
    }
  return out;
}

std::string cost_sentence(const CulpritRow& c) {
  std::string s = "Cost: " + duration(static_cast<double>(c.blame_ns)) + " of others' waiting (" +
                  format("%.1f %%", 100 * c.blame_share) + " of all blame), ";
  s += std::isnan(c.job_share) ? std::string("its share of the job's time not measurable from this data")
                               : format("%.1f %% of all processes' time inside collectives", 100 * c.job_share);
  return s + format("; score %.2f.", c.score);
}

void make_cards(const AnalysisResults& r, const ProcessDirectory& dir, Model& m) {
  for (std::size_t k = 0; k < r.culprits.size(); ++k) {
    const CulpritRow& c = r.culprits[k];
    Card card;
    card.culprit = k;
    card.process_id = c.process_id;
    card.name = dir.find(c.process_id) ? dir.name(c.process_id)
                                       : ProcessDirectory::host(c.host) + ":pid " + std::to_string(c.pid);
    card.culprit_class = c.culprit_class;
    if (c.peer_process_id >= 0) card.peer_name = dir.name(c.peer_process_id);
    card.blame_share = c.blame_share;
    card.job_share = c.job_share;
    card.score = c.score;
    card.blame_ns = c.blame_ns;
    card.victims = c.victims;
    card.evidence.push_back(describe_class(c.culprit_class) + ".");
    for (std::string s : {wait_sentence(r, c, dir), phase_sentence(r, c, dir)})
      if (!s.empty()) card.evidence.push_back(std::move(s));
    for (std::string& note : notes_naming(r, card.name)) card.evidence.push_back("Note: " + note);
    card.evidence.push_back(cost_sentence(c));
    m.cards.push_back(std::move(card));
  }
}

void choose_hot_nodes(const AnalysisResults& r, Model& m) {
  std::vector<bool> hot(m.nodes.size(), false);
  auto add = [&](std::size_t node) {
    if (m.hot_nodes.size() < kMaxHotNodes && !hot[node]) {
      hot[node] = true;
      m.hot_nodes.push_back(node);
    }
  };
  for (const CulpritRow& c : r.culprits)
    for (int64_t id : {static_cast<int64_t>(c.process_id), c.peer_process_id}) {
      if (id < 0) continue;
      if (auto it = m.gpu_of.find(static_cast<uint32_t>(id)); it != m.gpu_of.end()) add(m.gpus[it->second].node);
    }
  for (const Wire& w : m.wires)
    if (w.flagged) {
      add(w.node_a);
      add(w.node_b);
    }
  std::sort(m.hot_nodes.begin(), m.hot_nodes.end());
}

}  // namespace

Model build_model(const AnalysisResults& r) {
  Model m;
  const ProcessDirectory dir(r);
  place_gpus(r, dir, m);
  for (std::size_t i = 0; i < m.gpus.size(); ++i) m.gpu_of.emplace(m.gpus[i].process_id, i);
  link_chains(r, m);
  collect_wires(r, m);
  choose_table_edges(r, m);
  make_cards(r, dir, m);
  choose_default_chains(r, m);
  m.aggregated = m.nodes.size() > kDetailedMapMaxNodes;
  choose_hot_nodes(r, m);
  return m;
}

bool touches_culprit(const AnalysisResults& r, const EdgeRow& e) {
  for (const CulpritRow& c : r.culprits)
    if (e.src_process == c.process_id || e.dst_process == c.process_id ||
        (c.peer_process_id >= 0 && (e.src_process == c.peer_process_id || e.dst_process == c.peer_process_id)))
      return true;
  return false;
}

int verdict_severity(const std::string& verdict) {
  if (verdict == "slow_link") return 4;
  if (verdict == "slow_flush") return 3;
  if (verdict == "no_credit") return 2;
  if (verdict == "late_data") return 1;
  return 0;
}

std::string describe_class(const std::string& cls) {
  if (cls == "gpu_producer") return "Its GPU was late to produce the data its peers wait for";
  if (cls == "gpu_consumer") return "Its GPU was late to free the receive buffers its senders wait for";
  if (cls == "network_link") return "The wire between two healthy ends was slow";
  if (cls == "flush") return "Its GPU-direct flushes were slow";
  if (cls == "hang") return "It stopped making progress while others wait for it";
  return "No class";
}

std::string duration(double ns) { return culprit::duration(static_cast<uint64_t>(std::llround(std::max(ns, 0.0)))); }

std::string escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      std::size_t i2 = i, j2 = j;
      while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
      while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
      const std::string x = a.substr(i, i2 - i), y = b.substr(j, j2 - j);
      const std::string xs = x.substr(std::min(x.find_first_not_of('0'), x.size()));
      const std::string ys = y.substr(std::min(y.find_first_not_of('0'), y.size()));
      if (xs.size() != ys.size()) return xs.size() < ys.size();
      if (xs != ys) return xs < ys;
      i = i2;
      j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j || (a.size() - i == b.size() - j && a < b);
}

}  // namespace culprit::html
