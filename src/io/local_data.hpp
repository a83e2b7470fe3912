// What one analyzer process learned from its node's files: the processes seen, their ranks
// in each communicator, the ProxyOp records and kernel starts, and a report per input file.
// Every reader appends to a LocalData; the pipeline then windows, reduces and exchanges it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/flight_recorder_records.hpp"
#include "core/records.hpp"

namespace culprit {

// A GPU process as the inputs name it. Not every input names a pid: probing exports name a
// global rank (`_rank`) or only the parallel ranks of the process (tp/pp/dp), Flight
// Recorder dumps only the global rank. Identity is the whole tuple.
struct LocalProcess {
  std::string host;
  int64_t pid = -1;      // -1: no input names it
  int64_t rank = -1;     // global rank, -1: no input names it
  std::string label;     // what else names it when pid and rank are unknown (e.g. "tp=1,pp=0,dp=2")
};

// (communicator, rank) -> local process, with the newest collective sequence it recorded.
struct CommRankSeen {
  uint64_t comm_hash = 0;
  int32_t rank = -1;
  uint32_t process = 0;
  uint64_t newest_seq = 0;
  bool has_collective = false;
  bool has_seq = false;        // newest_seq is known (probing exports may leave seq blank)
  bool cut_short = false;      // its trace ended inside a collective (truncated file)
};

// Outcome of reading one input file.
struct InputReport {
  std::string host;
  std::string path;
  std::string format;              // nccl-json | probing-csv | probing-json | shard | mock | unknown
  std::string layout;              // nccl-json: the plugin layout detected (FORMATS.md §2):
                                   // 2.23 | 2.24-2.26 | 2.27+ | 2.28-2.29.2 | 2.29.3+ | unknown;
                                   // probing-csv/json: proxy_ops | net_qp | inflight_ops | coll_perf
  uint64_t records = 0;            // ProxyOp records kept
  uint64_t rejected = 0;           // lines, rows or steps rejected
  std::map<std::string, uint64_t> reject_reasons;
  std::string error;               // non-empty: the file as a whole could not be used
  bool truncated = false;          // the file was cut short: part of it is lost
  // One line each: what the reader had to assume about this file (a blank column, an
  // unnamed communicator, a clock taken from another table). Shown in the report's notes.
  std::vector<std::string> notes;

  void reject(const std::string& reason, uint64_t n = 1) {
    rejected += n;
    reject_reasons[reason] += n;
  }
};

// Durations of IB work requests of one queue pair as probing's `nccl.net_qp` table records
// them (FORMATS.md §3), summed per (host, rank, device, qp_num): evidence about the wire of
// a process, usable for `network_link` (a QP whose idle sends take longer than its peers').
struct QpStat {
  static constexpr int kBuckets = 48;  // log2 buckets of duration_ns: [2^k, 2^(k+1))

  std::string host;
  int32_t rank = -1;        // `rank` column of nccl.net_qp
  int32_t device = -1;      // IB device index
  uint32_t qp_num = 0;
  uint32_t process = 0;     // index into LocalData::processes (same identity rule as proxy_ops)
  uint64_t count = 0;       // work requests
  uint64_t bytes = 0;       // sum of `length`
  uint64_t sum_ns = 0;      // sum of `duration_ns` (saturating)
  uint64_t min_ns = UINT64_MAX;
  uint64_t max_ns = 0;
  uint64_t hist[kBuckets] = {};
  // The wire's own time (docs/attribution.md, "The idle-send test"): the send work requests
  // of the largest length seen that found the queue pair idle (posted after its previous send
  // had completed), kept as the sums of the logs of their durations and of their squares. A
  // receive work request has no length (NCCL sets none) and does not count.
  uint64_t wr_length = 0;
  uint64_t idle_sends = 0;
  double idle_log_ns_sum = 0;
  double idle_log_ns_sq_sum = 0;
  // The timed sends of the file being read, until fold_idle_sends().
  struct TimedSend {
    int64_t end_ns = 0;
    uint64_t duration_ns = 0;
    uint64_t length = 0;
  };
  std::vector<TimedSend> pending_sends;

