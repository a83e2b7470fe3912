// What the plugin does with each event NCCL reports: start, stop and state of collectives and
// p2p calls, ProxyOps, ProxySteps and KernelCh events. Lock-free and allocation-free; called
// only while recording() and with NCCL's arguments unchecked (they are checked here).
#pragma once

#include "plugin/nccl_profiler_abi.h"

namespace culprit::plugin {

// Sets *handle (never NULL here) to the event's handle, or NULL for an event not recorded.
void start_event(void* context, void** handle, ncp_descr_v4* d);
void start_event(void* context, void** handle, ncp_descr_v5* d);
void start_event(void* context, void** handle, ncp_descr_v6* d);

void stop_event(void* handle);
void record_event_state(void* handle, ncp_state_t state, const ncp_state_args_v4* args);

}  // namespace culprit::plugin
