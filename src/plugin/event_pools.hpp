// The plugin's private event pools, made once at the first init and never grown: communicator
// contexts, collective tasks, ProxyOps with their steps, KernelCh handles. Every handle NCCL
// gets comes from here, so the event path never allocates; and every handle NCCL passes back
// is checked here against the pools before it is used (a pointer is never trusted).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "io/shard_format.hpp"

namespace culprit::plugin {

struct PluginConfig;

// Tags at the start of every pool entry: a pointer into a pool is used only if its tag fits.
inline constexpr uint32_t kKindCtx = 0x43545831;      // "CTX1"
inline constexpr uint32_t kKindOp = 0x4f505331;       // "OPS1"
inline constexpr uint32_t kKindStep = 0x53544550;     // "STEP"
inline constexpr uint32_t kKindIgnored = 0x49474e44;  // "IGND"
inline constexpr uint32_t kKindKernel = 0x4b434831;   // "KCH1"
inline constexpr int kStepSlots = 16;                 // NCCL keeps at most NCCL_STEPS (8) open per op
inline constexpr int kAllocTries = 64;
// Channels whose kernel start a task keeps (NCCL's MAXCHANNELS); a KernelCh of a higher
// channel is timed on the GPU clock only.
inline constexpr int kKernelChannels = 64;

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
  uint64_t issued_ns;  // when this occupant was issued, on the plugin's clock
  // Per channel, when the proxy saw its kernel start (its KernelCh start event, on the plugin's
  // clock): a receive step's RecvGpuWait counts from then at the earliest. A time before
  // issued_ns is an earlier occupant's (not cleared at issue: 64 stores on 8 cold cache lines
  // per collective cost the event path a quarter of a microsecond), and means "not yet".
  std::atomic<uint64_t> kernel_start_ns[kKernelChannels];
};

// A consistent copy of a current task's identity (EventPools::task_view).
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
  uint64_t ts[shard::kPhases];
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
  shard::OpRecord rec;      // what the shard shows for it (lock word unused here)
  StepState steps[kStepSlots];
};

struct KernelHandle {  // a KernelCh event: knows its collective for the stop clock
  uint32_t kind;
  uint32_t index;
  std::atomic<uint32_t> busy;
  uint32_t task;
  uint32_t task_gen;
};

// The handle of an event that is acknowledged but not recorded.
struct IgnoredHandle {
  uint32_t kind = kKindIgnored;
};

struct EventPools {
  CommCtx* ctxs = nullptr;
  TaskState* tasks = nullptr;
  uint8_t* task_space = nullptr;  // reserved PROT_NONE: task tickets (see TaskState)
  uint64_t task_space_bytes = 0;
  uint32_t task_gens = 0;         // generations per slot before a ticket repeats
  OpState* ops = nullptr;
  KernelHandle* kernels = nullptr;
  uint32_t comm_cap = 0, coll_cap = 0, op_cap = 0, kernel_cap = 0;
  // Written on every allocation: each on its own cache line, away from the read-mostly fields.
  alignas(64) std::atomic<uint64_t> task_cursor{0};
  alignas(64) std::atomic<uint64_t> op_cursor{0};
  alignas(64) std::atomic<uint64_t> kernel_cursor{0};
  alignas(64) std::atomic<uint64_t> next_op_id{1};
  alignas(64) char pad_after_cursors[64] = {0};

  // Maps and tags every pool (first init only); false with the reason in `err`.
  bool make(const PluginConfig& config, char* err, size_t err_cap);
  // The p2p ordinal counters of a new communicator (none if memory is refused).
  void make_p2p_counters(CommCtx* c, int n_ranks);

  // ---- allocation (lock-free; nullptr when kAllocTries slots in a row are busy) ----
  TaskState* alloc_task();
  // Fills a freshly allocated task, issued at `issued_ns`, and returns its ticket.
  void* issue_task(TaskState* t, uint64_t comm_hash, uint32_t comm_slot, int32_t rank,
                   uint64_t seq, bool p2p, uint64_t issued_ns);
  OpState* alloc_op();
  KernelHandle* alloc_kernel(const TaskView& task);

  // ---- handle checks ----
  CommCtx* ctx_of(void* p) const { return member(p, ctxs, comm_cap, kKindCtx); }
  OpState* op_of(void* p) const { return member(p, ops, op_cap, kKindOp); }
  KernelHandle* kernel_of(void* p) const { return member(p, kernels, kernel_cap, kKindKernel); }
  inline StepState* step_of(void* p) const;
  // The task a ticket names, if the ticket is still current: a consistent copy of its identity.
  inline bool task_view(void* ticket, TaskView* v) const;
  bool task_current(uint32_t index, uint32_t gen) const {
    return index < coll_cap && tasks[index].gen.load(std::memory_order_acquire) == gen;
  }

 private:
  template <class T>
  static T* member(void* p, T* base, uint32_t cap, uint32_t kind) {
    if (p == nullptr || base == nullptr) return nullptr;
    auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(base);
    if (a < b || a >= b + sizeof(T) * cap || (a - b) % sizeof(T) != 0) return nullptr;
    T* t = static_cast<T*>(p);
    return t->kind == kind ? t : nullptr;
  }
};

StepState* EventPools::step_of(void* p) const {
  if (p == nullptr || ops == nullptr) return nullptr;
  auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(ops);
  if (a < b || a >= b + sizeof(OpState) * op_cap) return nullptr;
  OpState& op = ops[(a - b) / sizeof(OpState)];
  auto s = reinterpret_cast<uintptr_t>(&op.steps[0]);
  if (a < s || (a - s) % sizeof(StepState) != 0 || (a - s) / sizeof(StepState) >= kStepSlots)
    return nullptr;
  StepState* st = static_cast<StepState*>(p);
  return st->kind == kKindStep ? st : nullptr;
}

bool EventPools::task_view(void* ticket, TaskView* v) const {
  auto a = reinterpret_cast<uintptr_t>(ticket), b = reinterpret_cast<uintptr_t>(task_space);
  if (ticket == nullptr || b == 0 || a < b || a >= b + task_space_bytes) return false;
  const uint64_t off = a - b;
  const auto index = static_cast<uint32_t>(off % coll_cap);
  const auto gen = static_cast<uint32_t>(off / coll_cap);
  TaskState& t = tasks[index];
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

}  // namespace culprit::plugin
