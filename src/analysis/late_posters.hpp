// Evidence pass for inputs without GPU kernel clocks (probing's exports without coll_perf):
// the receivers that posted their buffers late, beyond the spread of their peers.
//
// A GPU that reaches a collective after its input's data is ready posts its receive buffers
// late: its sender waits for credit (SendPeerWait) and it finds the data waiting (a short
// RecvWait). One that arrives early waits for the data instead (a long RecvWait). So per
// connection, SendPeerWait less RecvWait per step measures how much later the receiver came
// than its input, up to a constant of the communicator. Healthy GPUs differ in speed, and
// the slowest of them comes late as well: without kernel clocks its own work is not
// measured, and only the spread of that lateness over the receivers that play the same part
// (place_peers.hpp) tells a GPU that came far later than its peers from the slowest healthy
// one. Naming every receiver that withheld credit beyond its peers' reference named a healthy
// GPU in 28 of 31 healthy simulated jobs written as probing exports (docs/accuracy.md).
//
// A GPU that came late is late as a sender too: its receivers wait for its data, and the same
// figure of those connections is negative by its lateness. Where places have few GPUs (the
// stages of a handful of replicated pipelines), one departure against a few others needs to
// be very large; a GPU's departures as receiver and sender in one communicator add up to one
// test with the noise of both, where its receiving side agrees. A GPU whose data waits behind
// a slow link is late on its sending side only.
//
// In a ring of its own (a collective communicator with no replicas whose every member receives
// from one peer and sends to one per channel), every output needs every input and every step
// passes every GPU: a GPU that came late by d holds up every other member's data, and each
// of them finds its own waiting for it longer by about d. Their figures all fall by d, and
// with them the median it is judged against, so its departure counts its lateness twice
// against their spread once. It is halved there. Its peers then judge its lateness once: the
// half of its own input's offset that it keeps adds a quarter of a GPU's variance to the
// departure's. In simulated healthy rings of 8-63 nodes written as probing exports, a GPU that
// came last stood out so at t 4.9-6.0 against critical values of 4.9-5.6 (four of nine false
// roots in 923 healthy jobs of two seeds); its wait deficit, which counts the same lateness
// once (last_arrivals.hpp), stood at t 3.3-4.9. Replicas (data-parallel
// rings) are judged against each other's members as well, whom its lateness does not hold up.
//
// What it cannot tell apart: a slow consumer from a late GPU (probing records no
// RecvGpuWait: both hold their buffers, and both send late; withheld_credit.hpp tells them
// apart by the GPU's own wait where that is judged); nor a GPU whose peers cannot measure a
// spread (place_peers.hpp: a pipeline of one GPU per stage).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <utility>

#include "analysis/flow_places.hpp"
#include "analysis/place_peers.hpp"

namespace culprit {

// One connection's receiver: how much later it came than that input, per step
// (SendPeerWait less RecvWait). Receivers are compared within their communicator's replicas
// (`replicas`: the first of its kind, size and chunk, wire_groups.hpp: the same stage of
// replicated pipelines posts its receives at the same point of the same schedule). `stage`
// names its place in its send/recv communicators (0: none): a pipeline's stages reach a
// collective of all GPUs (pipeline+world) at times their schedule sets, not their speed, so
// only GPUs of one stage are compared.
struct PostingDelay {
  uint32_t receiver = 0;
  uint64_t comm_hash = 0;
  uint64_t replicas = 0;
  FlowPlace place;
  uint32_t stage = 0;
  double late_per_step_ns = 0;
  // The connection's sender, where both halves name it: the same figure, its sign turned, is
  // how much later its data came than its receiver, judged among the senders of its place.
  struct Sender {
    uint32_t process = 0;
    FlowPlace place;
    uint32_t stage = 0;
  };
  std::optional<Sender> sender;
  // A collective's connection (not send/recv): in a ring of its own, its receiver's peers
  // waited for a late one.
  bool collective = false;
};

// A late poster's departure from its place's others, in their spread, and the critical value
// it cleared.
using LatePoster = PeerOutlier;

// Both sides of each judged GPU's lateness, per (process, communicator), each against the
// GPUs of its place: as a receiver (how much later it came than its input: its latest input
// counts; in a ring of its own, the half of its departure) and as a sender (how much later
// its data came than its receiver: its latest output).
struct PostingDepartures {
  PeerDepartures receiving;
  PeerDepartures sending;
};
PostingDepartures posting_departures(std::span<const PostingDelay> connections);

// Per (receiver, communicator): the receivers that came significantly later than the others
// of their place, as receivers alone or on both sides, at a family-wise false alarm rate of
// `false_alarm` over every receiver and sender judged.
std::map<std::pair<uint32_t, uint64_t>, LatePoster> late_posters(const PostingDepartures& departures,
                                                                 double false_alarm = 1e-3);
inline std::map<std::pair<uint32_t, uint64_t>, LatePoster> late_posters(std::span<const PostingDelay> connections,
                                                                        double false_alarm = 1e-3) {
  return late_posters(posting_departures(connections), false_alarm);
}

}  // namespace culprit
