// last_arrivals on hand-built members: the member that every other one waited for is named,
// in a tree where it keeps its neighbours waiting or is late on every channel, and a ring's
// member that only sends; the last of a healthy spread, a member that only receives, one that
// only sends on a wire slower than its peers' or in a tree, one that waits less by its part
// in a tree (a binary tree's root of one child among them), and one that came late to one
// communicator only are not; elsewhere a GPU is
// compared with the members apart from its finding's communicator (last_arrivals.hpp).
#include "analysis/last_arrivals.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <span>
#include <utility>
#include <random>
#include <vector>

namespace culprit {
namespace {

constexpr uint64_t kComm = 0x5eed;
// A ring member on two channels: one receive and one send on each.
const FlowPlace kRingPart{2, 2, {{1, 1}, {1, 1}}};
// A tree's member that gathers from two children and sends to its parent on one channel.
const FlowPlace kTreeInterior{3, 3, {{1, 1}, {2, 2}}};
const FlowPlace kTreeLeaf{2, 2, {{1, 1}, {1, 1}}};

std::map<std::pair<uint32_t, uint64_t>, PeerOutlier> last_arrivals(std::span<const MemberWait> members) {
  return judge_arrivals(members).last_arrivals;
}

// Members 0..n-1 of one communicator, member i with longest wait `wait[i]` and least wait of a
// neighbour on it `waited_on[i]` (ms per op), both halves recorded.
std::vector<MemberWait> members(const std::vector<double>& wait, const std::vector<double>& waited_on,
                                const FlowPlace& part = kRingPart, uint64_t comm = kComm, uint32_t stage = 0) {
  std::vector<MemberWait> out;
  for (size_t i = 0; i < wait.size(); ++i)
    out.push_back(
        {static_cast<uint32_t>(i), comm, stage, part, wait[i] * 1e6, waited_on[i] * 1e6, true, true, 1, {}, 0,
         wait[i] * 1e6, wait[i] * 1e6});
  return out;
}

// Member m's longest wait on `channel` (ms per op), both halves recorded there.
void wait_on_channel(MemberWait& m, int32_t channel, double ms) { m.per_channel[channel] = {ms * 1e6, true, true}; }

TEST(LastArrivals, TheMemberEveryOtherWaitedForIsNamed) {
  // A simulated probing export of two nodes of four GPUs (a tree on six channels, GPU 0 2.9x
  // slower, the job twice as slow): GPU 0 waited 0.24 ms per op at most, the others 2.2-4.2.
  const std::vector<double> wait = {0.24, 4.2, 4.0, 4.0, 4.1, 4.2, 4.2, 3.9};
  const std::vector<double> waited_on = {3.9, 0.5, 0.5, 0.4, 0.4, 0.5, 0.5, 0.4};
  const ArrivalJudgement judged = judge_arrivals(members(wait, waited_on));
  ASSERT_EQ(judged.last_arrivals.size(), 1u);
  const PeerOutlier& p = judged.last_arrivals.at({0, kComm});
  EXPECT_GT(p.t, p.critical_t);
  EXPECT_GT(p.margin(), 3);
  // Every member is judged, and its wait deficit is how much less than the others' median it
  // waited: GPU 0 3.86 ms below the others' 4.1 ms, GPU 3 (4.0 ms) 0.1 ms.
  ASSERT_EQ(judged.wait_deficits.size(), 8u);
  EXPECT_NEAR(judged.wait_deficits.at({0, kComm}).deficit_ns, 3.86e6, 1e3);
  EXPECT_NEAR(judged.wait_deficits.at({3, kComm}).deficit_ns, 0.1e6, 1e3);
  EXPECT_GT(judged.wait_deficits.at({0, kComm}).sigma_ns, 0);
}

TEST(LastArrivals, TheLastOfAHealthySpreadIsNotNamed) {
  // Waits spread by the members' arrivals: the last one waits least, by their spread.
  const std::vector<double> wait = {5.03, 6.84, 6.95, 6.99, 7.13, 7.18, 8.83, 9.96, 4.16};
  EXPECT_TRUE(last_arrivals(members(wait, std::vector<double>(wait.size(), 0.5))).empty());
}

TEST(LastArrivals, FewerThanFourMembersOrNoSpreadAreNotJudged) {
  EXPECT_TRUE(last_arrivals(members({4.0, 4.1, 0.2}, {0.4, 0.4, 4.0})).empty());
  EXPECT_TRUE(last_arrivals(members({4.0, 4.0, 4.0, 4.0, 0.2}, {0.4, 0.4, 0.4, 0.4, 4.0})).empty());
}

TEST(LastArrivals, AMemberThatOnlyReceivesIsNotJudged) {
  // Without RecvGpuWait, the time a receiver held its buffers is no wait: a GPU blocked by a
  // slow consumer of its node over NVLink looks as if it waited for nothing.
  std::vector<MemberWait> ring = members({0.24, 4.2, 4.0, 4.0, 4.1, 4.2, 4.2, 3.9}, std::vector<double>(8, 0.5));
  ring[0].sends = false;
  EXPECT_TRUE(last_arrivals(ring).empty());
  ring[0].sends = true;
  EXPECT_EQ(last_arrivals(ring).count({0, kComm}), 1u);
}

// Ring members that only send (each node's exit, as in a ring of one channel over nodes of two
// GPUs), with their longest wait and their wire's SendWait (ms per op).
std::vector<MemberWait> exits(const std::vector<double>& wait, const std::vector<double>& wire) {
  std::vector<MemberWait> out = members(wait, std::vector<double>(wait.size(), 0.5));
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].receives = false;
    out[i].wire_wait_ns = wire[i] * 1e6;
  }
  return out;
}

