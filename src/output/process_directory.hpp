// Looking processes up and naming them as a person reads them, for the text report and the
// HTML page: "node001:pid 4702"; "node001 rank 5" or "node001 tp=1,pp=0,dp=2" when no input
// names a pid (never an invented one); "process 7" when the process table lacks it.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "core/results.hpp"

namespace culprit {

class ProcessDirectory {
 public:
  explicit ProcessDirectory(const AnalysisResults& results);

  // The row of process `id` (ids are the table's row index in practice; not relied on).
  const ProcessRow* find(int64_t id) const;
  std::string name(int64_t id) const;
  // "rank 5/32" in the process's widest communicator, or "" when unknown.
  std::string rank(uint32_t id) const;
  // The process's rank in its widest communicator, or -1.
  int32_t widest_rank(uint32_t id) const;

  static std::string host(const std::string& h) { return h.empty() ? "?" : h; }

 private:
  const AnalysisResults& results_;
  std::unordered_map<uint32_t, std::size_t> by_id_;
  std::unordered_map<uint32_t, const CommRankRow*> widest_rank_;
};

}  // namespace culprit
