// write_results_html: the verdict as one self-contained HTML page (results_io.hpp). The page
// is built from the model (html_model.hpp) in the order a person paged about a stuck job
// reads it: the culprit cards, the cluster map with the chains, the connections, then the
// inputs and notes; the text report closes it, folded. Data for the script travels as JSON
// in the page itself.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "output/atomic_file.hpp"
#include "output/html_assets.hpp"
#include "output/html_map.hpp"
#include "output/html_model.hpp"
#include "output/process_directory.hpp"
#include "output/results_io.hpp"
#include "output/run_info_defaults.hpp"
#include "output/text_format.hpp"

namespace culprit {
namespace {

using html::escape;

constexpr std::size_t kMaxInputRows = 200;  // inputs listed (those with rejections first)

std::string percent(double share) { return std::isnan(share) ? "?" : format("%.1f %%", 100 * share); }

void page_header(const AnalysisResults& r, const html::Model& m, std::ostream& out) {
  const RunInfo& i = r.info;
  std::string verdict = "no culprit";
  if (!m.cards.empty()) verdict = m.cards.front().name + " (" + m.cards.front().culprit_class + ")";
  if (m.cards.size() > 1) verdict += " and " + plural(m.cards.size() - 1, "more culprit", "more culprits");
  out << "<header><h1>nccl-culprit: " << escape(verdict) << "</h1><div class=\"run\">status " << escape(i.status)
      << " &middot; " << plural(static_cast<uint64_t>(std::max(i.processes, 0)), "process", "processes") << " on "
      << plural(m.nodes.size(), "node", "nodes") << " &middot; " << i.analyzer_ranks
      << " analyzer ranks &middot; reduce " << escape(i.reduce_path) << " &middot; seq window " << i.seq_window
      << " &middot; created " << escape(i.created_utc) << " &middot; nccl-culprit " << escape(i.tool_version)
      << "<br>input: " << escape(i.input) << "</div></header>\n<main>\n";
  if (i.status != "ok")
    out << "<p class=\"warning\" id=\"partial\">Status <b>" << escape(i.status)
        << "</b>: some node's data was missing or unreadable, so the verdict may be incomplete (see the notes).</p>\n";
}

void card(const AnalysisResults& r, const html::Card& c, std::ostream& out) {
  out << "<div class=\"card\" id=\"card-" << c.culprit << "\" data-pid=\"" << c.process_id << "\" data-class=\""
      << escape(c.culprit_class) << "\"><h3>#" << c.culprit + 1 << " <span class=\"name\">" << escape(c.name)
      << "</span><span class=\"class\">" << escape(c.culprit_class) << "</span></h3>\n";
  if (!c.peer_name.empty()) out << "<div>link to <b>" << escape(c.peer_name) << "</b></div>\n";
  out << "<dl><div><dt>blame</dt><dd>" << percent(c.blame_share)
      << "</dd></div><div><dt>of the job</dt><dd class=\"job-share\">" << percent(c.job_share)
      << "</dd></div><div><dt>waited on it</dt><dd>" << escape(html::duration(static_cast<double>(c.blame_ns)))
      << "</dd></div><div><dt>victims</dt><dd>" << c.victims << "</dd></div><div><dt>score</dt><dd>"
      << format("%.2f", c.score) << "</dd></div></dl>\n<ul class=\"evidence\">\n";
  for (const std::string& sentence : c.evidence) out << "<li>" << escape(sentence) << "</li>\n";
  out << "</ul>\n";
  if (!r.info.command.empty())
    out << "<div class=\"muted\">Reproduce the verdict:</div><pre>" << escape(r.info.command) << "</pre>\n";
  out << "</div>\n";
}

void culprit_cards(const AnalysisResults& r, const html::Model& m, std::ostream& out) {
  out << "<section id=\"culprits\"><h2>Culprits</h2><div class=\"cards\">\n";
  if (m.cards.empty()) {
    std::ostringstream why;
    render_no_culprit(r, why);
    out << "<div class=\"card none\" id=\"no-culprit\"><h3>No culprit</h3><pre>" << escape(why.str()) << "</pre>";
    if (!r.info.command.empty())
      out << "<div class=\"muted\">Reproduce the verdict:</div><pre>" << escape(r.info.command) << "</pre>";
    out << "</div>\n";
  }
  for (const html::Card& c : m.cards) card(r, c, out);
  out << "</div></section>\n";
}

void legend(std::ostream& out) {
  out << "<div class=\"legend\"><span style=\"--c:#d62728\">root</span><span style=\"--c:rgb(240,150,100)\">victim "
         "(darker: waited longer)</span><span style=\"--c:#dce8d4\">healthy</span><span style=\"--c:#a3aeb9\">wire: "
         "normal</span><span style=\"--c:#3182bd\">late_data</span><span style=\"--c:#8e44ad\">no_credit</span><span "
         "style=\"--c:#e67e22\">slow_flush</span><span style=\"--c:#d62728\">slow_link / culprit link "
         "(dashed)</span></div>\n";
}

void chain_list(const AnalysisResults& r, const html::Model& m, std::ostream& out) {
  const ProcessDirectory dir(r);
  out << "<h3>Longest chain to each root</h3><ul class=\"chains\">\n";
  for (std::size_t k = 0; k < m.default_chain_victims.size(); ++k) {
    const uint32_t victim = m.default_chain_victims[k];
    std::string names;
    int64_t at = victim;
    for (std::size_t hops = 0; at >= 0 && hops <= m.gpus.size(); ++hops) {
      names += (hops ? " \u2192 " : "") + dir.name(at);
      const auto it = m.gpu_of.find(static_cast<uint32_t>(at));
      at = it == m.gpu_of.end() ? -1 : m.gpus[it->second].next_hop;
    }
    out << "<li data-chain-victim=\"" << victim << "\">" << escape(names) << " (root)</li>\n";
  }
  if (m.default_chain_victims.empty()) out << "<li class=\"muted\">No victim is attributed to a root.</li>\n";
  out << "</ul>\n";
}

void cluster_map(const AnalysisResults& r, const html::Model& m, std::ostream& out) {
  out << "<section id=\"cluster\"><h2>Cluster map</h2>\n";
  legend(out);
  out << "<p class=\"hint\">Hover for details. Click a GPU to highlight its chain of waits to its root; the dashed "
         "lines "
         "are the longest chain to each root.</p>\n<div id=\"chain-info\"></div>\n"
      << html::render_map(r, m);
  chain_list(r, m, out);
  out << "</section>\n";
}

void edge_cell(std::ostream& out, double value, const std::string& text) {
  out << "<td data-v=\"" << format("%.0f", value) << "\">" << escape(text) << "</td>";
}

void connections(const AnalysisResults& r, const html::Model& m, std::ostream& out) {
  const ProcessDirectory dir(r);
  out << "<section id=\"connections\"><h2>Connections</h2><p class=\"hint\">"
      << (m.table_edges.size() < r.edges.size()
              ? format("%zu of %zu connections: the culprits' and the flagged ones first; all are in the results file.",
                       m.table_edges.size(), r.edges.size())
              : plural(r.edges.size(), "connection", "connections") + ".")
      << " Phases are per step (send phases per send step, receive phases per receive step). Click a header to "
         "sort.</p>\n<div class=\"scroll\"><table class=\"sortable\" id=\"edges\"><thead><tr><th "
         "class=\"t\">verdict</th>"
         "<th class=\"t\">comm</th><th data-type=\"num\">ch</th><th class=\"t\">sender</th><th "
         "class=\"t\">receiver</th>"
         "<th data-type=\"num\">steps</th><th data-type=\"num\">bytes</th><th data-type=\"num\">SendGpuWait</th>"
         "<th data-type=\"num\">SendPeerWait</th><th data-type=\"num\">SendWait</th><th data-type=\"num\">RecvWait</th>"
         "<th data-type=\"num\">RecvFlushWait</th><th data-type=\"num\">RecvGpuWait</th></tr></thead><tbody>\n";
  for (std::size_t e : m.table_edges) {
    const EdgeRow& edge = r.edges[e];
    out << "<tr class=\"v-" << escape(edge.verdict) << (html::touches_culprit(r, edge) ? " culprit-edge" : "")
        << "\"><td class=\"t verdict\">" << escape(edge.verdict) << "</td><td class=\"t\">"
        << format("%016" PRIx64, edge.comm_hash) << "</td>";
    edge_cell(out, edge.channel, std::to_string(edge.channel));
    out << "<td class=\"t\">" << escape(dir.name(edge.src_process)) << "</td><td class=\"t\">"
        << escape(dir.name(edge.dst_process)) << "</td>";
    edge_cell(out, static_cast<double>(std::max(edge.send_steps, edge.recv_steps)),
              format("%" PRIu64 "/%" PRIu64, edge.send_steps, edge.recv_steps));
    edge_cell(out, static_cast<double>(edge.bytes), format("%" PRIu64, edge.bytes));
    const auto phase = [&](uint64_t ns, uint64_t steps) {
      const double v = steps ? static_cast<double>(ns) / static_cast<double>(steps) : 0;
      edge_cell(out, v, html::duration(v));
    };
    phase(edge.send_gpu_wait_ns, edge.send_steps);
    phase(edge.send_peer_wait_ns, edge.send_steps);
    phase(edge.send_wait_ns, edge.send_steps);
    phase(edge.recv_wait_ns, edge.recv_steps);
    phase(edge.recv_flush_wait_ns, edge.recv_steps);
    phase(edge.recv_gpu_wait_ns, edge.recv_steps);
    out << "</tr>\n";
  }
  out << "</tbody></table></div></section>\n";
}

void inputs_and_notes(const AnalysisResults& r, std::ostream& out) {
  uint64_t records = 0, rejected = 0;
  for (const InputRow& in : r.inputs) {
    records += in.records;
    rejected += in.rejected;
  }
  out << "<section id=\"inputs\"><h2>Inputs and notes</h2><p>" << plural(r.inputs.size(), "file", "files") << ", "
      << plural(records, "record", "records") << ", <b id=\"rejected\">" << rejected << " rejected</b>; status <b>"
      << escape(r.info.status) << "</b>; reduce path <b>" << escape(r.info.reduce_path) << "</b>";
  if (!r.info.mpi_transport.empty()) out << "; MPI transport " << escape(r.info.mpi_transport);
  out << ".</p>\n";
  std::vector<const InputRow*> rows;
  for (const InputRow& in : r.inputs) rows.push_back(&in);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const InputRow* a, const InputRow* b) { return a->rejected > b->rejected; });
  if (rows.size() > kMaxInputRows) {
    out << "<p class=\"hint\">The " << kMaxInputRows
        << " files with the most rejections are listed; all are in the results file.</p>\n";
    rows.resize(kMaxInputRows);
  }
  if (!rows.empty()) {
    out << "<div class=\"scroll\"><table class=\"sortable\" id=\"input-files\"><thead><tr><th class=\"t\">host</th><th "
           "class=\"t\">file</th><th class=\"t\">format</th><th data-type=\"num\">records</th><th "
           "data-type=\"num\">rejected</th></tr></thead><tbody>\n";
    for (const InputRow* in : rows) {
      out << "<tr><td class=\"t\">" << escape(ProcessDirectory::host(in->host)) << "</td><td class=\"t\">"
          << escape(in->path) << "</td><td class=\"t\">" << escape(in->format) << "</td>";
      edge_cell(out, static_cast<double>(in->records), std::to_string(in->records));
      edge_cell(out, static_cast<double>(in->rejected), std::to_string(in->rejected));
      out << "</tr>\n";
    }
    out << "</tbody></table></div>\n";
  }
  out << "<h3>Notes</h3><ul id=\"notes\">\n";
  for (const std::string& note : r.info.notes) out << "<li>" << escape(note) << "</li>\n";
  if (r.info.notes.empty()) out << "<li class=\"muted\">none</li>\n";
  out << "</ul></section>\n";
}

