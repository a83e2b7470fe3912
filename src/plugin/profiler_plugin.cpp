// libnccl-profiler-culprit.so: an NCCL profiler plugin (interfaces v4, v5, v6) that keeps the
// proxy phases of every network ProxyOp in a shared-memory shard file (io/shard_format.hpp),
// readable by `nccl-culprit analyze --format shard` while the job runs, hangs, or after it died.
// docs/live-capture.md is the user's side of it.
//
// Rules this file lives by, because it runs inside NCCL's proxy and user threads:
// - never block: no lock on the event path (the one mutex guards init/finalize only); a busy
//   shared entry means the update is dropped and counted, never waited for;
// - never allocate on the event path: every handle comes from pools made at the first init;
// - never throw or crash across the C ABI: every entry point catches everything, every handle
//   NCCL passes back is checked against the pools before use, a PXN op's parent (a pointer of
//   another process) is never dereferenced;
// - on any internal failure: stop recording, mark the shard disabled, say so once on stderr.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "io/shard_format.hpp"
#include "plugin/nccl_profiler_abi.h"

#define NCP_EXPORT __attribute__((visibility("default")))

namespace {

using namespace culprit::shard;

constexpr uint32_t kKindCtx = 0x43545831;     // "CTX1"
constexpr uint32_t kKindOp = 0x4f505331;      // "OPS1"
constexpr uint32_t kKindStep = 0x53544550;    // "STEP"
constexpr uint32_t kKindIgnored = 0x49474e44; // "IGND"
constexpr uint32_t kKindKernel = 0x4b434831;  // "KCH1"
constexpr int kStepSlots = 16;                // NCCL keeps at most NCCL_STEPS (8) open per op
constexpr int kAllocTries = 64;

// Activation mask: Coll, P2p (sequence numbers, parents), ProxyOp, ProxyStep (phases),
// KernelCh (kernel start clocks). NCCL_PROFILE_EVENT_MASK may add more, never remove these.
constexpr int kRequiredMask = NCP_EV_COLL | NCP_EV_P2P | NCP_EV_PROXY_OP | NCP_EV_PROXY_STEP;
constexpr int kDefaultMask = kRequiredMask | NCP_EV_KERNEL_CH;  // 94

// ---- pools (private memory, made once) --------------------------------------------------------

struct CommCtx {
  uint32_t kind;
  uint32_t slot;
  uint64_t comm_hash;
  int32_t rank;
  int32_t n_ranks;
  uint32_t p2p_counters_n;
  uint32_t pad;
  std::atomic<uint64_t>* p2p_counters;  // ordinal per (peer, direction), hashed
};

// A collective or p2p call. Its slot is reused once every other slot was (round-robin), and
// NCCL may start a ProxyOp after the task's own event stopped, so the handle NCCL keeps for it
// is not a pointer but a ticket: an address in a reserved, inaccessible region,
// task_space + gen * coll_cap + index. A ticket whose generation is not the slot's current
// one is stale and never read as the new occupant.
struct TaskState {
  uint32_t index;
  std::atomic<uint32_t> refs;  // 0: free; the task event holds 1, each started ProxyOp 1
  std::atomic<uint32_t> gen;   // current generation; 0 while (re)written
  // Identity, written between gen = 0 and gen = new (read with atomic_ref).
  uint32_t comm_slot;
  uint64_t comm_hash;
  uint64_t seq;
  int32_t rank;
  uint32_t p2p;
};

struct TaskView {
  uint32_t index = 0;
  uint32_t gen = 0;
  uint32_t comm_slot = 0;
  int32_t rank = -1;
  uint64_t comm_hash = 0;
  uint64_t seq = 0;
  bool p2p = false;
};

struct StepState {
  uint32_t kind;
  uint16_t slot;
  uint8_t active;
  uint8_t mask;     // phases whose state was recorded (first entry wins)
  uint32_t op_index;
  int32_t step;
  uint64_t start_ns;
  uint64_t trans;   // largest transSize NCCL reported for the step
  uint64_t ts[kPhases];
};

struct OpState {
  uint32_t kind;
  uint32_t index;
  std::atomic<uint32_t> busy;
  uint32_t task;            // task index holding a reference, UINT32_MAX: none
  uint32_t task_gen;        // its generation
  int32_t view_slot;        // step slot the in-flight view shows (its oldest open step), -1
  uint32_t open;            // open steps
  uint64_t wire_covered_ns; // a send: latest SendWait end so far, 0 before the first
  OpRecord rec;             // what the shard shows for it (lock word unused here)
  StepState steps[kStepSlots];
};

struct KernelHandle {  // a KernelCh event: knows its collective for the stop clock
  uint32_t kind;
  uint32_t index;
  std::atomic<uint32_t> busy;
  uint32_t task;
  uint32_t task_gen;
};

struct IgnoredHandle {
  uint32_t kind = kKindIgnored;
};

struct Global {
  alignas(64) std::atomic<int> status{0};  // 0 not set up, 1 recording, 2 disabled
  std::atomic<bool> said_disabled{false};
  std::atomic<bool> test_clock{false};
  // The shard.
  uint8_t* map = nullptr;
  size_t map_bytes = 0;
  Header* hdr = nullptr;
  CommEntry* comms = nullptr;
  CollEntry* colls = nullptr;
  OpRecord* inflight = nullptr;
  OpRecord* ring = nullptr;
  uint64_t ring_mask = 0;
  uint32_t comm_cap = 0, coll_cap = 0, op_cap = 0;
  // Pools.
  CommCtx* ctxs = nullptr;
  TaskState* tasks = nullptr;
  uint8_t* task_space = nullptr;  // reserved PROT_NONE: task tickets (see TaskState)
  uint64_t task_space_bytes = 0;
  uint32_t task_gens = 0;         // generations per slot before a ticket repeats
  OpState* ops = nullptr;
  KernelHandle* kernels = nullptr;
  uint32_t kernel_cap = 0;
  // Written on every allocation: each on its own cache line, away from the read-mostly fields.
  alignas(64) std::atomic<uint64_t> task_cursor{0};
  alignas(64) std::atomic<uint64_t> op_cursor{0};
  alignas(64) std::atomic<uint64_t> kernel_cursor{0};
  alignas(64) std::atomic<uint64_t> next_op_id{1};
  alignas(64) char pad_after_cursors[64] = {0};
  pid_t pid = 0;
  int live_comms = 0;
  int event_mask = kDefaultMask;
  bool remove_on_exit = false;
  ncp_logger_t log = nullptr;
  char path[4096] = {0};
};

Global g;
IgnoredHandle g_ignored;
pthread_mutex_t g_init_mu = PTHREAD_MUTEX_INITIALIZER;
thread_local uint64_t t_test_now = 0;

// ---- small helpers ---------------------------------------------------------------------------

inline uint64_t now_ns() {
  if (__builtin_expect(g.test_clock.load(std::memory_order_relaxed), 0) && t_test_now != 0)
    return t_test_now;
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline bool recording() { return g.status.load(std::memory_order_acquire) == 1; }

inline void counter_add(uint64_t* p, uint64_t n = 1) {
  std::atomic_ref<uint64_t>(*p).fetch_add(n, std::memory_order_relaxed);
}

inline void atomic_max(uint64_t* p, uint64_t v) {
  std::atomic_ref<uint64_t> a(*p);
  uint64_t cur = a.load(std::memory_order_relaxed);
  while (cur < v && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

inline void atomic_min_nonzero(uint64_t* p, uint64_t v) {
  std::atomic_ref<uint64_t> a(*p);
  uint64_t cur = a.load(std::memory_order_relaxed);
  while ((cur == 0 || v < cur) && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

void copy_str(char* dst, size_t cap, const char* src) {
  if (cap == 0) return;
  size_t n = src ? strnlen(src, cap - 1) : 0;
  if (n) memcpy(dst, src, n);
  dst[n] = '\0';
}

void disable(const char* why) {
  g.status.store(2, std::memory_order_release);
  if (g.said_disabled.exchange(true)) return;
  if (g.hdr != nullptr) {
    copy_str(g.hdr->disabled_reason, sizeof g.hdr->disabled_reason, why);
    std::atomic_ref<uint64_t>(g.hdr->state).fetch_or(kStateDisabled, std::memory_order_release);
  }
  fprintf(stderr, "nccl-culprit profiler plugin: disabled (no live capture in pid %d): %s\n",
          static_cast<int>(getpid()), why);
}

inline void heartbeat(uint64_t t) {
  if (g.hdr != nullptr && t > load_relaxed(&g.hdr->last_event_ns))
    store_relaxed(&g.hdr->last_event_ns, t);
}

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

// mkdir -p; `top_mode` for a directory created directly below /dev/shm (shared by users).
bool make_dirs(const char* path, char* err, size_t err_cap) {
  char buf[4096];
  copy_str(buf, sizeof buf, path);
  size_t n = strlen(buf);
  if (n == 0) {
    snprintf(err, err_cap, "empty directory name");
    return false;
  }
  for (size_t i = 1; i <= n; ++i) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    char saved = buf[i];
    buf[i] = '\0';
    struct stat st;
    if (stat(buf, &st) != 0) {
      bool shared_top = strcmp(buf, "/dev/shm/nccl-culprit") == 0;
      if (mkdir(buf, shared_top ? 01777 : 0700) != 0 && errno != EEXIST) {
        snprintf(err, err_cap, "cannot create directory %.400s: %s", buf, strerror(errno));
        return false;
      }
      if (shared_top) chmod(buf, 01777);  // every user's jobs make their folders here
    } else if (!S_ISDIR(st.st_mode)) {
      snprintf(err, err_cap, "%s is not a directory", buf);
      return false;
    }
    buf[i] = saved;
  }
  return true;
}

void* map_private(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

// ---- setup: the shard and the pools (first init only) -----------------------------------------

bool setup(int nccl_interface, char* err, size_t err_cap) {
  g.pid = getpid();
  const uint64_t ring_cap = round_pow2(env_u64("NCCL_CULPRIT_SHARD_RECORDS", 65536, 64, 1u << 24));
  const uint64_t op_cap = env_u64("NCCL_CULPRIT_INFLIGHT_OPS", 1024, 16, 65536);
  const uint64_t coll_cap = env_u64("NCCL_CULPRIT_COLLECTIVES", 4096, 64, 1u << 20);
  const uint64_t comm_cap = env_u64("NCCL_CULPRIT_COMMS", 256, 1, 65536);
  g.remove_on_exit = env_true("NCCL_CULPRIT_REMOVE_ON_EXIT");
  if (const char* m = getenv("NCCL_PROFILE_EVENT_MASK"); m != nullptr && *m != '\0')
    g.event_mask = static_cast<int>(strtol(m, nullptr, 0)) | kRequiredMask;

  char host[64] = {0};
  if (const char* h = getenv("NCCL_CULPRIT_HOST"); h != nullptr && *h != '\0') {
    copy_str(host, sizeof host, h);
  } else if (gethostname(host, sizeof host - 1) != 0) {
    copy_str(host, sizeof host, "localhost");
  }
  for (char* c = host; *c; ++c)
    if (*c == '/') *c = '_';

  char dir[3072];
  if (const char* d = getenv("NCCL_CULPRIT_DIR"); d != nullptr && *d != '\0') {
    copy_str(dir, sizeof dir, d);
  } else {
    const char* job = getenv("SLURM_JOB_ID");
    snprintf(dir, sizeof dir, "/dev/shm/nccl-culprit/%s", job && *job ? job : "local");
  }
  if (!make_dirs(dir, err, err_cap)) return false;

  // Private pools.
  g.comm_cap = static_cast<uint32_t>(comm_cap);
  g.coll_cap = static_cast<uint32_t>(coll_cap);
  g.op_cap = static_cast<uint32_t>(op_cap);
  g.ctxs = static_cast<CommCtx*>(map_private(sizeof(CommCtx) * comm_cap));
  g.tasks = static_cast<TaskState*>(map_private(sizeof(TaskState) * coll_cap));
  g.ops = static_cast<OpState*>(map_private(sizeof(OpState) * op_cap));
  g.kernel_cap = static_cast<uint32_t>(op_cap * 4);
  g.kernels = static_cast<KernelHandle*>(map_private(sizeof(KernelHandle) * g.kernel_cap));
  if (!g.ctxs || !g.tasks || !g.ops || !g.kernels) {
    snprintf(err, err_cap, "cannot allocate the event pools: %s", strerror(errno));
    return false;
  }
  for (uint32_t i = 0; i < g.comm_cap; ++i) g.ctxs[i].kind = kKindCtx, g.ctxs[i].slot = i;
  for (uint32_t i = 0; i < g.coll_cap; ++i) g.tasks[i].index = i;
  // Address space only (PROT_NONE, nothing committed); fewer generations where an address
  // space limit (ulimit -v) refuses the first size.
  void* space = MAP_FAILED;
  for (uint64_t gens : {uint64_t{65536}, uint64_t{4096}, uint64_t{256}}) {
    g.task_space_bytes = gens * coll_cap;
    space = mmap(nullptr, g.task_space_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
    if (space != MAP_FAILED) {
      g.task_gens = static_cast<uint32_t>(gens);
      break;
    }
  }
  if (space == MAP_FAILED) {
    snprintf(err, err_cap, "cannot reserve address space for event handles: %s", strerror(errno));
    return false;
  }
  g.task_space = static_cast<uint8_t*>(space);
  for (uint32_t i = 0; i < g.kernel_cap; ++i) g.kernels[i].kind = kKindKernel, g.kernels[i].index = i;
  for (uint32_t i = 0; i < g.op_cap; ++i) {
    OpState& op = g.ops[i];
    op.kind = kKindOp;
    op.index = i;
    op.task = UINT32_MAX;
    for (int s = 0; s < kStepSlots; ++s) {
      op.steps[s].kind = kKindStep;
      op.steps[s].slot = static_cast<uint16_t>(s);
      op.steps[s].op_index = i;
    }
  }

  // The shard: created under a temporary name, sized and backed (no SIGBUS later when tmpfs
  // fills up), header written, then renamed so that a reader never sees a half-made file.
  const uint64_t comm_off = kHeaderBytes;
  const uint64_t coll_off = comm_off + comm_cap * sizeof(CommEntry);
  const uint64_t inflight_off = coll_off + coll_cap * sizeof(CollEntry);
  const uint64_t ring_off = inflight_off + op_cap * sizeof(OpRecord);
  const uint64_t bytes = ring_off + ring_cap * sizeof(OpRecord);

  char tmp[4096];
  snprintf(g.path, sizeof g.path, "%s/%s-%d.shard", dir, host, static_cast<int>(g.pid));
  snprintf(tmp, sizeof tmp, "%s/.%s-%d.shard.tmp", dir, host, static_cast<int>(g.pid));
  unlink(tmp);
  int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    snprintf(err, err_cap, "cannot create %.400s: %s", tmp, strerror(errno));
    return false;
  }
  int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (rc != 0) {
    snprintf(err, err_cap, "cannot reserve %llu bytes for %.400s: %s",
             static_cast<unsigned long long>(bytes), tmp, strerror(rc));
    close(fd);
    unlink(tmp);
    return false;
  }
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int map_errno = errno;
  close(fd);
  if (m == MAP_FAILED) {
    snprintf(err, err_cap, "cannot map %.400s: %s", tmp, strerror(map_errno));
    unlink(tmp);
    return false;
  }
  g.map = static_cast<uint8_t*>(m);
  g.map_bytes = bytes;
  g.hdr = reinterpret_cast<Header*>(g.map);
  g.comms = reinterpret_cast<CommEntry*>(g.map + comm_off);
  g.colls = reinterpret_cast<CollEntry*>(g.map + coll_off);
  g.inflight = reinterpret_cast<OpRecord*>(g.map + inflight_off);
  g.ring = reinterpret_cast<OpRecord*>(g.map + ring_off);
  g.ring_mask = ring_cap - 1;

  Header& h = *g.hdr;
  h.version = kVersion;
  h.endian_check = kEndianCheck;
  h.header_bytes = kHeaderBytes;
  h.clock = g.test_clock.load() ? kClockTest : kClockMonotonic;
  h.comm_capacity = g.comm_cap;
  h.comm_bytes = sizeof(CommEntry);
  h.coll_capacity = g.coll_cap;
  h.coll_bytes = sizeof(CollEntry);
  h.inflight_capacity = g.op_cap;
  h.ring_capacity = static_cast<uint32_t>(ring_cap);
  h.op_bytes = sizeof(OpRecord);
  h.nccl_interface = static_cast<uint32_t>(nccl_interface);
  h.comm_offset = comm_off;
  h.coll_offset = coll_off;
  h.inflight_offset = inflight_off;
  h.ring_offset = ring_off;
  h.file_bytes = bytes;
  h.pid = g.pid;
  timespec rt;
  clock_gettime(CLOCK_REALTIME, &rt);
  h.created_realtime_ns = static_cast<uint64_t>(rt.tv_sec) * 1000000000ull + rt.tv_nsec;
  h.created_clock_ns = now_ns();
  h.event_mask = static_cast<uint32_t>(g.event_mask);
  copy_str(h.host, sizeof h.host, host);
  std::atomic_thread_fence(std::memory_order_release);
  memcpy(h.magic, kMagic, sizeof kMagic);
  if (rename(tmp, g.path) != 0) {
    snprintf(err, err_cap, "cannot rename %.400s to %.400s: %s", tmp, g.path, strerror(errno));
    unlink(tmp);
    munmap(g.map, g.map_bytes);
    g.map = nullptr;
    g.hdr = nullptr;
    return false;
  }
  return true;
}

void on_fork_child() {
  // The child of a recording process must not write into its parent's shard.
  int expected = 1;
  g.status.compare_exchange_strong(expected, 2);
}

// ---- handle checks --------------------------------------------------------------------------

template <class T>
inline T* pool_member(void* p, T* base, uint32_t cap, uint32_t kind) {
  if (p == nullptr || base == nullptr) return nullptr;
  auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(base);
  if (a < b || a >= b + sizeof(T) * cap || (a - b) % sizeof(T) != 0) return nullptr;
  T* t = static_cast<T*>(p);
  return t->kind == kind ? t : nullptr;
}

inline CommCtx* ctx_of(void* p) { return pool_member(p, g.ctxs, g.comm_cap, kKindCtx); }
// The task a ticket names, if the ticket is still current: a consistent copy of its identity.
bool task_view(void* ticket, TaskView* v) {
  auto a = reinterpret_cast<uintptr_t>(ticket), b = reinterpret_cast<uintptr_t>(g.task_space);
  if (ticket == nullptr || b == 0 || a < b || a >= b + g.task_space_bytes) return false;
  const uint64_t off = a - b;
  const auto index = static_cast<uint32_t>(off % g.coll_cap);
  const auto gen = static_cast<uint32_t>(off / g.coll_cap);
  TaskState& t = g.tasks[index];
  if (gen == 0 || t.gen.load(std::memory_order_acquire) != gen) return false;
  v->index = index;
  v->gen = gen;
  v->comm_slot = std::atomic_ref<uint32_t>(t.comm_slot).load(std::memory_order_relaxed);
  v->rank = std::atomic_ref<int32_t>(t.rank).load(std::memory_order_relaxed);
  v->comm_hash = std::atomic_ref<uint64_t>(t.comm_hash).load(std::memory_order_relaxed);
  v->seq = std::atomic_ref<uint64_t>(t.seq).load(std::memory_order_relaxed);
  v->p2p = std::atomic_ref<uint32_t>(t.p2p).load(std::memory_order_relaxed) != 0;
  std::atomic_thread_fence(std::memory_order_acquire);
  return t.gen.load(std::memory_order_relaxed) == gen;
}

inline bool task_current(uint32_t index, uint32_t gen) {
  return index < g.coll_cap && g.tasks[index].gen.load(std::memory_order_acquire) == gen;
}
inline OpState* op_of(void* p) { return pool_member(p, g.ops, g.op_cap, kKindOp); }
inline KernelHandle* kernel_of(void* p) { return pool_member(p, g.kernels, g.kernel_cap, kKindKernel); }

inline StepState* step_of(void* p) {
  if (p == nullptr || g.ops == nullptr) return nullptr;
  auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(g.ops);
  if (a < b || a >= b + sizeof(OpState) * g.op_cap) return nullptr;
  OpState& op = g.ops[(a - b) / sizeof(OpState)];
  auto s = reinterpret_cast<uintptr_t>(&op.steps[0]);
  if (a < s || (a - s) % sizeof(StepState) != 0 || (a - s) / sizeof(StepState) >= kStepSlots)
    return nullptr;
  StepState* st = static_cast<StepState*>(p);
  return st->kind == kKindStep ? st : nullptr;
}

// ---- shard writes ---------------------------------------------------------------------------

template <class T>
inline bool publish(T* dst, const T& value) {
  uint64_t old = seq_try_lock(&dst->lock);
  if (old == UINT64_MAX) return false;
  seq_store_payload(dst, value);
  seq_unlock(&dst->lock, old);
  return true;
}

inline int phase_of_state(ncp_state_t s) {
  switch (s) {
    case NCP_STATE_SEND_GPU_WAIT: return 0;
    case NCP_STATE_SEND_PEER_WAIT: return 1;
    case NCP_STATE_SEND_WAIT: return 2;
    case NCP_STATE_RECV_WAIT: return 3;
    case NCP_STATE_RECV_FLUSH_WAIT: return 4;
    case NCP_STATE_RECV_GPU_WAIT: return 5;
    default: return -1;
  }
}

// In-flight view of an op: its oldest open step's latest state and since when, and the
// phases of its finished steps. Published when the view changes: a state of the shown step,
// a step that stops, the first step to open. States of younger steps wait for their stop.
void refresh_inflight(OpState* op) {
  OpRecord& r = op->rec;
  const StepState* oldest = nullptr;
  for (const StepState& s : op->steps)
    if (s.active && (oldest == nullptr || s.step < oldest->step)) oldest = &s;
  op->view_slot = oldest ? static_cast<int32_t>(oldest - op->steps) : -1;
  r.open_steps = static_cast<uint8_t>(op->open > 255 ? 255 : op->open);
  if (oldest != nullptr) {
    r.cur_phase = -1;
    r.phase_since_ns = oldest->start_ns;
    for (int p = kPhases - 1; p >= 0; --p) {
      if (oldest->mask & (1u << p)) {
        r.cur_phase = static_cast<int8_t>(p);
        r.phase_since_ns = oldest->ts[p];
        break;
      }
    }
  } else {
    r.cur_phase = -1;
  }
  publish(&g.inflight[op->index], r);  // only this op's thread writes its entry
}

// An op's shortest step (OpRecord::shortest_step_ns): at least 1 ns, since 0 means unknown.
void note_shortest_step(OpRecord& r, uint64_t duration_ns) {
  const uint32_t shown = duration_ns >= UINT32_MAX ? UINT32_MAX : std::max<uint32_t>(1, static_cast<uint32_t>(duration_ns));
  if (r.shortest_step_ns == 0 || shown < r.shortest_step_ns) r.shortest_step_ns = shown;
}

// The wire of a send: its shortest SendWait, and the time SendWait intervals cover after the
// first completion (queued sends overlap; the intervals of one connection begin and end in
// order, so each adds what lies beyond the latest end so far).
void note_send_wait(OpState* op, uint64_t begin, uint64_t end) {
  OpRecord& r = op->rec;
  if (end <= begin) return;
  note_shortest_step(r, end - begin);
  if (op->wire_covered_ns == 0) {
    op->wire_covered_ns = end;  // the first completion: what was queued before it is left out
    return;
  }
  const uint64_t from = std::max(begin, op->wire_covered_ns);
  if (end > from) r.wire_busy_ns += end - from;
  op->wire_covered_ns = std::max(op->wire_covered_ns, end);
}

// Phases of a step that stopped at `stop`: each lasts from its state until the next recorded
// state of the step, or until the step stopped.
void finish_step(OpState* op, StepState* s, uint64_t stop) {
  OpRecord& r = op->rec;
  const uint8_t m = s->mask;
  if (m != 0) {
    for (int p = 0; p < kPhases; ++p) {
      if (!(m & (1u << p))) continue;
      uint64_t end = stop;
      for (int q = p + 1; q < kPhases; ++q) {
        if (m & (1u << q)) {
          end = s->ts[q];
          break;
        }
      }
      if (end > s->ts[p]) {
        r.phase_ns[p] += end - s->ts[p];
        if (s->step < kFillSteps) r.fill_phase_ns[p] += end - s->ts[p];
      }
      if (p == 2 && (r.flags & kOpSend)) note_send_wait(op, s->ts[p], end);
      // A receive's shortest RecvGpuWait: a GPU slow to consume is slow in every step.
      if (p == 5 && !(r.flags & kOpSend)) note_shortest_step(r, end > s->ts[p] ? end - s->ts[p] : 0);
    }
    ++r.steps;
    if (s->step < kFillSteps) ++r.fill_steps;
    uint64_t b = s->trans;
    if (r.chunk_bytes > 0 && (b == 0 || b > r.chunk_bytes)) b = r.chunk_bytes;
    r.bytes += b;
  }
  s->active = 0;
  --op->open;
}

void append_completed(const OpRecord& rec) {
  uint64_t idx = std::atomic_ref<uint64_t>(g.hdr->ring_head).fetch_add(1, std::memory_order_acq_rel);
  OpRecord* slot = &g.ring[idx & g.ring_mask];
  uint64_t old = seq_try_lock(&slot->lock);
  if (old == UINT64_MAX) {  // another writer lapped the ring onto this slot: drop, count
    counter_add(&g.hdr->dropped_records);
    return;
  }
  OpRecord out = rec;
  out.index = idx;
  seq_store_payload(slot, out);
  seq_unlock(&slot->lock, old);
}

// ---- event handlers -------------------------------------------------------------------------

TaskState* alloc_task() {
  for (int t = 0; t < kAllocTries; ++t) {
    uint64_t i = g.task_cursor.fetch_add(1, std::memory_order_relaxed) % g.coll_cap;
    uint32_t z = 0;
    if (g.tasks[i].refs.compare_exchange_strong(z, 1, std::memory_order_acquire)) return &g.tasks[i];
  }
  return nullptr;
}

// Fills a freshly allocated task and returns its ticket: gen = 0 while writing (tickets of
// the earlier occupant go stale), then the next generation.
void* issue_task(TaskState* t, uint64_t comm_hash, uint32_t comm_slot, int32_t rank, uint64_t seq,
                 bool p2p) {
  const uint32_t old = t->gen.load(std::memory_order_relaxed);
  const uint32_t gen = old % (g.task_gens - 1) + 1;  // 1 .. task_gens-1
  t->gen.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  std::atomic_ref<uint64_t>(t->comm_hash).store(comm_hash, std::memory_order_relaxed);
  std::atomic_ref<uint32_t>(t->comm_slot).store(comm_slot, std::memory_order_relaxed);
  std::atomic_ref<int32_t>(t->rank).store(rank, std::memory_order_relaxed);
  std::atomic_ref<uint64_t>(t->seq).store(seq, std::memory_order_relaxed);
  std::atomic_ref<uint32_t>(t->p2p).store(p2p ? 1 : 0, std::memory_order_relaxed);
  t->gen.store(gen, std::memory_order_release);
  return g.task_space + static_cast<uint64_t>(gen) * g.coll_cap + t->index;
}

OpState* alloc_op() {
  for (int t = 0; t < kAllocTries; ++t) {
    uint64_t i = g.op_cursor.fetch_add(1, std::memory_order_relaxed) % g.op_cap;
    uint32_t z = 0;
    if (g.ops[i].busy.compare_exchange_strong(z, 1, std::memory_order_acquire)) return &g.ops[i];
  }
  return nullptr;
}

void* start_task(CommCtx* c, int rank, bool p2p, uint64_t seq, int peer) {
  TaskState* t = alloc_task();
  if (t == nullptr) {
    counter_add(&g.hdr->dropped_tasks);
    return nullptr;
  }
  const uint64_t now = now_ns();
  if (rank < 0) rank = c->rank;
  void* ticket = issue_task(t, c->comm_hash, c->slot, rank, seq, p2p);
  CollEntry e{};
  e.comm_hash = c->comm_hash;
  e.seq = seq;
  e.start_ns = now;
  e.rank = rank;
  e.flags = p2p ? (kCollValid | kCollP2p) : kCollValid;
  e.peer = peer;
  e.comm_slot = c->slot;
  publish(&g.colls[t->index], e);
  if (!p2p) {
    CommEntry& ce = g.comms[c->slot];
    atomic_max(&ce.newest_seq_plus1, seq + 1);
    counter_add(&ce.collectives);
  }
  counter_add(&g.hdr->colls_started);
  heartbeat(now);
  return ticket;
}

void* start_proxy_op(CommCtx* c, void* parent, int rank, const ncp_proxy_op& d) {
  OpState* op = alloc_op();
  if (op == nullptr) {
    counter_add(&g.hdr->dropped_ops);
    return nullptr;
  }
  const uint64_t now = now_ns();
  OpRecord& r = op->rec;
  r = OpRecord{};
  r.op_id = g.next_op_id.fetch_add(1, std::memory_order_relaxed);
  r.index = r.op_id;
  r.flags = kOpInFlight | (d.is_send ? kOpSend : 0);
  r.rank = rank >= 0 ? rank : c->rank;
  r.peer = d.peer;
  r.channel = d.channel_id;
  r.n_steps = d.n_steps > 0 ? static_cast<uint32_t>(d.n_steps) : 0;
  r.chunk_bytes = d.chunk_size > 0 ? static_cast<uint32_t>(d.chunk_size) : 0;
  r.start_ns = now;
  r.phase_since_ns = now;
  r.cur_phase = -1;
  r.comm_hash = c->comm_hash;
  r.comm_slot = c->slot;
  op->task = UINT32_MAX;
  op->view_slot = -1;
  op->open = 0;
  op->wire_covered_ns = 0;
  for (StepState& s : op->steps) s.active = 0;
  if (d.pid != g.pid) {
    // PXN: run for another process; its parent pointer belongs to that process.
    r.flags |= kOpPxn;
    counter_add(&g.hdr->pxn_ops);
  } else if (TaskView v; task_view(parent, &v)) {
    // NCCL stops the collective's event right after handing its ops to the proxy, so the
    // task may be released already; the op's reference keeps its slot from being reused
    // while the op runs, and a ticket that went stale in between is never read.
    g.tasks[v.index].refs.fetch_add(1, std::memory_order_acq_rel);
    op->task = v.index;
    op->task_gen = v.gen;
    r.comm_hash = v.comm_hash;
    r.comm_slot = v.comm_slot;
    r.seq = v.seq;
    r.flags |= kOpSeqKnown | (v.p2p ? kOpP2p : 0);
  } else {
    counter_add(&g.hdr->orphan_ops);
  }
  counter_add(&g.hdr->ops_started);
  publish(&g.inflight[op->index], r);
  return op;
}

void* start_step(void* parent, int step) {
  OpState* op = op_of(parent);
  if (op == nullptr || op->busy.load(std::memory_order_relaxed) == 0) return nullptr;
  const uint64_t now = now_ns();
  StepState* s = &op->steps[static_cast<unsigned>(step) % kStepSlots];
  if (s->active) {  // its slot is still open: NCCL reused it; the old step cannot finish now
    s->active = 0;
    --op->open;
    counter_add(&g.hdr->dropped_steps);
  }
  s->step = step;
  s->mask = 0;
  s->trans = 0;
  s->start_ns = now;
  s->active = 1;
  if (op->open++ == 0 || op->view_slot == s->slot) refresh_inflight(op);
  return s;
}

void* kernel_start(void* parent, uint64_t p_timer) {
  TaskView v;
  if (!task_view(parent, &v)) return &g_ignored;
  if (p_timer != 0) atomic_min_nonzero(&g.colls[v.index].kernel_start_clk, p_timer);
  for (int k = 0; k < kAllocTries; ++k) {
    uint64_t i = g.kernel_cursor.fetch_add(1, std::memory_order_relaxed) % g.kernel_cap;
    uint32_t z = 0;
    if (g.kernels[i].busy.compare_exchange_strong(z, 1, std::memory_order_acquire)) {
      g.kernels[i].task = v.index;
      g.kernels[i].task_gen = v.gen;
      return &g.kernels[i];
    }
  }
  return &g_ignored;  // its stop clock is lost, nothing else
}

void release_task(uint32_t index, uint32_t gen, uint64_t end_ns) {
  if (index >= g.coll_cap) return;
  if (end_ns && task_current(index, gen)) atomic_max(&g.colls[index].last_op_end_ns, end_ns);
  g.tasks[index].refs.fetch_sub(1, std::memory_order_release);
}

template <class D>
void start_event(void* context, void** handle, D* d) {
  *handle = nullptr;
  if (d == nullptr || !recording()) return;
  CommCtx* c = ctx_of(context);
  if (c == nullptr) return;
  switch (static_cast<uint64_t>(d->type)) {
    case NCP_EV_COLL:
      *handle = start_task(c, d->rank, false, d->u.coll.seq_number, -1);
      break;
    case NCP_EV_P2P: {
      // p2p has no sequence number: the k-th Send to (Recv from) a peer pairs with the
      // peer's k-th Recv from (Send to) us.
      const bool send = d->u.p2p.func != nullptr && d->u.p2p.func[0] == 'S';
      uint64_t ord = 0;
      if (c->p2p_counters != nullptr) {
        uint64_t key = static_cast<uint64_t>(static_cast<uint32_t>(d->u.p2p.peer)) * 2 + (send ? 0 : 1);
        ord = c->p2p_counters[key % c->p2p_counters_n].fetch_add(1, std::memory_order_relaxed);
      }
      *handle = start_task(c, d->rank, true, ord, d->u.p2p.peer);
      break;
    }
    case NCP_EV_PROXY_OP:
      *handle = start_proxy_op(c, d->parent_obj, d->rank, d->u.proxy_op);
      break;
    case NCP_EV_PROXY_STEP:
      *handle = start_step(d->parent_obj, d->u.proxy_step.step);
      break;
    case NCP_EV_KERNEL_CH:
      *handle = kernel_start(d->parent_obj, d->u.kernel_ch.p_timer);
      break;
    default:
      break;  // Group, API, ProxyCtrl, NetPlugin, CE events: not recorded
  }
}

void stop_event_impl(void* handle) {
  if (handle == nullptr || !recording()) return;
  if (StepState* s = step_of(handle)) {
    OpState* op = &g.ops[s->op_index];
    if (!s->active || op->busy.load(std::memory_order_relaxed) == 0) return;
    finish_step(op, s, now_ns());
    refresh_inflight(op);
  } else if (OpState* op = op_of(handle)) {
    if (op->busy.load(std::memory_order_relaxed) == 0) return;
    const uint64_t now = now_ns();
    for (StepState& s : op->steps) {
      if (s.active) {  // stopped with its op (NCCL stops every step first): not measured
        s.active = 0;
        --op->open;
        counter_add(&g.hdr->dropped_steps);
      }
    }
    OpRecord& r = op->rec;
    r.end_ns = now;
    r.flags &= static_cast<uint16_t>(~kOpInFlight);
    r.cur_phase = -1;
    r.open_steps = 0;
    append_completed(r);
    OpRecord cleared{};
    cleared.index = r.op_id;  // same op_id, not in flight: the reader knows it moved on
    cleared.op_id = r.op_id;
    publish(&g.inflight[op->index], cleared);
    release_task(op->task, op->task_gen, now);
    op->task = UINT32_MAX;
    heartbeat(now);
    op->busy.store(0, std::memory_order_release);
  } else if (TaskView v; task_view(handle, &v)) {
    TaskState& t = g.tasks[v.index];
    if (t.refs.load(std::memory_order_relaxed) > 0) t.refs.fetch_sub(1, std::memory_order_release);
  } else if (KernelHandle* k = kernel_of(handle)) {
    k->busy.store(0, std::memory_order_release);
  }
}

void record_state_impl(void* handle, ncp_state_t state, const ncp_state_args_v4* args) {
  if (handle == nullptr || !recording()) return;
  if (StepState* s = step_of(handle)) {
    int p = phase_of_state(state);
    if (p < 0 || !s->active) return;
    OpState* op = &g.ops[s->op_index];
    const uint8_t bit = static_cast<uint8_t>(1u << p);
    if (args != nullptr && args->proxy_step.trans_size > s->trans) s->trans = args->proxy_step.trans_size;
    if (s->mask & bit) return;  // a retried state: the first entry counts
    s->ts[p] = now_ns();
    s->mask |= bit;
    if (op->view_slot == s->slot) refresh_inflight(op);
  } else if (OpState* op = op_of(handle)) {
    if (state == NCP_STATE_PROXY_OP_IN_PROGRESS && op->rec.progress_ns == 0) {
      op->rec.progress_ns = now_ns();
      publish(&g.inflight[op->index], op->rec);
    }
  } else if (KernelHandle* k = kernel_of(handle)) {
    if (state == NCP_STATE_KERNEL_CH_STOP && args != nullptr && args->kernel_ch.p_timer != 0 &&
        k->busy.load(std::memory_order_relaxed) != 0 && task_current(k->task, k->task_gen))
      atomic_max(&g.colls[k->task].kernel_stop_clk, args->kernel_ch.p_timer);
  }
}

ncp_result_t init_impl(int iface, void** context, int* mask, const char* name, uint64_t comm_hash,
                       int n_nodes, int n_ranks, int rank, ncp_logger_t log) {
  if (context) *context = nullptr;
  if (env_true("NCCL_CULPRIT_DISABLE")) {
    if (mask) *mask = 0;
    return NCP_SUCCESS;
  }
  pthread_mutex_lock(&g_init_mu);
  if (g.status.load() == 0) {
    char err[1024] = {0};
    if (log) g.log = log;
    if (setup(iface, err, sizeof err)) {
      pthread_atfork(nullptr, nullptr, on_fork_child);
      g.status.store(1, std::memory_order_release);
      if (g.log) g.log(3 /*INFO*/, 1 /*NCCL_INIT*/, __FILE__, __LINE__,
                       "nccl-culprit profiler plugin (interface v%d): live capture in %s", iface, g.path);
    } else {
      disable(err);
    }
  }
  if (g.status.load() != 1) {
    pthread_mutex_unlock(&g_init_mu);
    if (mask) *mask = 0;
    return NCP_SUCCESS;
  }
  uint64_t slot = load_relaxed(&g.hdr->comm_count);
  if (slot >= g.comm_cap) {
    static bool said = false;
    if (!said) {
      said = true;
      fprintf(stderr, "nccl-culprit profiler plugin: more than %u communicators in pid %d; "
              "communicator %llx is not recorded (NCCL_CULPRIT_COMMS)\n", g.comm_cap,
              static_cast<int>(g.pid), static_cast<unsigned long long>(comm_hash));
    }
    pthread_mutex_unlock(&g_init_mu);
    if (mask) *mask = g.event_mask;
    return NCP_SUCCESS;
  }
  CommCtx* c = &g.ctxs[slot];
  c->comm_hash = comm_hash;
  c->rank = rank;
  c->n_ranks = n_ranks;
  uint64_t n = n_ranks > 0 ? static_cast<uint64_t>(n_ranks) * 2 : 2;
  if (n > 131072) n = 131072;
  void* counters = map_private(n * sizeof(std::atomic<uint64_t>));
  c->p2p_counters = static_cast<std::atomic<uint64_t>*>(counters);
  c->p2p_counters_n = counters ? static_cast<uint32_t>(n) : 0;
  CommEntry e{};
  e.comm_hash = comm_hash;
  e.rank = rank;
  e.n_ranks = n_ranks;
  e.n_nodes = n_nodes;
  e.flags = kCommValid;
  copy_str(e.name, sizeof e.name, name);
  publish(&g.comms[slot], e);
  store_release(&g.hdr->comm_count, slot + 1);
  std::atomic_ref<uint64_t>(g.hdr->state).fetch_and(~uint64_t{kStateFinalized}, std::memory_order_relaxed);
  ++g.live_comms;
  pthread_mutex_unlock(&g_init_mu);
  if (mask) *mask = g.event_mask;
  if (context) *context = c;
  return NCP_SUCCESS;
}

ncp_result_t finalize_impl(void* context) {
  pthread_mutex_lock(&g_init_mu);
  CommCtx* c = ctx_of(context);
  if (c != nullptr && g.hdr != nullptr) {
    CommEntry& e = g.comms[c->slot];
    CommEntry copy{};
    if (seq_read(&e, &copy) && !(copy.flags & kCommFinalized)) {
      copy.flags |= kCommFinalized;
      copy.newest_seq_plus1 = load_relaxed(&e.newest_seq_plus1);
      copy.collectives = load_relaxed(&e.collectives);
      publish(&e, copy);
      if (--g.live_comms == 0) {
        std::atomic_ref<uint64_t>(g.hdr->state).fetch_or(kStateFinalized, std::memory_order_release);
        msync(g.map, g.map_bytes, MS_ASYNC);
        if (g.remove_on_exit) unlink(g.path);
      }
    }
  }
  pthread_mutex_unlock(&g_init_mu);
  return NCP_SUCCESS;
}

// ---- the C ABI ------------------------------------------------------------------------------

#define NCP_GUARD(body)                         \
  try {                                         \
    body;                                       \
  } catch (...) {                               \
    disable("internal error (exception)");      \
  }                                             \
  return NCP_SUCCESS

ncp_result_t init_v4(void** ctx, int* mask, const char* name, uint64_t hash, int n_nodes,
                     int n_ranks, int rank, ncp_logger_t log) {
  NCP_GUARD(init_impl(4, ctx, mask, name, hash, n_nodes, n_ranks, rank, log));
}
ncp_result_t init_v5(void** ctx, uint64_t hash, int* mask, const char* name, int n_nodes,
                     int n_ranks, int rank, ncp_logger_t log) {
  NCP_GUARD(init_impl(5, ctx, mask, name, hash, n_nodes, n_ranks, rank, log));
}
ncp_result_t init_v6(void** ctx, uint64_t hash, int* mask, const char* name, int n_nodes,
                     int n_ranks, int rank, ncp_logger_t log) {
  NCP_GUARD(init_impl(6, ctx, mask, name, hash, n_nodes, n_ranks, rank, log));
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
ncp_result_t stop_any(void* handle) { NCP_GUARD(stop_event_impl(handle)); }
ncp_result_t record_any(void* handle, ncp_state_t state, ncp_state_args_v4* args) {
  NCP_GUARD(record_state_impl(handle, state, args));
}
ncp_result_t finalize_any(void* ctx) { NCP_GUARD(finalize_impl(ctx)); }

}  // namespace

extern "C" {

NCP_EXPORT ncp_profiler_v4 ncclProfiler_v4 = {"nccl-culprit", init_v4, start_v4, stop_any,
                                              record_any, finalize_any};
NCP_EXPORT ncp_profiler_v5 ncclProfiler_v5 = {"nccl-culprit", init_v5, start_v5, stop_any,
                                              record_any, finalize_any};
NCP_EXPORT ncp_profiler_v6 ncclProfiler_v6 = {"nccl-culprit", init_v6, start_v6, stop_any,
                                              record_any, finalize_any};

NCP_EXPORT void ncclCulpritTestSetTime(uint64_t ns) {
  t_test_now = ns;
  if (!g.test_clock.exchange(true, std::memory_order_relaxed) && g.hdr != nullptr)
    std::atomic_ref<uint32_t>(g.hdr->clock).store(kClockTest, std::memory_order_relaxed);
}

}  // extern "C"

