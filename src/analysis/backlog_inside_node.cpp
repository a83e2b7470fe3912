#include "analysis/backlog_inside_node.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace culprit {

namespace {

// Half a buffer: a backlog of one full buffer less the slack of a buffer only partly full.
constexpr double kBacklogBound = kSlotsPerConnection / 2.0;
// No backlog: the lag is the straight passage's, within a quarter of a buffer (a lag between
// that and a full buffer may be a buffer after the next GPU, partly full).
constexpr double kNoBacklogBound = kSlotsPerConnection / 4.0;
// Fewer others than this measure no straight passage: the table's, 0, stands in.
constexpr size_t kMinOtherEntries = 2;
constexpr uint32_t kMinSamples = 3;
// A turn crosses the slow GPU twice: up, behind the buffers it fills, and down again, where the
// data comes at the pace the slow GPU sets and its queue wanders from one collective to the
// next (a critically loaded queue). A turn whose lags spread by more than a quarter of a buffer
// carries such a queue, and its backlog says nothing of how far: a 4.76x consumer two GPUs up
// the chain of a root of six (a tree 4x6x2, 17 % slower, fresh seed 11115) read 12.6-25.8
// steps, 1.9 buffers on average, and the GPU after it was named at 0.98. Settled turns spread
// 0.2-1.1 steps.
constexpr double kSettledTurnSpread = kSlotsPerConnection / 4.0;

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

EntryPassages::EntryPassages(const Observations& obs, NodesHeldFromBeyond held) : held_(std::move(held)) {
  for (const GlobalProcess& p : obs.processes) hosts_.push_back(p.host);
  struct Sums {
    double sum = 0, sq = 0, ns = 0, ns_sq = 0, step_ns = 0;
    uint32_t samples = 0;
  };
  std::map<std::pair<uint64_t, uint32_t>, Sums> sums;  // (comm, process)
  for (const GlobalCommRank& c : obs.comm_ranks) {
    if (c.entry_lag_samples == 0) continue;
    Sums& s = sums[{c.comm_hash, c.process}];
    s.sum += c.entry_lag_sum;
    s.sq += c.entry_lag_sq_sum;
    s.ns += c.entry_lag_ns_sum;
    s.ns_sq += c.entry_lag_ns_sq_sum;
    s.step_ns += c.entry_step_ns_sum;
    s.samples += c.entry_lag_samples;
  }
  for (const auto& [key, s] : sums)
    entries_[key.first].push_back({key.second, summarize(s.sum, s.sq, s.samples),
                                   summarize(s.ns, s.ns_sq, s.samples), s.step_ns / s.samples});
  std::map<std::pair<uint64_t, uint32_t>, Sums> turn_sums;  // (comm, process)
  for (const GlobalCommRank& c : obs.comm_ranks) {
    if (c.loop_lag_samples == 0) continue;
    Sums& s = turn_sums[{c.comm_hash, c.process}];
    s.sum += c.loop_lag_sum;
    s.sq += c.loop_lag_sq_sum;
    s.samples += c.loop_lag_samples;
  }
  for (const auto& [key, s] : turn_sums)
    turns_[key.first].push_back({key.second, summarize(s.sum, s.sq, s.samples), {}, 0, true});
}

std::optional<double> EntryPassages::measured_straight(uint64_t comm) const {
  auto entries = entries_.find(comm);
  if (entries == entries_.end()) return std::nullopt;
  std::vector<double> passing;
  for (const Entry& e : entries->second)
    if (e.lag.samples >= kMinSamples && e.lag.mean >= 0) passing.push_back(e.lag.mean);
  if (passing.size() < kMinOtherEntries) return std::nullopt;
  return lower_quartile(passing);
}

bool EntryPassages::reads_turn(uint32_t receiver, uint64_t comm) const {
  auto entries = entries_.find(comm);
  const bool entry = entries != entries_.end() && std::ranges::find(entries->second, receiver, &Entry::process) !=
                                                      entries->second.end();
  return !entry && straight_turn(receiver, comm).has_value();
}

std::optional<std::pair<double, const EntryPassages::Entry*>> EntryPassages::straight_for(uint32_t receiver,
                                                                                         uint64_t comm) const {
  auto entries = entries_.find(comm);
  if (entries == entries_.end()) return std::nullopt;
  const Entry* own = nullptr;
  std::vector<double> others;
  for (const Entry& e : entries->second) {
    if (e.process == receiver) own = &e;
    else if (e.lag.samples >= kMinSamples && e.lag.mean >= 0) others.push_back(e.lag.mean);
  }
  if (own) return std::make_pair(others.size() >= kMinOtherEntries ? lower_quartile(others) : 0.0, own);
  const std::optional<double> passage = straight_turn(receiver, comm);
  if (!passage) return std::nullopt;
  return std::make_pair(*passage, &*std::ranges::find(turns_.at(comm), receiver, &Entry::process));
}

std::optional<double> EntryPassages::straight_turn(uint32_t receiver, uint64_t comm) const {
  auto turns = turns_.find(comm);
  if (turns == turns_.end()) return std::nullopt;
  const auto turn = std::ranges::find(turns->second, receiver, &Entry::process);
  if (turn == turns->second.end() || turn->lag.samples < kMinSamples ||
      turn->lag.se * std::sqrt(static_cast<double>(turn->lag.samples)) > kSettledTurnSpread)
    return std::nullopt;
  return turn_passage(comm, hosts_.at(receiver));
}

std::optional<double> EntryPassages::turn_passage(uint64_t comm, const std::string& host) const {
  // A backlog only lengthens a passage, so each estimate errs long (the entries of a tree of
  // three nodes of two GPUs, paced by a slow GPU, read 2.3 steps where the turns read 0.5):
  // the least of them stands.
  std::optional<double> least;
  if (const std::optional<double> straight = measured_straight(comm)) least = 2 * *straight;
  auto turns = turns_.find(comm);
  for (const Entry& e : turns == turns_.end() ? std::vector<Entry>{} : turns->second)
    if (e.lag.samples >= kMinSamples && hosts_.at(e.process) != host && !held_.count({hosts_.at(e.process), comm}))
      least = std::min(least.value_or(e.lag.mean), e.lag.mean);
  return least;
}

std::optional<double> EntryPassages::backlog_steps(uint32_t receiver, uint64_t comm) const {
  const auto straight = straight_for(receiver, comm);
  if (!straight || !significantly_above(straight->second->lag, straight->first + kBacklogBound)) return std::nullopt;
  return straight->second->lag.mean - straight->first;
}

bool EntryPassages::no_backlog_after(uint32_t receiver, uint64_t comm) const {
  const auto straight = straight_for(receiver, comm);
  return straight && !straight->second->turn &&
         significantly_below(straight->second->lag, straight->first + kNoBacklogBound);
}

std::optional<BacklogAboveAll> EntryPassages::backlog_above_all(uint32_t receiver, uint64_t comm,
                                                                const std::set<uint32_t>& held_beyond) const {
  const auto straight = straight_for(receiver, comm);
  if (!straight || straight->second->turn) return std::nullopt;  // a turn has no lags in ns
  // In ns: a collective whose pace at the entry was unusual reads long or short in its steps.
  std::optional<double> highest_ns;
  size_t others = 0;
  for (const Entry& e : entries_.at(comm))
    if (e.process != receiver && e.lag.samples >= kMinSamples && !held_beyond.count(e.process)) {
      highest_ns = std::max(highest_ns.value_or(e.lag_ns.mean), e.lag_ns.mean);
      ++others;
    }
  const Entry& own = *straight->second;
  const double buffer_ns = kSlotsPerConnection * own.step_ns;
  if (others < kMinOtherEntries || !significantly_above(own.lag_ns, *highest_ns + buffer_ns)) return std::nullopt;
  BacklogAboveAll b;
  b.steps = own.lag.mean - straight->first;
  b.window_ns = (own.lag_ns.mean - straight->first * own.step_ns) * own.lag_ns.samples;
  b.margin = (own.lag_ns.mean - *highest_ns) / (buffer_ns + noise_at_tail(own.lag_ns));
  return b;
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

BacklogReadings::BacklogReadings(const Observations& obs, const std::vector<EdgeFacts>& facts,
                                 const ProcessContext& context, const AttributionConfig& config)
    : held(nodes_held_from_beyond(obs, facts, context)), passages(obs, held), lanes(obs, facts, context),
      config(config) {
  for (size_t i = 0; i < facts.size(); ++i) {
    const EdgeFacts& f = facts[i];
    if (f.p2p || !f.view.has_recv || f.src == f.dst || context.host_of(f.src) == context.host_of(f.dst)) continue;
    receive_steps[{f.dst, obs.edges[i].key.comm_hash}] += static_cast<double>(obs.edges[i].recv_steps);
  }
  for (const auto& [key, p] : context.rank_map())
    if (held.count({context.host_of(p), key.first})) held_gpus[key.first].insert(p);
}

void take_hold_behind_backlog(const BacklogReadings& r, const ReceiverPeers& receivers, double cycle_ns,
                              const ProcessContext& context, size_t connection, EdgeFacts& f) {
  const EdgeKey& key = f.view.edge->key;
  if (f.slow_consume || f.p2p || !f.view.has_recv || r.held.count({context.host_of(f.dst), key.comm_hash}) ||
      !r.passages.backlog_after(f.dst, key.comm_hash))
    return;
  Excess hold = receivers.anomaly(f.view, kRecvGpuWait, cycle_ns, /*every_step=*/false);
  if (hold.ns <= 0) {
    // No peers' holds to measure it by (a tree's only interior node; buffers after the entry
    // long enough to take the backlog whole): the backlog alone, where it is no healthy
    // passage's and the data did not pass the node in time.
    auto held_gpus = r.held_gpus.find(key.comm_hash);
    const std::optional<BacklogAboveAll> above = r.passages.backlog_above_all(
        f.dst, key.comm_hash, held_gpus == r.held_gpus.end() ? std::set<uint32_t>{} : held_gpus->second);
    auto steps = r.receive_steps.find({f.dst, key.comm_hash});
    if (!above || steps == r.receive_steps.end() || r.lanes.delivered_past_receiver(connection, r.config)) return;
    hold = {above->window_ns / steps->second, above->margin};
  }
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
