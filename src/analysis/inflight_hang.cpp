#include "analysis/inflight_hang.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

namespace culprit {
namespace {

// What the snapshot says about one communicator's collectives.
struct CommSnapshot {
  bool has_collective = false;      // some collective of it is in flight with a known sequence
  uint64_t newest = 0;              // the newest such sequence
  std::set<int32_t> members;        // ranks seen in any record of the communicator
  std::set<int32_t> inside_newest;  // ranks with an operation of `newest` (or of unknown seq) alive
};

std::map<uint64_t, CommSnapshot> snapshots_of(const Observations& obs) {
  std::map<uint64_t, CommSnapshot> comms;
  for (const InflightRecord& f : obs.inflight) {
    CommSnapshot& s = comms[f.comm_hash];
    s.members.insert(f.rank);
    if (f.peer >= 0) s.members.insert(f.peer);
    if (f.kind != InflightKind::kP2p && !f.seq_unknown) {
      s.newest = s.has_collective ? std::max(s.newest, f.seq) : f.seq;
      s.has_collective = true;
    }
  }
  for (const InflightRecord& f : obs.inflight) {
    CommSnapshot& s = comms[f.comm_hash];
    if (f.kind != InflightKind::kP2p && (f.seq_unknown || f.seq == s.newest)) s.inside_newest.insert(f.rank);
  }
  for (const GlobalCommRank& c : obs.comm_ranks) {
    auto it = comms.find(c.comm_hash);
    if (it != comms.end()) it->second.members.insert(c.rank);
  }
  return comms;
}

// The ranks below a communicator's highest that no record names (header).
std::set<int32_t> unrecorded_ranks(const CommSnapshot& s) {
  std::set<int32_t> missing;
  if (s.members.empty()) return missing;
  for (int32_t r = 0; r < *s.members.rbegin(); ++r)
    if (!s.members.count(r)) missing.insert(r);
  return missing;
}

// The newest collective each (communicator, rank) reached by any record (proxy ops, kernel
// records, snapshots): a member that reached N is not behind N.
std::map<std::pair<uint64_t, int32_t>, uint64_t> reached_of(const Observations& obs) {
  std::map<std::pair<uint64_t, int32_t>, uint64_t> reached;
  for (const GlobalCommRank& c : obs.comm_ranks)
    if (c.has_collective && !c.seq_unknown) reached[{c.comm_hash, c.rank}] = c.newest_seq;
  return reached;
}

// What the note adds for the stopped members that no record named.
std::string unrecorded_note(const std::vector<int32_t>& ranks) {
  if (ranks.empty()) return "";
  std::string list;
  for (int32_t r : ranks) list += (list.empty() ? "" : ", ") + std::to_string(r);
  return "; rank(s) " + list + " named by no record at all (a gap below the communicator's highest rank)";
}

}  // namespace

InflightVerdict judge_inflight(const Observations& obs,
                               const std::function<uint32_t(uint64_t, int32_t)>& process_of,
                               const std::function<bool(uint64_t)>& ranks_are_global) {
  InflightVerdict v;
  if (obs.inflight.empty()) return v;
  for (const InflightRecord& f : obs.inflight) v.in_flight.insert(f.process);
  const auto reached = reached_of(obs);

  for (auto& [comm, s] : snapshots_of(obs)) {
    if (!s.has_collective || s.inside_newest.empty()) continue;
    const std::set<int32_t> unrecorded =
        ranks_are_global && ranks_are_global(comm) ? unrecorded_ranks(s) : std::set<int32_t>{};
    s.members.insert(unrecorded.begin(), unrecorded.end());
    std::vector<uint32_t> stopped_here;
    std::vector<int32_t> stopped_unrecorded;
    for (int32_t rank : s.members) {
      if (s.inside_newest.count(rank)) continue;
      auto r = reached.find({comm, rank});
      if (r != reached.end() && r->second >= s.newest) continue;  // it got there: not behind
      uint32_t p = process_of(comm, rank);
      if (v.in_flight.count(p)) continue;  // inside another communicator's operation: blocked
      stopped_here.push_back(p);
      v.stopped.insert(p);
      if (!unrecorded.count(rank)) continue;
      v.unrecorded.insert(p);
      stopped_unrecorded.push_back(rank);
    }
    if (stopped_here.empty()) continue;
    for (int32_t rank : s.inside_newest) {
      uint32_t waiting = process_of(comm, rank);
      for (uint32_t p : stopped_here)
        if (p != waiting) v.waits.push_back({waiting, p, 1.0, "in_flight"});
    }
    char hash[24];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(comm));
    v.notes.push_back("in-flight snapshot: " + std::to_string(s.inside_newest.size()) + " rank(s) of comm " +
                      std::string(hash).substr(0, 8) + " still inside collective " + std::to_string(s.newest) +
                      ", " + std::to_string(stopped_here.size()) + " member(s) never entered it" +
                      unrecorded_note(stopped_unrecorded));
  }

  // Point-to-point: a rank alive inside a send or receive whose peer is inside nothing at
  // all waits for a peer that stopped.
  for (const InflightRecord& f : obs.inflight) {
    if (f.kind != InflightKind::kP2p || f.peer < 0) continue;
    uint32_t peer = process_of(f.comm_hash, f.peer);
    if (v.in_flight.count(peer) || peer == f.process) continue;
    v.stopped.insert(peer);
    v.waits.push_back({f.process, peer, 1.0, "in_flight"});
  }
  return v;
}

}  // namespace culprit
