// Hang evidence from how far each rank got (DESIGN.md, "Attribution"; docs/attribution.md,
// "stopped").
//
// Collective N cannot complete until every member has started it, so the ranks whose
// records stop before the newest sequence their communicator reached are the ones that
// stopped; everyone else waits inside N. A trace cut inside a collective proves nothing, and
// neither does a rank whose sequence is unknown. A laggard of one communicator that is up to
// date in another communicator with laggards is blocked there, not stopped. So is a rank with
// a send or receive its partner never matched (the k-th Send of a rank to a peer meets the
// k-th Recv of that peer from it): this separates the pipeline stage that stopped from the
// stages stuck behind it. Where no collective communicator has laggards (none, or all of its
// members at the same sequence), the rank its partners wait for that waits for nobody itself
// stopped.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <utility>

#include "analysis/observations.hpp"

namespace culprit {

// The processes that stopped. `process_of_rank` maps (communicator, rank) to a process.
std::set<uint32_t> stopped_by_sequence(const Observations& observations,
                                       const std::map<std::pair<uint64_t, int32_t>, uint32_t>& process_of_rank);

}  // namespace culprit
