// Explanation rule for inputs without RecvGpuWait (probing's exports): why a receiver that
// withheld credit far beyond its peers (late_posters.hpp) did so, from how long it waited
// itself (last_arrivals.hpp).
//
// A receiver withholds its buffers' credit either because it posted them late (it came late
// to the collective: its own work, or its program elsewhere) or because it held them after the
// data came (it consumes slowly, or a GPU of its node that it feeds over NVLink does). The two
// leave different marks on its own waits. A GPU that came late by W found everything ready:
// it waited about W less than the other members of its collective at most (they all waited
// for it). A GPU that holds its buffers came on time and waits on its sends for its own
// input, which its withheld credit holds back: it waited as long as the others. So the credit
// it withheld per op (W, beyond its communicator's baseline) and its wait deficit D (how much
// less than its peers' median it waited at most per op) decide: D near W is a late post, D
// near 0 a hold. Each is taken where D stands beyond W / 2, the point between the two, on its
// side, by the critical value of the deficit's spread at 1 %; otherwise nothing decides.
//
// On eight randomized probing seeds, the slow GPUs named by the credit they withheld waited
// D = 0.9-2.8 W less than their peers where they withheld it (W 1.7-28 ms per op, spread
// 0.06-4 ms); the slow consumers D = -0.45 to 0.1 W (one, in the data-parallel communicator of
// a tree+dp job, 5 W against a spread of 2.5 W: undecided).
//
// Where D leaves it undecided in a collective, its waits split by side may still show a hold
// (why_collective_credit_withheld below).
//
// What it cannot tell apart: a GPU that holds its buffers from one that feeds a slow GPU of
// its node over NVLink (both hold; hidden_consumers.hpp weighs that), nor anything of a
// receiver of a collective that is not judged for its wait (one that only receives over the
// network there, or a communicator of fewer than four such members); in send/recv
// communicators, a late post from a middle stage slow to consume (both send late).
#pragma once

#include <optional>

#include "analysis/last_arrivals.hpp"
#include "analysis/place_peers.hpp"

namespace culprit {

enum class WithheldBy {
  kUnknown,  // nothing decides: one of the two, each taken as likely
  kLatePost,
  kHeldBuffers,
};

// `withheld_per_op_ns`: the credit the receiver withheld per op beyond its communicator's
// baseline; `deficit`: its wait deficit in that communicator, where judged.
WithheldBy why_credit_withheld(double withheld_per_op_ns, const std::optional<WaitDeficit>& deficit,
                               double level = 0.01);

// Send/recv communicators, whose members wait for no collective (no wait deficit is judged
// there): a GPU that came late is late on its sends as well, by about as much as on its
// receives (late_posters.hpp, both sides); one that holds its buffers sends on time. So its
// sending departure S (how much later its data came than its receivers', per step, against the
// senders of its place) is weighed against its receiving one R (how much later it posted): a
// hold where S stands below R / 2 by the critical value of S's spread at `level`. A late post
// is not decided so: a middle stage slow to consume what it forwards sends late too. In a
// simulated pipeline of eight 2-stage replicas, a GPU 1.7x slower to consume made its sender
// wait 123 us per step for credit (the others 5-9) while its own data came as early as its
// peers'.
WithheldBy why_p2p_credit_withheld(const PeerDeparture& receiving, const PeerDeparture& sending, double level = 0.01);

// Collectives, where the wait deficit left the receiver undecided: the same two sides, from
// its own waits (last_arrivals.hpp, SideDeficits). A GPU that came late found its data ready
// and its own output awaited: it waited less than its peers on its receives and on its sends
// alike. A GPU that holds its buffers takes its input late, so finds it waiting (it waited
// less on its receives), but its sends wait for its own output, which its withheld credit
// holds back: on them it waited about as long as its peers. A hold where its sending deficit
// S stands below half its receiving deficit R by the critical value of their spread at
// `level` (S's, and R's halved). Not the reverse: where its peers' spread is wide, a hold's S
// may stand above R / 2 as a late post's would. On the 22 development seeds, of the true
// roots named as one of the two (one row per communicator judged), outside pipelines: 19 of
// slow GPUs with S 0.92-1.23 R, 30 of slow consumers with S below 0.4 R (a ring 5x1x3: a
// 2.43x consumer waited 4.1 ms per op less than its peers on its sends, 10.6 on its receives,
// their spreads 1.3 and 0.8: not decided).
WithheldBy why_collective_credit_withheld(const SideDeficits& deficits, double level = 0.01);

}  // namespace culprit
