// Report pass of the graph stage: the GPUs of a root's node that no record names, said in the
// notes.
//
// Proxy ops (probing's exports, NCCL's profiler without KernelCh) record network transfers
// only. A GPU that moves its data over NVLink alone, between the GPU of its node that receives
// a channel from the network and the one that sends it on, has no record at all: its global
// rank is held by no process of the input. When it is slow or late, the network GPUs before
// it on its node hold their buffers and those after it send late, as if they were slow
// themselves. So a GPU root named on a node that has such GPUs stands for its node: the data
// cannot tell which of them it is. Its node's silent GPUs are found by the job's block layout
// (launch_layout.hpp: node k holds consecutive ranks); where ranks were placed otherwise,
// nothing is said. A ring of seven nodes of seven GPUs in probing's form, a 2.81x consumer on
// its node's fourth GPU: the node's network entry was named, and nothing said that five GPUs
// of its node were never seen.
//
// It changes no culprit or score: where a silent GPU is the cause the named one is wrong, but
// a slow GPU that is its node's entry looks the same, and nothing measures how often each is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/process_context.hpp"
#include "analysis/self_evidence.hpp"

namespace culprit {

// A root named for a GPU's own time (gpu_producer or gpu_consumer) and the global ranks of its
// node that no process holds.
struct SilentNodeGpus {
  uint32_t root = 0;
  std::vector<int64_t> ranks;  // ascending
};

// One entry per such root, in the order given, where its node has silent GPUs.
std::vector<SilentNodeGpus> silent_gpus_beside_roots(const std::vector<uint32_t>& roots,
                                                     const std::vector<Evidence>& evidence,
                                                     const std::vector<GlobalProcess>& processes);

// One note per root (up to three), naming its node's silent ranks.
void note_silent_gpus_beside_roots(const std::vector<SilentNodeGpus>& found, const std::vector<Evidence>& evidence,
                                   const ProcessContext& context, std::vector<std::string>& notes);

}  // namespace culprit
