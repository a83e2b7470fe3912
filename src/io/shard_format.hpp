// The live-capture shard file: written by libnccl-profiler-culprit.so (src/plugin/) inside the
// training process through a MAP_SHARED mapping, read by the analyzer (shard_reader.cpp) while
// the job runs, after it hangs, or after it was killed. docs/live-capture.md describes it.
//
// One file per process, <host>-<pid>.shard, mode 0600, fixed size, laid out as
//
//   Header        4096 bytes: magic, version, geometry, identity, live counters
//   CommEntry[]   comm_capacity x 64: one per profiler context (communicator x rank)
//   CollEntry[]   coll_capacity x 72: the newest collectives / p2p calls, slot reused round-robin
//   OpRecord[]    inflight_capacity x 232: ProxyOps in flight (slot = the plugin's op slot)
//   OpRecord[]    ring_capacity x 232: completed ProxyOps, a ring (slot = index % capacity)
//
// Every entry starts with a 64-bit sequence lock: odd while its writer is inside, even when
// stable; a reader copies the entry between two equal even reads of the lock. A writer killed
// inside an entry leaves the lock odd forever: the reader counts that entry as torn. All
// multi-byte values are in the writer's native byte order (little-endian on every platform
// NCCL runs on); `endian_check` says which. Times are nanoseconds of the writer's clock
// (`clock`: CLOCK_MONOTONIC, or the test clock).
//
// Header-only and dependency-free: the plugin includes it too.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace culprit::shard {

inline constexpr char kMagic[8] = {'N', 'C', 'C', 'L', 'C', 'U', 'L', 'P'};
inline constexpr uint32_t kVersion = 1;
inline constexpr uint32_t kEndianCheck = 0x01020304u;
inline constexpr uint32_t kHeaderBytes = 4096;

enum Clock : uint32_t { kClockMonotonic = 0, kClockTest = 1 };

// Header.state bits.
enum : uint64_t {
  kStateFinalized = 1,  // every communicator of the process was finalized
  kStateDisabled = 2,   // the plugin hit an internal failure and stopped recording
};

// Proxy phases in the order of culprit::Phase (core/records.hpp).
inline constexpr int kPhases = 6;

// NCCL_STEPS: the proxy posts this many steps of an op before the first credit comes back, so
// the phases of steps 0..kFillSteps-1 (the pipeline fill) measure when the two ends arrived at
// the collective, not the steady pipeline. Records keep them apart (OpRecord::fill_*).
inline constexpr int kFillSteps = 8;

struct Header {
  char magic[8];               // kMagic, written last when the file is created
  uint32_t version;            // kVersion
  uint32_t endian_check;       // kEndianCheck in the writer's byte order
  uint32_t header_bytes;       // kHeaderBytes
  uint32_t clock;              // Clock
  uint32_t comm_capacity;
  uint32_t comm_bytes;         // sizeof(CommEntry)
  uint32_t coll_capacity;
  uint32_t coll_bytes;         // sizeof(CollEntry)
  uint32_t inflight_capacity;
  uint32_t ring_capacity;      // a power of two
  uint32_t op_bytes;           // sizeof(OpRecord)
  uint32_t nccl_interface;     // profiler interface NCCL loaded first (4, 5 or 6)
  uint64_t comm_offset;
  uint64_t coll_offset;
  uint64_t inflight_offset;
  uint64_t ring_offset;
  uint64_t file_bytes;
  int64_t pid;
  uint64_t created_realtime_ns;  // CLOCK_REALTIME when the file was created
  uint64_t created_clock_ns;     // the writer's clock at the same moment
  uint32_t event_mask;           // activation mask the plugin asked NCCL for
  uint32_t reserved0;
  char host[64];                 // NUL-terminated
  // ---- live, accessed atomically ----
  uint64_t ring_head;            // completed ops ever appended (next ring index)
  uint64_t last_event_ns;        // newest event time seen (a heartbeat)
  uint64_t comm_count;           // CommEntry slots in use
  uint64_t state;                // kState* bits
  uint64_t dropped_ops;          // ProxyOps not recorded: every op slot busy
  uint64_t dropped_steps;        // steps not recorded (slot reused before it stopped)
  uint64_t dropped_records;      // completed ops not appended (ring slot busy)
  uint64_t dropped_tasks;        // collectives / p2p not recorded: every task slot busy
  uint64_t pxn_ops;              // ProxyOps run on behalf of another process (PXN)
  uint64_t orphan_ops;           // ProxyOps whose parent collective was unknown
  uint64_t ops_started;          // ProxyOps started
  uint64_t colls_started;        // collectives and p2p calls started
  char disabled_reason[128];     // NUL-terminated, set with kStateDisabled
  char reserved[kHeaderBytes - 416];
};
static_assert(sizeof(Header) == kHeaderBytes);
static_assert(offsetof(Header, host) == 128);
static_assert(offsetof(Header, ring_head) == 192);
static_assert(offsetof(Header, disabled_reason) == 288);