// What the script needs, as JSON that cannot close its <script> element early.
std::string script_data(const html::Model& m) {
  nlohmann::json ids = nlohmann::json::array(), next = nlohmann::json::array(), node = nlohmann::json::array(),
                 names = nlohmann::json::array(), focus = nlohmann::json::array();
  for (const html::Gpu& g : m.gpus) {
    ids.push_back(g.process_id);
    next.push_back(g.next_hop);
    node.push_back(g.node);
    names.push_back(g.name);
  }
  // A click on an aggregated node shows the chain of its root, else of its most-waiting GPU.
  for (const html::Node& n : m.nodes) {
    const html::Gpu* pick = nullptr;
    for (std::size_t i : n.gpus) {
      const html::Gpu& g = m.gpus[i];
      if (!pick || std::make_pair(g.role, g.wait_ns) > std::make_pair(pick->role, pick->wait_ns)) pick = &g;
    }
    focus.push_back(pick ? pick->process_id : 0);
  }
  const nlohmann::json data = {{"ids", ids},     {"next", next},   {"node", node},
                               {"names", names}, {"focus", focus}, {"defaults", m.default_chain_victims}};
  std::string text = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  for (std::size_t at = text.find("</"); at != std::string::npos; at = text.find("</", at + 2))
    text.replace(at, 2, "<\\/");
  return text;
}

