#include "analysis/backlog_inside_node.hpp"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

namespace culprit {

namespace {

// Half a buffer: a backlog of one full buffer less the slack of a buffer only partly full.
constexpr double kBacklogBound = kSlotsPerConnection / 2.0;
// Fewer others than this measure no straight passage: the table's, 0, stands in.
constexpr size_t kMinOtherEntries = 2;
constexpr uint32_t kMinSamples = 3;

// A backlog only adds to a passage, and many entries of a job one fault paces carry one (held
// from beyond their node, every buffer of it full): the straight passage is at the bottom of
// the lags of the entries that pass their data on (a lag below 0 is an entry that holds its
// slots, no passage). The lower quartile, not the least, so that one noisy low lag cannot set
// it.
double lower_quartile(std::vector<double>& values) {
  std::sort(values.begin(), values.end());
  const double at = 0.25 * static_cast<double>(values.size() - 1);
  const auto below = static_cast<size_t>(at);
  const size_t above = std::min(below + 1, values.size() - 1);
  return values[below] + (values[above] - values[below]) * (at - static_cast<double>(below));
}

}  // namespace

EntryPassages::EntryPassages(const Observations& obs) {
  std::map<std::pair<uint64_t, uint32_t>, std::pair<double, double>> sums;  // (comm, process) -> (sum, sq)
  std::map<std::pair<uint64_t, uint32_t>, uint32_t> samples;
  for (const GlobalCommRank& c : obs.comm_ranks) {
    if (c.entry_lag_samples == 0) continue;
    auto& [sum, sq] = sums[{c.comm_hash, c.process}];
    sum += c.entry_lag_sum;
    sq += c.entry_lag_sq_sum;
    samples[{c.comm_hash, c.process}] += c.entry_lag_samples;
  }
  for (const auto& [key, s] : sums)
    entries_[key.first].emplace_back(key.second, summarize(s.first, s.second, samples[key]));
}

std::optional<double> EntryPassages::backlog_steps(uint32_t receiver, uint64_t comm) const {
  auto entries = entries_.find(comm);
  if (entries == entries_.end()) return std::nullopt;
  const LagSummary* own = nullptr;
  std::vector<double> others;
  for (const auto& [process, lag] : entries->second) {
    if (process == receiver) own = &lag;
    else if (lag.samples >= kMinSamples && lag.mean >= 0) others.push_back(lag.mean);
  }
  if (!own) return std::nullopt;
  const double straight = others.size() >= kMinOtherEntries ? lower_quartile(others) : 0.0;
  if (!significantly_above(*own, straight + kBacklogBound)) return std::nullopt;
  return own->mean - straight;
}

NodesHeldFromBeyond nodes_held_from_beyond(const Observations& obs, const std::vector<EdgeFacts>& facts,
                                           const ProcessContext& context) {
  std::map<std::pair<uint32_t, uint64_t>, std::pair<double, double>> waits;  // (sender, comm) -> (credit, data)
  for (size_t i = 0; i < facts.size(); ++i) {
    if (facts[i].src == facts[i].dst || context.host_of(facts[i].src) == context.host_of(facts[i].dst)) continue;
    auto& [credit, data] = waits[{facts[i].src, obs.edges[i].key.comm_hash}];
    credit += static_cast<double>(obs.edges[i].phase_ns[kSendPeerWait]);
    data += static_cast<double>(obs.edges[i].phase_ns[kSendGpuWait]);
  }
  NodesHeldFromBeyond held;
  for (const auto& [who, w] : waits)
    if (w.first > 0 && w.first >= w.second) held.insert({context.host_of(who.first), who.second});
  return held;
}

void take_hold_behind_backlog(const EntryPassages& passages, const ReceiverPeers& receivers, double cycle_ns,
                              const NodesHeldFromBeyond& held, const ProcessContext& context, EdgeFacts& f) {
  const uint64_t comm = f.view.edge->key.comm_hash;
  if (f.slow_consume || f.p2p || !f.view.has_recv || held.count({context.host_of(f.dst), comm}) ||
      !passages.backlog_after(f.dst, comm))
    return;
  const Excess hold = receivers.anomaly(f.view, kRecvGpuWait, cycle_ns, /*every_step=*/false);
  if (hold.ns <= 0) return;
  f.anomaly[kRecvGpuWait] = hold.ns;
  f.margin[kRecvGpuWait] = hold.margin;
  f.slow_consume = true;
  f.behind_backlog = true;
}

std::optional<uint32_t> late_gpu_behind(const ProcessContext& context, const std::vector<double>& late_ns,
                                        uint32_t receiver, uint64_t comm) {
  std::optional<uint32_t> latest;
  for (const auto& [key, p] : context.rank_map())
    if (key.first == comm && p != receiver && p < late_ns.size() && late_ns[p] > 0 &&
        context.host_of(p) == context.host_of(receiver) && (!latest || late_ns[p] > late_ns[*latest]))
      latest = p;
  return latest;
}

}  // namespace culprit
