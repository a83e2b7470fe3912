#include "analysis/process_context.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>

#include "analysis/launch_layout.hpp"

namespace culprit {

ProcessContext::ProcessContext(const Observations& obs) : processes_(obs.processes) {
  for (uint32_t p = 0; p < processes_.size(); ++p)
    if (processes_[p].rank >= 0) process_of_global_rank_.emplace(processes_[p].rank, p);
  for (const GlobalCommRank& c : obs.comm_ranks) {
    process_of_rank_[{c.comm_hash, c.rank}] = c.process;
    n_ranks_[c.comm_hash] = std::max(n_ranks_[c.comm_hash], c.rank + 1);
    if (c.has_collective) collective_comms_.insert(c.comm_hash);
    with_records_.insert(c.process);
  }
  for (const EdgeSummary& e : obs.edges)
    n_ranks_[e.key.comm_hash] = std::max({n_ranks_[e.key.comm_hash], e.key.src_rank + 1, e.key.dst_rank + 1});
  std::set<uint64_t> not_global;
  for (const GlobalCommRank& c : obs.comm_ranks) {
    if (processes_[c.process].rank == c.rank) global_ordered_.insert(c.comm_hash);
    else not_global.insert(c.comm_hash);
  }
  for (uint64_t comm : not_global) global_ordered_.erase(comm);
}

uint32_t ProcessContext::process_of(uint64_t comm_hash, int32_t rank) {
  auto it = process_of_rank_.find({comm_hash, rank});
  if (it != process_of_rank_.end()) return it->second;
  if (ranks_are_global(comm_hash)) {
    const bool known = process_of_global_rank_.count(rank) > 0;
    const uint32_t id = known ? process_of_global_rank(rank, "") : placeholder_of_global_rank(rank);
    process_of_rank_[{comm_hash, rank}] = id;
    return id;
  }
  auto id = static_cast<uint32_t>(processes_.size());
  char hash[24];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(comm_hash));
  processes_.push_back({"(no data)", -1, -1, "comm " + std::string(hash).substr(0, 8) + " rank " + std::to_string(rank)});
  ++placeholders_;
  process_of_rank_[{comm_hash, rank}] = id;
  return id;
}

uint32_t ProcessContext::process_of_global_rank(int64_t rank, const std::string& missing) {
  auto it = process_of_global_rank_.find(rank);
  if (it != process_of_global_rank_.end()) return it->second;
  auto id = static_cast<uint32_t>(processes_.size());
  processes_.push_back({"", -1, rank, missing});
  ++placeholders_;
  process_of_global_rank_[rank] = id;
  return id;
}

uint32_t ProcessContext::placeholder_of_global_rank(int64_t rank) {
  const std::optional<std::string> host = host_by_block_layout(processes_, rank);
  const uint32_t id = process_of_global_rank(
      rank, "global rank " + std::to_string(rank) + ", no records" + (host ? "; host from the launch layout" : ""));
  processes_[id].host = host.value_or("(no data)");
  return id;
}

std::map<uint32_t, std::set<uint64_t>> ProcessContext::comms_of_processes() const {
  std::map<uint32_t, std::set<uint64_t>> comms;
  for (const auto& [key, process] : process_of_rank_) comms[process].insert(key.first);
  return comms;
}

}  // namespace culprit
