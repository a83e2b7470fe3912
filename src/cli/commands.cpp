#include "cli/commands.hpp"

#include <cstdlib>
#include <iostream>
#include <memory>
#include <stdexcept>

#include "mock/render_flight_recorder.hpp"
#include "mock/render_probing.hpp"
#include "mock/simulator.hpp"
#include "output/results_io.hpp"
#include "pipeline/analyze.hpp"

namespace culprit {

std::string mock_scenario_help() { return mock::Scenario::help(); }

int run_mock_command(const MockOptions& options) {
  mock::Scenario scenario;
  std::unique_ptr<mock::Simulation> sim;
  mock::ProbingExport probing;
  mock::FlightRecorderExport flight_recorder;
  const bool traces = options.format == "nccl-json";
  const bool dumps = options.format.rfind("flight-recorder", 0) == 0;
  try {
    if (dumps) flight_recorder = mock::parse_flight_recorder_format(options.format);
    else if (!traces) probing = mock::parse_probing_format(options.format);
    scenario = mock::Scenario::parse(options.scenario);
    // Checks ranks against the cluster. Keeps each node's records only (what the files need),
    // not the whole timeline: memory stays bounded at 16k GPUs (docs/simulator.md, "Memory").
    // nccl.net_qp has a row per work request: every step of every kept proxy op.
    mock::Retention keep = mock::Retention::nodes_only();
    keep.every_step = !traces && !dumps && probing.net_qp;
    sim = std::make_unique<mock::Simulation>(scenario, std::move(keep));
  } catch (const std::invalid_argument& e) {
    std::cerr << "nccl-culprit: " << e.what() << "\n";
    return kExitUsage;
  }
  try {
    sim->measure_effect();  // ground truth: the job's slowdown against the same run without faults
    if (traces) sim->write(options.out);
    else if (dumps) sim->write(options.out, [&](int node) { return mock::render_host_flight_recorder(*sim, node, flight_recorder); });
    else sim->write(options.out, [&](int node) { return mock::render_host_probing(*sim, node, probing); });
    std::cout << "wrote " << sim->hosts().size() << " host directories under " << options.out
              << " (" << scenario.to_spec() << ")\n";
  } catch (const std::exception& e) {
    std::cerr << "nccl-culprit: " << options.out << ": " << e.what() << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

int run_report_command(const std::string& file, const std::string& html) {
  try {
    AnalysisResults results = read_results_h5(file);
    if (html.empty()) {
      render_report(results, std::cout);
    } else {
      write_results_html(results, html);
      std::cout << "wrote " << html << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "nccl-culprit: " << e.what() << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace culprit

namespace culprit {
namespace {

// One shell word: as is when it holds only characters no shell treats specially, else in
// single quotes (a quote inside becomes '\'').
std::string shell_word(const std::string& s) {
  const bool plain = !s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                       "0123456789_./:=,+-@%") == std::string::npos;
  if (plain) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string reproduce_command(const AnalyzeOptions& o, const std::string& mock_spec, int analyzer_ranks) {
  std::string cmd;
  if (analyzer_ranks > 1) {
    const bool slurm = std::getenv("SLURM_JOB_ID") != nullptr;
    cmd = (slurm ? "srun --ntasks-per-node=1 -n " : "mpirun -np ") + std::to_string(analyzer_ranks) + " ";
  }
  cmd += "nccl-culprit analyze";
  if (!mock_spec.empty()) cmd += " --mock " + shell_word(mock_spec);
  else if (!o.shared.empty()) cmd += " --shared " + shell_word(o.shared);
  else if (!o.input.empty()) cmd += " --input " + shell_word(o.input);
  if (o.format != "auto") cmd += " --format " + shell_word(o.format);
  cmd += " --seq-window " + std::to_string(o.seq_window);
  if (o.local_only) cmd += " --local-only";
  return cmd;
}

}  // namespace culprit
