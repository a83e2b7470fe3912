#include "analysis/flight_recorder_hang.hpp"

#include <algorithm>
#include <set>
#include <tuple>

namespace culprit {
namespace {

struct Member {
  int64_t rank = -1;
  const FrGroupState* state = nullptr;  // its pg_status in this group; null: no usable dump
};

struct Group {
  std::string name, desc;
  bool p2p = false;  // some member sent or received in it: its counters are not comparable
  std::vector<Member> members;  // group-rank order where pg_config named them
};

std::string group_title(const Group& g) {
  return "group " + g.name + (g.desc.empty() ? "" : " (" + g.desc + ")");
}

// Every group of the dumps with its members and their states.
std::map<uint64_t, Group> groups_of(const Observations& obs) {
  // group -> (group rank, global rank), from the member runs (a bad run counts for nothing).
  std::map<uint64_t, std::vector<std::pair<int64_t, int64_t>>> listed;
  for (const FrMemberRun& m : obs.fr_members)
    for (int64_t i = 0; i < m.count && i < (int64_t{1} << 24); ++i)
      listed[m.group].emplace_back(m.first_group_rank + i, m.first_rank + i * m.stride);
  std::map<uint64_t, Group> groups;
  std::map<uint64_t, std::map<int64_t, const FrGroupState*>> states;  // group -> rank -> its state
  for (const FrGroupState& s : obs.fr_groups) {
    Group& g = groups[s.group];
    if (g.name.empty()) g.name = fr_text(s.name);
    if (g.desc.empty()) g.desc = fr_text(s.desc);
    g.p2p = g.p2p || s.has_p2p;
    states[s.group].emplace(s.global_rank, &s);
  }
  for (auto& [id, g] : groups) {
    std::vector<std::pair<int64_t, int64_t>>& members = listed[id];
    std::sort(members.begin(), members.end());
    const std::map<int64_t, const FrGroupState*>& of_rank = states[id];
    std::set<int64_t> seen;
    for (const auto& [group_rank, rank] : members)
      if (seen.insert(rank).second) g.members.push_back({rank, nullptr});
    for (const auto& [rank, state] : of_rank)  // members a config did not list
      if (seen.insert(rank).second) g.members.push_back({rank, nullptr});
    for (Member& m : g.members)
      if (auto it = of_rank.find(m.rank); it != of_rank.end()) m.state = it->second;
  }
  return groups;
}

bool counts(const FrGroupState* s) { return s && s->has_status && s->last_enqueued >= 0 && s->last_completed >= 0; }

// The judgement as it is built: waits between global ranks, roots with their reasons.
class Diagnosis {
 public:
  Diagnosis(const Observations& obs, const std::function<uint32_t(int64_t, const std::string&)>& process_of_rank)
      : obs_(obs), process_of_rank_(process_of_rank) {
    for (const FrGroupState& s : obs.fr_groups) {
      dumped_.insert(s.global_rank);
      if (counts(&s)) with_progress_.insert(s.global_rank);
      if (counts(&s) && s.last_enqueued > s.last_completed) unfinished_.insert(s.global_rank);
    }
    for (const FrOpRecord& r : obs.fr_ops) {
      if (r.state != FrOpState::kCompleted) unfinished_.insert(r.global_rank);
      if (r.is_p2p || r.collective_seq < 0) continue;
      collectives_of_group_[r.group].push_back(&r);
      op_at_.emplace(std::make_tuple(r.group, static_cast<int64_t>(r.global_rank), r.collective_seq), fr_text(r.op));
    }
    for (const GlobalProcess& p : obs.processes)
      if (p.rank >= 0) with_file_.insert(p.rank);
  }

  FlightRecorderVerdict run() {
    const std::map<uint64_t, Group> groups = groups_of(obs_);
    for (const auto& [id, g] : groups) {
      if (!g.p2p) judge_collectives(id, g);
      report_mismatches(id, g);
    }
    judge_point_to_point(groups);
    name_roots();
    verdict_.notes.insert(verdict_.notes.end(), mismatches_.begin(), mismatches_.end());
    note_stuck_groups();
    return std::move(verdict_);
  }

 private:
  // The operation a rank recorded for collective `seq` of a group ("" when its ring has none).
  std::string op_at(uint64_t group, int64_t rank, int64_t seq) const {
    auto it = op_at_.find(std::make_tuple(group, rank, seq));
    return it == op_at_.end() ? "" : it->second;
  }

  std::string collective_name(uint64_t group, int64_t rank, int64_t seq) const {
    std::string op = op_at(group, rank, seq);
    return "collective " + std::to_string(seq) + (op.empty() ? "" : " (" + op + ")");
  }

