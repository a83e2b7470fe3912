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

// What rank 0 holds after the exchange.
struct Exchanged {
  Observations obs;
  std::vector<InputReport> inputs;
  std::vector<std::string> node_errors;  // one per node whose input could not be read at all
  std::vector<std::string> notes;        // for the results, before the analysis's own
};

// What the phases on rank 0 work from.
struct RootPhase {
  const AnalyzeOptions& o;
  const Communicator& comm;
  const Communicator& world;
  const std::string& host;
  const std::vector<std::string>& hosts;  // each analyzer process's host, by rank
  const Collected& collected;
  const LocalStageResult& local;
  Exchanged& exchanged;
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

// Node-local data is named after this node. NCCL_CULPRIT_HOST overrides the name ({rank}
// expanded), for tests that play several nodes on one machine and for sites whose hostname
// differs from the name the job uses.
std::string this_node_name(const Communicator& world) {
  std::string host = current_host_name();
  if (const char* forced = std::getenv("NCCL_CULPRIT_HOST"); forced && *forced)
    host = expand_input_template(forced, host, world.rank(), current_job_id());
  return host;
}

// Tests of the deadline stop one analyzer process here, as a node stuck in a hung file system
// read would be (NCCL_CULPRIT_TEST_STOP_RANK=R: rank R sends itself SIGSTOP).
void stop_here_if_tested(const Communicator& comm) {
  if (const char* stop = std::getenv("NCCL_CULPRIT_TEST_STOP_RANK"); stop && *stop && std::atoi(stop) == comm.rank() &&
      comm.size() > 1)
    std::raise(SIGSTOP);
}

// Phase 1: read this node's input. False where it failed (said on this rank); a bad input
// spec throws std::invalid_argument, the same on every rank.
bool read_phase(const AnalyzeOptions& o, Communicator& comm, const std::string& host, Collected& out) {
  try {
    out = collect(o, comm, host);
    return true;
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    say_error(comm, host, std::string("reading input failed: ") + e.what());
    return false;
  }
}

// Phase 2: reduce this node's records, after agreeing on each communicator's sequence window.
bool reduce_phase(Communicator& comm, const std::string& host, const LocalData& data, int seq_window,
                  ReducePath reduce_path, LocalStageResult& out) {
  try {
    std::vector<CommWindow> windows = agree_windows(comm, data, seq_window);
    out = run_local_stage(data, windows, reduce_path);
    return true;
  } catch (const std::exception& e) {
    say_error(comm, host, std::string("local reduction failed: ") + e.what());
    return false;
  }
}

// Phase 3: every node's summaries and errors to rank 0, which reports each error once.
bool exchange_phase(Communicator& comm, const std::string& host, const Collected& collected,
                    const LocalStageResult& local, int seq_window, Exchanged& out) {
  for (const std::vector<char>& e :
       comm.gather_bytes(std::vector<char>(collected.node_error.begin(), collected.node_error.end())))
    if (!e.empty()) out.node_errors.emplace_back(e.begin(), e.end());
  if (!local.reduce_note.empty()) out.notes.push_back(local.reduce_note);
  try {
    gather_observations(comm, local.summary, seq_window, &out.obs, &out.inputs);
    return true;
  } catch (const std::exception& e) {
    say_error(comm, host, std::string("exchange failed: ") + e.what());
    return false;
  }
}

// One line for a job without usable data: the first node error says why, or else what was read.
std::string no_data_reason(const Exchanged& ex, const Collected& collected) {
  if (ex.node_errors.empty())
    return "no usable profiler data in " + collected.describe_input + " (" + std::to_string(ex.inputs.size()) +
           " file(s) read)";
  return "no usable profiler data: " + ex.node_errors.front() +
         (ex.node_errors.size() > 1
              ? " (and " + std::to_string(ex.node_errors.size() - 1) + " more node(s) without input)"
              : "");
}

// Phase 5: the HDF5 file, then the HTML page, JSON and text report.
void write_outputs(const RootPhase& at, const AnalysisResults& results) {
  std::string output = at.o.output.empty() ? "nccl-culprit-{job}.h5" : at.o.output;
  if (at.o.local_only && at.world.size() > 1 && output.find("{rank}") == std::string::npos &&
      output.find("{host}") == std::string::npos)
    output = output.substr(0, output.rfind(".h5")) + "-{host}-{rank}.h5";
  output = expand_output(output, at.host, at.world.rank());
  write_results_h5(results, output);
  // The picture is drawn from what the file holds, as `report --html` draws it, so that the
  // two never disagree.
  if (!at.o.html.empty())
    write_results_html(read_results_h5(output), expand_output(at.o.html, at.host, at.world.rank()));
  if (!at.o.json.empty()) write_results_json(results, expand_output(at.o.json, at.host, at.world.rank()));
  if (!at.o.quiet) render_report(results, std::cout);
}

// Phases 4 and 5 on rank 0: the exit code of what happened.
int analyse_and_write(const RootPhase& at, PhaseClock& clock) {
  Exchanged& ex = at.exchanged;
  const std::vector<int> silent = at.comm.silent_ranks();
  if (!silent.empty()) {
    const std::string who = silent_processes(silent, at.hosts);
    say(std::to_string(silent.size()) + " analyzer process(es) silent past --deadline " +
        format_seconds(at.o.deadline_s) + ": " + who + "; going on with the others (status partial)");
    ex.notes.push_back("analyzer process(es) silent past the " + format_seconds(at.o.deadline_s) +
                       " deadline, their nodes' data missing: " + who);
  }
  uint64_t records = 0;
  for (const InputReport& in : ex.inputs) records += in.records;
  // Connections, or at least a snapshot of operations alive in a hang (a watchdog's, or
  // Flight Recorder dumps), are needed.
  if (records == 0 || (ex.obs.edges.empty() && ex.obs.inflight.empty() && ex.obs.fr_groups.empty())) {
    say(no_data_reason(ex, at.collected));
    return kExitNoData;
  }
  for (const std::string& e : ex.node_errors) say("warning: " + e);
  for (const InputReport& in : ex.inputs)
    if (!in.error.empty()) say("warning: " + in.path + ": " + in.error);
  try {
    if (!ex.node_errors.empty())
      ex.notes.push_back(std::to_string(ex.node_errors.size()) + " analyzer process(es) found no input");
    AnalysisResults results =
        assemble(at.o, at.comm, at.world.transport(), ex.obs, ex.inputs, !ex.node_errors.empty() || !silent.empty(),
                 at.collected.describe_input, at.local.reduce_path, ex.notes);
    clock.lap("analyse");
    write_outputs(at, results);
    clock.lap("write");
    if (const char* timing = std::getenv("NCCL_CULPRIT_TIMING"); timing && *timing == '1')
      std::cerr << "nccl-culprit: phases on rank 0: " << clock.summary() << "\n";
  } catch (const std::exception& e) {
    say(e.what());
    return kExitFailure;
  }
  return kExitOk;
}

// Only rank 0 knows who stayed silent; the max tells every live rank whether anyone did. A
// silent process would hold every other one in MPI_Finalize: rank 0 ends the job, with exit
// code 4 where it wrote results, else the code of what went wrong, and the others wait
// outside MPI to be ended by it.
int share_exit_code(Communicator& comm, int code) {
  const std::vector<uint64_t> shared =
      comm.all_max({static_cast<uint64_t>(code), static_cast<uint64_t>(comm.silent_ranks().size())});
  const int shared_code = static_cast<int>(shared[0]);
  if (shared[1] > 0) {
    const int end_code = shared_code == kExitOk ? kExitSilentNodes : shared_code;
    std::cout.flush();
    std::fflush(stdout);
    if (comm.rank() == 0) comm.abort(end_code);
    comm.await_end_by_root(end_code);
  }
  return shared_code;
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
  const std::string host = this_node_name(world);
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
  stop_here_if_tested(comm);

  // Each phase ends with every process agreeing whether all succeeded: one node failing ends
  // the job on all of them, none waits for it.
  PhaseClock clock;
  Collected collected;
  bool ok = true;
  try {
    ok = read_phase(o, comm, host, collected);
  } catch (const std::invalid_argument& e) {
    // Same spec on every rank: every rank fails the same way, no collective needed.
    if (world.rank() == 0) std::cerr << "nccl-culprit: " << e.what() << "\n";
    return kExitUsage;
  }
  if (!comm.all_agree(ok)) return kExitFailure;
  clock.lap("read");

  LocalStageResult local;
  if (!comm.all_agree(reduce_phase(comm, host, collected.data, o.seq_window, reduce_path, local)))
    return kExitFailure;
  clock.lap("reduce");

  Exchanged exchanged;
  if (!comm.all_agree(exchange_phase(comm, host, collected, local, o.seq_window, exchanged))) return kExitFailure;
  clock.lap("exchange");

  // Phases 4 and 5 on rank 0: analyse and write. The exit code is then shared.
  const int code = comm.rank() == 0
                       ? analyse_and_write({o, comm, world, host, hosts, collected, local, exchanged}, clock)
                       : kExitOk;
  return share_exit_code(comm, code);
}

}  // namespace culprit
