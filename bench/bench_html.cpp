// HTML page benchmark: the size of the page and the time to draw it for a large job.
// Usage: bench_html [NODES] [GPUS] [CHANNELS] [OUT.html]   (default 2048 8 8 /tmp/nccl-culprit-bench.html)
//
// The results are built here, shaped like the analysis of a slow GPU in a job of that size:
// a ring per channel across the nodes (one network connection per channel and node), one
// root, every other GPU its victim along a tree of waits (each GPU waits on its node's first
// GPU, each node's first GPU on its parent node's in a binary tree rooted at the culprit's
// node), one input file per GPU. bench/bench_html_load.py loads the page in headless Chromium
// and prints its load time.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/results.hpp"
#include "output/results_io.hpp"

namespace {

using namespace culprit;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

AnalysisResults large_job(uint32_t nodes, uint32_t gpus, uint32_t channels) {
  AnalysisResults r;
  const uint32_t n = nodes * gpus, root = n / 2 + 3, root_node = root / gpus;
  r.info.tool_version = "bench";
  r.info.processes = static_cast<int32_t>(n);
  r.info.analyzer_ranks = static_cast<int32_t>(nodes);
  r.info.input = "/lustre/incidents/bench";
  r.info.command =
      "srun --ntasks-per-node=1 -n " + std::to_string(nodes) + " nccl-culprit analyze --shared /lustre/incidents/bench";
  char host[32];
  for (uint32_t p = 0; p < n; ++p) {
    ProcessRow row;
    row.process_id = p;
    std::snprintf(host, sizeof host, "node%04u", p / gpus);
    row.host = host;
    row.pid = 40000 + p % gpus;
    row.role = p == root ? "culprit" : "victim";
    row.culprit_class = p == root ? "gpu_producer" : "none";
    row.attributed_root = root;
    row.wait_ns = p == root ? 1000 : 1000000 + (p * 7919u) % 5000000;
    r.processes.push_back(row);
    r.comm_ranks.push_back({0xabcdefull, static_cast<int32_t>(p), static_cast<int32_t>(n), p});
    r.inputs.push_back({host, std::string("/lustre/incidents/bench/") + host + "/trace_" + std::to_string(p) + ".json",
                        "nccl-json", 20, 0});
  }
  for (uint32_t c = 0; c < channels; ++c)
    for (uint32_t node = 0; node < nodes; ++node) {
      EdgeRow e;
      e.comm_hash = 0xabcdefull;
      e.channel = static_cast<int32_t>(c);
      e.src_process = node * gpus + gpus - 1;
      e.dst_process = ((node + 1) % nodes) * gpus;
      e.send_steps = e.recv_steps = 320;
      e.bytes = 1300234240;
      e.send_gpu_wait_ns = 90000000;
      e.recv_wait_ns = 100000000 + node * 1000;
      e.verdict = node == root_node ? "late_data" : "normal";
      r.edges.push_back(e);
    }
  // Each victim's path: its node's first GPU, up the binary tree of nodes, then the root.
  auto parent = [&](uint32_t node) {  // node indices renumbered so that the root's node is 0
    const uint32_t k = (node + nodes - root_node) % nodes;
    return ((k - 1) / 2 + root_node) % nodes;
  };
  for (uint32_t p = 0; p < n; ++p) {
    std::vector<uint32_t> path{p};
    uint32_t node = p / gpus;
    if (p % gpus != 0 && p != root) path.push_back(node * gpus);
    while (node != root_node) {
      node = parent(node);
      path.push_back(node * gpus);
    }
    if (path.back() != root) path.push_back(root);
    if (p == root) path = {root};
    r.processes[p].chain_depth = static_cast<int32_t>(path.size()) - 1;
    for (uint32_t hop = 0; hop < path.size(); ++hop) r.chains.push_back({p, hop, path[hop]});
  }
  CulpritRow c;
  c.process_id = root;
  c.host = r.processes[root].host;
  c.pid = r.processes[root].pid;
  c.culprit_class = "gpu_producer";
  c.blame_ns = 1000000000;
  c.blame_share = 1;
  c.job_share = 0.31;
  c.victims = n - 1;
  c.score = 0.97;
  r.culprits = {c};
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const uint32_t nodes = argc > 1 ? static_cast<uint32_t>(std::atoi(argv[1])) : 2048;
  const uint32_t gpus = argc > 2 ? static_cast<uint32_t>(std::atoi(argv[2])) : 8;
  const uint32_t channels = argc > 3 ? static_cast<uint32_t>(std::atoi(argv[3])) : 8;
  const std::string out = argc > 4 ? argv[4] : "/tmp/nccl-culprit-bench.html";
  if (nodes < 1 || gpus < 1 || channels < 1) {
    std::fprintf(stderr, "usage: bench_html [NODES] [GPUS] [CHANNELS] [OUT.html]\n");
    return 2;
  }
  const AnalysisResults r = large_job(nodes, gpus, channels);
  auto t0 = std::chrono::steady_clock::now();
  write_results_html(r, out);
  const double write_s = seconds_since(t0);
  std::printf("bench_html: %u nodes x %u GPUs (%zu processes, %zu connections, %zu chain rows)\n", nodes, gpus,
              r.processes.size(), r.edges.size(), r.chains.size());
  std::printf("bench_html: page %s: %.2f MB, drawn in %.3f s\n", out.c_str(),
              static_cast<double>(std::filesystem::file_size(out)) / 1e6, write_s);
  return 0;
}