TEST(LastArrivals, ARingMemberThatOnlySendsIsJudgedUnlessItsWireIsSlower) {
  // A simulated ring of 58 nodes of two GPUs on one channel, the exit of one node 2.8x slow:
  // it waited 0.43 ms per op, the other exits 1.8-1.86, all on wires of 0.09.
  const std::vector<double> wait = {1.80, 1.85, 1.78, 1.83, 1.81, 1.86, 1.79, 0.43};
  EXPECT_EQ(last_arrivals(exits(wait, std::vector<double>(8, 0.09))).count({7, kComm}), 1u);
  // A healthy ring paced by one exit's wire (0.97 ms per op, the others 0.35-0.57): that
  // exit's data waits on the wire early, and it waits less in all (1.42 against 2.3-2.45).
  const std::vector<double> paced = {2.30, 2.40, 2.35, 2.45, 2.37, 2.32, 2.40, 1.42};
  const std::vector<double> wire = {0.35, 0.57, 0.48, 0.41, 0.52, 0.45, 0.50, 0.97};
  EXPECT_TRUE(last_arrivals(exits(paced, wire)).empty());
  // The same waits on wires alike name it.
  EXPECT_EQ(last_arrivals(exits(paced, std::vector<double>(8, 0.45))).count({7, kComm}), 1u);
  // A late exit's data queues on its wire too, sent in a burst when it comes (a 2.5x exit of a
  // ring of six nodes of three GPUs: 0.63 ms per op more than its peers' wires), but that
  // explains little of a deficit of 23.8 ms: named.
  const std::vector<double> late = {26.3, 25.9, 26.1, 25.1, 26.6, 2.5};
  const std::vector<double> queued = {0.61, 0.62, 0.60, 0.61, 0.62, 1.24};
  EXPECT_EQ(last_arrivals(exits(late, queued)).count({5, kComm}), 1u);
  // In a tree a member that only sends is not judged, even where it keeps its neighbours
  // waiting: the channel test compares members that send and receive. Receiving too, it is.
  std::vector<MemberWait> tree = exits(wait, std::vector<double>(8, 0.09));
  for (MemberWait& m : tree) m.place = kTreeLeaf;
  tree.front().place = tree.back().place = kTreeInterior;  // a leaf's neighbours do not judge it (below)
  const std::vector<double> waited_on = {0.3, 0.35, 0.3, 0.25, 0.3, 0.35, 0.3, 2.0};
  for (size_t i = 0; i < tree.size(); ++i) tree[i].least_waited_on_ns = waited_on[i] * 1e6;
  EXPECT_TRUE(last_arrivals(tree).empty());
  for (MemberWait& m : tree) m.receives = true;
  EXPECT_EQ(last_arrivals(tree).count({7, kComm}), 1u);
}

