#include "analysis/sequence_hang.hpp"

#include <algorithm>
#include <tuple>

namespace culprit {

std::set<uint32_t> stopped_by_sequence(const Observations& obs,
                                       const std::map<std::pair<uint64_t, int32_t>, uint32_t>& process_of_rank) {
  std::set<uint32_t> hung;
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> seq_range;  // comm -> (min, max)
  for (const GlobalCommRank& c : obs.comm_ranks) {
    if (!c.has_collective || c.seq_unknown || c.cut_short) continue;
    auto [it, added] = seq_range.emplace(c.comm_hash, std::make_pair(c.newest_seq, c.newest_seq));
    it->second.first = std::min(it->second.first, c.newest_seq);
    it->second.second = std::max(it->second.second, c.newest_seq);
  }
  // A laggard of one communicator that is up to date in another communicator that has
  // laggards is blocked there (it waits inside that collective), not stopped.
  std::set<uint32_t> laggards, blocked;
  for (const GlobalCommRank& c : obs.comm_ranks) {
    auto it = seq_range.find(c.comm_hash);
    if (it == seq_range.end() || !c.has_collective || c.seq_unknown || c.cut_short) continue;
    auto [lowest, newest] = it->second;
    if (lowest == newest) continue;
    if (c.newest_seq == lowest) laggards.insert(c.process);
    if (c.newest_seq == newest) blocked.insert(c.process);
  }
  // A laggard with a send or receive its partner never matched waits inside that call (the
  // k-th Send of a rank to a peer meets the k-th Recv of that peer from it): blocked too.
  // This separates the stage of a pipeline that stopped from the stages stuck behind it.
  std::map<std::tuple<uint64_t, int32_t, int32_t, uint8_t>, uint64_t> calls;
  for (const P2pCallCount& c : obs.p2p_calls) {
    uint64_t& n_calls = calls[{c.comm_hash, c.rank, c.peer, c.is_send}];
    n_calls = std::max(n_calls, c.calls);
  }
  std::set<uint32_t> waited_on;
  for (const auto& [key, sends] : calls) {
    const auto& [comm, from, to, is_send] = key;
    if (!is_send) continue;
    auto recvs = calls.find({comm, to, from, 0});
    if (recvs == calls.end() || sends == recvs->second) continue;  // no data from the partner, or matched
    auto waiting = process_of_rank.find({comm, sends > recvs->second ? from : to});
    auto awaited = process_of_rank.find({comm, sends > recvs->second ? to : from});
    if (waiting != process_of_rank.end()) blocked.insert(waiting->second);
    if (awaited != process_of_rank.end()) waited_on.insert(awaited->second);
  }
  for (uint32_t p : laggards)
    if (!blocked.count(p)) hung.insert(p);
  // The rank its send/recv partners wait for that waits for nobody itself stopped, unless it
  // may be waiting inside a collective: a communicator of its with laggards. Where every
  // collective communicator's members reached the same sequence (a pipeline whose stages
  // also share a data-parallel or world collective), no collective holds anyone and the
  // sends and receives alone tell who stopped.
  std::set<uint32_t> in_lagging_collective;
  for (const GlobalCommRank& c : obs.comm_ranks) {
    if (!c.has_collective) continue;
    auto it = seq_range.find(c.comm_hash);
    if (it == seq_range.end() || it->second.first != it->second.second || c.seq_unknown || c.cut_short)
      in_lagging_collective.insert(c.process);
  }
  for (uint32_t p : waited_on)
    if (!blocked.count(p) && !in_lagging_collective.count(p)) hung.insert(p);
  return hung;
}

}  // namespace culprit
