// The /chains table read back as paths: each victim's hops in order, and the longest path
// that ends at a culprit (the one the text report prints and the HTML page draws).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "core/results.hpp"

namespace culprit {

using ChainsByVictim = std::map<uint32_t, std::vector<ChainRow>>;

// Chains grouped by victim, hops in order (hop 0 the victim, the last one its root).
ChainsByVictim chains_by_victim(const AnalysisResults& results);

// The longest chain of at least one hop that ends at `culprit` (at either end of a link), or
// null when none does. Ties go to the lowest victim id.
const std::vector<ChainRow>* longest_chain_to(const ChainsByVictim& chains, const CulpritRow& culprit);

}  // namespace culprit
