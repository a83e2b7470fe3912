#include "plugin_driver.hpp"

#include <dlfcn.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <thread>
#include <type_traits>

namespace culprit::plugintest {

bool PluginLib::load(const std::string& path) {
  dl = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (dl == nullptr) {
    const char* e = dlerror();
    error = e ? e : "dlopen failed";
    return false;
  }
  v4 = static_cast<ncp_profiler_v4*>(dlsym(dl, "ncclProfiler_v4"));
  v5 = static_cast<ncp_profiler_v5*>(dlsym(dl, "ncclProfiler_v5"));
  v6 = static_cast<ncp_profiler_v6*>(dlsym(dl, "ncclProfiler_v6"));
  set_time = reinterpret_cast<ncp_test_set_time_fn>(dlsym(dl, NCP_TEST_SET_TIME_SYMBOL));
  if (!v4 || !v5 || !v6 || !set_time) {
    error = "missing symbol in " + path;
    return false;
  }
  return true;
}

// ---- NCCL's side ------------------------------------------------------------------------------

template <class D>
void* FakeNccl::start(void* ctx, D& d) {
  void* h = nullptr;
  if constexpr (std::is_same_v<D, ncp_descr_v4>) lib_.v4->start_event(ctx, &h, &d);
  else if constexpr (std::is_same_v<D, ncp_descr_v5>) lib_.v5->start_event(ctx, &h, &d);
  else lib_.v6->start_event(ctx, &h, &d);
  return h;
}

namespace {
// Calls fill(d) on a zeroed descriptor of the interface version, then starts the event.
template <class Start, class Fill>
void* with_descr(int iface, Start&& start, Fill&& fill) {
  switch (iface) {
    case 4: {
      ncp_descr_v4 d;
      memset(&d, 0, sizeof d);
      fill(d);
      return start(d);
    }
    case 5: {
      ncp_descr_v5 d;
      memset(&d, 0, sizeof d);
      fill(d);
      return start(d);
    }
    default: {
      ncp_descr_v6 d;
      memset(&d, 0, sizeof d);
      fill(d);
      return start(d);
    }
  }
}
}  // namespace

void* FakeNccl::init(uint64_t comm_hash, const char* name, int n_nodes, int n_ranks, int rank,
                     int* mask_out) {
  void* ctx = nullptr;
  int mask = 0;
  // NCCL 2.27 calls v4's init with the hash fourth; 2.28+ passes it second.
  if (iface_ == 4) lib_.v4->init(&ctx, &mask, name, comm_hash, n_nodes, n_ranks, rank, nullptr);
  else if (iface_ == 5) lib_.v5->init(&ctx, comm_hash, &mask, name, n_nodes, n_ranks, rank, nullptr);
  else lib_.v6->init(&ctx, comm_hash, &mask, name, n_nodes, n_ranks, rank, nullptr);
  if (mask_out) *mask_out = mask;
  return ctx;
}

#define START_WITH(FILL) \
  with_descr(iface_, [&](auto& d) { return start(ctx, d); }, FILL)

void* FakeNccl::start_coll(void* ctx, int rank, uint64_t seq, const char* func, int n_channels, const char* algo) {
  return START_WITH([&](auto& d) {
    d.type = NCP_EV_COLL;
    d.rank = rank;
    d.u.coll.seq_number = seq;
    d.u.coll.func = func;
    d.u.coll.count = 1 << 20;
    d.u.coll.datatype = "ncclFloat32";
    d.u.coll.n_channels = static_cast<uint8_t>(n_channels);
    d.u.coll.n_warps = 16;
    d.u.coll.algo = algo;
    d.u.coll.proto = "SIMPLE";
  });
}

void* FakeNccl::start_p2p(void* ctx, int rank, const char* func, int peer) {
  return START_WITH([&](auto& d) {
    d.type = NCP_EV_P2P;
    d.rank = rank;
    d.u.p2p.func = func;
    d.u.p2p.count = 1 << 20;
    d.u.p2p.datatype = "ncclFloat32";
    d.u.p2p.peer = peer;
    d.u.p2p.n_channels = 1;
  });
}

void* FakeNccl::start_group(void* ctx) {
  return START_WITH([&](auto& d) { d.type = NCP_EV_GROUP; });
}

void* FakeNccl::start_proxy_op(void* ctx, void* parent, int rank, pid_t pid, int channel, int peer,
                               int n_steps, int chunk, bool is_send) {
  return START_WITH([&](auto& d) {
    d.type = NCP_EV_PROXY_OP;
    d.parent_obj = parent;
    d.rank = rank;
    d.u.proxy_op.pid = pid;
    d.u.proxy_op.channel_id = static_cast<uint8_t>(channel);
    d.u.proxy_op.peer = peer;
    d.u.proxy_op.n_steps = n_steps;
    d.u.proxy_op.chunk_size = chunk;
    d.u.proxy_op.is_send = is_send ? 1 : 0;
  });
}

void* FakeNccl::start_step(void* ctx, void* op, int rank, int step) {
  return START_WITH([&](auto& d) {
    d.type = NCP_EV_PROXY_STEP;
    d.parent_obj = op;
    d.rank = rank;
    d.u.proxy_step.step = step;
  });
}

void* FakeNccl::start_kernel_ch(void* ctx, void* parent, int rank, int channel, uint64_t p_timer) {
  return START_WITH([&](auto& d) {
    d.type = NCP_EV_KERNEL_CH;
    d.parent_obj = parent;
    d.rank = rank;
    d.u.kernel_ch.channel_id = static_cast<uint8_t>(channel);
    d.u.kernel_ch.p_timer = p_timer;
  });
}

void* FakeNccl::start_raw_type(void* ctx, uint64_t type) {
  return START_WITH([&](auto& d) { d.type = static_cast<decltype(d.type)>(type); });
}

#undef START_WITH

void FakeNccl::record(void* handle, int state, size_t trans_size, bool null_args) {
  ncp_state_args_v4 a;
  memset(&a, 0, sizeof a);
  a.proxy_step.trans_size = trans_size;
  ncp_state_args_v4* p = null_args ? nullptr : &a;
  if (iface_ == 4) lib_.v4->record_event_state(handle, state, p);
  else if (iface_ == 5) lib_.v5->record_event_state(handle, state, p);
  else lib_.v6->record_event_state(handle, state, p);
}

void FakeNccl::record_kernel_stop(void* handle, uint64_t p_timer) {
  ncp_state_args_v4 a;
  memset(&a, 0, sizeof a);
  a.kernel_ch.p_timer = p_timer;
  if (iface_ == 4) lib_.v4->record_event_state(handle, NCP_STATE_KERNEL_CH_STOP, &a);
  else if (iface_ == 5) lib_.v5->record_event_state(handle, NCP_STATE_KERNEL_CH_STOP, &a);
  else lib_.v6->record_event_state(handle, NCP_STATE_KERNEL_CH_STOP, &a);
}

void FakeNccl::stop(void* handle) {
  if (iface_ == 4) lib_.v4->stop_event(handle);
  else if (iface_ == 5) lib_.v5->stop_event(handle);
  else lib_.v6->stop_event(handle);
}

void FakeNccl::finalize(void* ctx) {
  if (iface_ == 4) lib_.v4->finalize(ctx);
  else if (iface_ == 5) lib_.v5->finalize(ctx);
  else lib_.v6->finalize(ctx);
}

int run_in_child(const std::function<int()>& fn) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) return -1000;
  if (pid == 0) {
    int rc = 1;
    try {
      rc = fn();
    } catch (...) {
      rc = 99;
    }
    fflush(stdout);
    fflush(stderr);
    _exit(rc);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return -999;
}

