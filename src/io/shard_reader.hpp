// Reader of the live-capture shard files written by libnccl-profiler-culprit.so
// (io/shard_format.hpp, docs/live-capture.md). Works on a file that is being written: every
// entry is copied under its sequence lock and retried while a writer is inside; an entry that
// stays inconsistent (its writer is slow, or was killed mid-write) is counted as torn and
// never used.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/local_data.hpp"
#include "io/shard_format.hpp"

namespace culprit {

// Everything one read of a shard saw, each entry a consistent copy.
struct ShardSnapshot {
  struct Comm {
    uint64_t comm_hash = 0;
    int32_t rank = -1;
    int32_t n_ranks = 0;
    int32_t n_nodes = 0;
    bool finalized = false;
    bool has_collective = false;
    uint64_t newest_seq = 0;     // newest collective SeqNum started (valid if has_collective)
    uint64_t collectives = 0;    // collectives started
    std::string name;
  };

  std::string path;
  std::string host;
  int64_t pid = 0;
  uint32_t clock = 0;            // shard::Clock
  uint32_t nccl_interface = 0;   // 4, 5 or 6
  uint64_t state = 0;            // shard::kState* bits
  std::string disabled_reason;
  uint64_t created_realtime_ns = 0;
  uint64_t created_clock_ns = 0;
  uint64_t last_event_ns = 0;    // newest event the writer saw (its clock)
  uint64_t ring_head = 0;        // completed ops ever appended
  uint64_t ring_capacity = 0;

  std::vector<Comm> comms;
  std::vector<shard::OpRecord> completed;   // from the ring, oldest first
  std::vector<shard::OpRecord> in_flight;   // started, not stopped (none also in `completed`)
  std::vector<shard::CollEntry> collectives;

  // Writer-side losses (header counters) and what this read could not use.
  uint64_t dropped_ops = 0, dropped_steps = 0, dropped_records = 0, dropped_tasks = 0;
  uint64_t pxn_ops = 0, orphan_ops = 0, ops_started = 0, colls_started = 0;
  uint64_t torn = 0;             // entries left odd or unwritten (writer stuck inside, or killed)
  uint64_t busy = 0;             // entries a live writer rewrote during every read attempt
  std::string error;             // non-empty: not a usable shard
};

// Reads one shard file; false (with `error` set) when it is not a usable shard.
bool read_shard_snapshot(const std::string& path, ShardSnapshot& out);

// Reads one shard into `data` (format "shard"): the process (host and pid from the header;
// `host` only when the header has none), its communicator ranks with the newest collective
// it started (so that a process that never posted sequence N while its peers wait in N
// shows as behind), a ProxyOpRecord per completed op and per in-flight op with finished
// steps, kernel start clocks, and an InputReport.
void read_shard_file(const std::string& path, const std::string& host, LocalData& data);

// True when the file starts with the shard magic.
bool is_shard_file(const std::string& path);

}  // namespace culprit
