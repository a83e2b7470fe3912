// A communicator rank's place in the data flow, as its proxy connections show it: how many
// connections it receives on and sends on (channels included). Ranks of one place play the
// same part (every rank of a ring, a tree's leaves); ranks of different places do not (a
// tree's root, its interior ranks and its leaves receive different data at different times).
// Timing signals that depend on the part a rank plays compare ranks of one place only.
#pragma once

#include <cstdint>
#include <map>
#include <utility>

#include "analysis/observations.hpp"

namespace culprit {

struct FlowPlace {
  int receives = 0;  // connections it receives on
  int sends = 0;     // connections it sends on
  friend auto operator<=>(const FlowPlace&, const FlowPlace&) = default;
};

// Per (communicator, rank) with a connection to another rank: its place.
std::map<std::pair<uint64_t, int32_t>, FlowPlace> flow_places(const Observations& obs);

}  // namespace culprit