TEST(LastArrivals, InATreeAMemberMustAlsoKeepItsNeighboursWaiting) {
  // The root of a tree waits for the reduction only: less than the leaves by its part, but
  // its neighbours did not wait on it more than on the others. Not named.
  std::vector<MemberWait> tree =
      members({1.9, 2.0, 2.1, 2.2, 2.0, 1.95, 2.05, 2.15}, {0.3, 0.35, 0.3, 0.25, 0.3, 0.35, 0.3, 0.3}, kTreeLeaf);
  tree.push_back({8, kComm, 0, kTreeInterior, 0.9e6, 0.3e6, true, true, 1, {}, 0, 0.9e6, 0.9e6});
  EXPECT_TRUE(last_arrivals(tree).empty());
  // A late member of the same tree keeps every neighbour waiting on it.
  tree.back().least_waited_on_ns = 2.0e6;
  tree.back().longest_wait_ns = 0.2e6;
  EXPECT_EQ(last_arrivals(tree).count({8, kComm}), 1u);
  // On a ring (no member gathers from several peers on a channel) the wait alone judges.
  std::vector<MemberWait> ring =
      members({1.9, 2.0, 2.1, 2.2, 2.0, 1.95, 2.05, 2.15, 0.9}, {0.3, 0.35, 0.3, 0.25, 0.3, 0.35, 0.3, 0.3, 0.3});
  EXPECT_EQ(last_arrivals(ring).count({8, kComm}), 1u);
}

TEST(LastArrivals, AMemberMeetingOnePeerPerChannelIsNotNamedByItsNeighboursWait) {
  // The root of each of NCCL's binary trees has one child, which waits on it for the whole
  // broadcast: such a root waits least and keeps its one neighbour waiting longest, by its
  // part alone, and its place (one peer per channel) is a leaf's. In two healthy tree+dp jobs
  // of 33 and 35 nodes (probing form), the head GPU of node 1, the second tree's root,
  // stood out by both at t 5.6-5.9 and was named. Not named by its neighbours' wait; at an
  // interior place the same figures name it.
  std::vector<MemberWait> tree =
      members({1.9, 2.0, 2.1, 2.2, 2.0, 1.95, 2.05, 2.15}, {0.3, 0.35, 0.3, 0.25, 0.3, 0.35, 0.3, 0.3}, kTreeLeaf);
  tree.front().place = kTreeInterior;
  tree.push_back({8, kComm, 0, kTreeLeaf, 0.2e6, 2.0e6, true, true, 1, {}, 0, 0.2e6, 0.2e6});
  EXPECT_TRUE(last_arrivals(tree).empty());
  tree.back().place = kTreeInterior;
  EXPECT_EQ(last_arrivals(tree).count({8, kComm}), 1u);
}

