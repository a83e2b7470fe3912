#include "analysis/last_arrivals.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <vector>

#include "analysis/robust_stats.hpp"

namespace culprit {
namespace {

using Who = std::pair<uint32_t, uint64_t>;

// The others' yardstick for one member: their median, and their plain sample variance.
// Not clipped, unlike the place tests' (place_peers.hpp): healthy members' waits are the
// collective's end less their own arrivals, which spread with their speeds far wider in the
// tails than in the middle, and a clip would take the tails for outliers and the middle for
// the spread. A second late member inflates the variance, which errs on the safe side.
struct Yardstick {
  double center = 0;
  double variance = 0;
  double df = 0;
};

Yardstick yardstick_of(std::vector<double> others) {
  Yardstick y;
  const double m = static_cast<double>(others.size());
  double mean = 0;
  for (double v : others) mean += v / m;
  double squares = 0;
  for (double v : others) squares += (v - mean) * (v - mean);
  y.df = m - 1;
  y.center = median_of(std::move(others));
  // The departure from a median of m others carries that median's own sampling variance.
  y.variance = squares / y.df * (1 + kMedianEfficiency * kMedianEfficiency / m);
  return y;
}

// A member's wait deficit, and in a hierarchy what tells it from its part: the departure of
// its neighbours' least wait on it, and its wait deficit on each channel judged.
struct Deficit {
  WaitDeficit wait;
  bool hierarchy = false;
  // It meets one peer on each channel it uses (a tree's leaf, or the root of one of NCCL's
  // binary trees, which has one child): its neighbours' wait on it does not tell it apart.
  bool one_peer_per_channel = false;
  WaitDeficit kept_waiting;
  std::vector<WaitDeficit> per_channel;
  bool in_first_tree = false, in_second_tree = false;  // judged on a channel of each
};

using Groups = std::map<std::pair<uint64_t, uint32_t>, std::vector<MemberWait>>;

// Whether some member of a group forwards to or gathers from several peers on one channel,
// as a tree's do: then their parts differ in how much of the collective they wait for. On a
// ring every member receives from one peer and sends to one per channel, and members' longest
// waits differ only by their arrivals and noise.
bool parts_in_hierarchy(const std::vector<MemberWait>& group) {
  for (const MemberWait& m : group)
    for (const auto& [receives, sends] : m.place.per_channel)
      if (receives > 1 || sends > 1) return true;
  return false;
}

// Member i's figure above the others' median, its sigma (the others' spread with the median's
// own sampling variance) and degrees of freedom; sigma 0 where the others show no spread.
WaitDeficit departure(const std::vector<double>& figures, size_t i) {
  std::vector<double> others;
  for (size_t j = 0; j < figures.size(); ++j)
    if (j != i) others.push_back(figures[j]);
  const Yardstick y = yardstick_of(std::move(others));
  return {figures[i] - y.center, y.variance > 0 ? std::sqrt(y.variance) : 0, y.df};
}

double t_of(const WaitDeficit& d) { return d.sigma_ns > 0 ? d.deficit_ns / d.sigma_ns : 0; }

// The guard on a member that only sends: its data spent no longer on the wire than its peers'
// did, significant at 1 % (a guard, not a finding), or not long enough to explain its wait
// deficit. A wire slower by D per op delays each step of the ring by D at most: its peers
// wait up to D longer for their data and its sender up to D less, a deficit of 2 D at most.
constexpr double kWireGuard = 0.01;
constexpr double kDeficitPerWireExcess = 2;

// Whether member i of a group's data spent significantly longer on the wire than the others',
// by enough to explain how much less than theirs it waited.
bool wire_explains(const std::vector<MemberWait>& group, size_t i) {
  std::vector<double> wire, waited_less;
  for (const MemberWait& m : group) {
    wire.push_back(m.wire_wait_ns);
    waited_less.push_back(-m.longest_wait_ns);
  }
  const WaitDeficit slower = departure(wire, i);
  if (slower.sigma_ns <= 0 || t_of(slower) <= critical_t(slower.df, kWireGuard)) return false;
  return departure(waited_less, i).deficit_ns <= kDeficitPerWireExcess * slower.deficit_ns;
}

// Members by communicator and stage: those that wait as senders. A member that only receives
// over the network may be held by a GPU after it on its node (its RecvWait is then short with
// no lateness of its own) and is never judged. One that only sends (a ring's exit on every
// channel it uses: a node of one channel, or of more GPUs than channels) waits for its own
// data, for credit and on the wire, and every other member waits for a late one as on a
// receive: on a ring it is judged with the others (a 2.8x exit of a ring of 58 nodes of two
// GPUs and one channel, 72 % slower, waited 43 us per step where the others waited 180). But
// not where its own wire is slower than its peers' by enough to explain its deficit: then its
// data waits on the wire, early, and paces the ring without a late GPU (in a healthy ring of
// 13 nodes, an exit whose wire took 97 us per step where others took 35-57 waited 142 in all,
// its peers 237: 1.5 times its wire's excess). A late GPU's data may queue on its wire too,
// sent in a burst when it comes (a 2.5x exit: 40 us per step where others took 22), but by
// far less than its deficit (38 times). A member that sends and receives waits on its
// receives for the same collective, which no wire holds up.
// In a hierarchy only members that send and receive are judged, as the channel test compares
// them channel by channel.
Groups grouped(std::span<const MemberWait> members) {
  Groups groups;
  for (const MemberWait& m : members)
    if (m.sends) groups[{m.comm_hash, m.stage}].push_back(m);
  for (auto& [key, group] : groups) {
    const bool hierarchy = parts_in_hierarchy(group);
    std::vector<bool> judged(group.size());
    for (size_t i = 0; i < group.size(); ++i)
      judged[i] = group[i].receives || (!hierarchy && !wire_explains(group, i));
    size_t i = 0;
    std::erase_if(group, [&](const MemberWait&) { return !judged[i++]; });
  }
  return groups;
}

// Which tree of NCCL's double binary tree each channel of a group carries: the lower half of
// the channels its members use the first, the upper half the mirrored second (FORMATS.md).
std::map<int32_t, bool> second_tree_of(const std::vector<MemberWait>& group) {
  std::set<int32_t> used;
  for (const MemberWait& m : group)
    for (const auto& [channel, w] : m.per_channel) used.insert(channel);
  std::map<int32_t, bool> second;
  size_t i = 0;
  for (int32_t channel : used) second[channel] = 2 * i++ >= used.size();
  return second;
}

// Per channel of a hierarchy, the departures of the members that send and receive there, in
// a channel with four or more of them, each appended to its member's deficit.
void add_channel_departures(const std::vector<MemberWait>& group, std::map<Who, Deficit>& out) {
  std::map<int32_t, std::vector<std::pair<Who, double>>> channels;
  for (const MemberWait& m : group)
    for (const auto& [channel, w] : m.per_channel)
      if (w.sends && w.receives) channels[channel].emplace_back(Who{m.process, m.comm_hash}, -w.longest_wait_ns);
  const std::map<int32_t, bool> second_tree = second_tree_of(group);
  for (const auto& [channel, judged] : channels) {
    if (judged.size() < kMinPlace) continue;
    std::vector<double> waited_less;
    for (const auto& [who, figure] : judged) waited_less.push_back(figure);
    for (size_t i = 0; i < judged.size(); ++i) {
      Deficit& d = out[judged[i].first];
      d.per_channel.push_back(departure(waited_less, i));
      (second_tree.at(channel) ? d.in_second_tree : d.in_first_tree) = true;
    }
  }
}

// Each member of a group large enough, judged against the others by how much less it waited;
// in a hierarchy, also by its neighbours' least wait on it and channel by channel.
std::map<Who, Deficit> deficits_of(const Groups& groups) {
  std::map<Who, Deficit> out;
  for (const auto& [key, group] : groups) {
    if (group.size() < kMinPlace) continue;
    const bool hierarchy = parts_in_hierarchy(group);
    std::vector<double> waited_less, kept_waiting;
    for (const MemberWait& m : group) {
      waited_less.push_back(-m.longest_wait_ns);
      kept_waiting.push_back(m.least_waited_on_ns);
    }
    for (size_t i = 0; i < group.size(); ++i) {
      Deficit& d = out[{group[i].process, group[i].comm_hash}];
      d.wait = departure(waited_less, i);
      d.hierarchy = hierarchy;
      d.one_peer_per_channel = group[i].place.one_peer_per_channel();
      if (hierarchy) d.kept_waiting = departure(kept_waiting, i);
    }
    if (hierarchy) add_channel_departures(group, out);
  }
  return out;
}

PeerOutlier weaker(const PeerOutlier& a, const PeerOutlier& b) { return a.margin() < b.margin() ? a : b; }

// A member's test at a one-sided tail. On a ring, its wait deficit. In a hierarchy its part
// may make it wait less (the root of a tree waits for the reduction to come up, not for the
// broadcast to come back down); a late member is told from it by either of two tests, each at
// half the tail:
//   - its neighbours: they do not wait on the root more than on others, but a late member
//     keeps every neighbour waiting on it. It stands out by its wait and by the least wait of
//     a neighbour on it. Where every member waits for the whole collective, as in a tree's
//     broadcast, its neighbours wait long on everybody and this test is weak. A member that
//     meets one peer per channel may be a binary tree's root, whose one child waits on it for
//     the whole broadcast: this test does not judge it.
//   - its channels: a member's part differs channel by channel (NCCL's double binary tree
//     makes a node a leaf in one tree where it is interior in the other, over an even number
//     of nodes the root of one a leaf of the other, and a node's GPUs take turns at its
//     ends), but a late member is late on every channel. It stands out on each channel it is
//     judged in (among the members that send and receive there), on channels of both trees,
//     and by its wait over them all.
PeerOutlier judged(const Deficit& d, double tail) {
  const PeerOutlier alone{t_of(d.wait), critical_t(d.wait.df, tail)};
  if (!d.hierarchy) return alone;
  const double half = tail / 2;
  const PeerOutlier wait{t_of(d.wait), critical_t(d.wait.df, half)};
  PeerOutlier by_neighbours = weaker(wait, {t_of(d.kept_waiting), critical_t(d.kept_waiting.df, half)});
  if (d.one_peer_per_channel) by_neighbours.t = 0;
  PeerOutlier by_channels = wait;
  if (!(d.in_first_tree && d.in_second_tree)) by_channels.t = 0;
  for (const WaitDeficit& c : d.per_channel) by_channels = weaker(by_channels, {t_of(c), critical_t(c.df, half)});
  return by_neighbours.margin() > by_channels.margin() ? by_neighbours : by_channels;
}

// The guard on a finding: where else its GPU is judged, it waited less than its peers too
// (whatever its part there: a guard, not a finding).
constexpr double kAgreeing = 0.01;

// A member's wait deficit in its group, against the others that are not members of communicator
// `apart` (where kMinPlace - 1 of them remain; else against all).
WaitDeficit deficit_apart_from(const Who& who, const Groups& groups, uint64_t apart) {
  std::set<uint32_t> members_apart;
  for (const auto& [key, group] : groups)
    if (key.first == apart)
      for (const MemberWait& m : group) members_apart.insert(m.process);
  for (const auto& [key, group] : groups) {
    if (key.first != who.second) continue;
    std::vector<double> waited_less;
    std::optional<size_t> judged;
    for (const MemberWait& m : group) {
      if (m.process == who.first) judged = waited_less.size();
      if (m.process == who.first || !members_apart.count(m.process)) waited_less.push_back(-m.longest_wait_ns);
    }
    if (judged && waited_less.size() >= kMinPlace) return departure(waited_less, *judged);
  }
  return {};
}

// A connection's halves: what its sender waited per send op (for its GPU's data, for credit,
// on the wire) and what its receiver waited per receive op (for the data, for the flush).
double sending_wait_per_op(const EdgeSummary& e) {
  const uint64_t* ns = e.phase_ns;
  return static_cast<double>(ns[kSendGpuWait] + ns[kSendPeerWait] + ns[kSendWait]) / static_cast<double>(e.send_ops);
}
double receiving_wait_per_op(const EdgeSummary& e) {
  return static_cast<double>(e.phase_ns[kRecvWait] + e.phase_ns[kRecvFlushWait]) / static_cast<double>(e.recv_ops);
}

constexpr double kNoNeighbour = std::numeric_limits<double>::infinity();

// One half of a connection offered to its member: its own wait there (per op, over `ops`),
// whether it sends, and the other half's wait on it where that half was recorded.
void offer_half(MemberWait& m, int32_t channel, bool sending, double own, double ops, std::optional<double> neighbour) {
  m.longest_wait_ns = std::max(m.longest_wait_ns, own);
  double& side = sending ? m.longest_send_wait_ns : m.longest_recv_wait_ns;
  side = std::max(side, own);
  m.ops = std::max(m.ops, ops);
  if (neighbour) m.least_waited_on_ns = std::min(m.least_waited_on_ns, *neighbour);
  ChannelWait& c = m.per_channel[channel];
  c.longest_wait_ns = std::max(c.longest_wait_ns, own);
  (sending ? m.sends : m.receives) = true;
  (sending ? c.sends : c.receives) = true;
}

}  // namespace

std::vector<MemberWait> member_waits(const Observations& observations, const std::vector<EdgeFacts>& facts,
                                     const PeerRoles& roles) {
  std::map<Who, MemberWait> members;
  auto member = [&](uint32_t process, uint64_t comm, int32_t rank) -> MemberWait* {
    const std::optional<PeerRole> role = roles.of(process, comm, rank);
    if (!role) return nullptr;
    const MemberWait fresh{process, comm, role->stage, role->place, 0, kNoNeighbour, false, false, 0, {}, 0, 0, 0};
    return &members.try_emplace({process, comm}, fresh).first->second;
  };
  for (size_t i = 0; i < facts.size(); ++i) {
    const EdgeFacts& f = facts[i];
    const EdgeSummary& e = observations.edges[i];
    if (f.p2p || f.src == f.dst) continue;
    const bool sent = f.view.has_send && e.send_ops > 0, received = f.view.has_recv && e.recv_ops > 0;
    const std::optional<double> sending = sent ? std::optional(sending_wait_per_op(e)) : std::nullopt;
    const std::optional<double> receiving = received ? std::optional(receiving_wait_per_op(e)) : std::nullopt;
    if (MemberWait* m = sent ? member(f.src, e.key.comm_hash, e.key.src_rank) : nullptr) {
      offer_half(*m, e.key.channel, true, *sending, static_cast<double>(e.send_ops), receiving);
      const double wire = static_cast<double>(e.phase_ns[kSendWait]) / static_cast<double>(e.send_ops);
      m->wire_wait_ns = std::max(m->wire_wait_ns, wire);
    }
    if (MemberWait* m = received ? member(f.dst, e.key.comm_hash, e.key.dst_rank) : nullptr)
      offer_half(*m, e.key.channel, false, *receiving, static_cast<double>(e.recv_ops), sending);
  }
  std::vector<MemberWait> out;
  for (const auto& [who, m] : members)
    if (m.least_waited_on_ns != kNoNeighbour) out.push_back(m);  // no neighbour's half recorded: not judged
  return out;
}

// Per member of a group that sends and receives, where kMinPlace or more of them do: its
// deficits on each side against theirs.
void add_side_deficits(const std::vector<MemberWait>& group, std::map<Who, SideDeficits>& out) {
  std::vector<const MemberWait*> both;
  for (const MemberWait& m : group)
    if (m.sends && m.receives) both.push_back(&m);
  if (both.size() < kMinPlace) return;
  std::vector<double> sent_less, received_less;
  for (const MemberWait* m : both) {
    sent_less.push_back(-m->longest_send_wait_ns);
    received_less.push_back(-m->longest_recv_wait_ns);
  }
  for (size_t i = 0; i < both.size(); ++i)
    out[{both[i]->process, both[i]->comm_hash}] = {departure(sent_less, i), departure(received_less, i)};
}

ArrivalJudgement judge_arrivals(std::span<const MemberWait> members, double false_alarm) {
  ArrivalJudgement out;
  out.groups = grouped(members);
  for (const auto& [key, group] : out.groups) add_side_deficits(group, out.side_deficits);
  const std::map<Who, Deficit> deficits = deficits_of(out.groups);
  if (deficits.empty()) return out;
  for (const auto& [who, d] : deficits) out.wait_deficits.emplace(who, d.wait);
  const double tail = false_alarm / static_cast<double>(deficits.size());
  for (const auto& [who, d] : deficits) {
    const PeerOutlier p = judged(d, tail);
    if (p.t > p.critical_t && late_wherever_else_judged(out, who.first, who.second)) out.last_arrivals.emplace(who, p);
  }
  return out;
}

// Against the members elsewhere apart from the finding's communicator: in a world+dp ring a
// 2.9x GPU's data-parallel peers waited 11.5 ms per op in the world ring, the others 34; against
// all 91 others the GPU's 8.4 stood at t 2.2, under the guard's 2.4; against the others apart
// from its peers, far beyond it.
bool late_wherever_else_judged(const ArrivalJudgement& judged, uint32_t process, uint64_t comm) {
  const auto& deficits = judged.wait_deficits;
  for (auto it = deficits.lower_bound({process, 0}); it != deficits.end() && it->first.first == process; ++it) {
    if (it->first.second == comm) continue;
    const WaitDeficit apart = deficit_apart_from(it->first, judged.groups, comm);
    if (apart.sigma_ns > 0) {
      if (t_of(apart) <= critical_t(apart.df, kAgreeing)) return false;
    } else if (it->second.deficit_ns <= 0) {
      return false;
    }
  }
  return true;
}

}  // namespace culprit