std::string render_page(const AnalysisResults& results) {
  AnalysisResults r = results;
  r.info = completed_run_info(results.info);
  const html::Model m = html::build_model(r);
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
         "content=\"width=device-width, initial-scale=1\"><title>nccl-culprit: "
      << escape(m.cards.empty() ? std::string("no culprit") : m.cards.front().name) << "</title><style>" << html::kStyle
      << "</style></head>\n<body>\n";
  page_header(r, m, out);
  culprit_cards(r, m, out);
  cluster_map(r, m, out);
  connections(r, m, out);
  inputs_and_notes(r, out);
  std::ostringstream text;
  render_report(r, text);
  out << "<section id=\"text-report\"><details><summary>The text report</summary><pre>" << escape(text.str())
      << "</pre></details></section>\n</main>\n<script id=\"culprit-data\" type=\"application/json\">" << script_data(m)
      << "</script>\n<script>" << html::kScript << "</script>\n</body></html>\n";
  return out.str();
}

}  // namespace

void write_results_html(const AnalysisResults& results, const std::string& path) {
  const std::string page = render_page(results);
  const std::string temp = temporary_name_for(path);
  try {
    std::ofstream file(temp, std::ios::binary | std::ios::trunc);
    if (!file) throw std::runtime_error("cannot create '" + path + "'");
    file << page;
    file.close();
    if (!file) throw std::runtime_error("cannot write '" + path + "'");
    commit_temporary(temp, path);
  } catch (...) {
    remove_quietly(temp);
    throw;
  }
}

}  // namespace culprit
