#include "analysis/flight_recorder_join.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace culprit {
namespace {

bool is_dump_process(const GlobalProcess& p) { return p.pid < 0 && p.rank >= 0; }

// The traced process of each (host, world rank), and of each world rank alone when only
// one host holds it.
struct WorldRanks {
  std::map<std::pair<std::string, int64_t>, uint32_t> by_host;
  std::map<int64_t, uint32_t> by_rank;
  std::set<int64_t> ambiguous;
};

WorldRanks world_ranks(const Observations& obs, int32_t world_size) {
  std::map<uint64_t, int32_t> size;
  for (const GlobalCommRank& c : obs.comm_ranks) size[c.comm_hash] = std::max(size[c.comm_hash], c.rank + 1);
  for (const EdgeSummary& e : obs.edges)
    size[e.key.comm_hash] = std::max({size[e.key.comm_hash], e.key.src_rank + 1, e.key.dst_rank + 1});
  WorldRanks w;
  for (const GlobalCommRank& c : obs.comm_ranks) {
    if (size[c.comm_hash] != world_size || is_dump_process(obs.processes[c.process])) continue;
    w.by_host.emplace(std::make_pair(obs.processes[c.process].host, int64_t{c.rank}), c.process);
    auto [it, added] = w.by_rank.emplace(c.rank, c.process);
    if (!added && it->second != c.process) w.ambiguous.insert(c.rank);
  }
  return w;
}

int32_t largest_group(const Observations& obs) {
  int32_t n = 0;
  for (const FrGroupState& g : obs.fr_groups) n = std::max(n, g.group_size);
  return n;
}

// Process indices renumbered after dropping the joined dump processes.
template <typename Record>
void remap(std::vector<Record>& records, const std::vector<uint32_t>& to) {
  for (Record& r : records) r.process = to[r.process];
}

}  // namespace

bool needs_flight_recorder_join(const Observations& obs) {
  if (obs.fr_groups.empty()) return false;
  return std::any_of(obs.processes.begin(), obs.processes.end(), [](const GlobalProcess& p) { return p.pid >= 0; });
}

Observations join_flight_recorder_ranks(const Observations& obs, std::vector<std::string>& notes) {
  Observations out = obs;
  const WorldRanks world = world_ranks(obs, largest_group(obs));
  std::vector<int64_t> joined_to(obs.processes.size(), -1);
  size_t joined = 0, unmatched = 0;
  for (uint32_t p = 0; p < obs.processes.size(); ++p) {
    const GlobalProcess& d = obs.processes[p];
    if (!is_dump_process(d)) continue;
    auto on_host = world.by_host.find({d.host, d.rank});
    auto on_rank = world.by_rank.find(d.rank);
    if (on_host != world.by_host.end()) joined_to[p] = on_host->second;
    else if (d.host.empty() && on_rank != world.by_rank.end() && !world.ambiguous.count(d.rank)) joined_to[p] = on_rank->second;
    if (joined_to[p] >= 0) ++joined;
    else ++unmatched;
  }
  if (joined == 0) return out;
  // Keep every process not joined, in order; a joined dump takes its traced process's index.
  std::vector<uint32_t> to(obs.processes.size());
  out.processes.clear();
  for (uint32_t p = 0; p < obs.processes.size(); ++p)
    if (joined_to[p] < 0) {
      to[p] = static_cast<uint32_t>(out.processes.size());
      out.processes.push_back(obs.processes[p]);
    }
  for (uint32_t p = 0; p < obs.processes.size(); ++p)
    if (joined_to[p] >= 0) {
      to[p] = to[static_cast<uint32_t>(joined_to[p])];
      out.processes[to[p]].rank = obs.processes[p].rank;
    }
  remap(out.comm_ranks, to);
  remap(out.qps, to);
  remap(out.p2p_calls, to);
  remap(out.inflight, to);
  remap(out.fr_groups, to);
  remap(out.fr_ops, to);
  notes.push_back("flight recorder: " + std::to_string(joined) + " dump(s) joined to the traced process of the same world rank" +
                  (unmatched ? ", " + std::to_string(unmatched) + " matched none" : ""));
  return out;
}

}  // namespace culprit
