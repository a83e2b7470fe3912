// The plugin's shard file (io/shard_format.hpp): created once at the first init, complete
// before a reader can see it, then only published into, lock-free: seqlocked entries, the
// ring of completed ops, counters and the heartbeat in the header.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "io/shard_format.hpp"

namespace culprit::plugin {

struct PluginConfig;

// What the header says about the writing process, besides the geometry.
struct ShardIdentity {
  int nccl_interface = 0;  // the interface NCCL loaded first
  pid_t pid = 0;
  int event_mask = 0;
};

// mkdir -p of the shard's folder (0700; /dev/shm/nccl-culprit itself 01777, shared by users).
bool make_shard_folder(const PluginConfig& config, char* err, size_t err_cap);

struct ShardWriter {
  uint8_t* map = nullptr;
  size_t map_bytes = 0;
  shard::Header* hdr = nullptr;
  shard::CommEntry* comms = nullptr;
  shard::CollEntry* colls = nullptr;
  shard::OpRecord* inflight = nullptr;
  shard::OpRecord* ring = nullptr;
  uint64_t ring_mask = 0;
  char path[4096] = {0};

  // Creates <dir>/<host>-<pid>.shard under a temporary name, sized and backed (no SIGBUS
  // later when tmpfs fills up), header written, then renamed so that a reader never sees a
  // half-made file. False with the reason in `err`.
  bool create(const PluginConfig& config, const ShardIdentity& id, char* err, size_t err_cap);

  // Copies `value` into a seqlocked entry; false (nothing written) if a writer is inside.
  template <class T>
  static bool publish(T* dst, const T& value) {
    uint64_t old = shard::seq_try_lock(&dst->lock);
    if (old == UINT64_MAX) return false;
    shard::seq_store_payload(dst, value);
    shard::seq_unlock(&dst->lock, old);
    return true;
  }
  // Appends a completed op to the ring; a slot another writer is inside is dropped, counted.
  void append_completed(const shard::OpRecord& rec);
  // Adds to one of the header's counters (dropped_ops, ops_started, ...).
  void count(uint64_t shard::Header::*counter, uint64_t n = 1) {
    std::atomic_ref<uint64_t>(hdr->*counter).fetch_add(n, std::memory_order_relaxed);
  }
  // The newest event time seen, for readers to tell a live writer from a silent one.
  void heartbeat(uint64_t t) {
    if (hdr != nullptr && t > shard::load_relaxed(&hdr->last_event_ns))
      shard::store_relaxed(&hdr->last_event_ns, t);
  }
  // Sets the disabled state and its reason (no-op before the file exists).
  void mark_disabled(const char* why);
  // The process's last communicator was finalized: say so, flush, remove if asked.
  void mark_finalized(bool remove_file);
  // A communicator was initialised again after every earlier one was finalized.
  void clear_finalized() {
    std::atomic_ref<uint64_t>(hdr->state).fetch_and(~uint64_t{shard::kStateFinalized},
                                                     std::memory_order_relaxed);
  }
};

}  // namespace culprit::plugin