// ---- replay of a simulated process --------------------------------------------------------------

namespace {

enum class Ev : uint8_t {
  kCollStart, kCollStop, kOpStart, kOpProgress, kStepStart, kStepState, kStepStop, kOpStop,
  kKernelStart, kKernelStop,
};

struct Event {
  uint64_t t = 0;
  uint32_t order = 0;   // generation order: ties keep causal order
  Ev kind = Ev::kCollStart;
  int state = 0;
  int32_t item = -1;    // local collective (host events, kernel) or local op index
  int32_t step = -1;    // step number, or kernel channel
};

bool finite(double t) { return std::isfinite(t); }

struct Task {
  const mock::SimCollective* coll = nullptr;
  size_t comm = 0;  // index into the process's communicators
  std::atomic<bool> published{false};
  void* handle = nullptr;
};

void sort_events(std::vector<Event>& v) {
  std::stable_sort(v.begin(), v.end(), [](const Event& a, const Event& b) {
    return a.t != b.t ? a.t < b.t : a.order < b.order;
  });
}

}  // namespace

std::string replay_process(const PluginLib& lib, const mock::Simulation& sim, int rank,
                           const ReplayOptions& opt) {
  FakeNccl nccl(lib, opt.iface);
  const auto& procs = sim.processes();
  const int gpus = sim.scenario().gpus;
  const uint64_t base = opt.clock_base_ns + static_cast<uint64_t>(rank) * 1000003ull;
  const uint64_t gpu_clk_base = 1765000000000000000ull +
                                static_cast<uint64_t>(procs[rank].node) * 1000000000ull;
  auto at = [&](double t) { return base + static_cast<uint64_t>(std::llround(t)); };

  // Communicators of this process, initialised as NCCL does at ncclCommInitRank.
  struct Comm {
    uint64_t hash;
    int comm_rank;
    void* ctx;
  };
  std::vector<Comm> comms;
  for (const mock::SimComm& c : sim.communicators()) {
    auto it = std::find(c.ranks.begin(), c.ranks.end(), rank);
    if (it == c.ranks.end()) continue;
    std::set<int> nodes;
    for (int g : c.ranks) nodes.insert(g / gpus);
    Comm m{c.hash, static_cast<int>(it - c.ranks.begin()), nullptr};
    lib.set_time(base);
    m.ctx = nccl.init(c.hash, c.name.c_str(), static_cast<int>(nodes.size()),
                      static_cast<int>(c.ranks.size()), m.comm_rank);
    if (m.ctx == nullptr) return "init returned no context for communicator " + c.name;
    comms.push_back(m);
  }
  auto comm_index = [&](uint64_t hash) -> size_t {
    for (size_t i = 0; i < comms.size(); ++i)
      if (comms[i].hash == hash) return i;
    return SIZE_MAX;
  };

  // Collectives of this process (local index), and the host events per communicator.
  const auto& all_colls = sim.collectives();
  std::map<int, int> local_of;  // index into collectives() -> local index
  std::vector<std::unique_ptr<Task>> tasks;
  std::vector<std::vector<Event>> host(comms.size());
  std::vector<Event> proxy;
  uint32_t order = 0;
  for (size_t i = 0; i < all_colls.size(); ++i) {
    const mock::SimCollective& c = all_colls[i];
    if (c.rank != rank || !finite(c.enqueue_ns)) continue;
    uint64_t hash = c.comm_hash ? c.comm_hash : sim.comm_hash();
    size_t ci = comm_index(hash);
    if (ci == SIZE_MAX) return "collective of an unknown communicator";
    auto task = std::make_unique<Task>();
    task->coll = &c;
    task->comm = ci;
    int local = static_cast<int>(tasks.size());
    local_of[static_cast<int>(i)] = local;
    tasks.push_back(std::move(task));
    // NCCL starts the task event, hands the ops to the proxy, and stops the event at once.
    host[ci].push_back({at(c.enqueue_ns), order++, Ev::kCollStart, 0, local, -1});
    host[ci].push_back({at(c.enqueue_ns) + 2000, order++, Ev::kCollStop, 0, local, -1});
    // KernelCh events come from the proxy (the profiler's own proxy op).
    if (finite(c.kernel_start_ns)) {
      for (size_t k = 0; k < c.channel_end_ns.size(); ++k) {
        int ch = k < c.channels.size() ? c.channels[k] : static_cast<int>(k);
        proxy.push_back({at(c.kernel_start_ns) + 500, order++, Ev::kKernelStart, 0, local, ch});
        if (finite(c.channel_end_ns[k]))
          proxy.push_back({at(c.channel_end_ns[k]) + 500, order++, Ev::kKernelStop, 0, local, ch});
      }
    }
  }

  // Proxy ops of this process.
  std::vector<const mock::SimProxyOp*> ops;
  std::vector<int> op_task;  // local op -> local collective
  for (const mock::SimProxyOp& o : sim.proxy_ops()) {
    if (o.rank != rank || !finite(o.sched_ns)) continue;
    auto it = local_of.find(o.task);
    if (it == local_of.end()) return "proxy op of a collective this process never started";
    int local_op = static_cast<int>(ops.size());
    ops.push_back(&o);
    op_task.push_back(it->second);
    proxy.push_back({at(o.sched_ns), order++, Ev::kOpStart, 0, local_op, it->second});
    if (finite(o.progress_ns))
      proxy.push_back({at(o.progress_ns), order++, Ev::kOpProgress, NCP_STATE_PROXY_OP_IN_PROGRESS, local_op, -1});
    const int first = o.is_send ? NCP_STATE_SEND_GPU_WAIT : NCP_STATE_RECV_WAIT;
    const int second = o.is_send ? NCP_STATE_SEND_PEER_WAIT : NCP_STATE_RECV_FLUSH_WAIT;
    const int third = o.is_send ? NCP_STATE_SEND_WAIT : NCP_STATE_RECV_GPU_WAIT;
    for (const mock::SimStep& s : o.steps) {
      if (!finite(s.t0)) continue;
      proxy.push_back({at(s.t0), order++, Ev::kStepStart, 0, local_op, s.step});
      proxy.push_back({at(s.t0), order++, Ev::kStepState, first, local_op, s.step});
      if (finite(s.t1)) {
        proxy.push_back({at(s.t1), order++, Ev::kStepState, second, local_op, s.step});
        if (o.is_send && opt.retry_peer_wait && finite(s.t2) && s.t2 - s.t1 > 2)
          proxy.push_back({at((s.t1 + s.t2) / 2), order++, Ev::kStepState, second, local_op, s.step});
      }
      if (finite(s.t2)) proxy.push_back({at(s.t2), order++, Ev::kStepState, third, local_op, s.step});
      if (finite(s.t3)) proxy.push_back({at(s.t3), order++, Ev::kStepStop, 0, local_op, s.step});
    }
    if (finite(o.end_ns)) proxy.push_back({at(o.end_ns), order++, Ev::kOpStop, 0, local_op, -1});
  }
  for (auto& h : host) sort_events(h);
  sort_events(proxy);

  std::atomic<bool> failed{false};
  std::string failure;
  // Host threads: one per communicator, as an application driving each communicator from
  // its own thread.
  std::vector<std::thread> threads;
  for (size_t ci = 0; ci < comms.size(); ++ci) {
    threads.emplace_back([&, ci] {
      for (const Event& e : host[ci]) {
        lib.set_time(e.t);
        Task& t = *tasks[static_cast<size_t>(e.item)];
        const mock::SimCollective& c = *t.coll;
        int crank = c.comm_rank >= 0 ? c.comm_rank : rank;
        if (e.kind == Ev::kCollStart) {
          if (c.name == "Send" || c.name == "Recv")
            t.handle = nccl.start_p2p(comms[ci].ctx, crank, c.name.c_str(), c.peer);
          else
            t.handle = nccl.start_coll(comms[ci].ctx, crank, static_cast<uint64_t>(c.seq),
                                       c.name.c_str(), static_cast<int>(c.channel_end_ns.size()));
          t.published.store(true, std::memory_order_release);
        } else {
          nccl.stop(t.handle);
        }
      }
    });
  }
  // The proxy thread.
  threads.emplace_back([&] {
    std::vector<void*> op_handles(ops.size(), nullptr);
    std::vector<std::vector<void*>> step_handles(ops.size());
    std::map<std::pair<int, int>, void*> kernel_handles;
    for (const Event& e : proxy) {
      if (failed.load()) return;
      lib.set_time(e.t);
      if (e.kind == Ev::kOpStart || e.kind == Ev::kKernelStart) {
        int local = e.kind == Ev::kOpStart ? e.step : e.item;
        Task& t = *tasks[static_cast<size_t>(local)];
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (!t.published.load(std::memory_order_acquire)) {
          if (std::chrono::steady_clock::now() > deadline) {
            failure = "timed out waiting for a collective's handle";
            failed.store(true);
            return;
          }
          sched_yield();
        }
        if (e.kind == Ev::kKernelStart) {
          uint64_t clk = gpu_clk_base + (e.t - base);
          kernel_handles[{e.item, e.step}] =
              nccl.start_kernel_ch(comms[t.comm].ctx, t.handle, rank, e.step, clk);
          continue;
        }
        const mock::SimProxyOp& o = *ops[static_cast<size_t>(e.item)];
        int crank = o.comm_rank >= 0 ? o.comm_rank : o.rank;
        int cpeer = o.comm_peer >= 0 ? o.comm_peer : o.peer;
        op_handles[static_cast<size_t>(e.item)] = nccl.start_proxy_op(
            comms[t.comm].ctx, t.handle, crank, getpid(), o.channel, cpeer, o.n_steps,
            static_cast<int>(o.chunk_bytes), o.is_send);
        step_handles[static_cast<size_t>(e.item)].assign(8, nullptr);
        continue;
      }
      if (e.kind == Ev::kKernelStop) {
        void* h = kernel_handles[{e.item, e.step}];
        nccl.record_kernel_stop(h, gpu_clk_base + (e.t - base));
        nccl.stop(h);
        continue;
      }
      const mock::SimProxyOp& o = *ops[static_cast<size_t>(e.item)];
      void* op = op_handles[static_cast<size_t>(e.item)];
      std::vector<void*>& steps = step_handles[static_cast<size_t>(e.item)];
      // NCCL keeps step handles in a ring of NCCL_STEPS (8) per op.
      void** slot = steps.empty() ? nullptr : &steps[static_cast<size_t>(e.step) % 8];
      int crank = o.comm_rank >= 0 ? o.comm_rank : o.rank;
      switch (e.kind) {
        case Ev::kOpProgress:
          nccl.record(op, NCP_STATE_PROXY_OP_IN_PROGRESS, 0);
          break;
        case Ev::kStepStart:
          if (slot) {
            void* ctx = comms[tasks[static_cast<size_t>(op_task[static_cast<size_t>(e.item)])]->comm].ctx;
            *slot = nccl.start_step(ctx, op, crank, e.step);
          }
          break;
        case Ev::kStepState:
          if (slot && *slot) nccl.record(*slot, e.state, o.chunk_bytes);
          break;
        case Ev::kStepStop:
          if (slot && *slot) {
            nccl.stop(*slot);
            *slot = nullptr;
          }
          break;
        case Ev::kOpStop:
          nccl.stop(op);
          op_handles[static_cast<size_t>(e.item)] = nullptr;
          break;
        default:
          break;
      }
    }
  });
  for (std::thread& t : threads) t.join();
  if (failed.load()) return failure;
  if (opt.finalize)
    for (const Comm& c : comms) nccl.finalize(c.ctx);
  return "";
}

