// The exported C ABI (exports.map): NCCL's lookup names ncclProfiler_v4, _v5 and _v6, one
// function table per profiler interface version, and the test clock hook. Every entry point
// catches everything and returns success: nothing may throw into NCCL. An exception disables
// the plugin (plugin_state.hpp).
#include <atomic>
#include <cstdint>

#include "plugin/communicators.hpp"
#include "plugin/event_handlers.hpp"
#include "plugin/nccl_profiler_abi.h"
#include "plugin/plugin_clock.hpp"
#include "plugin/plugin_state.hpp"

#define NCP_EXPORT __attribute__((visibility("default")))

namespace culprit::plugin {
namespace {

#define NCP_GUARD(body)                         \
  try {                                         \
    body;                                       \
  } catch (...) {                               \
    disable("internal error (exception)");      \
  }                                             \
  return NCP_SUCCESS

// v4 takes the mask second and the communicator hash fourth; v5 and v6 the hash second.
ncp_result_t init_v4(void** ctx, int* mask, const char* name, uint64_t hash, int n_nodes,
                     int n_ranks, int rank, ncp_logger_t log) {
  NCP_GUARD(init_communicator(4, ctx, mask, name, hash, n_nodes, n_ranks, rank, log));
}
ncp_result_t init_v5(void** ctx, uint64_t hash, int* mask, const char* name, int n_nodes,
                     int n_ranks, int rank, ncp_logger_t log) {
  NCP_GUARD(init_communicator(5, ctx, mask, name, hash, n_nodes, n_ranks, rank, log));
}
ncp_result_t init_v6(void** ctx, uint64_t hash, int* mask, const char* name, int n_nodes,
                     int n_ranks, int rank, ncp_logger_t log) {
  NCP_GUARD(init_communicator(6, ctx, mask, name, hash, n_nodes, n_ranks, rank, log));
}
ncp_result_t start_v4(void* ctx, void** handle, ncp_descr_v4* d) {
  if (handle == nullptr) return NCP_SUCCESS;
  NCP_GUARD(start_event(ctx, handle, d));
}
ncp_result_t start_v5(void* ctx, void** handle, ncp_descr_v5* d) {
  if (handle == nullptr) return NCP_SUCCESS;
  NCP_GUARD(start_event(ctx, handle, d));
}
ncp_result_t start_v6(void* ctx, void** handle, ncp_descr_v6* d) {
  if (handle == nullptr) return NCP_SUCCESS;
  NCP_GUARD(start_event(ctx, handle, d));
}
// Stop, state and finalize take the same arguments in every version.
ncp_result_t stop_any(void* handle) { NCP_GUARD(stop_event(handle)); }
ncp_result_t record_any(void* handle, ncp_state_t state, ncp_state_args_v4* args) {
  NCP_GUARD(record_event_state(handle, state, args));
}
ncp_result_t finalize_any(void* ctx) { NCP_GUARD(finalize_communicator(ctx)); }

}  // namespace
}  // namespace culprit::plugin

extern "C" {

using namespace culprit::plugin;

NCP_EXPORT ncp_profiler_v4 ncclProfiler_v4 = {"nccl-culprit", init_v4, start_v4, stop_any,
                                              record_any, finalize_any};
NCP_EXPORT ncp_profiler_v5 ncclProfiler_v5 = {"nccl-culprit", init_v5, start_v5, stop_any,
                                              record_any, finalize_any};
NCP_EXPORT ncp_profiler_v6 ncclProfiler_v6 = {"nccl-culprit", init_v6, start_v6, stop_any,
                                              record_any, finalize_any};

NCP_EXPORT void ncclCulpritTestSetTime(uint64_t ns) {
  if (inject_time(ns) && g.shard.hdr != nullptr)
    std::atomic_ref<uint32_t>(g.shard.hdr->clock).store(culprit::shard::kClockTest, std::memory_order_relaxed);
}

}  // extern "C"