// CommEntry.flags
enum : uint32_t { kCommValid = 1, kCommFinalized = 2 };

struct CommEntry {
  uint64_t lock;
  uint64_t comm_hash;
  int32_t rank;
  int32_t n_ranks;
  int32_t n_nodes;
  uint32_t flags;
  // ---- live, outside the lock, accessed atomically ----
  uint64_t newest_seq_plus1;   // newest collective SeqNum started + 1 (0: none yet)
  uint64_t collectives;        // collectives started
  char name[16];               // communicator name (truncated), NUL-terminated
};
static_assert(sizeof(CommEntry) == 64);

// CollEntry.flags
// kCollTree: the collective ran NCCL's tree algorithm (its kernels stop in chain order).
enum : uint32_t { kCollValid = 1, kCollP2p = 2, kCollTree = 4 };

struct CollEntry {
  uint64_t lock;
  uint64_t comm_hash;
  uint64_t seq;                // SeqNum (p2p: per (comm, peer, direction) ordinal)
  uint64_t start_ns;           // the collective was enqueued (startEvent)
  int32_t rank;
  uint32_t flags;
  int32_t peer;                // p2p peer, else -1
  uint32_t comm_slot;
  // ---- live, outside the lock, accessed atomically (valid while `lock` is unchanged) ----
  uint64_t kernel_start_clk;   // minimum KernelCh start over its channels (GPU timer), 0: none
  uint64_t kernel_stop_clk;    // maximum KernelCh stop over its channels (GPU timer), 0: none
  uint64_t last_op_end_ns;     // newest stop of one of its ProxyOps, 0: none
};
static_assert(sizeof(CollEntry) == 72);

// OpRecord.flags
enum : uint16_t {
  kOpSend = 1,
  kOpP2p = 2,
  kOpPxn = 4,         // run for another process: no parent, no sequence
  kOpSeqKnown = 8,    // `seq` comes from the parent collective / p2p
  kOpInFlight = 16,   // in the in-flight table: not finished
};

