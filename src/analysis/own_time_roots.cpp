#include "analysis/own_time_roots.hpp"

#include <algorithm>
#include <set>

namespace culprit {

void drop_holds_of_own_time_roots(const OwnDelay& own_delay, const std::vector<EdgeFacts>& facts,
                                  std::vector<WaitEdge>& holds) {
  std::set<uint32_t> roots;
  if (own_delay.have_gaps)
    for (uint32_t p = 0; p < own_delay.late_ns.size(); ++p)
      if (own_delay.late_ns[p] > 0) roots.insert(p);
  for (const EdgeFacts& f : facts)
    if (f.slow_link) roots.insert(f.src);
  std::erase_if(holds, [&](const WaitEdge& h) { return roots.count(h.from) > 0; });
}

void drop_holds_of_slow_own_holds(const std::vector<OwnHoldVerdict>& verdicts, std::vector<WaitEdge>& holds) {
  const std::set<uint32_t> roots = slow_own_holders(verdicts);
  std::erase_if(holds, [&](const WaitEdge& h) { return roots.count(h.from) > 0; });
}

void drop_holds_of_stopped(const std::vector<Evidence>& evidence, std::vector<WaitEdge>& holds) {
  std::erase_if(holds, [&](const WaitEdge& h) { return h.from < evidence.size() && evidence[h.from].stopped; });
}

}  // namespace culprit
