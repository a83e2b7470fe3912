#include "plugin/plugin_config.hpp"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

namespace culprit::plugin {
namespace {

uint64_t env_u64(const char* name, uint64_t dflt, uint64_t lo, uint64_t hi) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return dflt;
  char* end = nullptr;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 0);
  if (errno != 0 || end == v) return dflt;
  if (x < lo) x = lo;
  if (x > hi) x = hi;
  return x;
}

bool env_true(const char* name) {
  const char* v = getenv(name);
  return v != nullptr && *v != '\0' && strcmp(v, "0") != 0 && strcasecmp(v, "false") != 0 &&
         strcasecmp(v, "no") != 0;
}

uint64_t round_pow2(uint64_t x) {
  uint64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

// The host name in the shard's name and header: a '/' would make it a path.
void read_host(char (&host)[64]) {
  if (const char* h = getenv("NCCL_CULPRIT_HOST"); h != nullptr && *h != '\0') {
    copy_str(host, sizeof host, h);
  } else if (gethostname(host, sizeof host - 1) != 0) {
    copy_str(host, sizeof host, "localhost");
  }
  for (char* c = host; *c; ++c)
    if (*c == '/') *c = '_';
}

void read_dir(char (&dir)[3072]) {
  if (const char* d = getenv("NCCL_CULPRIT_DIR"); d != nullptr && *d != '\0') {
    copy_str(dir, sizeof dir, d);
  } else {
    const char* job = getenv("SLURM_JOB_ID");
    snprintf(dir, sizeof dir, "/dev/shm/nccl-culprit/%s", job && *job ? job : "local");
  }
}

}  // namespace

PluginConfig read_plugin_config() {
  PluginConfig c;
  c.ring_records = round_pow2(env_u64("NCCL_CULPRIT_SHARD_RECORDS", 65536, 64, 1u << 24));
  c.inflight_ops = env_u64("NCCL_CULPRIT_INFLIGHT_OPS", 1024, 16, 65536);
  c.collectives = env_u64("NCCL_CULPRIT_COLLECTIVES", 4096, 64, 1u << 20);
  c.comms = env_u64("NCCL_CULPRIT_COMMS", 256, 1, 65536);
  c.remove_on_exit = env_true("NCCL_CULPRIT_REMOVE_ON_EXIT");
  if (const char* m = getenv("NCCL_PROFILE_EVENT_MASK"); m != nullptr && *m != '\0')
    c.event_mask = static_cast<int>(strtol(m, nullptr, 0)) | kRequiredMask;
  read_host(c.host);
  read_dir(c.dir);
  return c;
}

bool disabled_by_environment() { return env_true("NCCL_CULPRIT_DISABLE"); }

void copy_str(char* dst, size_t cap, const char* src) {
  if (cap == 0) return;
  size_t n = src ? strnlen(src, cap - 1) : 0;
  if (n) memcpy(dst, src, n);
  dst[n] = '\0';
}

}  // namespace culprit::plugin
