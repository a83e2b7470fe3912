// Lanes: where connections leave and enter nodes (host, comm, channel), and when a lane's exits are held from beyond the node.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "analysis/lanes.hpp"
#include "pass_fixtures.hpp"

namespace culprit {
namespace {

constexpr uint64_t kComm = 0x5EEDull;

// Two nodes of two GPUs: nodeA holds processes 0 and 1, nodeB 2 and 3 (rank = process).
struct TwoNodes {
  Observations obs;
  std::vector<EdgeFacts> facts;

  TwoNodes() { test::add_collective_processes(obs, kComm, {"nodeA", "nodeA", "nodeB", "nodeB"}); }
  // A connection src -> dst on `channel`; its sender's GPU busy half of its step unless set.
  EdgeFacts& add(uint32_t src, uint32_t dst, int32_t channel, double send_gpu_wait_share = 0.5) {
    EdgeFacts& f = test::add_connection(obs, facts, kComm, src, dst, channel, 8);
    f.view.send_cycle_ns = 100000;
    f.view.step_ns[kSendGpuWait] = send_gpu_wait_share * 100000;
    f.view.step_ns[kSendWait] = (1 - send_gpu_wait_share) * 100000;
    return f;
  }
};

TEST(Lanes, ConnectionsLeaveOnTheSendersLaneAndEnterOnTheReceiversLane) {
  TwoNodes job;
  job.add(1, 2, 0);  // 0: nodeA -> nodeB, channel 0
  job.add(3, 0, 0);  // 1: nodeB -> nodeA, channel 0
  job.add(1, 2, 1);  // 2: nodeA -> nodeB, channel 1
  job.add(0, 0, 0);  // 3: a process to itself leaves no node
  ProcessContext ctx(job.obs);
  Lanes lanes(job.obs, job.facts, ctx);
  EXPECT_EQ(lanes.exits({"nodeA", kComm, 0}), (std::vector<size_t>{0}));
  EXPECT_EQ(lanes.exits({"nodeB", kComm, 0}), (std::vector<size_t>{1}));
  EXPECT_EQ(lanes.exits({"nodeA", kComm, 1}), (std::vector<size_t>{2}));
  EXPECT_TRUE(lanes.exits({"nodeB", kComm, 1}).empty());
  EXPECT_TRUE(lanes.exits({"nodeA", kComm + 1, 0}).empty());  // another communicator
  EXPECT_EQ(lanes.entry_of(0), (Lane{"nodeB", kComm, 0}));
  EXPECT_EQ(lanes.entry_of(1), (Lane{"nodeA", kComm, 0}));
  EXPECT_EQ(lanes.entry_of(2), (Lane{"nodeB", kComm, 1}));
}

TEST(Lanes, ALaneIsNotBackpressuredWhileItsSenderMakesItsDataSlowly) {
  TwoNodes job;
  job.add(1, 2, 0);                // into nodeB
  job.add(3, 0, 0);                // nodeB's exit: its GPU busy half of each step
  job.add(3, 0, 1, 0.1);           // another channel's exit, GPU ahead: not this lane
  ProcessContext ctx(job.obs);
  Lanes lanes(job.obs, job.facts, ctx);
  AttributionConfig cfg;
  EXPECT_FALSE(lanes.backpressured({"nodeB", kComm, 0}, cfg));
  EXPECT_TRUE(lanes.backpressured({"nodeB", kComm, 1}, cfg));
  EXPECT_FALSE(lanes.backpressured({"nodeA", kComm, 1}, cfg));  // no exits at all
}

TEST(Lanes, ANodeIsBackpressuredWhereAnyOfItsExitsInTheCommunicatorIsHeld) {
  TwoNodes job;
  job.add(1, 2, 0);       // nodeA's exit on channel 0: its GPU busy half of each step
  job.add(3, 0, 0);       // nodeB's exit on channel 0, likewise
  job.add(3, 0, 1, 0.1);  // nodeB's exit on channel 1: its GPU ahead of the wire
  ProcessContext ctx(job.obs);
  Lanes lanes(job.obs, job.facts, ctx);
  AttributionConfig cfg;
  EXPECT_TRUE(lanes.node_backpressured("nodeB", kComm, 2, cfg));   // GPU 3's exit held on channel 1
  EXPECT_FALSE(lanes.node_backpressured("nodeB", kComm, 3, cfg));  // its own exit does not count
  EXPECT_FALSE(lanes.node_backpressured("nodeA", kComm, 0, cfg));
  EXPECT_FALSE(lanes.node_backpressured("nodeB", kComm + 1, 2, cfg));  // another communicator
}

TEST(Lanes, AnExitHeldByItsReceiverItsWireOrAGpuAheadOfTheWireIsBackpressure) {
  AttributionConfig cfg;
  const Lane exit_lane{"nodeB", kComm, 0};
  for (int cause = 0; cause < 3; ++cause) {
    TwoNodes job;
    job.add(1, 2, 0);
    EdgeFacts& out = job.add(3, 0, 0, cause == 2 ? 0.2 : 0.5);  // 0.2 of its step: under rel_floor
    if (cause == 0) out.no_credit = true;
    if (cause == 1) out.slow_link = true;
    ProcessContext ctx(job.obs);
    Lanes lanes(job.obs, job.facts, ctx);
    EXPECT_TRUE(lanes.backpressured(exit_lane, cfg)) << "cause " << cause;
    EXPECT_FALSE(lanes.backpressured({"nodeA", kComm, 0}, cfg)) << "cause " << cause;  // its exit is healthy
  }
}

TEST(Lanes, InATwoNodeRingTheQueueOnTheReceiversOwnExitIsItsOwnWithheldCreditComingRound) {
  // Process 2 (nodeB's entry) withholds credit from nodeA's exit 1 -> 2; nodeB's exit 3 -> 0
  // has its data ready at once and queues on the wire. Beyond it, nodeA feeds 2 and waits for
  // its credit: that queue is 2's own doing, not a hold from elsewhere.
  AttributionConfig cfg;
  const Lane lane_b{"nodeB", kComm, 0};
  TwoNodes ring;
  ring.add(1, 2, 0).no_credit = true;
  ring.add(3, 0, 0, 0.1);  // GPU ahead of the wire
  ProcessContext ctx(ring.obs);
  Lanes lanes(ring.obs, ring.facts, ctx);
  EXPECT_TRUE(lanes.backpressured(lane_b, cfg));          // judged for nobody in particular
  EXPECT_FALSE(lanes.backpressured(lane_b, cfg, 2u));     // judged for 2: its own credit
  EXPECT_TRUE(lanes.backpressured(lane_b, cfg, 3u));      // for another receiver: held beyond
  // Where nodeA gives 2 its data on time (no withheld credit), the GPU ahead is a hold beyond.
  TwoNodes healthy_beyond;
  healthy_beyond.add(1, 2, 0);
  healthy_beyond.add(3, 0, 0, 0.1);
  ProcessContext ctx2(healthy_beyond.obs);
  Lanes lanes2(healthy_beyond.obs, healthy_beyond.facts, ctx2);
  EXPECT_TRUE(lanes2.backpressured(lane_b, cfg, 2u));
  // A withheld credit or a slow wire on the exit itself is a hold whoever is judged.
  TwoNodes held;
  held.add(1, 2, 0).no_credit = true;
  held.add(3, 0, 0).slow_link = true;
  ProcessContext ctx3(held.obs);
  Lanes lanes3(held.obs, held.facts, ctx3);
  EXPECT_TRUE(lanes3.backpressured(lane_b, cfg, 2u));
}

TEST(Lanes, AnInteriorNodeSendsNothingBackToTheNodeItCameFrom) {
  // One channel of a tree of three nodes, one GPU each: P (process 1) between its parent R (0)
  // and its leaf L (2). P sends up to R and down to L; L sends up to P.
  Observations obs;
  std::vector<EdgeFacts> facts;
  test::add_collective_processes(obs, kComm, {"nodeR", "nodeP", "nodeL"});
  auto add = [&](uint32_t src, uint32_t dst, double send_gpu_wait_share) -> EdgeFacts& {
    EdgeFacts& f = test::add_connection(obs, facts, kComm, src, dst, 0, 8);
    f.view.send_cycle_ns = 100000;
    f.view.step_ns[kSendGpuWait] = send_gpu_wait_share * 100000;
    f.view.step_ns[kSendPeerWait] = 30000;
    f.view.step_ns[kSendWait] = 20000;
    return f;
  };
  add(1, 2, 0.5);                    // 0: P -> L (broadcast down)
  add(2, 1, 0.1).no_credit = true;   // 1: L -> P (reduce up): its data ready, P's credit late
  add(0, 1, 0.5);                    // 2: R -> P (broadcast down)
  EdgeFacts& up = add(1, 0, 0.1);    // 3: P -> R (reduce up): its data ready
  up.view.step_ns[kSendPeerWait] = 70000;
  ProcessContext ctx(obs);
  Lanes lanes(obs, facts, ctx);
  AttributionConfig cfg;
  // What P receives from R goes on to L only, what it receives from L to R only (a tree
  // node's up and down are separate thread groups): the held exit up holds L's data alone.
  EXPECT_EQ(lanes.onward_exits(2), (std::vector<size_t>{0}));
  EXPECT_EQ(lanes.onward_exits(1), (std::vector<size_t>{3}));
  EXPECT_TRUE(lanes.backpressured(lanes.entry_of(2), cfg));  // the lane as a whole
  EXPECT_FALSE(lanes.backpressured(size_t{2}, cfg));
  EXPECT_TRUE(lanes.backpressured(size_t{1}, cfg));
  EXPECT_DOUBLE_EQ(lanes.onward_hold_ns(1), 90000);  // P -> R: 70 us for credit, 20 on the wire
  EXPECT_DOUBLE_EQ(lanes.onward_hold_ns(2), 50000);
  // The leaf exchanges with P alone: a root returning its child's data looks the same, so its
  // exit back to P counts.
  EXPECT_EQ(lanes.onward_exits(0), (std::vector<size_t>{1}));
  EXPECT_TRUE(lanes.backpressured(size_t{0}, cfg));
}

TEST(Lanes, AChannelOfTwoNodesSendsItsDataBackToWhereItCameFrom) {
  // A ring (or a tree) of two nodes: nodeB's exit goes back to nodeA, and carries the data.
  TwoNodes ring;
  ring.add(1, 2, 0);
  ring.add(3, 0, 0, 0.1).no_credit = true;
  ring.add(2, 3, 0);  // a connection inside nodeB joins it to no third node
  ProcessContext ctx(ring.obs);
  Lanes lanes(ring.obs, ring.facts, ctx);
  EXPECT_EQ(lanes.onward_exits(0), (std::vector<size_t>{1, 2}));
  EXPECT_TRUE(lanes.backpressured(size_t{0}, AttributionConfig{}));
}

TEST(Lanes, ItsOwnCreditComingRoundNeedsAHoldLongerThanItsExitsWire) {
  // Per connection, the receiver's hold of that input decides, against the time its exit's
  // sends spent on the wire. Measured: a 1.5x slow consumer entering a ring of two nodes held
  // each step 446 us, its node's exit on the wire 328 (3 for credit): its credit coming round.
  // A 3.68x consumer of a data-parallel tree under LL, its node joined to one other, held
  // 136 us, its exit 28 on the wire and 181 for credit: in a loop of credit the exit waits for
  // the receiver's own hold, so that wait is no hold from beyond. A healthy GPU of a tree under LL held 31 us while its
  // exit's sends queued 43 us on the wire (3 for credit): the wire holds the lane.
  AttributionConfig cfg;
  for (const auto& [hold_ns, exit_credit_ns, exit_wire_ns, held_from_beyond] :
       {std::tuple{446e3, 3e3, 328e3, false}, std::tuple{136e3, 181e3, 28e3, false},
        std::tuple{31e3, 3e3, 43e3, true}}) {
    TwoNodes ring;
    EdgeFacts& in = ring.add(1, 2, 0);
    in.no_credit = true;
    in.view.step_ns[kRecvGpuWait] = hold_ns;
    EdgeFacts& exit = ring.add(3, 0, 0, 0.01);  // GPU ahead of the wire
    exit.view.step_ns[kSendPeerWait] = exit_credit_ns;
    exit.view.step_ns[kSendWait] = exit_wire_ns;
    ProcessContext ctx(ring.obs);
    Lanes lanes(ring.obs, ring.facts, ctx);
    EXPECT_EQ(lanes.backpressured(size_t{0}, cfg), held_from_beyond) << hold_ns;
    EXPECT_FALSE(lanes.backpressured(Lane{"nodeB", kComm, 0}, cfg, 2u));  // the process: as before
  }
}

TEST(Lanes, AnExitWithoutItsSendHalfShowsNoGpuAhead) {
  TwoNodes job;
  job.add(1, 2, 0);
  EdgeFacts& out = job.add(3, 0, 0, 0.0);  // SendGpuWait 0 ...
  out.view.has_send = false;               // ... because its sender recorded nothing
  ProcessContext ctx(job.obs);
  Lanes lanes(job.obs, job.facts, ctx);
  EXPECT_FALSE(lanes.backpressured({"nodeB", kComm, 0}, AttributionConfig{}));
}

// The numbers of a healthy tree 11x8x8 under LL (fresh seed 11031): an interior node's entry held
// its children's data 329-347 us a step, its node's exit to the parent, sent by another GPU,
// waited 1 us a step for its data (its credit and wire 46): the entry passed its data on in time.
TEST(Lanes, AnExitByAnotherGpuWithItsDataReadyShowsTheReceiverDeliveredInTime) {
  AttributionConfig cfg;
  for (const double exit_data_wait : {0.01, 0.5}) {
    TwoNodes job;
    job.add(0, 2, 0);                  // 0: into nodeB's entry, GPU 2
    job.add(3, 1, 0, exit_data_wait);  // 1: nodeB's exit, sent by GPU 3
    job.add(2, 0, 0, 0.01);            // 2: GPU 2's own send, back where the data came from
    ProcessContext ctx(job.obs);
    Lanes lanes(job.obs, job.facts, ctx);
    EXPECT_EQ(lanes.delivered_past_receiver(0, cfg), exit_data_wait < cfg.rel_floor) << exit_data_wait;
  }
  // The receiver's own exit (a node of one GPU) shows nothing of how the receiver consumed.
  TwoNodes job;
  job.add(0, 2, 0);
  job.add(2, 1, 0, 0.01);
  ProcessContext ctx(job.obs);
  Lanes lanes(job.obs, job.facts, ctx);
  EXPECT_FALSE(lanes.delivered_past_receiver(0, cfg));
}

}  // namespace
}  // namespace culprit
