#include "analysis/hidden_consumers.hpp"

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <utility>

namespace culprit {
namespace {

using CommProcess = std::pair<uint64_t, uint32_t>;

// The (communicator, process) pairs that receive from the network: every recorded
// connection is a network one (the proxy moves nothing else).
std::set<CommProcess> network_receivers(const Observations& obs, const std::vector<EdgeFacts>& facts) {
  std::set<CommProcess> receivers;
  for (size_t i = 0; i < facts.size(); ++i) receivers.insert({obs.edges[i].key.comm_hash, facts[i].dst});
  return receivers;
}

// Per process, the communicators its consumption was judged in: where its network receives
// were slow to consume (RecvGpuWait), else, for an input that records no consumption (probing's
// exports), where it withheld its senders' credit (receiver_explanations.hpp names a GPU
// gpu_consumer so where its own wait says it held its buffers): the same hold, seen from the
// sender.
std::map<uint32_t, std::set<uint64_t>> consuming_comms(const Observations& obs, const std::vector<EdgeFacts>& facts) {
  std::map<uint32_t, std::set<uint64_t>> comms = slow_consuming_comms(obs, facts);
  std::map<uint32_t, std::set<uint64_t>> withheld;
  for (size_t i = 0; i < facts.size(); ++i)
    if (facts[i].no_credit && !comms.count(facts[i].dst)) withheld[facts[i].dst].insert(obs.edges[i].key.comm_hash);
  comms.merge(withheld);
  return comms;
}

// Whether `other` was named a slow consumer with half `named`'s evidence or more: one slow GPU's
// backpressure holds every entry before it alike.
bool held_alike(const Evidence& other, const Evidence& named) {
  return !other.stopped && other.culprit_class == CulpritClass::kGpuConsumer && other.ns >= named.ns / 2;
}

std::string names_of(const ProcessContext& context, const std::vector<uint32_t>& processes) {
  std::string names;
  for (uint32_t p : processes) names += (names.empty() ? "" : ", ") + context.name_of(p);
  return names;
}

}  // namespace

std::vector<HiddenConsumerCandidates> hidden_consumer_candidates(const Observations& observations,
                                                                 const std::vector<EdgeFacts>& facts,
                                                                 const ProcessContext& context,
                                                                 const std::vector<Evidence>& evidence,
                                                                 const std::vector<uint32_t>& roots) {
  const std::set<CommProcess> receivers = network_receivers(observations, facts);
  std::set<uint32_t> receive_somewhere;
  for (const auto& [comm, p] : receivers) receive_somewhere.insert(p);
  const std::map<uint32_t, std::set<uint64_t>> slow_comms = consuming_comms(observations, facts);
  std::vector<HiddenConsumerCandidates> out;
  const std::set<uint32_t> root_set(roots.begin(), roots.end());
  for (const auto& [named, comms] : slow_comms) {
    const Evidence& e = evidence[named];
    if (!root_set.count(named)) continue;
    if (e.stopped || e.culprit_class != CulpritClass::kGpuConsumer) continue;
    std::set<uint32_t> entries, hidden, alike;
    for (const auto& [key, p] : context.rank_map()) {
      if (!comms.count(key.first) || !context.has_records(p) || context.host_of(p) != context.host_of(named)) continue;
      if (receivers.count({key.first, p})) {
        entries.insert(p);
        if (p != named && held_alike(evidence[p], e)) alike.insert(p);
      } else if (!evidence[p].any() && !receive_somewhere.count(p)) {
        hidden.insert(p);
      }
    }
    if (hidden.empty() && alike.empty()) continue;
    out.push_back({named, std::vector<uint32_t>(hidden.begin(), hidden.end()), static_cast<uint32_t>(entries.size()),
                   std::vector<uint32_t>(alike.begin(), alike.end())});
  }
  return out;
}

void share_with_hidden_consumers(const std::vector<HiddenConsumerCandidates>& candidates,
                                 const ProcessContext& context, std::vector<Evidence>& evidence,
                                 std::vector<std::string>& notes) {
  for (const HiddenConsumerCandidates& c : candidates) {
    evidence[c.named].identified_share = c.share();
    std::string why;
    if (!c.hidden.empty())
      why = "a slow consumption by " + names_of(context, c.hidden) + ", which receive" +
            (c.hidden.size() == 1 ? "s" : "") + " only over NVLink on the same node, would hold them the same way";
    if (!c.alike.empty())
      why += std::string(why.empty() ? "" : "; ") + names_of(context, c.alike) + " on the same node held " +
             (c.alike.size() == 1 ? "its" : "theirs") + " about as long, as one slow GPU holds every GPU before it";
    char share[48];
    if (c.alike.empty()) std::snprintf(share, sizeof share, "%u of %zu", c.entries, c.entries + c.hidden.size());
    else std::snprintf(share, sizeof share, "%.2f of", c.share());
    notes.push_back("gpu_consumer " + context.name_of(c.named) + " was named from its network receives; " + why +
                    ": the named GPU is the slow consumer in about " + share + " such cases, and its score is "
                    "scaled by that");
  }
}

}  // namespace culprit
