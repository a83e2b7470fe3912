// Pass 7 of the attribution, blame, chains and score: the result rows of the processes,
// their chains to the roots, and one culprit row per root.
//
// A root's blame is its victims' measured waiting plus the excess it caused directly (its
// evidence; a hang's is no time). Its job_share is what it cost the job as a share of all
// processes' time inside NCCL, where the data can measure that:
//   - a hang stops everyone who waits on it: its victims and itself, of all processes;
//   - a slow GPU (gpu_producer with kernel durations): its victims' time inside NCCL beyond
//     its own (it does not wait for itself, so its own time there is what the others would
//     have spent without it);
//   - a fault inside NCCL (a slow wire, consumer or flush) lengthens the root's own time
//     there as much as its victims', so this measure says nothing about it: NaN, unknown
//     rather than guessed (docs/attribution.md).
// The score is the calibrated confidence of score.hpp, from the margin of the root's evidence.
#pragma once

#include <vector>

#include "analysis/process_context.hpp"
#include "analysis/self_evidence.hpp"
#include "analysis/wait_graph.hpp"
#include "core/results.hpp"

namespace culprit {

struct BlameInputs {
  const Observations& observations;
  const ProcessContext& context;
  const std::vector<Evidence>& evidence;  // per process
  const GraphVerdict& graph;              // victims' roots and chains, wait_ns filled
  const std::vector<uint32_t>& roots;
};

struct Blame {
  std::vector<ProcessRow> processes;
  std::vector<CulpritRow> culprits;  // hangs first, then most blame first
  std::vector<ChainRow> chains;
};

Blame blame_roots(const BlameInputs& inputs);

}  // namespace culprit