  void wait(int64_t from, int64_t to, const std::string& why) {
    if (from == to) return;
    waits_.insert({from, to});
    if (!why_waited_.count(to)) why_waited_[to] = why;
  }

  // What each member's oldest unfinished collective is compared with, computed once per
  // group so that a group of thousands costs a sort, not a product.
  struct Progress {
    std::vector<const Member*> by_enqueued;  // members with a status, the furthest behind first
    // Members whose progress no dump tells: none, or none usable, or one whose every group
    // status is unknown (named groups it could not be matched to). A member with a status in
    // other groups but not this one says nothing here.
    std::vector<int64_t> unknown;
    const Member* most_completed[2] = {nullptr, nullptr};
  };

  Progress progress_of(const Group& g) const {
    Progress p;
    for (const Member& m : g.members) {
      if (!counts(m.state)) {
        if (!with_progress_.count(m.rank)) p.unknown.push_back(m.rank);
        continue;
      }
      p.by_enqueued.push_back(&m);
      const int64_t done = m.state->last_completed;
      if (!p.most_completed[0] || done > p.most_completed[0]->state->last_completed) {
        p.most_completed[1] = p.most_completed[0];
        p.most_completed[0] = &m;
      } else if (!p.most_completed[1] || done > p.most_completed[1]->state->last_completed) {
        p.most_completed[1] = &m;
      }
    }
    std::stable_sort(p.by_enqueued.begin(), p.by_enqueued.end(), [](const Member* a, const Member* b) {
      return a->state->last_enqueued < b->state->last_enqueued;
    });
    return p;
  }

  // Each waiting member points at no more than this many of the members it waits for, the
  // furthest behind first: enough for the chains, and a group of thousands stays small.
  static constexpr size_t kMaxWaitsPerMember = 16;

  void judge_collectives(uint64_t id, const Group& g) {
    const Progress p = progress_of(g);
    bool stuck_noted = false;
    for (const Member& m : g.members) {
      if (!counts(m.state) || m.state->last_enqueued <= m.state->last_completed) continue;
      const int64_t next = m.state->last_completed + 1;
      const std::string where = group_title(g) + " " + collective_name(id, m.rank, next);
      size_t behind = 0;
      for (const Member* q : p.by_enqueued) {
        if (q->state->last_enqueued >= next || behind == kMaxWaitsPerMember) break;
        ++behind;
        wait(m.rank, q->rank, "rank " + std::to_string(m.rank) + " waits for it in " + where +
                                  " (it enqueued only up to " + std::to_string(q->state->last_enqueued) + ")");
      }
      if (behind > 0) continue;
      const Member* finished = p.most_completed[0] == &m ? p.most_completed[1] : p.most_completed[0];
      if (finished && finished->state->last_completed >= next) {
        stall(m.rank, "rank " + std::to_string(m.rank) + " stopped completing work: " + where +
                          " is enqueued but never completed on it, while rank " + std::to_string(finished->rank) +
                          " completed up to " + std::to_string(finished->state->last_completed));
      } else if (!p.unknown.empty()) {
        for (size_t i = 0; i < p.unknown.size() && i < kMaxWaitsPerMember; ++i)
          wait(m.rank, p.unknown[i], "rank " + std::to_string(m.rank) + " waits in " + where);
      } else if (!stuck_noted) {
        stuck_noted = true;
        stuck_.push_back(group_title(g) + " " + collective_name(id, m.rank, next));
      }
    }
  }

  void stall(int64_t rank, const std::string& reason) {
    if (!stalled_.count(rank)) stalled_[rank] = reason;
  }

  // An unfinished send or receive waits for its partner.
  void judge_point_to_point(const std::map<uint64_t, Group>& groups) {
    for (const FrOpRecord& r : obs_.fr_ops) {
      if (!r.is_p2p || r.state == FrOpState::kCompleted || r.peer_global_rank < 0) continue;
      auto g = groups.find(r.group);
      const std::string title = g == groups.end() ? "its group" : group_title(g->second);
      wait(r.global_rank, r.peer_global_rank,
           "rank " + std::to_string(r.global_rank) + " waits for it in " + fr_text(r.op) + " of " + title +
               (r.p2p_seq >= 0 ? " (p2p " + std::to_string(r.p2p_seq) + ")" : ""));
    }
  }

