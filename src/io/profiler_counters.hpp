// probing's nccl.profiler_counters table (FORMATS.md §3; docs/formats.md): per rank, how its
// profiler fared. Its counters are cumulative, so each rank's largest count is what it lost:
//   - pool_exhausted: events NCCL reported while every slot of probing's event pool was taken;
//     they were dropped, so the rank's tables miss rows (waits, work requests, kernel windows);
//   - write_errors: rows that could not be written to the tables;
//   - ring_rows_overwritten: rows the tables' ring buffer overwrote: the oldest are gone, the
//     tables hold the newest only (a shorter window, nothing wrong within it).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace culprit {

class ProfilerCounterTally {
 public:
  void add(const std::string& host, int32_t rank, uint64_t pool_exhausted, uint64_t write_errors,
           uint64_t rows_overwritten);
  // The ranks (host, rank) whose profiler lost events or rows.
  std::set<std::pair<std::string, int32_t>> losing_ranks() const;
  // One note per kind of loss seen, naming up to kMaxNamed ranks (each under 180 characters).
  std::vector<std::string> notes() const;

  static constexpr size_t kMaxNamed = 2;

 private:
  struct Counts {
    uint64_t pool_exhausted = 0, write_errors = 0, rows_overwritten = 0;
  };
  std::map<std::pair<std::string, int32_t>, Counts> of_;
};

}  // namespace culprit
