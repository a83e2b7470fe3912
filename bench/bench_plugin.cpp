// bench_plugin: cost of libnccl-profiler-culprit.so on NCCL's threads, measured through its C
// ABI exactly as NCCL calls it (interface v6, real CLOCK_MONOTONIC), and the cost of reading
// a full shard.
//
//   build/bench/bench_plugin [path/to/libnccl-profiler-culprit.so]
//
// The plugin is found as the argument, $NCCL_CULPRIT_PLUGIN, or next to the build's bench/
// folder (build/libnccl-profiler-culprit.so). Shards go to a temporary folder, removed after.
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "io/shard_reader.hpp"
#include "plugin/nccl_profiler_abi.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string find_plugin(int argc, char** argv) {
  if (argc > 1) return argv[1];
  if (const char* e = getenv("NCCL_CULPRIT_PLUGIN"); e && *e) return e;
  char exe[PATH_MAX] = {0};
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    fs::path p = fs::path(std::string(exe, static_cast<size_t>(n))).parent_path().parent_path() /
                 "libnccl-profiler-culprit.so";
    if (fs::exists(p)) return p.string();
  }
  return "libnccl-profiler-culprit.so";
}

ncp_profiler_v6* P = nullptr;

void* start(void* ctx, ncp_descr_v6& d) {
  void* h = nullptr;
  P->start_event(ctx, &h, &d);
  return h;
}

// One collective with `ops` ProxyOps of `steps` steps each (sends: GpuWait, PeerWait, SendWait;
// receives: RecvWait, FlushWait, GpuWait), as net.cc reports them. Returns the calls made.
uint64_t one_collective(void* ctx, uint64_t seq, int ops, int steps, int rank) {
  uint64_t calls = 0;
  ncp_descr_v6 d;
  memset(&d, 0, sizeof d);
  d.type = NCP_EV_COLL;
  d.rank = rank;
  d.u.coll.seq_number = seq;
  d.u.coll.func = "AllReduce";
  void* coll = start(ctx, d);
  P->stop_event(coll);
  calls += 2;
  ncp_state_args_v6 a;
  memset(&a, 0, sizeof a);
  a.proxy_step.trans_size = 524288;
  for (int o = 0; o < ops; ++o) {
    const bool send = o % 2 == 0;
    memset(&d, 0, sizeof d);
    d.type = NCP_EV_PROXY_OP;
    d.parent_obj = coll;
    d.rank = rank;
    d.u.proxy_op.pid = getpid();
    d.u.proxy_op.channel_id = static_cast<uint8_t>(o / 2);
    d.u.proxy_op.peer = rank + 1;
    d.u.proxy_op.n_steps = steps;
    d.u.proxy_op.chunk_size = 524288;
    d.u.proxy_op.is_send = send;
    void* op = start(ctx, d);
    P->record_event_state(op, NCP_STATE_PROXY_OP_IN_PROGRESS, &a);
    calls += 2;
    void* open[8] = {nullptr};
    for (int s = 0; s < steps + 8; ++s) {
      if (s < steps) {  // post step s (up to 8 in flight, as NCCL_STEPS)
        memset(&d, 0, sizeof d);
        d.type = NCP_EV_PROXY_STEP;
        d.parent_obj = op;
        d.rank = rank;
        d.u.proxy_step.step = s;
        open[s % 8] = start(ctx, d);
        P->record_event_state(open[s % 8], send ? NCP_STATE_SEND_GPU_WAIT : NCP_STATE_RECV_WAIT, &a);
        calls += 2;
      }
      int k = s - 4;  // progress an older one
      if (k >= 0 && k < steps) {
        P->record_event_state(open[k % 8], send ? NCP_STATE_SEND_PEER_WAIT : NCP_STATE_RECV_FLUSH_WAIT, &a);
        P->record_event_state(open[k % 8], send ? NCP_STATE_SEND_WAIT : NCP_STATE_RECV_GPU_WAIT, &a);
        calls += 2;
      }
      int j = s - 7;  // and finish the oldest
      if (j >= 0 && j < steps) {
        P->stop_event(open[j % 8]);
        calls += 1;
      }
    }
    P->stop_event(op);
    calls += 1;
  }
  return calls;
}

