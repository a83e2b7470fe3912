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
// Only GPUs outside pipelines. A pipeline stage reaches a collective when its send/recv
// input lets it: on probing seeds, GPUs of a slow GPU's pipeline replica came last by far to
// the closing collective of all GPUs through their pipeline, which no collective judgement
// sees (last_arrivals.hpp's agreement guard judges collective communicators only). A stage's
// last arrival explains only the credit it withheld.
//
// What it cannot tell apart: a GPU slow in its own work from one held up by its program
// elsewhere (a host thread late to enqueue, another job on the node); both are its own time.
#pragma once

#include <span>
#include <vector>

#include "analysis/last_arrivals.hpp"
#include "analysis/self_evidence.hpp"

namespace culprit {

// Offers each judged last arrival outside pipelines its own time, with the weakest margin of
// its findings, to `evidence` (one entry per process).
void offer_last_arrival_time(std::span<const MemberWait> members, const ArrivalJudgement& judged,
                             std::vector<Evidence>& evidence);

}  // namespace culprit
