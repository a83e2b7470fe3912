#include "plugin/event_pools.hpp"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "plugin/plugin_config.hpp"

namespace culprit::plugin {
namespace {

void* map_private(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

// Address space only (PROT_NONE, nothing committed) for the task tickets; fewer generations
// where an address space limit (ulimit -v) refuses the first size.
bool reserve_ticket_space(EventPools& p, char* err, size_t err_cap) {
  void* space = MAP_FAILED;
  for (uint64_t gens : {uint64_t{65536}, uint64_t{4096}, uint64_t{256}}) {
    p.task_space_bytes = gens * p.coll_cap;
    space = mmap(nullptr, p.task_space_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
    if (space != MAP_FAILED) {
      p.task_gens = static_cast<uint32_t>(gens);
      break;
    }
  }
  if (space == MAP_FAILED) {
    snprintf(err, err_cap, "cannot reserve address space for event handles: %s", strerror(errno));
    return false;
  }
  p.task_space = static_cast<uint8_t*>(space);
  return true;
}

// Claims a free entry round-robin from `cursor`: the first of kAllocTries entries whose `flag`
// goes from 0 to 1 (lock-free; nullptr when all of them are taken).
template <class T>
T* claim_free(T* pool, uint32_t cap, std::atomic<uint64_t>& cursor, std::atomic<uint32_t> T::*flag) {
  for (int t = 0; t < kAllocTries; ++t) {
    uint64_t i = cursor.fetch_add(1, std::memory_order_relaxed) % cap;
    uint32_t z = 0;
    if ((pool[i].*flag).compare_exchange_strong(z, 1, std::memory_order_acquire)) return &pool[i];
  }
  return nullptr;
}

void tag_entries(EventPools& p) {
  for (uint32_t i = 0; i < p.comm_cap; ++i) p.ctxs[i].kind = kKindCtx, p.ctxs[i].slot = i;
  for (uint32_t i = 0; i < p.coll_cap; ++i) p.tasks[i].index = i;
  for (uint32_t i = 0; i < p.kernel_cap; ++i) p.kernels[i].kind = kKindKernel, p.kernels[i].index = i;
  for (uint32_t i = 0; i < p.op_cap; ++i) {
    OpState& op = p.ops[i];
    op.kind = kKindOp;
    op.index = i;
    op.task = UINT32_MAX;
    for (int s = 0; s < kStepSlots; ++s) {
      op.steps[s].kind = kKindStep;
      op.steps[s].slot = static_cast<uint16_t>(s);
      op.steps[s].op_index = i;
    }
  }
}

}  // namespace

bool EventPools::make(const PluginConfig& config, char* err, size_t err_cap) {
  comm_cap = static_cast<uint32_t>(config.comms);
  coll_cap = static_cast<uint32_t>(config.collectives);
  op_cap = static_cast<uint32_t>(config.inflight_ops);
  ctxs = static_cast<CommCtx*>(map_private(sizeof(CommCtx) * comm_cap));
  tasks = static_cast<TaskState*>(map_private(sizeof(TaskState) * coll_cap));
  ops = static_cast<OpState*>(map_private(sizeof(OpState) * op_cap));
  kernel_cap = op_cap * 4;
  kernels = static_cast<KernelHandle*>(map_private(sizeof(KernelHandle) * kernel_cap));
  if (!ctxs || !tasks || !ops || !kernels) {
    snprintf(err, err_cap, "cannot allocate the event pools: %s", strerror(errno));
    return false;
  }
  if (!reserve_ticket_space(*this, err, err_cap)) return false;
  tag_entries(*this);
  return true;
}

void EventPools::make_p2p_counters(CommCtx* c, int n_ranks) {
  uint64_t n = n_ranks > 0 ? static_cast<uint64_t>(n_ranks) * 2 : 2;
  if (n > 131072) n = 131072;
  void* counters = map_private(n * sizeof(std::atomic<uint64_t>));
  c->p2p_counters = static_cast<std::atomic<uint64_t>*>(counters);
  c->p2p_counters_n = counters ? static_cast<uint32_t>(n) : 0;
}

TaskState* EventPools::alloc_task() { return claim_free(tasks, coll_cap, task_cursor, &TaskState::refs); }

// gen = 0 while writing (tickets of the earlier occupant go stale), then the next generation.
void* EventPools::issue_task(TaskState* t, uint64_t comm_hash, uint32_t comm_slot, int32_t rank,
                             uint64_t seq, bool p2p, uint64_t issued_ns) {
  const uint32_t old = t->gen.load(std::memory_order_relaxed);
  const uint32_t gen = old % (task_gens - 1) + 1;  // 1 .. task_gens-1
  t->gen.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  std::atomic_ref<uint64_t>(t->comm_hash).store(comm_hash, std::memory_order_relaxed);
  std::atomic_ref<uint32_t>(t->comm_slot).store(comm_slot, std::memory_order_relaxed);
  std::atomic_ref<int32_t>(t->rank).store(rank, std::memory_order_relaxed);
  std::atomic_ref<uint64_t>(t->seq).store(seq, std::memory_order_relaxed);
  std::atomic_ref<uint32_t>(t->p2p).store(p2p ? 1 : 0, std::memory_order_relaxed);
  std::atomic_ref<uint64_t>(t->issued_ns).store(issued_ns, std::memory_order_relaxed);
  t->gen.store(gen, std::memory_order_release);
  return task_space + static_cast<uint64_t>(gen) * coll_cap + t->index;
}

OpState* EventPools::alloc_op() { return claim_free(ops, op_cap, op_cursor, &OpState::busy); }

KernelHandle* EventPools::alloc_kernel(const TaskView& task) {
  KernelHandle* k = claim_free(kernels, kernel_cap, kernel_cursor, &KernelHandle::busy);
  if (k != nullptr) {
    k->task = task.index;
    k->task_gen = task.gen;
  }
  return k;
}

}  // namespace culprit::plugin
