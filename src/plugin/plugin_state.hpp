// The plugin's one process-wide state: whether it records, its event pools and its shard.
//
// Rules the plugin lives by, because it runs inside NCCL's proxy and user threads:
// - never block: no lock on the event path (the one mutex guards init/finalize only,
//   communicators.cpp); a busy shared entry means the update is dropped and counted, never
//   waited for;
// - never allocate on the event path: every handle comes from pools made at the first init
//   (event_pools.hpp);
// - never throw or crash across the C ABI: every entry point catches everything
//   (abi_tables.cpp), every handle NCCL passes back is checked against the pools before use,
//   a PXN op's parent (a pointer of another process) is never dereferenced;
// - on any internal failure: stop recording, mark the shard disabled, say so once on stderr.
//
// The parts: plugin_config (environment), event_pools (handles), shard_writer (the file),
// step_phases (a step's phases into its op's record), event_handlers (start/stop/state of
// each event type), communicators (init/finalize), abi_tables (the exported v4/v5/v6 tables).
#pragma once

#include <sys/types.h>

#include <atomic>

#include "plugin/event_pools.hpp"
#include "plugin/nccl_profiler_abi.h"
#include "plugin/plugin_config.hpp"
#include "plugin/shard_writer.hpp"

namespace culprit::plugin {

// PluginState::status
inline constexpr int kNotSetUp = 0;
inline constexpr int kRecording = 1;
inline constexpr int kDisabled = 2;

struct PluginState {
  alignas(64) std::atomic<int> status{kNotSetUp};
  std::atomic<bool> said_disabled{false};
  EventPools pools;
  ShardWriter shard;
  pid_t pid = 0;
  int live_comms = 0;            // communicators initialised and not finalized (under the lock)
  int event_mask = kDefaultMask;
  bool remove_on_exit = false;
  ncp_logger_t log = nullptr;
};

extern PluginState g;

inline bool recording() { return g.status.load(std::memory_order_acquire) == kRecording; }

// Stops recording for good, marks the shard disabled with `why`, says so once on stderr.
void disable(const char* why);

}  // namespace culprit::plugin
