// Pass 1 of the attribution, the context: the job's processes, which process holds each
// communicator rank, each communicator's size, and which communicators run collectives.
//
// A rank known only as somebody's peer (its node sent no data) gets a placeholder process
// the first time a later pass asks for it, named after its communicator and rank, so that
// evidence and waits can still point at it; placeholders() counts them (the results are
// then partial). In a communicator whose ranks are the global ranks (every process seen in it
// holds global rank = its rank there: the world communicator), the placeholder is that
// global rank's, on the host the launch layout places it (launch_layout.hpp) where it does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis/observations.hpp"

namespace culprit {

class ProcessContext {
 public:
  using RankKey = std::pair<uint64_t, int32_t>;  // (communicator hash, rank)

  explicit ProcessContext(const Observations& observations);

  // The process of a communicator rank; adds a placeholder for a rank without data.
  uint32_t process_of(uint64_t comm_hash, int32_t rank);
  // The process of a global rank (Flight Recorder dumps name only that); adds a placeholder
  // labelled `missing` for a rank no input holds.
  uint32_t process_of_global_rank(int64_t rank, const std::string& missing);

  const std::vector<GlobalProcess>& processes() const { return processes_; }
  size_t size() const { return processes_.size(); }
  const std::string& host_of(uint32_t process) const { return processes_[process].host; }
  // host:pid, as notes and debug lines name a process; "host rank R" where no input names its
  // pid (probing's exports), "host:?" where neither is known.
  std::string name_of(uint32_t process) const {
    const GlobalProcess& p = processes_[process];
    if (p.pid >= 0) return p.host + ":" + std::to_string(p.pid);
    return p.rank >= 0 ? p.host + " rank " + std::to_string(p.rank) : p.host + ":?";
  }
  size_t placeholders() const { return placeholders_; }
  const std::map<RankKey, uint32_t>& rank_map() const { return process_of_rank_; }
  // Ranks per communicator: one more than the highest rank any record names.
  const std::map<uint64_t, int32_t>& n_ranks() const { return n_ranks_; }
  // Whether a communicator's ranks are the global ranks (above): a rank of it that no record
  // names is then a known GPU.
  bool ranks_are_global(uint64_t comm_hash) const { return global_ordered_.count(comm_hash) > 0; }
  // A communicator some rank ran a collective on (else it runs only send/recv).
  bool is_collective(uint64_t comm_hash) const { return collective_comms_.count(comm_hash) > 0; }
  // A process that recorded a communicator rank of its own (placeholders did not).
  bool has_records(uint32_t process) const { return with_records_.count(process) > 0; }
  // The communicators each process holds a rank of.
  std::map<uint32_t, std::set<uint64_t>> comms_of_processes() const;

 private:
  // A placeholder for a global rank no input holds (process_of_global_rank's), on its host
  // by the launch layout.
  uint32_t placeholder_of_global_rank(int64_t rank);

  std::vector<GlobalProcess> processes_;
  std::map<RankKey, uint32_t> process_of_rank_;
  std::map<int64_t, uint32_t> process_of_global_rank_;
  std::map<uint64_t, int32_t> n_ranks_;
  std::set<uint64_t> collective_comms_;
  std::set<uint64_t> global_ordered_;
  std::set<uint32_t> with_records_;
  size_t placeholders_ = 0;
};

}  // namespace culprit
