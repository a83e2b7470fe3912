// Evidence pass for inputs without GPU kernel clocks (probing's exports without coll_perf):
// the member of a collective that every other member waited for.
//
// In a collective whose every output needs every member's input (AllReduce, AllGather,
// ReduceScatter), no member finishes before the last one has arrived and done its part, and
// the members finish close together. So a member's longest wait in one of its proxy ops, the
// time it spent there on anything but its own work, is about the collective's end less its
// own arrival: the last member to arrive waits least, and one that came later than the
// others by d leaves every other member waiting about d longer than it on some connection
// (its data, or the credit it withholds, reaches them all). Unlike a connection's figure
// (late_posters.hpp), this needs no peers of the same place: every member of the
// communicator waits for the same last arrival, whatever its part. Members of different
// pipeline stages reach a collective of all GPUs at times their schedule sets, so only the
// members of one stage are compared.
//
// Every job has a last member, and a healthy one comes last by its speed and its noise: only
// a deficit far beyond the spread of the other members' longest waits (their median and
// sample variance, leaving the judged member out; one-sided Student t, family-wise over every
// member judged) names it. Three things besides lateness make a member wait less, and each
// is kept out:
//   - Its part: the root of a tree waits for the reduction to come up, not for the broadcast
//     to come back down. Where some member forwards to or gathers from several peers on one
//     channel (a tree; on a ring each has one of each), a late member is told from such a
//     part by either of two tests, each at half the family-wise rate. Its neighbours: they do
//     not wait on a root more than on others, while a late member keeps every neighbour
//     waiting on it, so it must also stand out by the least wait of a neighbour on it. Not
//     a member that meets one peer on each channel: the root of each of NCCL's binary trees
//     has one child, which waits on it for the whole broadcast, and its place is a leaf's (in
//     two healthy probing jobs of 33 and 35 nodes, node 1's head GPU, the second tree's root,
//     stood out so at t 5.6-5.9 and was named; on six probing seeds no other row changed). Its
//     channels: a member's part differs channel by channel (a node is a leaf in one tree of
//     NCCL's double binary tree and interior in the other, and its GPUs take turns at its
//     ends), while a late member is late on every channel; so it must also stand out on each
//     channel it is judged in (against the members that send and receive there, four or
//     more), channels of both trees among them (the lower half of the channels its
//     communicator uses carries the first tree, the upper half the second). In simulated
//     healthy trees the longest wait alone stood out at t 13.4 (six members) and 5.9 (16
//     members of one connection count in a tree of 66); one member judged on one channel
//     only stood out there at t 9.8. The neighbours' test
//     is weak where every member waits for the whole collective: on four probing seeds, GPUs
//     slow enough to cost a tree 5 % or more and left unnamed stood out by their wait at t
//     up to 21, by their neighbours' at 7.3 at most, mostly under 3.
//   - A hold the input does not record: without RecvGpuWait, the time a receiver held its
//     buffers (consuming slowly, or blocked by a slow GPU of its node over NVLink) is no wait.
//     A member is judged only where it sends on recorded connections: a held GPU then waits
//     on its sends for its own blocked input. A ring's member that only sends (its node's
//     exit) is judged unless its wire is slower than its peers' by enough to explain its
//     deficit (then the wire paces the ring and its data waits there early); in a hierarchy
//     only members that send and receive are.
//   - A late exit from the collective before: the GPU just past a slow link finishes a ring
//     last and so reaches the next collective last, waiting less there with no fault of its
//     own. A GPU slow in its own work comes late to each collective that follows its own
//     compute, so one judged in several communicators must wait less than its peers in each
//     of them (late_wherever_else_judged below: a guard, not a test; the family-wise rate is
//     the findings'). There its peers are the members apart from the finding's communicator,
//     where three remain, against whom it must stand out at 1 %: those waited on it there and
//     come late with it (in a world+dp ring, a slow GPU's data-parallel peers wait less in the
//     world ring too, and against them all it did not stand out). Where fewer remain, it must
//     wait less than the median of all.
// A GPU slow to consume or a slow link behind a sender does not stand out here: the consumer
// waits for its own input, which its own withheld credit holds back, and a slow link's sender
// waits on the wire (SendWait); both wait as long as their peers.
//
// What it cannot tell apart: a late member of a collective in which outputs do not need
// every input (Broadcast, Reduce: their root never waits); the communicator's window sums do
// not say which collective a wait came from, so such a communicator's root could stand out.
// Nothing is judged in a group of fewer than four members (place_peers.hpp, kMinPlace), nor a
// member that only receives over the network there (a ring's entry on every channel it
// uses), nor one that only sends in a hierarchy or on a wire slower than its peers' by as
// much as half its deficit.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "analysis/connection_facts.hpp"
#include "analysis/peer_roles.hpp"
#include "analysis/place_peers.hpp"  // PeerOutlier, kMinPlace

