// What one analyzer process learned from its node's files: the processes seen, their ranks
// in each communicator, the ProxyOp records and kernel starts, and a report per input file.
// Every reader appends to a LocalData; the pipeline then windows, reduces and exchanges it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/records.hpp"

namespace culprit {

struct LocalProcess {
  std::string host;
  int64_t pid = 0;
};

// (communicator, rank) -> local process, with the newest collective sequence it recorded.
struct CommRankSeen {
  uint64_t comm_hash = 0;
  int32_t rank = -1;
  uint32_t process = 0;
  uint64_t newest_seq = 0;
  bool has_collective = false;
  bool cut_short = false;      // its trace ended inside a collective (truncated file)
};

// Outcome of reading one input file.
struct InputReport {
  std::string host;
  std::string path;
  std::string format;              // nccl-json | probing-csv | shard | mock | unknown
  uint64_t records = 0;            // ProxyOp records kept
  uint64_t rejected = 0;           // lines, rows or steps rejected
  std::map<std::string, uint64_t> reject_reasons;
  std::string error;               // non-empty: the file as a whole could not be used

  void reject(const std::string& reason, uint64_t n = 1) {
    rejected += n;
    reject_reasons[reason] += n;
  }
};

class LocalData {
 public:
  // Index of (host, pid) in the process table, added on first sight.
  uint32_t process_index(const std::string& host, int64_t pid);
  void note_comm_rank(uint64_t comm_hash, int32_t rank, uint32_t process,
                      bool is_collective, uint64_t seq);
  void mark_cut_short(uint64_t comm_hash, int32_t rank);

  std::vector<LocalProcess> processes;
  std::vector<CommRankSeen> comm_ranks;
  std::vector<ProxyOpRecord> ops;
  std::vector<KernelStartRecord> kernel_starts;
  std::vector<InputReport> inputs;

  // Appends everything of `other`, renumbering its process indices.
  void absorb(LocalData&& other);

 private:
  std::unordered_map<std::string, uint32_t> process_lookup_;
  std::map<std::pair<uint64_t, int32_t>, size_t> comm_rank_lookup_;
};

}  // namespace culprit
