#include "plugin/plugin_state.hpp"

#include <stdio.h>
#include <unistd.h>

namespace culprit::plugin {

PluginState g;

void disable(const char* why) {
  g.status.store(kDisabled, std::memory_order_release);
  if (g.said_disabled.exchange(true)) return;
  g.shard.mark_disabled(why);
  fprintf(stderr, "nccl-culprit profiler plugin: disabled (no live capture in pid %d): %s\n",
          static_cast<int>(getpid()), why);
}

}  // namespace culprit::plugin