namespace culprit {

// One member's longest wait per op on one channel, and whether it recorded a half of each kind
// there.
struct ChannelWait {
  double longest_wait_ns = 0;
  bool sends = false;
  bool receives = false;
};

// One member's longest wait per op in one collective communicator: over its recorded
// connections there, the largest of its sends' SendGpuWait + SendPeerWait + SendWait and its
// receives' RecvWait + RecvFlushWait, per op. `least_waited_on_ns`: over the same connections,
// the least that the other end's half waited per op. `stage`: its pipeline stage (0: none);
// `place`: its part there; `sends`/`receives`: whether it recorded a half of each kind;
// `ops`: the most ops one of those connections recorded; `per_channel`: the same by channel;
// `wire_wait_ns`: the largest SendWait per op of its sends (the time its data spent on the wire).
struct MemberWait {
  uint32_t process = 0;
  uint64_t comm_hash = 0;
  uint32_t stage = 0;
  FlowPlace place;
  double longest_wait_ns = 0;
  double least_waited_on_ns = 0;
  bool sends = false;
  bool receives = false;
  double ops = 0;
  std::map<int32_t, ChannelWait> per_channel;
  double wire_wait_ns = 0;
  // The same longest wait per op over its sends alone and over its receives alone.
  double longest_send_wait_ns = 0;
  double longest_recv_wait_ns = 0;
};

// Every member of a collective communicator with a role there and a neighbour's half recorded,
// from the halves of the connections it recorded (send/recv connections are left out).
std::vector<MemberWait> member_waits(const Observations& observations, const std::vector<EdgeFacts>& facts,
                                     const PeerRoles& roles);

// A judged member's longest wait per op below its group's others' median (negative: above),
// that departure's sigma (their spread, with the median's own sampling variance; 0: they show
// none) and its degrees of freedom.
struct WaitDeficit {
  double deficit_ns = 0;
  double sigma_ns = 0;
  double df = 0;
};

// A member's wait deficits on its sends alone and on its receives alone.
struct SideDeficits {
  WaitDeficit sending;
  WaitDeficit receiving;
};

// What the test finds in one job, per (process, communicator).
struct ArrivalJudgement {
  // Every member judged (both halves recorded, four members or more of its communicator and
  // stage): its wait deficit, whatever its size.
  std::map<std::pair<uint32_t, uint64_t>, WaitDeficit> wait_deficits;
  // The members that waited significantly less than the others of their communicator and
  // stage, and less in every other communicator they are judged in, at a family-wise false
  // alarm rate of `false_alarm` over every member judged.
  std::map<std::pair<uint32_t, uint64_t>, PeerOutlier> last_arrivals;
  // The judged members by (communicator, stage): what the agreement guard measures against.
  std::map<std::pair<uint64_t, uint32_t>, std::vector<MemberWait>> groups;
  // Every judged member that sends and receives there, where four or more of its group do:
  // how much less than theirs it waited on its sends and on its receives (withheld_credit.hpp).
  std::map<std::pair<uint32_t, uint64_t>, SideDeficits> side_deficits;
};

ArrivalJudgement judge_arrivals(std::span<const MemberWait> members, double false_alarm = 1e-3);

// The agreement guard on a GPU found late to collective communicator `comm` by any test:
// wherever else it is judged here, it waited less than its peers too. A GPU slow in its own
// work comes late to each collective after its compute; a GPU that only left the collective
// before late (behind a slow link there) came on time to that one and waited its full share.
// Its peers there are the members that are not members of `comm` (those waited on it in
// `comm` and come late with it), against whom it must stand out at 1 % (a guard, not a
// finding) where kMinPlace - 1 of them remain. Where fewer remain, every member there came
// late with it, and by how much its own work before that collective made it later still
// (little, where that work is short) nothing measures: it must only have waited less than
// their median. True where it is judged nowhere else.
bool late_wherever_else_judged(const ArrivalJudgement& judged, uint32_t process, uint64_t comm);

}  // namespace culprit