struct OpRecord {
  uint64_t lock;
  uint64_t index;              // ring: its ring index; in flight: op_id (for matching)
  uint64_t op_id;              // per process, in start order, from 1
  uint64_t comm_hash;
  uint64_t seq;
  uint64_t bytes;              // bytes of its finished steps (<= n_steps x chunk)
  uint64_t start_ns;           // startEvent (the proxy scheduled it)
  uint64_t end_ns;             // stopEvent, 0 while in flight
  uint64_t progress_ns;        // ProxyOp InProgress state, 0: not seen
  uint64_t phase_ns[kPhases];  // summed over its finished steps
  uint64_t phase_since_ns;     // in flight: when its oldest open step entered `cur_phase`
  int32_t rank;
  int32_t peer;
  int32_t channel;
  uint32_t steps;              // finished steps summed in phase_ns
  uint32_t n_steps;            // steps NCCL announced
  uint32_t chunk_bytes;
  uint16_t flags;
  int8_t cur_phase;            // in flight: phase of its oldest open step, -1: none open
  uint8_t open_steps;          // in flight: steps started and not stopped
  uint32_t comm_slot;
  uint64_t fill_phase_ns[kPhases];  // the part of phase_ns from steps < kFillSteps
  uint32_t fill_steps;              // finished steps < kFillSteps (included in `steps`)
  // Its shortest step, saturated at UINT32_MAX, at least 1 when known (0: unknown, as in
  // shards written before this field existed, and before receives kept it): a send's shortest
  // SendWait (its wire), a receive's shortest RecvGpuWait (its GPU consuming a slot).
  // wire_busy_ns: a send's time its SendWait intervals cover after the first step completed
  // (sends complete in order on one connection, so the intervals are added as they finish).
  // Its steps after the first carry that time.
  // wire_queued_steps: of those steps, the ones whose SendWait began before the previous
  // send had completed (queued behind it).
  uint32_t shortest_step_ns;
  uint64_t wire_busy_ns;
  uint32_t wire_queued_steps;
  uint32_t reserved_;
};
static_assert(sizeof(OpRecord) == 232);
static_assert(sizeof(OpRecord) % 8 == 0 && sizeof(CollEntry) % 8 == 0 &&
              sizeof(CommEntry) % 8 == 0);

// ---- sequence locks over shared memory ------------------------------------------------------
// The payload is copied as 64-bit words with relaxed atomic accesses: no data race in the C++
// model, plain moves on x86-64 and aarch64.

inline uint64_t load_relaxed(const uint64_t* p) {
  return std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(p)).load(std::memory_order_relaxed);
}
inline uint64_t load_acquire(const uint64_t* p) {
  return std::atomic_ref<uint64_t>(*const_cast<uint64_t*>(p)).load(std::memory_order_acquire);
}
inline void store_relaxed(uint64_t* p, uint64_t v) {
  std::atomic_ref<uint64_t>(*p).store(v, std::memory_order_relaxed);
}
inline void store_release(uint64_t* p, uint64_t v) {
  std::atomic_ref<uint64_t>(*p).store(v, std::memory_order_release);
}

// Writer: takes the lock of `entry` (its first word) if no other writer holds it. Returns the
// even value it replaced, or UINT64_MAX when the entry is busy (the caller drops its update:
// the plugin never waits).
inline uint64_t seq_try_lock(uint64_t* lock) {
  std::atomic_ref<uint64_t> l(*lock);
  uint64_t v = l.load(std::memory_order_relaxed);
  if (v & 1) return UINT64_MAX;
  if (!l.compare_exchange_strong(v, v + 1, std::memory_order_acquire, std::memory_order_relaxed))
    return UINT64_MAX;
  std::atomic_thread_fence(std::memory_order_release);
  return v;
}
inline void seq_unlock(uint64_t* lock, uint64_t old_even) { store_release(lock, old_even + 2); }

// Writer holding the lock: copies `value`'s words after the lock word into `dst`.
template <class T>
inline void seq_store_payload(T* dst, const T& value) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % 8 == 0);
  uint64_t words[sizeof(T) / 8];
  std::memcpy(words, &value, sizeof(T));
  auto* out = reinterpret_cast<uint64_t*>(dst);
  for (size_t i = 1; i < sizeof(T) / 8; ++i) store_relaxed(out + i, words[i]);
}

// Reader: one attempt at a consistent copy of `src` into `out`. False when a writer was inside
// (lock odd) or came by during the copy; the caller retries or gives up. `out->lock` holds the
// even lock value the copy is consistent with.
template <class T>
inline bool seq_read(const T* src, T* out) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % 8 == 0);
  const auto* in = reinterpret_cast<const uint64_t*>(src);
  uint64_t words[sizeof(T) / 8];
  uint64_t v1 = load_acquire(in);
  if (v1 & 1) return false;
  words[0] = v1;
  for (size_t i = 1; i < sizeof(T) / 8; ++i) words[i] = load_relaxed(in + i);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (load_relaxed(in) != v1) return false;
  std::memcpy(out, words, sizeof(T));
  return true;
}

}  // namespace culprit::shard
