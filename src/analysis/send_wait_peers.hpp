// Signal for inputs without wire timing (probing's exports: per-op sums, no step times): a
// connection whose SendWait per step stands far above its peers'.
//
// SendWait runs from isend accepted to completion: the wire and the NICs, not the GPUs, nor
// the receiver's credit (granted before). Without step times, queueing behind the sender's
// own earlier sends cannot be told from a slow transfer, and slow_wire.hpp's sums-only rule
// asks for SendWait above what a healthy link with every slot queued shows (NCCL_STEPS x):
// a 5.7x link that doubled a pipeline's time stayed under it. But connections that play the
// same part queue alike: the senders of one place and stage in one family of replica
// communicators (place_peers.hpp, peer_roles.hpp). So a connection is judged by the log of its
// SendWait per step against its peers' (a sender's largest counts), with a prior spread of
// 10 % (links of one kind, as the bottleneck test's), Bonferroni over every sender judged at
// 1e-3 per job. It names the sender's link towards that receiver, `network_link`.
//
// Send/recv connections move one message per call in one steady pattern, and are judged by
// their SendWait per step. In collectives the queue a step finds depends on where the flow
// bunches: healthy links of one place in a tree of 9x8x4 spent 50-250 us per step in
// SendWait, and on eight randomized probing seeds the test named 129 healthy links in
// healthy tree and ring jobs. So a collective's connection is judged by its quickest op's
// SendWait per step (a slow wire slows every op; bunching leaves some op quick), and even
// that stays queued on healthy links (the simulated ones: up to 5x a typical link's in every
// op, where a slow link's was 0.9-9x). A collective's link therefore counts only where it sets
// its communicator's pace (sets_the_pace): every op of it spent longer on the wire per step
// than a step of the communicator takes (its sends overlap: it cannot keep up), and that
// step takes link_ratio times a typical link's SendWait or more. The slowest healthy link of
// a flow that the network paces is as busy, but sets a pace only as much slower as it is.
// Or it counts where every op of it spent longer per step in SendWait than a full window of
// NCCL_STEPS sends at a typical link's quickest op's SendWait per step
// (full_windows_outlasted): a send waits behind at most NCCL_STEPS - 1 earlier sends of its
// connection, each on a wire as fast as its peers' no longer than their SendWait per step in
// any op (their transfer, the latency and any queue they met), so a wire like theirs cannot.
// That holds where the step is no measure of the link: a ring channel whose own slow link
// makes every member wait for data (the median send cycle is that slow channel's: a 4x link
// of a data-parallel ring of 4 nodes, 9.3x its peers' SendWait and 68 % slower, spent 0.38 of
// a cycle on the wire), or a job of several channels paced by one slow channel (the cycle is
// the quick channels'). Of the links the peer test flagged and
// the pace gate held back on 22 randomized probing seeds, the slow ones' quickest ops reached
// up to 52x a typical link's mean SendWait, the links that were no fault 6.1x (6.0x in healthy
// runs) but for one at 22x beside the other fault of a two-fault run (docs/accuracy.md).
//
// Beyond a full window by the spread healthy links of one kind show (beyond_any_healthy_window,
// 8 x 1.35 = 10.8x a typical link's quickest op), a collective link is slow whether or not its
// peers' spread is narrow enough to show it (a tree of four nodes of one GPU has three peers;
// the exits of a ring of two nodes spanned 3.8x in their quickest ops): in 603 healthy
// randomized probing runs no link stood above 7.1x, and 99 % of runs stayed under 6.2x.
//
// What it cannot tell apart: which end of the wire (the sender's NIC or the receiver's) is
// slow; a link whose peers are all as slow (a slow switch under a whole place); nor a
// connection whose place has too few peers to measure a spread (place_peers.hpp). The full
// window assumes a send queues behind its own connection's sends only: where several
// connections share one NIC, a healthy one may queue behind theirs too.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "analysis/peer_roles.hpp"

namespace culprit {

// One send/recv connection's send half without wire timing.
struct SendWaitFigure {
  size_t connection = 0;  // its index, returned with a verdict
  uint32_t sender = 0;
  uint64_t comm_hash = 0;
  int32_t sender_rank = 0;
  uint32_t receiver = 0;
  int32_t receiver_rank = 0;
  double per_step_ns = 0;  // SendWait per step
  double steps = 0;
};

// A slow connection: its SendWait beyond its peers' typical one, summed over its steps, and
// how many times its critical value its t is.
struct SlowSendWait {
  size_t connection = 0;
  double excess_ns = 0;
  double margin = 0;
};

// A collective communicator's pace, from its connections' sends: the time a step takes (the
// median of its connections' send cycles per step: waiting for data, for credit and on the
// wire), a typical link's SendWait per step (their median) and a typical link's quickest op's
// SendWait per step (their median; every step of an op spends its transfer and the latency
// in SendWait, so it bounds a typical link's from above more tightly).
struct CollectivePace {
  double step_ns = 0;
  double typical_send_wait_ns = 0;
  double typical_quickest_op_ns = 0;
};

// Whether a collective connection whose quickest op spent `quickest_op_ns` per step in
// SendWait sets its communicator's pace (see above).
bool sets_the_pace(double quickest_op_ns, const CollectivePace& pace, double link_ratio);

// How many times that quickest op outlasted a full window of `nccl_steps` sends at a typical
// link's quickest op's SendWait per step (see above): above 1, more than a wire as fast as its
// peers' can queue. 0 where no typical link is measured.
double full_windows_outlasted(double quickest_op_ns, const CollectivePace& pace, int nccl_steps);

// How many times that quickest op outlasted a full window of `nccl_steps` sends on a wire
// slower than its peers' by as much as healthy links of one kind differ (three deviations of
// their prior spread, kLinkPriorSigma): above 1, no queue of its own sends explains it, and
// its link is slow whatever its peers' spread (see above). 0 where no typical link is measured.
double beyond_any_healthy_window(double quickest_op_ns, const CollectivePace& pace, int nccl_steps);

// The links beyond their peers' spread, one (the largest) per sender and communicator.
std::vector<SlowSendWait> slow_send_waits(const PeerRoles& roles, std::span<const SendWaitFigure> sends,
                                          double false_alarm = 1e-3);

}  // namespace culprit
