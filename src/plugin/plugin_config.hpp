// What the plugin reads from the environment (docs/live-capture.md lists the variables), read
// once, at the first init; and the bounded C-string copy every text field of a shard uses.
#pragma once

#include <cstddef>
#include <cstdint>

#include "plugin/nccl_profiler_abi.h"

namespace culprit::plugin {

// Activation mask: Coll, P2p (sequence numbers, parents), ProxyOp, ProxyStep (phases),
// KernelCh (kernel start clocks). NCCL_PROFILE_EVENT_MASK may add more, never remove these.
inline constexpr int kRequiredMask = NCP_EV_COLL | NCP_EV_P2P | NCP_EV_PROXY_OP | NCP_EV_PROXY_STEP;
inline constexpr int kDefaultMask = kRequiredMask | NCP_EV_KERNEL_CH;  // 94

struct PluginConfig {
  uint64_t ring_records = 0;  // NCCL_CULPRIT_SHARD_RECORDS, rounded up to a power of two
  uint64_t inflight_ops = 0;  // NCCL_CULPRIT_INFLIGHT_OPS
  uint64_t collectives = 0;   // NCCL_CULPRIT_COLLECTIVES
  uint64_t comms = 0;         // NCCL_CULPRIT_COMMS
  bool remove_on_exit = false;  // NCCL_CULPRIT_REMOVE_ON_EXIT
  int event_mask = kDefaultMask;
  char host[64] = {0};        // NCCL_CULPRIT_HOST or gethostname(), '/' made '_'
  char dir[3072] = {0};       // NCCL_CULPRIT_DIR or /dev/shm/nccl-culprit/<job>
};

// Every setting, clamped to its range; never fails (a bad value means the default).
PluginConfig read_plugin_config();

// NCCL_CULPRIT_DISABLE: load but record nothing. Asked at every init, not only the first.
bool disabled_by_environment();

// Copies at most cap-1 bytes of `src` (NULL: nothing) and terminates `dst`.
void copy_str(char* dst, size_t cap, const char* src);

}  // namespace culprit::plugin
