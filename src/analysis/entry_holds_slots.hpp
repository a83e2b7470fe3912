// A network receive whose receiver frees its slots after its node's exit sent their data on:
// the receiver itself consumes slowly, whatever its peers hold.
//
// The receive explanations name a slow consumer where its holds stand beyond those of its
// peers, the receivers of its kind (receiver_peers.hpp). Where one fault paces the whole job,
// its peers hold as long: every interior node of a tree whose GPU consumes slowly holds its
// children's data, held from beyond while the slow node's exit waits for data. Measured on
// fresh seed 11053: a 1.45x consumer at the children's entry of a tree 10x4x2 under LL, 46 %
// slower, held its inputs 107 us a step, the other interior entries 102-107, and nobody was
// named. Its passage lag (pipeline/passage_lag.hpp) was -5.72 +- 0.04 steps, every other
// entry's 0.6-0.8: it freed each slot more than five steps after the node's exit had sent
// that data on. A GPU that waits for anything else frees a slot once it has passed its data
// on, so a lag below -1 step (at a one-sided 1e-3; within a step, the joining of two clocks
// cannot tell) is the entry's own slowness in freeing its slots.
//
// Taken where the connection shows no slow flush (a flush holds the slot too, and is judged by
// its own phase), its node is not held from beyond (backlog_inside_node.hpp) and no exit of
// its lane sent by another GPU of the node had its data ready at once (the data then passed
// the node in time). Its excess is its hold per step; its margin, how far below -1 step its
// lag lies in units of the guard. A GPU measurably slow in its own work keeps its class
// (`gpu_producer`, receiver_explanations.hpp).
#pragma once

#include "analysis/backlog_inside_node.hpp"
#include "analysis/connection_facts.hpp"
#include "analysis/process_context.hpp"

namespace culprit {

// Marks `f` (a collective network receive not found slow to consume) slow to consume where its
// receiver holds its slots as its lane's entry (above).
void take_slots_held_by_entry(const BacklogReadings& readings, const ProcessContext& context, EdgeFacts& f);

}  // namespace culprit
