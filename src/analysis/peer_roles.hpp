// What makes two GPUs peers in a communicator, read from the observations: the family of
// replica communicators it belongs to (wire_groups.hpp), the GPU's place in its data flow
// (flow_places.hpp) and its pipeline stage. The signals of inputs without kernel clocks
// compare a GPU only with its peers (place_peers.hpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>

#include "analysis/flow_places.hpp"
#include "analysis/observations.hpp"
#include "analysis/place_peers.hpp"
#include "analysis/process_context.hpp"

namespace culprit {

// A rank's peers: its family, place and stage (0: none, else a number per distinct stage).
struct PeerRole {
  uint64_t family = 0;
  FlowPlace place;
  uint32_t stage = 0;
};

class PeerRoles {
 public:
  PeerRoles(const ProcessContext& context, const Observations& obs);

  // The role of `process` as rank `rank` of communicator `comm_hash`; none where the rank has
  // no connection to another rank there.
  std::optional<PeerRole> of(uint32_t process, uint64_t comm_hash, int32_t rank) const;
  // A figure of that rank, for place_peers; none where it has no role.
  std::optional<PeerFigure> figure(uint32_t process, uint64_t comm_hash, int32_t rank, double value) const;

 private:
  std::map<std::pair<uint64_t, int32_t>, FlowPlace> places_;
  std::map<uint32_t, uint32_t> stage_of_;  // process -> its stage's number
  std::map<uint64_t, uint64_t> families_;  // communicator -> its family
};

// PeerRoles built on first use: the passes for inputs without kernel clocks or wire timing
// (late posters, last arrivals, the SendGpuWait gate, send/recv SendWait) share one, and an
// input that needs none builds none.
class LazyPeerRoles {
 public:
  LazyPeerRoles(const ProcessContext& context, const Observations& obs) : context_(context), obs_(obs) {}
  const PeerRoles& get() const {
    if (!roles_) roles_.emplace(context_, obs_);
    return *roles_;
  }

 private:
  const ProcessContext& context_;
  const Observations& obs_;
  mutable std::optional<PeerRoles> roles_;
};

}  // namespace culprit
