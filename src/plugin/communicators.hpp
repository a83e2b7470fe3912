// NCCL's init and finalize of a communicator, the plugin's only calls that take a lock: the
// first init sets the plugin up (configuration, pools, shard); every init claims a
// communicator slot; the last finalize marks the shard finalized.
#pragma once

#include <cstdint>

#include "plugin/nccl_profiler_abi.h"

namespace culprit::plugin {

// `iface` is the profiler interface version the call came through (4, 5 or 6). Sets *context
// (NULL: not recorded) and *mask (0: NCCL should stop calling, e.g. the plugin is disabled).
ncp_result_t init_communicator(int iface, void** context, int* mask, const char* name,
                               uint64_t comm_hash, int n_nodes, int n_ranks, int rank,
                               ncp_logger_t log);
ncp_result_t finalize_communicator(void* context);

}  // namespace culprit::plugin
