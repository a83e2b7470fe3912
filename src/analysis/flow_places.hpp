// A communicator rank's place in the data flow, as its proxy connections show it: how many
// connections it receives on and sends on (channels included), and its part on each channel.
// Ranks of one place play the same part (every rank of a ring, a tree's leaves); ranks of
// different places do not (a tree's root, its interior ranks and its leaves receive different
// data at different times). Each channel is a ring or tree of its own: a rank of NCCL's double
// binary tree is a leaf on some channels and interior on others, so two ranks of as many
// connections may still play different parts channel by channel. Timing signals that depend
// on the part a rank plays compare ranks of one place only.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "analysis/observations.hpp"

namespace culprit {

struct FlowPlace {
  int receives = 0;  // connections it receives on
  int sends = 0;     // connections it sends on
  // Per channel it uses, (connections received on, sent on) there, in order: its part channel
  // by channel, whichever channel holds which (empty where not built from connections).
  std::vector<std::pair<int, int>> per_channel;
  friend auto operator<=>(const FlowPlace&, const FlowPlace&) = default;

  // The place without its part channel by channel: its connections' counts alone.
  FlowPlace counts() const { return {receives, sends, {}}; }
  // It receives from one peer and sends to one at most on every channel it uses (a ring's
  // member, a tree's leaf or root with one child); false where built without channels.
  bool one_peer_per_channel() const {
    for (const auto& [received, sent] : per_channel)
      if (received > 1 || sent > 1) return false;
    return !per_channel.empty();
  }
};

// Per (communicator, rank) with a connection to another rank: its place.
std::map<std::pair<uint64_t, int32_t>, FlowPlace> flow_places(const Observations& obs);

// A GPU's place in its program: its (size, rank) in every send/recv communicator, in order
// (a pipeline stage; empty for a GPU of collectives only). GPUs of one stage make the same
// calls at the same points of the same schedule.
using PipelineStage = std::vector<std::pair<int32_t, int32_t>>;

// Per process with a send/recv communicator rank: its stage. `n_ranks`: each communicator's size.
std::map<uint32_t, PipelineStage> pipeline_stages(const Observations& obs, const std::map<uint64_t, int32_t>& n_ranks);

}  // namespace culprit
