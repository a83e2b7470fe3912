#include "pipeline/analyze.hpp"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <map>
#include <stdexcept>

#include "analysis/attribution.hpp"
#include "core/version.hpp"
#include "io/discover.hpp"
#include "output/results_io.hpp"
#include "pipeline/exchange.hpp"
#include "pipeline/phase_clock.hpp"
#include "pipeline/local_stage.hpp"

namespace culprit {
namespace {

std::string utc_now_iso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The name of this process in messages: a user of a 1000-node job must find the node.
std::string where(const Communicator& comm, const std::string& host) {
  return comm.size() > 1 ? "[rank " + std::to_string(comm.rank()) + " " + host + "] " : "";
}

// One line, written at once, so that lines of several ranks never interleave.
void say(const std::string& text) {
  std::string line = "nccl-culprit: " + text + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

// The analyzer processes that stayed silent past the deadline, named by the host each gave
// at the start ("rank 3 on node003"; "rank 3" when it was silent from the start).
std::string silent_processes(const std::vector<int>& silent, const std::vector<std::string>& hosts) {
  std::string out;
  for (int r : silent) {
    const auto i = static_cast<size_t>(r);
    out += (out.empty() ? "" : ", ") + ("rank " + std::to_string(r)) +
           (i < hosts.size() && !hosts[i].empty() ? " on " + hosts[i] : "");
  }
  return out;
}

// Fatal errors of this rank alone (no collective possible at that moment).
void say_error(const Communicator& comm, const std::string& host, const std::string& text) {
  say(where(comm, host) + text);
}

struct Collected {
  LocalData data;
  std::string node_error;     // this node's input could not be read at all
  std::string describe_input;
};

Collected collect(const AnalyzeOptions& o, Communicator& comm, const std::string& host) {
  Collected c;
  if (o.source) {
    o.source->read(comm.rank(), comm.size(), c.data);
    c.describe_input = o.source->describe();
    return c;
  }
  Discovery d;
  if (!o.shared.empty()) {
    d = discover_shared(o.shared, comm.rank(), comm.size(), o.format);
    c.describe_input = o.shared;
  } else {
    std::string tmpl = o.input;
    if (tmpl.empty()) {
      const char* env = std::getenv("NCCL_CULPRIT_DIR");
      tmpl = env && *env ? env : "/dev/shm/nccl-culprit/{job}";
    }
    std::string dir = expand_input_template(tmpl, host, comm.rank(), current_job_id());
    d = discover_node_local(dir, host, o.format);
    c.describe_input = tmpl;
  }
  if (!d.error.empty()) {
    c.node_error = where(comm, host) + d.error;  // reported once, by rank 0
    return c;
  }
  read_input_files(d.files, c.data);
  return c;
}

// What the readers assumed about their files, one line each: the same note of many files
// (one export per node) is said once, with the first file and how many more.
std::vector<std::string> reader_notes(const std::vector<InputReport>& inputs) {
  std::vector<std::pair<std::string, std::pair<std::string, size_t>>> assumed;  // note -> (first file, files)
  std::map<std::string, size_t> index;
  for (const InputReport& in : inputs)
    for (const std::string& note : in.notes) {
      auto [it, added] = index.emplace(note, assumed.size());
      if (added) assumed.push_back({note, {in.path, 1}});
      else ++assumed[it->second].second.second;
    }
  std::vector<std::string> lines;
  for (const auto& [note, where] : assumed) {
    const auto& [first, files] = where;
    lines.push_back(first + (files > 1 ? " (and " + std::to_string(files - 1) + " more file(s))" : "") + ": " + note);
  }
  return lines;
}

AnalysisResults assemble(const AnalyzeOptions& o, const Communicator& comm, const std::string& transport,
                         const Observations& obs, const std::vector<InputReport>& inputs,
                         bool any_node_failed, const std::string& describe_input,
                         const std::string& reduce_path, const std::vector<std::string>& notes) {
  Attribution a = attribute(obs);
  // NCCL_CULPRIT_DEBUG=1 lists every process with self evidence, for whoever tunes or audits.
  if (const char* debug = std::getenv("NCCL_CULPRIT_DEBUG"); debug && *debug == '1')
    for (const std::string& line : a.evidence) std::cerr << "nccl-culprit: evidence " << line << "\n";
  AnalysisResults r;
  r.info.tool_version = kToolVersion;
  r.info.format_version = kFormatVersion;
  r.info.seq_window = o.seq_window;
  r.info.analyzer_ranks = comm.size();
  r.info.processes = static_cast<int32_t>(a.processes.size());
  r.info.created_utc = utc_now_iso8601();
  r.info.input = describe_input;
  r.info.reduce_path = reduce_path;
  r.info.mpi_transport = transport;
  r.info.command = o.command;
  // Partial only when some node's data is really missing or unreadable: a node without
  // input, a file that could not be used or was cut short. Rejected rows are counted, not
  // lost data of a node; a connection recorded by one end only, or a rank known only as a
  // peer (in a hang: the one that stopped), is a note.
  bool partial = any_node_failed;
  for (const InputReport& in : inputs) {
    partial = partial || !in.error.empty() || in.truncated;
    InputRow row{in.host, in.path, in.format, in.records, in.rejected};
    r.inputs.push_back(row);
    if (in.rejected > 0 || !in.error.empty()) {
      std::string why = in.error;
      for (const auto& [reason, count] : in.reject_reasons)
        why += (why.empty() ? "" : "; ") + std::to_string(count) + "x " + reason;
      r.info.notes.push_back(in.path + ": " + why);
    }
  }
  for (std::string& note : reader_notes(inputs)) r.info.notes.push_back(std::move(note));
  if (a.ranks_without_data > 0)
    r.info.notes.push_back(std::to_string(a.ranks_without_data) +
                           " rank(s) with no records of their own (named as others' peers, or missing from a "
                           "communicator's ranks): no input holds records of theirs");
  r.info.status = partial ? "partial" : "ok";
  r.info.notes.insert(r.info.notes.end(), notes.begin(), notes.end());
  r.info.notes.insert(r.info.notes.end(), a.notes.begin(), a.notes.end());
  r.processes = std::move(a.processes);
  r.comm_ranks = std::move(a.comm_ranks);
  r.edges = std::move(a.edges);
  r.culprits = std::move(a.culprits);
  r.chains = std::move(a.chains);
  return r;
}

std::string expand_output(const std::string& tmpl, const std::string& host, int rank) {
  return expand_input_template(tmpl, host, rank, current_job_id());
}

}  // namespace

std::string current_job_id() {
  const char* job = std::getenv("SLURM_JOB_ID");
  return job && *job ? job : "local";
}

std::string current_host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

int run_analyze(const AnalyzeOptions& o, Communicator& world) {
  // Node-local data is named after this node. NCCL_CULPRIT_HOST overrides the name ({rank}
  // expanded), for tests that play several nodes on one machine and for sites whose
  // hostname differs from the name the job uses.
  std::string host = current_host_name();
  if (const char* forced = std::getenv("NCCL_CULPRIT_HOST"); forced && *forced)
    host = expand_input_template(forced, host, world.rank(), current_job_id());
  // --local-only: every process analyses its own node alone, with no traffic at all.
  std::unique_ptr<Communicator> serial;
  if (o.local_only) serial = make_serial_communicator();
  Communicator& comm = o.local_only ? *serial : world;

  // Every phase waits at most --deadline for each process (Communicator::set_deadline); the
  // hosts gathered first name the silent ones.
  comm.set_deadline(o.deadline_s);
  std::vector<std::string> hosts;
  for (const std::vector<char>& h : comm.gather_bytes(std::vector<char>(host.begin(), host.end())))
    hosts.emplace_back(h.begin(), h.end());

  ReducePath reduce_path;
  if (!parse_reduce_path(o.reduce, &reduce_path)) {
    if (world.rank() == 0) std::cerr << "nccl-culprit: --reduce must be cpu, cuda or auto\n";
    return kExitUsage;
  }

  // Tests of the deadline stop one analyzer process here, as a node stuck in a hung file
  // system read would be (NCCL_CULPRIT_TEST_STOP_RANK=R: rank R sends itself SIGSTOP).
  if (const char* stop = std::getenv("NCCL_CULPRIT_TEST_STOP_RANK"); stop && *stop && std::atoi(stop) == comm.rank() &&
      comm.size() > 1)
    std::raise(SIGSTOP);

  PhaseClock clock;
  // Phase 1: read.
  Collected collected;
  bool ok = true;
  try {
    collected = collect(o, comm, host);
  } catch (const std::invalid_argument& e) {
    // Same spec on every rank: every rank fails the same way, no collective needed.
    if (world.rank() == 0) std::cerr << "nccl-culprit: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    say_error(comm, host, std::string("reading input failed: ") + e.what());
    ok = false;
  }
  if (!comm.all_agree(ok)) return kExitFailure;

  clock.lap("read");

  // Phase 2: reduce (after agreeing on each communicator's sequence window).
  LocalStageResult local;
  try {
    std::vector<CommWindow> windows = agree_windows(comm, collected.data, o.seq_window);
    local = run_local_stage(collected.data, windows, reduce_path);
  } catch (const std::exception& e) {
    say_error(comm, host, std::string("local reduction failed: ") + e.what());
    ok = false;
  }
  if (!comm.all_agree(ok)) return kExitFailure;

  clock.lap("reduce");

  // Phase 3: exchange.
  Observations obs;
  std::vector<InputReport> inputs;
  // Node errors travel to rank 0, which reports each once.
  std::vector<std::string> node_errors;
  for (const std::vector<char>& e : comm.gather_bytes(std::vector<char>(
           collected.node_error.begin(), collected.node_error.end())))
    if (!e.empty()) node_errors.emplace_back(e.begin(), e.end());
  const uint64_t failed_nodes = node_errors.size();
  std::vector<std::string> notes;
  if (!local.reduce_note.empty()) notes.push_back(local.reduce_note);
  try {
    gather_observations(comm, local.summary, o.seq_window, &obs, &inputs);
  } catch (const std::exception& e) {
    say_error(comm, host, std::string("exchange failed: ") + e.what());
    ok = false;
  }
  if (!comm.all_agree(ok)) return kExitFailure;

  clock.lap("exchange");

  // Phases 4 and 5 on rank 0: analyse and write. The exit code is then shared.
  int code = kExitOk;
  if (comm.rank() == 0) {
    uint64_t records = 0;
    for (const InputReport& in : inputs) records += in.records;
    // Connections, or at least a snapshot of operations alive in a hang (a watchdog's, or
    // Flight Recorder dumps), are needed.
    if (const std::vector<int> silent = comm.silent_ranks(); !silent.empty()) {
      const std::string who = silent_processes(silent, hosts);
      say(std::to_string(silent.size()) + " analyzer process(es) silent past --deadline " +
          format_seconds(o.deadline_s) + ": " + who + "; going on with the others (status partial)");
      notes.push_back("analyzer process(es) silent past the " + format_seconds(o.deadline_s) +
                      " deadline, their nodes' data missing: " + who);
    }
    if (records == 0 || (obs.edges.empty() && obs.inflight.empty() && obs.fr_groups.empty())) {
      // One line: the first node error says why, or else what was read.
      std::string why = !node_errors.empty()
          ? "no usable profiler data: " + node_errors.front() + (node_errors.size() > 1 ? " (and " + std::to_string(node_errors.size() - 1) + " more node(s) without input)" : "")
          : "no usable profiler data in " + collected.describe_input + " (" + std::to_string(inputs.size()) + " file(s) read)";
      say(why);
      code = kExitNoData;
    } else {
      for (const std::string& e : node_errors) say("warning: " + e);
      for (const InputReport& in : inputs)
        if (!in.error.empty()) say("warning: " + in.path + ": " + in.error);
      try {
        if (failed_nodes)
          notes.push_back(std::to_string(failed_nodes) + " analyzer process(es) found no input");
        AnalysisResults results = assemble(o, comm, world.transport(), obs, inputs,
                                           failed_nodes > 0 || !comm.silent_ranks().empty(),
                                           collected.describe_input, local.reduce_path, notes);
        clock.lap("analyse");
        std::string output = o.output.empty() ? "nccl-culprit-{job}.h5" : o.output;
        if (o.local_only && world.size() > 1 && output.find("{rank}") == std::string::npos &&
            output.find("{host}") == std::string::npos)
          output = output.substr(0, output.rfind(".h5")) + "-{host}-{rank}.h5";
        output = expand_output(output, host, world.rank());
        write_results_h5(results, output);
        // The picture is drawn from what the file holds, as `report --html` draws it, so
        // that the two never disagree.
        if (!o.html.empty()) write_results_html(read_results_h5(output), expand_output(o.html, host, world.rank()));
        if (!o.json.empty()) write_results_json(results, expand_output(o.json, host, world.rank()));
        if (!o.quiet) render_report(results, std::cout);
        clock.lap("write");
        if (const char* timing = std::getenv("NCCL_CULPRIT_TIMING"); timing && *timing == '1')
          std::cerr << "nccl-culprit: phases on rank 0: " << clock.summary() << "\n";
      } catch (const std::exception& e) {
        say(e.what());
        code = kExitFailure;
      }
    }
  }
  // Only rank 0 knows who stayed silent; the max tells every live rank whether anyone did.
  const std::vector<uint64_t> shared =
      comm.all_max({static_cast<uint64_t>(code), static_cast<uint64_t>(comm.silent_ranks().size())});
  const int shared_code = static_cast<int>(shared[0]);
  // A silent process would hold every other one in MPI_Finalize: rank 0 ends the job, with
  // exit code 4 where it wrote results, else the code of what went wrong, and the others
  // wait outside MPI to be ended by it.
  if (shared[1] > 0) {
    const int end_code = shared_code == kExitOk ? kExitSilentNodes : shared_code;
    std::cout.flush();
    std::fflush(stdout);
    if (comm.rank() == 0) comm.abort(end_code);
    comm.await_end_by_root(end_code);
  }
  return shared_code;
}

}  // namespace culprit
