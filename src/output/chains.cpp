#include "output/chains.hpp"

#include <algorithm>

namespace culprit {

ChainsByVictim chains_by_victim(const AnalysisResults& r) {
  ChainsByVictim by_victim;
  for (const ChainRow& c : r.chains) by_victim[c.victim].push_back(c);
  for (auto& [victim, hops] : by_victim)
    std::sort(hops.begin(), hops.end(), [](const ChainRow& a, const ChainRow& b) { return a.hop < b.hop; });
  return by_victim;
}

const std::vector<ChainRow>* longest_chain_to(const ChainsByVictim& chains, const CulpritRow& c) {
  const std::vector<ChainRow>* best = nullptr;
  for (const auto& [victim, hops] : chains) {
    const uint32_t root = hops.back().process_id;
    const bool ends_here = root == c.process_id || (c.peer_process_id >= 0 && root == c.peer_process_id);
    if (ends_here && hops.size() >= 2 && (!best || hops.size() > best->size())) best = &hops;
  }
  return best;
}

}  // namespace culprit
