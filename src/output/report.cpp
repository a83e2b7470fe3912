// render_report: the text report for a person at a terminal.
//
// Compact whatever the job size (about 40 lines at most plus notes): a header, the culprits
// (most blame first, at most kMaxCulprits), the longest chain of a victim to each of the top
// culprits, a summary of processes and edges (counts by verdict, the few worst), the inputs
// (listed only when few, else totals and the files with rejections), and the run notes.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "output/chains.hpp"
#include "output/process_directory.hpp"
#include "output/results_io.hpp"
#include "output/text_format.hpp"

namespace culprit {
namespace {

constexpr std::size_t kMaxCulprits = 10;   // culprit lines
constexpr std::size_t kChainCulprits = 3;  // culprits whose longest chain is shown
constexpr std::size_t kChainHeadHops = 4;  // hops shown before "..." in a long chain
constexpr std::size_t kChainTailHops = 3;  // hops shown after it
constexpr std::size_t kWorstEdges = 3;
constexpr std::size_t kMaxInputLines = 6;
constexpr std::size_t kMaxNotes = 15;
constexpr std::size_t kLineWidth = 100;

void header(const AnalysisResults& r, std::ostream& out) {
  const RunInfo& i = r.info;
  out << "nccl-culprit " << (i.tool_version.empty() ? "?" : i.tool_version) << "  status "
      << i.status << "  "
      << plural(static_cast<uint64_t>(std::max(i.processes, 0)), "process", "processes") << "  "
      << plural(static_cast<uint64_t>(std::max(i.analyzer_ranks, 0)), "analyzer rank",
                "analyzer ranks")
      << "  reduce " << i.reduce_path << "\n";
  out << "input: " << (i.input.empty() ? "?" : i.input) << "  seq window " << i.seq_window;
  if (!i.created_utc.empty()) out << "  created " << i.created_utc;
  out << "\n";
  if (i.status != "ok") {
    out << "WARNING: status '" << i.status
        << "': some node's data was missing or unreadable; the verdict may be incomplete.\n";
  }
}

void culprits(const AnalysisResults& r, const ProcessDirectory& procs, std::ostream& out) {
  out << "\n";
  if (r.culprits.empty()) {
    render_no_culprit(r, out);
    return;
  }
  out << "Culprits (most blame first; job: its cost as a share of all processes' time inside NCCL, ? where\n"
         "the data cannot measure it):\n";
  const std::size_t shown = std::min(r.culprits.size(), kMaxCulprits);
  std::vector<std::string> names(shown);
  std::size_t name_width = 0;
  for (std::size_t k = 0; k < shown; ++k) {
    const CulpritRow& c = r.culprits[k];
    names[k] = procs.find(c.process_id) ? procs.name(c.process_id)
                                        : format("%s:pid %" PRId64, ProcessDirectory::host(c.host).c_str(), c.pid);
    name_width = std::max(name_width, names[k].size());
  }
  const bool dumps_named_some = std::any_of(r.culprits.begin(), r.culprits.end(), [](const CulpritRow& c) {
    return c.evidence.find("flight recorder") != std::string::npos;
  });
  for (std::size_t k = 0; k < shown; ++k) {
    const CulpritRow& c = r.culprits[k];
    std::string where = format("process %u", c.process_id);
    const std::string rank = procs.rank(c.process_id);
    if (!rank.empty()) where += ", " + rank;
    const std::string number = format("#%zu", k + 1);
    const std::string job = std::isnan(c.job_share) ? "    ?" : format("%5.1f%%", c.job_share * 100.0);
    out << format("  %-3s %-*s  %-12s  blame %5.1f%% (%s)  job %s  victims %u  score %.2f  [%s]\n",
                  number.c_str(), static_cast<int>(name_width), names[k].c_str(),
                  c.culprit_class.c_str(), c.blame_share * 100.0, duration(c.blame_ns).c_str(),
                  job.c_str(), c.victims, c.score, where.c_str());
    // Which input named it, where Flight Recorder dumps took part (known right after the
    // analysis; not kept in the HDF5 file).
    if (dumps_named_some && !c.evidence.empty()) out << "      named by: " << c.evidence << "\n";
    if (c.peer_process_id >= 0) {
      out << "      link to " << procs.name(c.peer_process_id);
      if (procs.find(c.peer_process_id)) out << format(" (process %" PRId64 ")", c.peer_process_id);
      out << "\n";
    }
  }
  if (r.culprits.size() > shown) {
    out << "  ... and " << plural(r.culprits.size() - shown, "more culprit", "more culprits")
        << " (see the results file)\n";
  }
}

// Prints "a -> b -> ... -> root (root)", wrapped at kLineWidth, long chains shortened.
void print_chain(const std::vector<ChainRow>& hops, const ProcessDirectory& procs, std::ostream& out) {
  std::vector<std::string> tokens;
  const std::size_t n = hops.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (n > kChainHeadHops + kChainTailHops + 1 && i == kChainHeadHops) {
      tokens.push_back(format("... %zu more ...", n - kChainHeadHops - kChainTailHops));
      i = n - kChainTailHops - 1;
      continue;
    }
    std::string t = procs.name(hops[i].process_id);
    if (i + 1 == n) t += " (root)";
    tokens.push_back(t);
  }
  std::string line = "    ";
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::string piece = (i ? " -> " : "") + tokens[i];
    if (i && line.size() + piece.size() > kLineWidth) {
      out << line << "\n";
      line = "      " + piece;
    } else {
      line += piece;
    }
  }
  out << line << "\n";
}