struct Result {
  double ns_per_call = 0;
  double ns_per_op = 0;
  uint64_t calls = 0;
  uint64_t ops = 0;
};

Result run_threads(const std::vector<void*>& ctxs, int threads, int colls, int ops, int steps) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<uint64_t> calls(threads, 0);
  std::vector<double> secs(threads, 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ++ready;
      while (!go.load()) {
      }
      auto t0 = Clock::now();
      for (int c = 0; c < colls; ++c) calls[t] += one_collective(ctxs[t], c, ops, steps, t);
      secs[t] = std::chrono::duration<double>(Clock::now() - t0).count();
    });
  }
  while (ready.load() < threads) {
  }
  go.store(true);
  for (auto& th : pool) th.join();
  Result r;
  double thread_secs = 0;
  for (int t = 0; t < threads; ++t) {
    r.calls += calls[t];
    thread_secs += secs[t];
  }
  r.ops = static_cast<uint64_t>(threads) * colls * ops;
  r.ns_per_call = thread_secs * 1e9 / static_cast<double>(r.calls);  // per calling thread
  r.ns_per_op = thread_secs * 1e9 / static_cast<double>(r.ops);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string plugin = find_plugin(argc, argv);
  char tmpl[] = "/tmp/bench-plugin-XXXXXX";
  if (!mkdtemp(tmpl)) {
    perror("mkdtemp");
    return 1;
  }
  const std::string dir = tmpl;
  setenv("NCCL_CULPRIT_DIR", dir.c_str(), 1);
  void* dl = dlopen(plugin.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    fprintf(stderr, "bench_plugin: cannot load %s: %s\n", plugin.c_str(), dlerror());
    return 1;
  }
  P = static_cast<ncp_profiler_v6*>(dlsym(dl, "ncclProfiler_v6"));
  if (!P) {
    fprintf(stderr, "bench_plugin: %s has no ncclProfiler_v6\n", plugin.c_str());
    return 1;
  }
  const int kThreads = 2;
  std::vector<void*> ctxs;
  for (int t = 0; t < kThreads; ++t) {
    void* ctx = nullptr;
    int mask = 0;
    P->init(&ctx, 0x1000 + t, &mask, "bench", 2, 16, t, nullptr);
    if (!ctx) {
      fprintf(stderr, "bench_plugin: init failed (see stderr above)\n");
      return 1;
    }
    ctxs.push_back(ctx);
  }

  printf("bench_plugin: %s (interface v6, CLOCK_MONOTONIC, shard in %s)\n", plugin.c_str(), dir.c_str());
  printf("%-46s %12s %12s %12s\n", "workload", "calls", "ns/call", "ns/ProxyOp");
  struct Case {
    const char* name;
    int threads, colls, ops, steps;
  } cases[] = {
      {"1 thread,  8 ops x 16 steps per collective", 1, 2000, 8, 16},
      {"1 thread,  4 ops x 124 steps per collective", 1, 500, 4, 124},
      {"1 thread,  16 ops x 2 steps (small messages)", 1, 4000, 16, 2},
      {"2 threads, 8 ops x 16 steps per collective", 2, 2000, 8, 16},
  };
  // Warm up (page faults of the shard and the pools).
  run_threads(ctxs, 1, 200, 8, 16);
  double worst = 0;
  for (const Case& c : cases) {
    Result r = run_threads(ctxs, c.threads, c.colls, c.ops, c.steps);
    worst = std::max(worst, r.ns_per_call);
    printf("%-46s %12llu %12.1f %12.1f\n", c.name, static_cast<unsigned long long>(r.calls),
           r.ns_per_call, r.ns_per_op);
  }

  // The reader: a full shard (every ring slot written).
  std::string shard;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".shard") shard = e.path().string();
  culprit::ShardSnapshot snap;
  auto t0 = Clock::now();
  bool ok = culprit::read_shard_snapshot(shard, snap);
  double read_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  printf("read_shard_snapshot: %s, %zu completed ops, %zu in flight, %llu torn: %.1f ms\n",
         ok ? "ok" : snap.error.c_str(), snap.completed.size(), snap.in_flight.size(),
         static_cast<unsigned long long>(snap.torn), read_ms);
  printf("target: well under 1000 ns per call; worst here %.1f ns\n", worst);
  fs::remove_all(dir);
  return worst < 1000 ? 0 : 2;
}
