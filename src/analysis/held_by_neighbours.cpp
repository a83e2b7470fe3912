#include "analysis/held_by_neighbours.hpp"

#include <map>
#include <string>
#include <utility>

namespace culprit {

void add_starved_by_link_holds(const ProcessContext& context, const std::vector<Evidence>& evidence,
                               const std::vector<double>& kernel_late_ns, std::vector<WaitEdge>& holds) {
  const std::map<uint32_t, std::set<uint64_t>> comms_of = context.comms_of_processes();
  std::map<uint64_t, uint32_t> strongest_link;  // comm -> sender of its worst slow wire
  for (uint32_t p = 0; p < evidence.size(); ++p) {
    if (evidence[p].culprit_class != CulpritClass::kNetworkLink) continue;
    auto comms = comms_of.find(p);
    if (comms == comms_of.end()) continue;
    for (uint64_t comm : comms->second) {
      auto it = strongest_link.find(comm);
      if (it == strongest_link.end() || evidence[p].ns > evidence[it->second].ns) strongest_link[comm] = p;
    }
  }
  for (uint32_t p = 0; p < evidence.size(); ++p) {
    if (evidence[p].culprit_class != CulpritClass::kGpuProducer || kernel_late_ns[p] > 0) continue;
    auto comms = comms_of.find(p);
    if (comms == comms_of.end()) continue;
    for (uint64_t comm : comms->second) {
      auto it = strongest_link.find(comm);
      if (it != strongest_link.end() && it->second != p && evidence[it->second].ns > evidence[p].ns) {
        holds.push_back({p, it->second, evidence[p].ns, "starved_by_link"});
        break;
      }
    }
  }
}

void add_node_interior_holds(const ProcessContext& context, const std::vector<Evidence>& evidence,
                             const std::vector<double>& kernel_late_ns, std::vector<WaitEdge>& holds) {
  std::map<std::string, uint32_t> strongest;  // per host
  auto stronger = [&](uint32_t a, uint32_t b) {
    bool a_kernel = kernel_late_ns[a] > 0, b_kernel = kernel_late_ns[b] > 0;
    return a_kernel != b_kernel ? a_kernel : evidence[a].outranks(evidence[b]);
  };
  auto consider = [&](const std::string& host, uint32_t p) {
    auto it = strongest.find(host);
    if (it == strongest.end() || stronger(p, it->second)) strongest[host] = p;
  };
  for (uint32_t p = 0; p < evidence.size(); ++p) {
    if (!evidence[p].any()) continue;
    consider(context.host_of(p), p);
    if (evidence[p].culprit_class == CulpritClass::kNetworkLink && evidence[p].peer)
      consider(context.host_of(*evidence[p].peer), p);
  }
  for (uint32_t p = 0; p < evidence.size(); ++p) {
    const CulpritClass c = evidence[p].culprit_class;
    if (!evidence[p].any() || c == CulpritClass::kNetworkLink || c == CulpritClass::kFlush || c == CulpritClass::kHang)
      continue;
    uint32_t x = strongest[context.host_of(p)];
    if (x != p) holds.push_back({p, x, evidence[p].ns, "node_interior"});
  }
}

}  // namespace culprit
