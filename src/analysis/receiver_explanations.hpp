// Pass 4 of the attribution, explanations of what receivers did to their senders: withheld
// credit (no_credit), slow flush and slow consumption (the connection facts' anomalies).
//
// Withheld credit says the receiver posted or freed its buffers late. Its own slow
// consumption or flush explains that. Otherwise, where its kernel gaps measure its own work,
// they judge that work, and a late post with its own work in order means it was elsewhere in
// its program (another communicator's collective, the previous send/recv, a combine waiting
// for a sibling input): it blames nobody. Where no RecvGpuWait is recorded (probing's exports
// with nccl.coll_perf) a GPU slow to consume, its work in order, looks so too; but so does the
// slowest healthy GPU where hosts run ahead (docs/accuracy.md: naming such a receiver that
// withheld credit far beyond its place's others named a healthy GPU in 5 of 59 healthy jobs).
// Without GPU clocks the late post is the best hint left, but the slowest of healthy GPUs
// posts late too. A receiver that withheld credit is then explained, in this order, by:
//   - backpressure: its lane's exits are held from beyond the node (lanes.hpp); it waits on
//     the senders of those exits (collectives only: a send/recv receive frees its buffers
//     whatever the node sends next);
//   - node_interior: another GPU of its node is late by its own kernels, it waits on them;
//   - else its own evidence: flush, gpu_consumer, or gpu_producer (a late post) where every
//     other member of its collective waited for it (last_arrivals.hpp), where it withheld
//     credit far beyond the receivers of its place (late_posters.hpp; without RecvGpuWait
//     its own wait tells a late post from a hold of its buffers, gpu_consumer, where judged,
//     withheld_credit.hpp, else one of two classes), or where it recorded nothing of the
//     connection (its node sent no data: the credit is all that is known of it); a late post
//     within their spread is a wait on it, and no evidence.
// A slow flush or consumption without withheld credit is the receiver's own evidence unless
// its lane is backpressured. A receiver's own time is the longest over the channels of each
// communicator (they run side by side), summed over its communicators (their collectives run
// one after another). A GPU slow to consume is so in every communicator it receives in: a
// receiver slow in some and on time in others waits (backpressure) on the GPUs of its node
// that are slow in every communicator they receive in, where there are any; it feeds them
// over NVLink in the communicators where it looks slow.
#pragma once

#include <string>
#include <vector>

#include "analysis/lanes.hpp"
#include "analysis/last_arrivals.hpp"
#include "analysis/own_delay.hpp"
#include "analysis/peer_roles.hpp"
#include "analysis/self_evidence.hpp"
#include "analysis/wait_graph.hpp"

namespace culprit {

struct ReceiverInputs {
  const Observations& observations;
  const std::vector<EdgeFacts>& facts;
  const ProcessContext& context;
  const Lanes& lanes;
  const OwnDelay& own_delay;
  const LazyPeerRoles& roles;  // each GPU's peers, for the late posts judged without kernel clocks
  const ArrivalJudgement& arrivals;  // the last arrivals judged without kernel clocks
};

// Appends wait-for edges to `holds` and offers self evidence (one entry per process); says in
// `notes` which GPUs' late posts no peers could judge.
void explain_receivers(const ReceiverInputs& inputs, const AttributionConfig& config,
                       std::vector<Evidence>& evidence, std::vector<WaitEdge>& holds, std::vector<std::string>& notes);

}  // namespace culprit
