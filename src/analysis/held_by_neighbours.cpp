#include "analysis/held_by_neighbours.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
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
                             const std::vector<double>& kernel_late_ns, std::vector<WaitEdge>& holds,
                             const std::set<uint32_t>& own_holders) {
  const std::map<uint32_t, std::set<uint64_t>> comms_of = context.comms_of_processes();
  auto share_a_comm = [&](uint32_t a, uint32_t b) {
    auto ca = comms_of.find(a), cb = comms_of.find(b);
    if (ca == comms_of.end() || cb == comms_of.end()) return false;
    return std::ranges::any_of(ca->second, [&](uint64_t c) { return cb->second.count(c) > 0; });
  };
  // Only GPUs that some communicator chains together pass backpressure and starvation on. A
  // GPU late by its own work withholds its node peers' credit at the start of each
  // collective; a peer slow to consume holds its inputs at every step, which that cannot. One
  // that stopped holds everything.
  auto can_hold = [&](uint32_t x, uint32_t p) {
    const bool late_beside_consumer = kernel_late_ns[x] > 0 && !evidence[x].stopped &&
                                      evidence[p].culprit_class == CulpritClass::kGpuConsumer;
    return x != p && share_a_comm(p, x) && !late_beside_consumer;
  };
  // Own time measured outranks a delay read from waits: kernel clocks first, then a hold set
  // against the output slots.
  auto measured = [&](uint32_t p) { return kernel_late_ns[p] > 0 ? 2 : own_holders.count(p) > 0 ? 1 : 0; };
  auto stronger = [&](uint32_t a, uint32_t b) {
    const int a_measured = measured(a), b_measured = measured(b);
    return a_measured != b_measured ? a_measured > b_measured : evidence[a].outranks(evidence[b]);
  };
  std::map<std::string, std::vector<uint32_t>> on_host;  // the evidence that counts on each node
  for (uint32_t p = 0; p < evidence.size(); ++p) {
    if (!evidence[p].any()) continue;
    on_host[context.host_of(p)].push_back(p);
    if (evidence[p].culprit_class == CulpritClass::kNetworkLink && evidence[p].peer &&
        context.host_of(*evidence[p].peer) != context.host_of(p))
      on_host[context.host_of(*evidence[p].peer)].push_back(p);
  }
  for (uint32_t p = 0; p < evidence.size(); ++p) {
    const CulpritClass c = evidence[p].culprit_class;
    if (!evidence[p].any() || c == CulpritClass::kNetworkLink || c == CulpritClass::kFlush || c == CulpritClass::kHang)
      continue;
    std::optional<uint32_t> strongest;
    for (uint32_t x : on_host[context.host_of(p)])
      if (can_hold(x, p) && stronger(x, p) && (!strongest || stronger(x, *strongest))) strongest = x;
    if (strongest) holds.push_back({p, *strongest, evidence[p].ns, "node_interior"});
  }
}

}  // namespace culprit