  // Members at the same sequence that disagree on the operation, its data type or (for
  // operations whose inputs are alike on every rank) its sizes.
  void report_mismatches(uint64_t id, const Group& g) {
    std::map<int64_t, const FrOpRecord*> first_at;
    size_t found = 0;
    auto ops = collectives_of_group_.find(id);
    if (ops == collectives_of_group_.end()) return;
    for (const FrOpRecord* op_record : ops->second) {
      const FrOpRecord& r = *op_record;
      auto [it, added] = first_at.emplace(r.collective_seq, &r);
      if (added || it->second->global_rank == r.global_rank) continue;
      const FrOpRecord& a = *it->second;
      const std::string op = fr_text(a.op);
      const bool sizes_alike = op.find("to_all") == std::string::npos && op != "nccl:gather" && op != "nccl:scatter";
      const bool differs = op != fr_text(r.op) || fr_text(a.dtypes) != fr_text(r.dtypes) ||
                           (sizes_alike && fr_text(a.sizes) != fr_text(r.sizes));
      if (!differs) continue;
      if (++found <= 3)
        mismatches_.push_back("flight recorder: mismatch in " + group_title(g) + " at collective " +
                                 std::to_string(r.collective_seq) + ": " + side(a) + ", " + side(r));
    }
    if (found > 3)
      mismatches_.push_back("flight recorder: " + std::to_string(found - 3) + " more mismatch(es) in " + group_title(g));
  }

  static std::string side(const FrOpRecord& r) {
    return "rank " + std::to_string(r.global_rank) + " runs " + fr_text(r.op) + " " + fr_text(r.sizes) + " " + fr_text(r.dtypes);
  }

  void name_roots() {
    std::set<int64_t> waits_for_someone;
    for (const auto& [from, to] : waits_) waits_for_someone.insert(from);
    std::map<int64_t, std::string> roots = stalled_;
    for (const auto& [rank, why] : why_waited_) {
      if (roots.count(rank)) continue;
      if (!dumped_.count(rank)) {
        roots[rank] = "rank " + std::to_string(rank) +
                      (with_file_.count(rank) ? "'s dump could not be used (see inputs)" : " wrote no dump") +
                      " while others wait for it: " + why;
      } else if (!waits_for_someone.count(rank) && !unfinished_.count(rank)) {
        roots[rank] = "rank " + std::to_string(rank) +
                      " stopped issuing work: it has nothing unfinished in any group while " + why;
      }
    }
    for (const auto& [rank, reason] : roots) {
      const std::string label = dumped_.count(rank) ? "" : with_file_.count(rank) ? "dump unusable" : "no dump";
      verdict_.stopped[process_of_rank_(rank, label)] = reason;
      verdict_.notes.push_back("flight recorder: " + reason);
    }
    for (const auto& [from, to] : waits_) {
      if (!dumped_.count(to) && !roots.count(to)) continue;  // an absent rank nobody needs
      verdict_.waits.push_back({process_of_rank_(from, ""), process_of_rank_(to, ""), 1.0, "flight_recorder"});
    }
  }

  // Groups whose members are all inside one collective that none completed. Behind a root
  // they are its victims' groups; without one they are all the dumps can say.
  void note_stuck_groups() {
    if (stuck_.empty()) return;
    if (!verdict_.stopped.empty()) {
      verdict_.notes.push_back("flight recorder: in " + std::to_string(stuck_.size()) +
                               " group(s) every member is inside one collective that none completed (" + stuck_.front() +
                               (stuck_.size() > 1 ? ", ..." : "") + "): blocked behind the ranks above");
      return;
    }
    for (size_t i = 0; i < stuck_.size() && i < 3; ++i)
      verdict_.notes.push_back("flight recorder: every member of " + stuck_[i] +
                               " is inside it and none completed it: the dumps cannot tell which one holds the others");
    if (stuck_.size() > 3) verdict_.notes.push_back("flight recorder: " + std::to_string(stuck_.size() - 3) + " more such group(s)");
  }

  const Observations& obs_;
  const std::function<uint32_t(int64_t, const std::string&)>& process_of_rank_;
  std::set<int64_t> dumped_;      // ranks with a usable dump
  std::set<int64_t> with_progress_;  // ranks with a known status in some group
  std::set<int64_t> unfinished_;  // ranks with an unfinished collective or entry
  std::set<int64_t> with_file_;   // ranks any input names (an unusable dump included)
  std::map<uint64_t, std::vector<const FrOpRecord*>> collectives_of_group_;
  std::map<std::tuple<uint64_t, int64_t, int64_t>, std::string> op_at_;  // (group, rank, seq) -> operation
  std::set<std::pair<int64_t, int64_t>> waits_;
  std::map<int64_t, std::string> why_waited_;  // the first wait found for each waited-for rank
  std::map<int64_t, std::string> stalled_;
  std::vector<std::string> stuck_;
  std::vector<std::string> mismatches_;
  FlightRecorderVerdict verdict_;
};

}  // namespace

FlightRecorderVerdict judge_flight_recorder(
    const Observations& observations, const std::function<uint32_t(int64_t, const std::string&)>& process_of_rank) {
  if (observations.fr_groups.empty() && observations.fr_ops.empty()) return {};
  return Diagnosis(observations, process_of_rank).run();
}

}  // namespace culprit
