// Lanes: where data leaves each node, per communicator and channel (host, comm, channel).
// Inside one collective, data that enters a node on a lane leaves it on the same lane. The
// exit is held up from beyond the node when its sender withholds nothing itself: its
// receiver gives no credit, its wire is slow, or its GPU is ahead of the wire (data ready at
// once, SendGpuWait under rel_floor of its step). Then a receiver of that lane that is slow
// to free buffers is passing backpressure on, not causing it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
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
  // Whether the exits of `lane` are held up from beyond the node (above). With `receiver`,
  // the lane's receiver being judged: an exit whose GPU is ahead does not count where the
  // node beyond it feeds `receiver` and waits for its credit. In a ring of two nodes the
  // node beyond is the one that feeds it, so the standing queue on its own node's exit is
  // its own withheld credit coming round, not a hold from elsewhere.
  bool backpressured(const Lane& lane, const AttributionConfig& config,
                     std::optional<uint32_t> receiver = std::nullopt) const;

 private:
  // Whether the node that `exit` enters sends into `receiver` on the same lane and waits for
  // its credit there.
  bool beyond_waits_on(size_t exit, uint32_t receiver) const;

  const Observations& observations_;
  const std::vector<EdgeFacts>& facts_;
  const ProcessContext& context_;
  std::map<Lane, std::vector<size_t>> outbound_;
};

}  // namespace culprit