void longest_chains(const AnalysisResults& r, const ProcessDirectory& procs, std::ostream& out) {
  if (r.culprits.empty() || r.chains.empty()) return;
  const auto by_victim = chains_by_victim(r);
  const std::size_t shown = std::min(r.culprits.size(), kChainCulprits);
  for (std::size_t k = 0; k < shown; ++k) {
    const CulpritRow& c = r.culprits[k];
    const std::vector<ChainRow>* best = longest_chain_to(by_victim, c);
    if (!best) continue;
    out << "\nLongest chain to #" << k + 1 << " (" << plural(best->size() - 1, "hop", "hops")
        << "):\n";
    print_chain(*best, procs, out);
  }
}

void process_summary(const AnalysisResults& r, std::ostream& out) {
  if (r.processes.empty()) return;
  std::size_t culprit = 0, victim = 0, healthy = 0, other = 0;
  for (const ProcessRow& p : r.processes) {
    if (p.role == "culprit")
      ++culprit;
    else if (p.role == "victim")
      ++victim;
    else if (p.role == "healthy")
      ++healthy;
    else
      ++other;
  }
  out << "\nProcesses: " << r.processes.size() << " (" << culprit << " culprit, " << victim
      << " victim, " << healthy << " healthy";
  if (other) out << ", " << other << " other";
  out << ")\n";
}

// The wait that a verdict is about, with its label.
std::pair<uint64_t, const char*> verdict_wait(const EdgeRow& e) {
  if (e.verdict == "late_data") return {e.recv_wait_ns, "recv wait"};
  if (e.verdict == "no_credit") return {e.send_peer_wait_ns, "send peer wait"};
  if (e.verdict == "slow_link") return {e.send_wait_ns, "send wait"};
  if (e.verdict == "slow_flush") return {e.recv_flush_wait_ns, "recv flush wait"};
  return {std::max({e.send_gpu_wait_ns, e.send_peer_wait_ns, e.send_wait_ns, e.recv_wait_ns,
                    e.recv_flush_wait_ns, e.recv_gpu_wait_ns}),
          "max wait"};
}

