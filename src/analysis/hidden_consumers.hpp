// How much a slow consumer named from its network receives is known to be that GPU, and which
// GPUs of its node would look the same (docs/attribution.md, "What it cannot tell apart").
//
// The proxy records only network connections. A GPU that receives a channel from the network
// (its entry) forwards it over NVLink to the next GPU of its node; when that GPU, or one
// further along, consumes slowly, its buffers fill, the entry cannot pass its chunks on, and
// the entry's network receives are released late exactly as if the entry consumed slowly
// itself. In steady state both give every entry of the node the same rate. So where a node
// holds GPUs of the communicator that never receive from the network (hidden GPUs), the
// entry named `gpu_consumer` is the slow consumer only where the fault sits on an entry:
// with the fault equally likely on any GPU of the node, e / (e + h) of the time, e entries
// and h hidden GPUs of that node and communicator. Where the fault sits on an entry, the
// receiver explanations mostly pick that entry (the longer of the entries' consumptions; on
// seven fresh seeds two nodes whose every GPU is an entry had the wrong one named), so the
// named one's score is its calibrated confidence times that share, and the hidden GPUs are
// listed as the other candidates.
//
// Entries of the same node can look the same too. A slow GPU holds every entry before it on
// its node alike (each holds a full buffer at the slow GPU's pace), so where other entries of
// the node and communicator were named gpu_consumer with half the named one's evidence or more,
// the longest of those near-equal holds is the slow one by chance as often as not: the share is
// divided by their number. Measured on fresh seeds 11051 and 11057: in trees under LL, three
// and four GPUs of a node where the tree's chain meets the network at one end held 22.2-22.7 ms
// and 40.7-41.2 ms, and the longest, a healthy GPU, was named at 0.98.
//
// A GPU that receives from the network in another communicator (its data-parallel group, say)
// is no candidate: a GPU slow to consume is slow in every communicator it receives in, and its
// own receives show how it consumes (receiver_peers.hpp). Nor is one with evidence of its own
// (its kernel clocks), which is explained by that; a GPU known only as a peer (no records) has
// no host and is not counted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/connection_facts.hpp"
#include "analysis/process_context.hpp"
#include "analysis/self_evidence.hpp"

namespace culprit {

struct HiddenConsumerCandidates {
  uint32_t named = 0;              // the entry named gpu_consumer
  std::vector<uint32_t> hidden;    // GPUs of its node and communicator(s) with no network receive at all
  uint32_t entries = 0;            // GPUs of its node and communicator(s) with network receives
  std::vector<uint32_t> alike;     // other entries of them named gpu_consumer with half its evidence or more
  double share() const {
    return static_cast<double>(entries) / static_cast<double>(entries + hidden.size()) /
           static_cast<double>(1 + alike.size());
  }
};

// One entry per root (of the wait-for graph) named gpu_consumer (evidence) from slow-consuming
// network receives, or, where none was slow to consume (an input without RecvGpuWait), from the
// credit its network receives withheld, whose node holds hidden GPUs or other entries held alike;
// none where neither is.
std::vector<HiddenConsumerCandidates> hidden_consumer_candidates(const Observations& observations,
                                                                 const std::vector<EdgeFacts>& facts,
                                                                 const ProcessContext& context,
                                                                 const std::vector<Evidence>& evidence,
                                                                 const std::vector<uint32_t>& roots);

// Scales each named entry's identified share (Evidence::identified_share) and adds one note per
// entry naming the other candidates.
void share_with_hidden_consumers(const std::vector<HiddenConsumerCandidates>& candidates,
                                 const ProcessContext& context, std::vector<Evidence>& evidence,
                                 std::vector<std::string>& notes);

}  // namespace culprit
