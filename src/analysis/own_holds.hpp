// Own holds: a GPU slow to consume, told by its work per step (gated_holds.hpp: its own time
// after its inputs, its output slots and its step before were all ready) against the other
// receivers of its communicator and of its replicas. A receive's hold (RecvGpuWait)
// mixes the GPU's own consumption with its wait for a free output slot; in a loop of credit (a
// tree of two nodes, whose root returns its child's data) every GPU holds its inputs as long
// as the slowest, and the holds name nobody. Set against the output slots, the healthy ones hold for a
// microsecond after their step could start, the slow consumer for its consumption. Work, not
// own time: inputs queued at a kernel that started after they arrived are held for the whole
// queue, one step's work each. Judged as
// the connection phases are (significant_excess, edge_stats.hpp): beyond the others' median
// (their quickest with fewer than five), by mad_k of their spread, rel_floor of the
// communicator's step and abs_floor_ns.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "analysis/edge_stats.hpp"
#include "analysis/observations.hpp"
#include "analysis/self_evidence.hpp"

namespace culprit {

struct OwnHoldVerdict {
  uint32_t process = 0;
  uint64_t comm = 0;
  Excess excess;  // work per step beyond the others'
};

// The receivers whose work per gated step stands out among the receivers of their
// communicator and its replicas (`replicas`: communicator -> its replica group,
// wire_groups.hpp; the data-parallel groups of a job run the same collectives, and one of two
// GPUs has only the other beside it, whose steps the gates may not match), at least two
// receivers measured there.
std::vector<OwnHoldVerdict> judge_own_holds(const Observations& observations,
                                            const std::map<uint64_t, CommBaseline>& baselines,
                                            const AttributionConfig& config, const WireGroups& replicas = {});

// The GPUs among `verdicts`.
std::set<uint32_t> slow_own_holders(const std::vector<OwnHoldVerdict>& verdicts);

// Offers each as gpu_consumer: its excess per step over one channel's receive steps of the
// window, added over its communicators (their collectives run one after another).
void offer_slow_own_holds(const Observations& observations, const std::vector<OwnHoldVerdict>& verdicts,
                          std::vector<Evidence>& evidence);

}  // namespace culprit