TEST(LastArrivals, InATreeALateMemberStandsOutOnEveryChannelItIsJudgedIn) {
  // In a tree's broadcast every member waits for the whole collective: the neighbours of a
  // late member wait on it no longer than on the others. Member 8 waited less on all four
  // channels (0 and 1 carry the first tree, 2 and 3 the second) and on the whole: late on
  // every channel, it is named.
  std::vector<MemberWait> tree =
      members({1.9, 2.0, 2.1, 2.2, 2.0, 1.95, 2.05, 2.15}, {0.3, 0.35, 0.3, 0.25, 0.3, 0.35, 0.3, 0.3}, kTreeLeaf);
  tree.push_back({8, kComm, 0, kTreeInterior, 0.9e6, 0.3e6, true, true, 1, {}, 0, 0.9e6, 0.9e6});
  const std::vector<double> first = {1.9, 1.8, 2.0, 2.1, 1.9, 1.85, 1.95, 2.0, 0.8};
  const std::vector<double> second = {1.7, 1.8, 1.9, 1.75, 1.8, 1.7, 1.85, 1.9, 0.9};
  for (size_t i = 0; i < tree.size(); ++i)
    for (int32_t channel = 0; channel < 4; ++channel)
      wait_on_channel(tree[i], channel, channel < 2 ? first[i] : second[i]);
  EXPECT_EQ(last_arrivals(tree).count({8, kComm}), 1u);
  // As much as the others on one channel: there it plays its part, not named.
  wait_on_channel(tree.back(), 3, 1.8);
  EXPECT_TRUE(last_arrivals(tree).empty());
  // Judged on the channels of one tree only, which it may lead (over an even number of nodes
  // the root of one tree is a leaf of the other): not named.
  tree.back().per_channel.erase(2);
  tree.back().per_channel.erase(3);
  EXPECT_TRUE(last_arrivals(tree).empty());
}

TEST(LastArrivals, AMemberLateToOneCommunicatorOnlyIsNotNamed) {
  // The GPU just past a slow link finishes a ring last and reaches the next collective
  // (another communicator) last: it waited less there, and in the ring as long as its peers or
  // longer (it came on time and left late).
  std::vector<MemberWait> job = members({1.6, 3.3, 3.4, 3.4, 3.5, 3.5, 3.5, 3.6}, std::vector<double>(8, 0.5));
  const std::vector<double> ring_wait = {2.3, 2.15, 2.2, 2.1, 2.25, 2.2, 2.18, 2.22};
  for (MemberWait m : members(ring_wait, std::vector<double>(8, 0.5), kRingPart, 0xbeef)) job.push_back(m);
  EXPECT_TRUE(last_arrivals(job).empty());
  // A GPU slow in its own work is late to both: named in each.
  job[8].longest_wait_ns = 1.2e6;
  const auto found = last_arrivals(job);
  EXPECT_EQ(found.count({0, kComm}), 1u);
  EXPECT_EQ(found.count({0, 0xbeefULL}), 1u);
  // Its own work before the ring short, it came late there by little, within the others'
  // noise: every member there came late with it (all are members of kComm, where they waited
  // on it), so none measures how late it came; waiting less than their median is all that
  // can be asked (last_arrivals.hpp, the agreement guard).
  job[8].longest_wait_ns = 2.16e6;
  EXPECT_EQ(last_arrivals(job).count({0, kComm}), 1u);
}

TEST(LastArrivals, ElsewhereAGpuIsComparedWithTheMembersApartFromItsFindingsCommunicator) {
  // A world+dp ring of 8 nodes of two GPUs: GPU 0 2.9x slow. In its data-parallel ring
  // (GPUs 0-7) it waited 0.86 ms per op, the others 3.3-3.9. In the world ring its
  // data-parallel peers, late from waiting on it there, waited about 1.15, the other GPUs
  // (8-15) about 3.4, and GPU 0 0.84: against all 15 others (two crowds) it stands out at t
  // under 2, against the 8 apart from its data-parallel peers far beyond the guard.
  std::vector<MemberWait> job = members({0.86, 3.3, 3.5, 3.9, 3.6, 3.4, 3.7, 3.8}, std::vector<double>(8, 0.5));
  const std::vector<double> world = {0.84, 1.10, 1.15, 1.18, 1.12, 1.20, 1.14, 1.16,
                                     3.35, 3.42, 3.38, 3.45, 3.40, 3.37, 3.44, 3.41};
  for (MemberWait m : members(world, std::vector<double>(16, 0.5), kRingPart, 0xbeef)) job.push_back(m);
  EXPECT_EQ(last_arrivals(job).count({0, kComm}), 1u);
  // Waiting in the world ring as long as the others apart from its peers: no agreement.
  job[8].longest_wait_ns = 3.39e6;
  EXPECT_EQ(last_arrivals(job).count({0, kComm}), 0u);
}

