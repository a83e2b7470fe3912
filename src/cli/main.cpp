// nccl-culprit: finds the GPU, receiver or link that a stuck or slow NCCL job waits on.
// Subcommands: analyze (MPI job, one process per node), mock (write simulated data),
// report (print the report of a results file).
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.hpp"
#include "core/version.hpp"
#include "mock/mock_source.hpp"
#include "pipeline/analyze.hpp"

int main(int argc, char** argv) {
  using namespace culprit;
  CLI::App app{"nccl-culprit: find who a slow or hung NCCL job is waiting for", "nccl-culprit"};
  app.set_version_flag("--version", kToolVersion);
  app.require_subcommand(1);
  // Usage errors are one line naming the option, like every other failure.
  auto one_line = [](const CLI::App*, const CLI::Error& e) {
    return std::string("nccl-culprit: ") + e.what() + " (see --help)\n";
  };
  app.failure_message(one_line);

  AnalyzeOptions analyze;
  CLI::App* a = app.add_subcommand(
      "analyze",
      "Analyse NCCL profiler data; run with one process per node (srun --ntasks-per-node=1, "
      "mpirun -np N) or as a single process");
  auto* input = a->add_option("--input", analyze.input,
                              "node-local data directory; {host}, {rank}, {job} expanded per "
                              "process (default $NCCL_CULPRIT_DIR, else /dev/shm/nccl-culprit/{job})");
  a->add_option("--deadline", analyze.deadline_s,
                "seconds any phase waits for a silent analyzer process (a node stuck in a hung file "
                "system read); past it rank 0 writes the results of the others with status partial, "
                "names the silent ones and ends the job with exit code 4 (default 60; 0: wait forever)")
      ->check(CLI::NonNegativeNumber);
  auto* shared = a->add_option("--shared", analyze.shared,
                               "post-mortem data laid out as DIR/<host>/<files>, split across processes "
                               "(Flight Recorder dumps may also lie flat in DIR)");
  std::string mock_spec;
  auto* mock = a->add_option("--mock", mock_spec,
                             "no files: simulate the cluster in memory (see `nccl-culprit mock --help`)");
  input->excludes(shared)->excludes(mock);
  shared->excludes(mock);
  a->add_option("--format", analyze.format, "auto, nccl-json, probing-csv, probing-json, shard or flight-recorder")
      ->check(CLI::IsMember({"auto", "nccl-json", "probing-csv", "probing-json", "shard", "flight-recorder"}))
      ->capture_default_str();
  a->add_option("--seq-window", analyze.seq_window,
                "analyse the last N collective sequence numbers of each communicator")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  a->add_flag("--local-only", analyze.local_only,
              "no fan-out: each process analyses only its own node");
  a->add_option("--reduce", analyze.reduce, "cpu, cuda or auto (CUDA only when a usable device exists)")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}))
      ->capture_default_str();
  a->add_option("--output", analyze.output,
                "HDF5 results written by analyzer rank 0 (default nccl-culprit-{job}.h5)");
  a->add_option("--json", analyze.json, "also write the verdict as JSON");
  a->add_option("--html", analyze.html,
                "also draw the verdict as one self-contained HTML page (open it in any browser, offline)");
  a->add_flag("--quiet", analyze.quiet, "no text report on stdout");

  MockOptions mock_options;
  CLI::App* m = app.add_subcommand("mock", "Write simulated NCCL profiler data to disk");
  m->add_option("--out", mock_options.out, "output directory (DIR/<host>/<files> + ground_truth.json)")
      ->required();
  m->add_option("--scenario", mock_options.scenario, "scenario SPEC, e.g. topology=ring,nodes=4,fault=slow_gpu:13")
      ->required();
  m->add_option("--format", mock_options.format,
                "nccl-json (NCCL example-profiler traces, default), or probing's exports: probing-csv or "
                "probing-json, options joined by '+': untagged (no global.* columns), blank (unsigned "
                "cells empty/null as probing's CLI writes them), cast (CAST AS BIGINT: negative hashes), "
                "coll_perf (add nccl.coll_perf), coll_perf_proxy (nccl.coll_perf timed as without kernel events: by "
                "proxy ops, else the host's enqueue call), net_qp (add nccl.net_qp), no_proxy_ops, no_inflight; e.g. "
                "probing-csv+untagged+blank; or "
                "PyTorch Flight Recorder dumps: flight-recorder, options joined by '+': json (the JSON form), "
                "v<schema> (v1.0, v2.2 ... v2.10; default v2.9), all (every entry, not only unfinished ones), "
                "buffer=N (ring-buffer entries), missing=R, empty=R, mismatch=R, traces (the NCCL traces beside the "
                "dumps); e.g. flight-recorder+json+v2.10");
  m->footer(mock_scenario_help());

  std::string report_file, report_html;
  CLI::App* r = app.add_subcommand("report", "Print the text report of a results file, or draw it as HTML");
  r->add_option("file", report_file, "FILE.h5 written by `nccl-culprit analyze`")->required();
  r->add_option("--html", report_html,
                "write the self-contained HTML picture of the verdict to this file instead of printing");

  for (CLI::App* sub : {a, m, r}) sub->failure_message(one_line);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }

  if (*m) return run_mock_command(mock_options);
  if (*r) return run_report_command(report_file, report_html);
  std::unique_ptr<Communicator> world;
  try {
    world = make_world_communicator(&argc, &argv);
  } catch (const std::exception& e) {
    std::cerr << "nccl-culprit: cannot start MPI: " << e.what() << "\n";
    return kExitFailure;
  }
  if (!mock_spec.empty()) analyze.source = std::make_shared<mock::MockSource>(mock_spec);
  analyze.command = reproduce_command(analyze, mock_spec, world->size());
  int code = kExitFailure;
  try {
    code = run_analyze(analyze, *world);
  } catch (const DeadlineError& e) {  // rank 0 itself went silent: nobody can write results
    std::cerr << "nccl-culprit: " << e.what() << "\n";
    world->abort(kExitSilentNodes);
  }
  world.reset();  // finalises MPI before exit
  return code;
}