  // `end_ns` is the row's `ts` (its completion) where known. A timed send waits in
  // `pending_sends` until fold_idle_sends(): rows need not come in completion order.
  void add(uint64_t length, uint64_t duration_ns, std::optional<int64_t> end_ns = std::nullopt);
  // Finds the idle sends among the pending ones (one file's), in completion order.
  void fold_idle_sends();
  void merge(const QpStat& other);
  double mean_ns() const { return count ? static_cast<double>(sum_ns) / static_cast<double>(count) : 0.0; }
  // Upper bound of the bucket that holds quantile q (0..1) of the durations: within 2x.
  uint64_t quantile_ns(double q) const;
  // Bytes per second of wire time (0 when no time was recorded).
  double bytes_per_second() const {
    return sum_ns ? static_cast<double>(bytes) * 1e9 / static_cast<double>(sum_ns) : 0.0;
  }
};

class LocalData {
 public:
  // Index of (host, pid, rank, label) in the process table, added on first sight.
  uint32_t process_index(const std::string& host, int64_t pid, int64_t rank = -1,
                         const std::string& label = std::string());
  uint32_t process_index(const LocalProcess& p) { return process_index(p.host, p.pid, p.rank, p.label); }
  // A record of (communicator, rank) by `process`. For a collective, `seq` is its sequence
  // number unless `seq_known` is false (the rank is then a member with no known position).
  void note_comm_rank(uint64_t comm_hash, int32_t rank, uint32_t process,
                      bool is_collective, uint64_t seq, bool seq_known = true);
  void mark_cut_short(uint64_t comm_hash, int32_t rank);

  std::vector<LocalProcess> processes;
  std::vector<CommRankSeen> comm_ranks;
  std::vector<ProxyOpRecord> ops;
  std::vector<KernelStartRecord> kernel_starts;
  std::vector<ChannelStopRecord> channel_stops;  // per channel, where its own stop is recorded
  std::vector<HandoffLine> handoffs;  // per-step traces' collective proxy ops
  std::vector<GatedHoldRecord> gated_holds;  // per-step traces' collective receive ops
  std::vector<InputReport> inputs;
  std::vector<QpStat> qp_stats;  // one per (host, rank, device, qp_num), probing nccl.net_qp
  // (host, rank) whose profiler dropped events or rows (probing's nccl.profiler_counters): their
  // tables miss rows, and a work request missing between two others makes a queued send look idle.
  std::set<std::pair<std::string, int32_t>> ranks_losing_events;
  std::vector<P2pCallCount> p2p_calls;  // per (process, comm, rank, peer, direction)
  std::vector<InflightRecord> inflight;  // probing nccl.inflight_ops: ops alive at a snapshot
  // PyTorch Flight Recorder dumps: per (rank, process group) state, members, ring entries.
  std::vector<FrGroupState> fr_groups;
  std::vector<FrMemberRun> fr_members;
  std::vector<FrOpRecord> fr_ops;

  // The statistics of (host, rank, device, qp_num), added on first sight.
  QpStat& qp_stat(const std::string& host, int32_t rank, int32_t device, uint32_t qp_num,
                  uint32_t process);

  // Appends everything of `other`, renumbering its process indices.
  void absorb(LocalData&& other);

 private:
  std::unordered_map<std::string, uint32_t> process_lookup_;
  std::map<std::pair<uint64_t, int32_t>, size_t> comm_rank_lookup_;
  size_t last_comm_rank_ = SIZE_MAX;  // one-entry cache: consecutive rows of one (comm, rank)
  std::map<std::tuple<std::string, int32_t, int32_t, uint32_t>, size_t> qp_lookup_;
};

}  // namespace culprit
