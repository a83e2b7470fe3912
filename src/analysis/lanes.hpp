// Lanes: where data leaves each node, per communicator and channel (host, comm, channel).
// Inside one collective, data that enters a node on a lane leaves it on the same lane, but
// not back to the node it came from where the node exchanges with two or more others on the
// channel: a ring's next node is not its previous one, and an interior tree node passes what
// its parent sends on to its children and what its children send on to its parent, in two
// thread groups that do not wait for each other (NCCL's runTreeSplit). A node that exchanges
// with one other only may send the data back (a ring of two; a tree's root returns its
// child's data reduced), or not (a tree's leaf sends up what it did not receive from above):
// the records cannot tell a root from a leaf, so its exit counts. The exit is held up from
// beyond the node when its sender withholds nothing itself: its receiver gives no credit, its
// wire is slow, or its GPU is ahead of the wire (data ready at once, SendGpuWait under
// rel_floor of its step). Then a receiver of that lane that is slow to free buffers is passing
// backpressure on, not causing it, as far as the exits were held: a GPU that waits for a free
// output slot holds its input no longer per step than its sends waited for credit and wire
// (both sides have NCCL_STEPS slots), so what it holds beyond that is its own. That bound holds
// where the receiver sends the lane's data on itself; where the data crosses the node to an exit
// that another GPU sends by, every buffer between may be full, and each holds its step
// NCCL_STEPS times the exit's pace: there an exit whose data was ready at once shows that the
// receiver passed the data on in time (delivered_past_receiver).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/connection_facts.hpp"

namespace culprit {

using Lane = std::tuple<std::string, uint64_t, int32_t>;  // host, comm, channel

class Lanes {
 public:
  // `facts` (one per connection of `observations`) must outlive this object.
  Lanes(const Observations& observations, const std::vector<EdgeFacts>& facts, const ProcessContext& context);

  // The lane a connection enters its receiver's node on.
  Lane entry_of(size_t connection) const;
  // Indices of the network connections that leave a node on `lane`.
  const std::vector<size_t>& exits(const Lane& lane) const;
  // The exits of `connection`'s entry lane that can carry its data on (above).
  std::vector<size_t> onward_exits(size_t connection) const;
  // Whether the exits of `lane` are held up from beyond the node (above). With `receiver`,
  // the lane's receiver being judged: an exit whose GPU is ahead does not count where the
  // node beyond it feeds `receiver` and waits for its credit. In a ring of two nodes the
  // node beyond is the one that feeds it, so the standing queue on its own node's exit is
  // its own withheld credit coming round, not a hold from elsewhere.
  bool backpressured(const Lane& lane, const AttributionConfig& config,
                     std::optional<uint32_t> receiver = std::nullopt) const;
  // Whether an exit of `host` in `comm` on any channel, sent by another GPU than `process`,
  // is held up from beyond the node, judged for `process`: `process` may then wait for that
  // GPU, blocked there, over NVLink.
  bool node_backpressured(const std::string& host, uint64_t comm, uint32_t process,
                          const AttributionConfig& config) const;
  // Whether the onward exits of `connection` are held up from beyond its receiver's node,
  // judged for its receiver. Its own credit coming round (above) is so only where the
  // receiver held that input longer per step than the exit's sends spent on the wire: the
  // exit's wait for credit is its own hold coming round, but a wire that its sends queue on
  // holds the lane from beyond, and a GPU waiting for a free output slot behind it holds its
  // input no longer than that (a tree's bottleneck link under LL, whose sender's leaf waits
  // for its credit on the way up).
  bool backpressured(size_t connection, const AttributionConfig& config) const;
  // Whether an onward exit of `connection` sent by another GPU of its receiver's node had its
  // data ready at once (its GPU ahead of its wire, as above). The data of a network input
  // crosses the node's chain of GPUs from its entry (the receiver) to the exit that another GPU
  // sends by (a ring's, or a tree's way up to the parent; what the receiver sends itself goes
  // the other way, to the children): an exit never left waiting for data shows that every GPU
  // before it, the receiver's too, passed the data on in time.
  bool delivered_past_receiver(size_t connection, const AttributionConfig& config) const;
  // The longest time per step a send of `connection`'s onward exits was held, waiting for
  // credit and on the wire (SendPeerWait + SendWait): the most backpressure can hold its
  // receiver's input per step.
  double onward_hold_ns(size_t connection) const;

 private:
  // `receiver_hold_ns`: how long the receiver held the input judged, per step; unknown (judged
  // for a process, not a connection) counts as longer than any exit's wire.
  bool held_beyond(const std::vector<size_t>& exits, const AttributionConfig& config,
                   std::optional<uint32_t> receiver,
                   double receiver_hold_ns = std::numeric_limits<double>::infinity()) const;
  // Whether the node that `exit` enters sends into `receiver` on the same lane and waits for
  // its credit there.
  bool beyond_waits_on(size_t exit, uint32_t receiver) const;

  const Observations& observations_;
  const std::vector<EdgeFacts>& facts_;
  const ProcessContext& context_;
  std::map<Lane, std::vector<size_t>> outbound_;
  std::map<Lane, std::set<std::string>> neighbours_;  // the hosts a lane's node exchanges with
};

}  // namespace culprit
