// Evidence for inputs without GPU kernel clocks (probing's exports without coll_perf): the
// own time of a GPU that every other member of its collectives waited for.
//
// A member whose longest wait falls far below the others' came last by far to the collective
// (last_arrivals.hpp), and the others waited for it, whatever the kind of their wait: for its
// data (a tree's late reduction), or for the credit it withheld (which receiver_explanations
// names through the connection). It came late by about its wait deficit D per op, so its own
// time in a communicator is D times the collectives it ran there (its connections' ops), and
// the communicators' times add, as their collectives run one after another. Class
// gpu_producer: its own work, or its program before the collective.
//
// Not a GPU of a node where another GPU's exit in that communicator is held up from beyond
// the node (lanes.hpp): its kernel may wait for that GPU, blocked by a slow link or by a
// receiver that gives no credit, over NVLink, and come late to the next collective through
// no fault of its own. On probing seeds, the GPU beside a slow link's sender (and one beside
// the sender into a 30x slow flush) came last by far and was named. Its own exits do not
// count: in a tree a slow GPU's own sends queued on the wire (SendGpuWait a fifth of their
// time, as a GPU ahead of the wire) where its late data went out in bursts.
//
// Only GPUs judged in every collective communicator where a neighbour's half of one of
// their connections was recorded (member_waits lists no other; a communicator whose peers'
// nodes sent no data is not seen here, and so not asked about). The last-arrival test's
// agreement guard asks a GPU judged in several to wait less in each, since the GPU just past
// a slow link of one collective reaches the next one last; where it is not judged in one (it
// only sends or only receives over the network there, or that communicator has too few
// members), that is unknown. On a probing seed, the GPU past a 3.4x
// link of a world ring, judged in its data-parallel ring only, was named.
//
// Only GPUs outside pipelines. A pipeline stage reaches a collective when its send/recv
// input lets it: on probing seeds, GPUs of a slow GPU's pipeline replica came last by far to
// the closing collective of all GPUs through their pipeline, which no collective judgement
// sees (last_arrivals.hpp's agreement guard judges collective communicators only). A stage's
// last arrival explains only the credit it withheld.
//
// What it cannot tell apart: a GPU slow in its own work from one held up by its program
// elsewhere (a host thread late to enqueue, another job on the node); both are its own time.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "analysis/last_arrivals.hpp"
#include "analysis/self_evidence.hpp"

namespace culprit {

// Offers each last arrival outside pipelines, judged in each of its communicators and not
// `held_from_beyond`, its own time, with the weakest margin of its findings, to `evidence`
// (one entry per process).
void offer_last_arrival_time(std::span<const MemberWait> members, const ArrivalJudgement& judged,
                             const std::function<bool(const MemberWait&)>& held_from_beyond,
                             std::vector<Evidence>& evidence);

}  // namespace culprit