void edge_summary(const AnalysisResults& r, const ProcessDirectory& procs, std::ostream& out) {
  if (r.edges.empty()) return;
  static const char* const kOrder[] = {"normal", "late_data", "no_credit", "slow_link",
                                       "slow_flush"};
  std::map<std::string, std::size_t> counts;
  for (const EdgeRow& e : r.edges) ++counts[e.verdict];
  out << "Edges: " << plural(r.edges.size(), "connection", "connections") << ":";
  const char* sep = " ";
  for (const char* v : kOrder) {
    auto it = counts.find(v);
    if (it == counts.end()) continue;
    out << sep << it->second << " " << v;
    sep = ", ";
    counts.erase(it);
  }
  for (const auto& [verdict, n] : counts) {
    out << sep << n << " " << (verdict.empty() ? "?" : verdict);
    sep = ", ";
  }
  out << "\n";

  std::vector<const EdgeRow*> flagged;
  for (const EdgeRow& e : r.edges) {
    if (e.verdict != "normal") flagged.push_back(&e);
  }
  const std::size_t shown = std::min(flagged.size(), kWorstEdges);
  std::stable_sort(flagged.begin(), flagged.end(), [](const EdgeRow* a, const EdgeRow* b) {
    return verdict_wait(*a).first > verdict_wait(*b).first;
  });
  if (shown) out << "  worst flagged (sender -> receiver):\n";
  for (std::size_t k = 0; k < shown; ++k) {
    const EdgeRow& e = *flagged[k];
    const auto [wait, label] = verdict_wait(e);
    out << format("    %-10s %s -> %s  comm 0x%" PRIx64 " ch %d  %s %s\n", e.verdict.c_str(),
                  procs.name(e.src_process).c_str(), procs.name(e.dst_process).c_str(), e.comm_hash,
                  e.channel, label, duration(wait).c_str());
  }
}

void input_summary(const AnalysisResults& r, std::ostream& out) {
  out << "\n";
  if (r.inputs.empty()) {
    out << "Inputs: none recorded\n";
    return;
  }
  uint64_t records = 0, rejected = 0;
  std::map<std::string, std::size_t> formats;
  for (const InputRow& i : r.inputs) {
    records += i.records;
    rejected += i.rejected;
    ++formats[i.format.empty() ? "?" : i.format];
  }
  out << "Inputs: " << plural(r.inputs.size(), "file", "files") << " (";
  const char* sep = "";
  for (const auto& [f, n] : formats) {
    out << sep << n << " " << f;
    sep = ", ";
  }
  out << "), " << plural(records, "record", "records") << ", " << rejected << " rejected\n";

  auto line = [&](const InputRow& i) {
    out << format("  %s:%s  %s  %" PRIu64 " records, %" PRIu64 " rejected\n",
                  ProcessDirectory::host(i.host).c_str(), i.path.c_str(), i.format.c_str(), i.records,
                  i.rejected);
  };
  if (r.inputs.size() <= kMaxInputLines) {
    for (const InputRow& i : r.inputs) line(i);
    return;
  }
  std::vector<const InputRow*> with_rejections;
  for (const InputRow& i : r.inputs) {
    if (i.rejected) with_rejections.push_back(&i);
  }
  std::stable_sort(with_rejections.begin(), with_rejections.end(),
                   [](const InputRow* a, const InputRow* b) { return a->rejected > b->rejected; });
  const std::size_t shown = std::min(with_rejections.size(), kMaxInputLines);
  for (std::size_t k = 0; k < shown; ++k) line(*with_rejections[k]);
  if (with_rejections.size() > shown) {
    out << "  ... and " << plural(with_rejections.size() - shown, "more file", "more files")
        << " with rejections\n";
  }
}

void notes(const AnalysisResults& r, std::ostream& out) {
  if (r.info.notes.empty()) return;
  out << "\nNotes:\n";
  const std::size_t shown = std::min(r.info.notes.size(), kMaxNotes);
  for (std::size_t k = 0; k < shown; ++k) out << "  " << r.info.notes[k] << "\n";
  if (r.info.notes.size() > shown) {
    out << "  ... and " << plural(r.info.notes.size() - shown, "more note", "more notes") << "\n";
  }
}

