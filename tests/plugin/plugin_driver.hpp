// Test harness for libnccl-profiler-culprit.so: loads it with dlopen and plays NCCL's side of
// the profiler interface (v4, v5 or v6 descriptors, the call order of NCCL's enqueue.cc,
// proxy.cc and transport/net.cc), optionally replaying a simulated process's timeline
// (mock::Simulation) with the plugin's test clock (ncclCulpritTestSetTime).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "mock/simulator.hpp"
#include "plugin/nccl_profiler_abi.h"

namespace culprit::plugintest {

// The loaded plugin: its three interface tables and the test clock hook.
struct PluginLib {
  void* dl = nullptr;
  ncp_profiler_v4* v4 = nullptr;
  ncp_profiler_v5* v5 = nullptr;
  ncp_profiler_v6* v6 = nullptr;
  ncp_test_set_time_fn set_time = nullptr;
  std::string error;

  bool load(const std::string& path);  // RTLD_NOW | RTLD_LOCAL
};

// NCCL's side of one interface version: builds the descriptors as NCCL does (zeroed, then
// filled) and calls the plugin through the table of that version.
class FakeNccl {
 public:
  FakeNccl(const PluginLib& lib, int iface) : lib_(lib), iface_(iface) {}
  int iface() const { return iface_; }

  void* init(uint64_t comm_hash, const char* name, int n_nodes, int n_ranks, int rank,
             int* mask_out = nullptr);
  void* start_coll(void* ctx, int rank, uint64_t seq, const char* func = "AllReduce",
                   int n_channels = 2, const char* algo = "RING");
  void* start_p2p(void* ctx, int rank, const char* func, int peer);
  void* start_group(void* ctx);
  void* start_proxy_op(void* ctx, void* parent, int rank, pid_t pid, int channel, int peer,
                       int n_steps, int chunk, bool is_send);
  void* start_step(void* ctx, void* op, int rank, int step);
  void* start_kernel_ch(void* ctx, void* parent, int rank, int channel, uint64_t p_timer);
  void* start_raw_type(void* ctx, uint64_t type);  // any other event type, empty descriptor
  void record(void* handle, int state, size_t trans_size = 0, bool null_args = false);
  void record_kernel_stop(void* handle, uint64_t p_timer);  // KernelChStop with the stop clock
  void stop(void* handle);
  void finalize(void* ctx);

 private:
  template <class D>
  void* start(void* ctx, D& d);
  const PluginLib& lib_;
  int iface_;
};

// Runs `fn` in a forked child and returns its exit status (-signal when killed).
int run_in_child(const std::function<int()>& fn);

struct ReplayOptions {
  int iface = 6;                 // interface version to drive the plugin with
  bool retry_peer_wait = true;   // record SendPeerWait twice, as NCCL's retried isend does
  uint64_t clock_base_ns = 1000000000ull;
  bool finalize = false;         // finalize every communicator at the end (a clean exit)
};

// Replays the timeline of simulated process `rank` (global rank) through the plugin in this
// process: init per communicator, one host thread per communicator for its collectives, one
// proxy thread for the proxy ops, proxy steps and kernel channels, every call stamped with
// the simulated time. Returns "" on success, else what went wrong.
std::string replay_process(const PluginLib& lib, const mock::Simulation& sim, int rank,
                           const ReplayOptions& options);

// Writes the shards of every simulated process: one forked child per process with
// NCCL_CULPRIT_DIR=<dir>/<host> and NCCL_CULPRIT_HOST=<host>, interface v4/v5/v6 by rank.
// Returns global rank -> child pid (the pid in the shard), or fills `error`.
std::map<int, pid_t> write_simulated_shards(const std::string& plugin_path,
                                            const mock::Simulation& sim, const std::string& dir,
                                            std::string* error, bool finalize = false);

}  // namespace culprit::plugintest
