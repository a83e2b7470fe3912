// Pipeline benchmark: parse throughput of NCCL 2.27 traces (MB/s per core) and end-to-end
// seconds of `analyze` over a simulated 16-node x 8-GPU, 20-sequence job written to disk.
// Usage: bench_pipeline [SPEC]   (default topology=ring,nodes=16,gpus=8,channels=2,seqs=20,fault=slow_gpu:77)
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include "comm/communicator.hpp"
#include "io/local_data.hpp"
#include "io/nccl_trace_reader.hpp"
#include "mock/simulator.hpp"
#include "pipeline/analyze.hpp"

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Simulates, renders, parses and analyzes `spec`, printing the figures; the analysis's exit code.
int run(const std::string& spec) {
  using namespace culprit;
  auto t0 = std::chrono::steady_clock::now();
  mock::Simulation sim(mock::Scenario::parse(spec));
  double simulate_s = seconds_since(t0);

  std::vector<std::vector<mock::RenderedFile>> hosts;
  size_t bytes = 0, files = 0;
  t0 = std::chrono::steady_clock::now();
  for (size_t node = 0; node < sim.hosts().size(); ++node) {
    hosts.push_back(sim.render_host_nccl_json(static_cast<int>(node)));
    for (const auto& f : hosts.back()) bytes += f.content.size(), ++files;
  }
  double render_s = seconds_since(t0);

  // Parse throughput on one core, best of 3.
  double best = 1e30;
  size_t records = 0;
  for (int round = 0; round < 3; ++round) {
    LocalData data;
    t0 = std::chrono::steady_clock::now();
    for (size_t node = 0; node < hosts.size(); ++node)
      for (const auto& f : hosts[node]) read_nccl_trace_buffer(f.content, f.name, sim.hosts()[node], data);
    best = std::min(best, seconds_since(t0));
    records = data.ops.size();
  }

  // End to end from files, one analyzer process (the same code path as each MPI rank).
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("culprit_bench_" + std::to_string(getpid()));
  sim.write(dir.string());
  AnalyzeOptions o;
  o.shared = dir.string();
  o.output = (dir / "bench.h5").string();
  o.quiet = true;
  o.reduce = "cpu";
  auto comm = make_serial_communicator();
  t0 = std::chrono::steady_clock::now();
  int code = run_analyze(o, *comm);
  double e2e_s = seconds_since(t0);
  fs::remove_all(dir);

  std::printf("scenario            %s\n", spec.c_str());
  std::printf("simulate            %.3f s, render %.3f s (%zu files, %.1f MB)\n", simulate_s, render_s, files, bytes / 1e6);
  std::printf("parse nccl-json     %.1f MB/s per core (%zu ProxyOp records, best of 3: %.3f s)\n", bytes / 1e6 / best, records, best);
  std::printf("end-to-end analyze  %.3f s from files, 1 process (exit %d)\n", e2e_s, code);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  constexpr const char* kDefaultSpec = "topology=ring,nodes=16,gpus=8,channels=2,seqs=20,fault=slow_gpu:77";
  const std::string spec = argc > 1 ? argv[1] : kDefaultSpec;
  if (spec == "-h" || spec == "--help") {
    std::printf("usage: %s [SPEC]   (a mock scenario; default %s)\n", argv[0], kDefaultSpec);
    return 0;
  }
  try {
    return run(spec);
  } catch (const std::exception& e) {  // a bad scenario: one line, not std::terminate
    std::fprintf(stderr, "bench_pipeline: %s\n", e.what());
    return 2;
  }
}