// The connections flagged against their peers (no_credit, slow_link, slow_flush; late_data is
// a victim's wait), counted per verdict: "3 connection(s) (no_credit 2, slow_link 1)"; empty
// where none is.
std::string flagged_connections(const std::vector<EdgeRow>& edges) {
  std::map<std::string, std::size_t> by_verdict;
  std::size_t flagged = 0;
  for (const EdgeRow& e : edges)
    if (e.verdict == "no_credit" || e.verdict == "slow_link" || e.verdict == "slow_flush") {
      ++by_verdict[e.verdict];
      ++flagged;
    }
  if (flagged == 0) return "";
  std::string counts;
  for (const auto& [verdict, n] : by_verdict)
    counts += (counts.empty() ? "" : ", ") + verdict + " " + std::to_string(n);
  return std::to_string(flagged) + " connection(s) (" + counts + ")";
}

}  // namespace

// With no culprit, what was seen: waiting spread over many processes is not "no waiting".
void render_no_culprit(const AnalysisResults& r, std::ostream& out) {
  const bool dumps = std::any_of(r.inputs.begin(), r.inputs.end(), [](const InputRow& i) { return i.format == "flight-recorder"; });
  if (r.edges.empty() && dumps) {
    out << "No culprit: in the Flight Recorder dumps no rank holds back its groups' other members\n"
           "  (the notes name any group whose members are all inside one collective).\n";
    return;
  }
  if (r.edges.empty()) {
    out << "No culprit: the input holds no connection records to judge.\n";
    return;
  }
  double waiting = 0, phases = 0;
  for (const EdgeRow& e : r.edges) {
    const double w = static_cast<double>(e.send_gpu_wait_ns) + static_cast<double>(e.send_peer_wait_ns) +
                     static_cast<double>(e.recv_wait_ns);
    waiting += w;
    phases += w + static_cast<double>(e.send_wait_ns) + static_cast<double>(e.recv_flush_wait_ns) +
              static_cast<double>(e.recv_gpu_wait_ns);
  }
  double total_wait = 0, most = 0;
  std::size_t waiting_processes = 0;
  for (const ProcessRow& p : r.processes) {
    total_wait += static_cast<double>(p.wait_ns);
    most = std::max(most, static_cast<double>(p.wait_ns));
    waiting_processes += p.wait_ns > 0;
  }
  const std::string flagged = flagged_connections(r.edges);
  if (flagged.empty()) {
    out << "No culprit: no process or wire stands out from its peers.\n";
  } else {
    // Connections flagged beyond their peers, yet no root named: the tests that could tell a
    // faulty GPU or wire there from the slowest healthy one had nothing to judge it by.
    out << "No culprit named: " << flagged << " stand out from their peers, but no test\n"
        << "  the data allows told their cause from the slowest healthy GPU or wire (see the notes).\n";
  }
  out << "  Waiting (RecvWait, SendGpuWait, SendPeerWait) is " << format("%.0f", phases > 0 ? 100 * waiting / phases : 0.0)
      << " % of the proxy phases recorded,\n  spread over " << plural(waiting_processes, "process", "processes");
  if (total_wait > 0) out << " (the most-waiting one " << format("%.0f", 100 * most / total_wait) << " % of it)";
  out << ": in a collective every rank\n  waits for the slowest each step, so waiting alone names nobody.\n";
}

void render_report(const AnalysisResults& results, std::ostream& out) {
  const ProcessDirectory procs(results);
  header(results, out);
  culprits(results, procs, out);
  longest_chains(results, procs, out);
  process_summary(results, out);
  if (results.processes.empty() && !results.edges.empty()) out << "\n";
  edge_summary(results, procs, out);
  input_summary(results, out);
  notes(results, out);
}

}  // namespace culprit