std::map<int, pid_t> write_simulated_shards(const std::string& plugin_path,
                                            const mock::Simulation& sim, const std::string& dir,
                                            std::string* error, bool finalize) {
  std::map<int, pid_t> pids;
  std::map<pid_t, int> rank_of;
  const auto& procs = sim.processes();
  for (const mock::SimProcess& p : procs) {
    std::string host_dir = dir + "/" + p.host;
    std::filesystem::create_directories(host_dir);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
      if (error) *error = "fork failed";
      break;
    }
    if (pid == 0) {
      setenv("NCCL_CULPRIT_DIR", host_dir.c_str(), 1);
      setenv("NCCL_CULPRIT_HOST", p.host.c_str(), 1);
      PluginLib lib;
      if (!lib.load(plugin_path)) {
        fprintf(stderr, "rank %d: %s\n", p.global_rank, lib.error.c_str());
        _exit(2);
      }
      ReplayOptions opt;
      opt.iface = 4 + p.global_rank % 3;  // every interface version in every scenario
      opt.finalize = finalize;
      std::string why = replay_process(lib, sim, p.global_rank, opt);
      if (!why.empty()) {
        fprintf(stderr, "rank %d: %s\n", p.global_rank, why.c_str());
        _exit(3);
      }
      _exit(0);
    }
    pids[p.global_rank] = pid;
    rank_of[pid] = p.global_rank;
  }
  std::string problems;
  for (auto& [rank, pid] : pids) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      problems += "rank " + std::to_string(rank) + " exited with status " + std::to_string(status) + "; ";
  }
  if (!problems.empty() && error) *error = problems;
  return pids;
}

}  // namespace culprit::plugintest
