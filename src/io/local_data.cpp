#include "io/local_data.hpp"

#include <algorithm>

namespace culprit {

uint32_t LocalData::process_index(const std::string& host, int64_t pid) {
  std::string key = host;
  key.push_back('\0');
  key += std::to_string(pid);
  auto it = process_lookup_.find(key);
  if (it != process_lookup_.end()) return it->second;
  auto index = static_cast<uint32_t>(processes.size());
  processes.push_back({host, pid});
  process_lookup_.emplace(std::move(key), index);
  return index;
}

void LocalData::note_comm_rank(uint64_t comm_hash, int32_t rank, uint32_t process,
                               bool is_collective, uint64_t seq) {
  auto key = std::make_pair(comm_hash, rank);
  auto it = comm_rank_lookup_.find(key);
  if (it == comm_rank_lookup_.end()) {
    comm_rank_lookup_.emplace(key, comm_ranks.size());
    comm_ranks.push_back({comm_hash, rank, process, is_collective ? seq : 0, is_collective});
    return;
  }
  CommRankSeen& seen = comm_ranks[it->second];
  if (is_collective) {
    seen.newest_seq = seen.has_collective ? std::max(seen.newest_seq, seq) : seq;
    seen.has_collective = true;
  }
}

void LocalData::mark_cut_short(uint64_t comm_hash, int32_t rank) {
  auto it = comm_rank_lookup_.find(std::make_pair(comm_hash, rank));
  if (it != comm_rank_lookup_.end()) comm_ranks[it->second].cut_short = true;
}

void LocalData::absorb(LocalData&& other) {
  std::vector<uint32_t> remap(other.processes.size());
  for (size_t i = 0; i < other.processes.size(); ++i)
    remap[i] = process_index(other.processes[i].host, other.processes[i].pid);
  for (const CommRankSeen& c : other.comm_ranks) {
    note_comm_rank(c.comm_hash, c.rank, remap[c.process], false, 0);
    if (c.has_collective) note_comm_rank(c.comm_hash, c.rank, remap[c.process], true, c.newest_seq);
    if (c.cut_short) mark_cut_short(c.comm_hash, c.rank);
  }
  ops.reserve(ops.size() + other.ops.size());
  for (ProxyOpRecord r : other.ops) {
    r.process = remap[r.process];
    ops.push_back(r);
  }
  for (KernelStartRecord k : other.kernel_starts) {
    k.process = remap[k.process];
    kernel_starts.push_back(k);
  }
  for (InputReport& in : other.inputs) inputs.push_back(std::move(in));
  other = LocalData();
}

}  // namespace culprit