TEST(LastArrivals, EachMemberThatSendsAndReceivesHasADeficitOnEachSide) {
  // Member 0 waited 1 ms less than the others on its sends and 9 ms less on its receives
  // (withheld_credit.hpp tells a hold by it); the others 4-4.3 ms and 10-10.3 on each.
  std::vector<MemberWait> job = members({10.0, 10.0, 10.1, 10.2, 10.3, 10.1}, std::vector<double>(6, 0.5));
  const double sends[6] = {3.1, 4.0, 4.1, 4.2, 4.3, 4.1}, receives[6] = {1.1, 10.0, 10.1, 10.2, 10.3, 10.1};
  for (size_t i = 0; i < job.size(); ++i) {
    job[i].longest_send_wait_ns = sends[i] * 1e6;
    job[i].longest_recv_wait_ns = receives[i] * 1e6;
  }
  ArrivalJudgement judged = judge_arrivals(job);
  ASSERT_EQ(judged.side_deficits.size(), 6u);
  const SideDeficits& d = judged.side_deficits.at({0, kComm});
  EXPECT_NEAR(d.sending.deficit_ns, 1.0e6, 1e3);  // against the others' median, 4.1
  EXPECT_NEAR(d.receiving.deficit_ns, 9.0e6, 1e3);
  EXPECT_GT(d.sending.sigma_ns, 0);
  // A member that only receives has no sides; fewer than four that do, nobody has.
  job[5].sends = false;
  job[4].sends = false;
  job[3].sends = false;
  EXPECT_TRUE(judge_arrivals(job).side_deficits.empty());
}

TEST(LastArrivals, OnlyMembersOfOneStageAreCompared) {
  // A pipeline's last stage reaches the closing collective of all GPUs later by its
  // schedule, so waits less there: compared within their stage, nobody stands out.
  std::vector<MemberWait> job = members({4.0, 4.1, 4.2, 3.9}, std::vector<double>(4, 0.5), kRingPart, kComm, 1);
  for (MemberWait m : members({0.5, 0.6, 0.55, 0.45}, std::vector<double>(4, 0.5), kRingPart, kComm, 2)) {
    m.process += 4;
    job.push_back(m);
  }
  EXPECT_TRUE(last_arrivals(job).empty());
}

TEST(LastArrivals, HealthyRingsRaiseFewAlarms) {
  // 2000 rings of 16 GPUs whose arrivals spread by 0.3 ms, each waiting for the last one
  // plus 0.1 ms of noise: built for one alarm in a thousand jobs.
  std::mt19937 rng(11);
  std::normal_distribution<double> arrival(0, 0.3), noise(0, 0.1);
  int alarms = 0;
  for (int job = 0; job < 2000; ++job) {
    std::vector<double> a, wait;
    for (int r = 0; r < 16; ++r) a.push_back(arrival(rng));
    const double last = *std::max_element(a.begin(), a.end());
    for (double x : a) wait.push_back(2.0 + last - x + noise(rng));
    alarms += last_arrivals(members(wait, std::vector<double>(16, 0.5))).empty() ? 0 : 1;
  }
  std::printf("healthy rings of 16 GPUs with a last arrival named: %d of 2000\n", alarms);
  EXPECT_LE(alarms, 8);
}

}  // namespace
}  // namespace culprit
