#include "analysis/consumer_position.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "analysis/backlog_inside_node.hpp"
#include "analysis/chain_order.hpp"
#include "analysis/lag_summary.hpp"

namespace culprit {
namespace {

// The lag of an entry that passes its data on is the passage across the node, a fraction of a
// step above 0; one that holds its slots frees them up to a buffer later. Between 0 and -1
// step (the joining of the two clocks is within the profiler's polling of kernel starts)
// nothing is concluded: a slot held for less than a step is too close to call.
constexpr double kHoldBound = -1;
constexpr double kPassBound = 0;
constexpr double kSlots = kSlotsPerConnection;
// A backlog counts whole buffers, one per GPU between the entry and the slow one. One that lies
// more than a quarter of a buffer from a whole number of them says nothing of how far: a buffer
// after the slow GPU only partly full, or the slow GPU's own queue (a 3.14x consumer five GPUs
// after the up-entry of a tree 10x8x2 under LL, 18 % slower, fresh seed 11105, left 4.55
// buffers; rounded, the GPU after it was named at 0.98).
constexpr double kWholeBuffersSlack = 0.25;

// What the lags say of one GPU.
struct Reading {
  LagSummary entry, exit;
  bool holds = false, passes = false, full = false, held_beyond = false;
  bool positive() const { return (holds || (full && !held_beyond)) && !passes; }
};

// A GPU where a tree's data turns back, and that is no one-way entry of the communicator (whose
// lags say the same with less noise: a turn crosses the slow GPU twice), passes its data on
// where its turn shows a backlog after it (backlog_inside_node.hpp). Its lags say no more: a
// straight turn is known within a step or two, enough to count whole buffers, not to tell a
// turn that holds its slots from a straight one (a tree of three nodes of two GPUs whose entries
// read 2.3 steps, against turns of 0.5: the turn's own GPU, before the slow one, was named at
// 0.98).
Reading read_lags(const Observations& obs, const EntryPassages& passages, uint32_t process,
                  const std::set<uint64_t>& comms, const std::set<uint64_t>& long_comms) {
  double e_sum = 0, e_sq = 0, x_sum = 0, x_sq = 0;
  uint32_t e_n = 0, x_n = 0;
  bool turn_passes = false;
  for (const GlobalCommRank& c : obs.comm_ranks) {
    if (c.process != process || !comms.count(c.comm_hash)) continue;
    e_sum += c.entry_lag_sum;
    e_sq += c.entry_lag_sq_sum;
    e_n += c.entry_lag_samples;
    turn_passes = turn_passes || (passages.reads_turn(process, c.comm_hash) &&
                                  passages.backlog_steps(process, c.comm_hash).has_value());
    // With two GPUs the exit's backlog is the entry's lag: no second reading.
    if (!long_comms.count(c.comm_hash)) continue;
    x_sum += c.exit_shortfall_sum;
    x_sq += c.exit_shortfall_sq_sum;
    x_n += c.exit_shortfall_samples;
  }
  const LagSummary entry = summarize(e_sum, e_sq, e_n), exit = summarize(x_sum, x_sq, x_n);
  return {entry, exit, significantly_below(entry, kHoldBound) && !turn_passes,
          significantly_above(entry, kPassBound) || turn_passes, significantly_above(exit, -kSlots / 2)};
}

// Whether `process`'s network sends in `comms` wait for their receivers' credit more than for
// their own data: then the node's buffers are full because the data is held beyond the node
// (the next node, the wire), and a full backlog before the exit says nothing of the exit.
bool held_beyond(const Observations& obs, const std::vector<EdgeFacts>& facts, uint32_t process,
                 const std::set<uint64_t>& comms) {
  double credit = 0, data = 0;
  for (size_t i = 0; i < facts.size(); ++i) {
    if (facts[i].src != process || facts[i].dst == process || !comms.count(obs.edges[i].key.comm_hash)) continue;
    credit += static_cast<double>(obs.edges[i].phase_ns[kSendPeerWait]);
    data += static_cast<double>(obs.edges[i].phase_ns[kSendGpuWait]);
  }
  return credit > 0 && credit >= data;
}

std::string describe(const ProcessContext& context, uint32_t p, const Reading& r) {
  char text[240];
  std::snprintf(text, sizeof text, " entry lag %.2f +- %.2f (%u)  exit shortfall %.2f +- %.2f (%u)%s%s%s",
                r.entry.mean, r.entry.se, r.entry.samples, r.exit.mean, r.exit.se, r.exit.samples,
                r.holds ? " holds" : "", r.passes ? " passes" : "",
                r.full ? (r.held_beyond ? " full, held beyond the node" : " full") : "");
  return "passage " + context.name_of(p) + text;
}

// Where several GPUs remain and the named entry passes its data on with a backlog after it (its
// lag beyond its communicator's straight passage, backlog_inside_node.hpp), the backlog B puts
// the slow GPU p = 1 + round(B / S) GPUs after it (S (p - 1) steps: the table of
// consumer_position.hpp), and the chain from the entry (chain_order.hpp, read from the order the
// node's GPUs stop each channel) says which GPU that is. An entry held at all is held behind
// full buffers up to the slow GPU, so where its lag stands within a quarter of a buffer of the
// straight passage (no backlog) that GPU is the next one, p = 1 (a 3.95x consumer right after
// the entry of a tree 22x5x2 under LL128, 97 % slower: the entry held 1462 us a step, its lag
// 0.18 steps). Every communicator whose chain is read must point at the same GPU, one of those left
// and inside the chain (the exit has its own reading), or, where the entry turns a tree's data
// back at its root, up to the chain's top (a 2.88x consumer on the top GPU of a root node of a
// tree 10x5x2 under LL, 47 % slower, fresh seed 11105: its turn read 24.2 steps, a straight
// turn of 1.8 plus 22.4, 2.8 buffers, p = 4). A lag between says nothing of how far:
// a buffer after the next GPU only partly full, or a straight passage read long; nor does a
// backlog between two whole numbers of buffers (kWholeBuffersSlack).
std::optional<uint32_t> along_the_chain(const Observations& obs, const ProcessContext& context,
                                        const EntryPassages& passages, uint32_t named,
                                        const std::set<uint64_t>& comms, const std::vector<uint32_t>& left) {
  std::optional<uint32_t> found;
  for (uint64_t comm : comms) {
    const std::vector<uint32_t> chain = chain_from(obs, context, named, comm);
    const std::optional<double> backlog = passages.backlog_steps(named, comm);
    if (chain.empty() || (!backlog && !passages.no_backlog_after(named, comm))) continue;
    if (backlog && std::fabs(*backlog / kSlots - std::round(*backlog / kSlots)) > kWholeBuffersSlack)
      return std::nullopt;
    const auto p = static_cast<size_t>(1 + (backlog ? std::lround(*backlog / kSlots) : 0));
    // Where the data turns back, the far end of the chain is its top, no exit with a reading.
    const size_t farthest = passages.reads_turn(named, comm) ? chain.size() - 1 : chain.size() - 2;
    if (p > farthest) return std::nullopt;
    const uint32_t target = chain[p];
    if (found && *found != target) return std::nullopt;
    found = target;
  }
  if (found && std::find(left.begin(), left.end(), *found) == left.end()) return std::nullopt;
  return found;
}

// Where the named entry's communicators run another algorithm than the tree (a ring's), the GPU
// of the node that stopped last in every collective (chain_order.hpp, last_to_stop): a ring's
// slow consumer takes the last step of all (pipeline/chain_places.hpp). In a ring 8x8x2 whose
// 2.04x consumer cost 34 % it stopped last in eight collectives of eight, as the slow GPU did
// in every ring of ten that a consumer slowed by 5 % or more and the lags left unplaced (fresh
// seed 11093). Every communicator that says must name the same GPU, one of those left.
std::optional<uint32_t> stopped_last(const Observations& obs, const ProcessContext& context, uint32_t named,
                                     const std::set<uint64_t>& comms, const std::vector<uint32_t>& left) {
  std::optional<uint32_t> found;
  for (uint64_t comm : comms) {
    const std::optional<uint32_t> last = last_to_stop(obs, context, named, comm);
    if (!last) continue;
    if (found && *found != *last) return std::nullopt;
    found = last;
  }
  if (found && std::find(left.begin(), left.end(), *found) == left.end()) return std::nullopt;
  return found;
}

// What placing one named root reads besides its own node: the communicators' entries and the
// nodes held from beyond (backlog_inside_node.hpp), each computed once for every root.
struct NodeReadings {
  const EntryPassages& passages;
  const NodesHeldFromBeyond& held;
};

ConsumerPlacement place_one(const Observations& obs, const std::vector<EdgeFacts>& facts,
                            const ProcessContext& context, const NodeReadings& nodes, uint32_t named,
                            const std::set<uint64_t>& comms) {
  std::set<uint32_t> gpus;
  std::map<uint64_t, int> per_comm;
  for (const auto& [key, p] : context.rank_map()) {
    if (!comms.count(key.first) || !context.has_records(p) || context.host_of(p) != context.host_of(named)) continue;
    gpus.insert(p);
    ++per_comm[key.first];
  }
  std::set<uint64_t> long_comms;
  for (const auto& [comm, n] : per_comm)
    if (n >= 3) long_comms.insert(comm);
  std::vector<uint32_t> positive, left;
  std::vector<std::string> readings;
  bool holds = false;
  for (uint32_t p : gpus) {
    Reading r = read_lags(obs, nodes.passages, p, comms, long_comms);
    r.held_beyond = r.full && held_beyond(obs, facts, p, comms);
    readings.push_back(describe(context, p, r));
    if (r.positive()) {
      positive.push_back(p);
      holds = r.holds;
    }
    if (!r.passes) left.push_back(p);
  }
  if (positive.size() == 1)
    return ConsumerPlacement{named, positive[0], 1,
                             holds ? "it frees its receive slots after the node's exit sent their data on"
                                   : "as the node's exit, every buffer before it on the node is full",
                             readings};
  const bool named_left = std::find(left.begin(), left.end(), named) != left.end();
  if (!positive.empty() || left.empty() || (left.size() > 1 && named_left))
    return ConsumerPlacement{named, named, 0, "", readings};  // nothing concluded
  if (left.size() == 1)
    return ConsumerPlacement{named, left[0], 1, "every other GPU of the node passes its data on before freeing it",
                             readings};
  // Where the node's sends wait for credit, its buffers fill from beyond whichever GPU is slow.
  const bool node_held_beyond = std::ranges::any_of(
      comms, [&](uint64_t comm) { return nodes.held.count({context.host_of(named), comm}) > 0; });
  if (const std::optional<uint32_t> along =
          node_held_beyond ? std::nullopt : along_the_chain(obs, context, nodes.passages, named, comms, left))
    return ConsumerPlacement{named, *along, 1,
                             "it passes its data on before freeing it, and the data then waits on the node as "
                             "long as behind a slow GPU that far along the node's chain (ordered by when "
                             "the node's GPUs end their collectives)",
                             readings};
  if (const std::optional<uint32_t> last =
          node_held_beyond ? std::nullopt : stopped_last(obs, context, named, comms, left))
    return ConsumerPlacement{named, *last, 1,
                             "it passes its data on before freeing it, and of the node's GPUs this one stopped "
                             "last in every collective, as a ring's slow consumer does",
                             readings};
  return ConsumerPlacement{named, left[0], static_cast<uint32_t>(left.size()),
                           "it passes its data on before freeing it; the GPUs after it are not told apart", readings};
}

}  // namespace

std::vector<ConsumerPlacement> place_slow_consumers(const Observations& observations,
                                                    const std::vector<EdgeFacts>& facts,
                                                    const ProcessContext& context,
                                                    const std::vector<Evidence>& evidence,
                                                    const std::vector<uint32_t>& roots,
                                                    const std::set<uint32_t>& own_measured) {
  std::vector<ConsumerPlacement> out;
  const std::map<uint32_t, std::set<uint64_t>> slow_comms = slow_consuming_comms(observations, facts);
  const NodesHeldFromBeyond held = nodes_held_from_beyond(observations, facts, context);
  const EntryPassages passages(observations, held);
  for (uint32_t named : roots) {
    const Evidence& e = evidence[named];
    auto comms = slow_comms.find(named);
    if (e.stopped || e.culprit_class != CulpritClass::kGpuConsumer || comms == slow_comms.end() ||
        own_measured.count(named) > 0)
      continue;
    ConsumerPlacement placement = place_one(observations, facts, context, {passages, held}, named, comms->second);
    if (placement.placed != named && evidence[placement.placed].stopped) placement.left = 0;  // a hang outranks it
    out.push_back(std::move(placement));
  }
  return out;
}

void apply_consumer_placements(const std::vector<ConsumerPlacement>& placements, const ProcessContext& context,
                               std::vector<Evidence>& evidence, std::vector<uint32_t>& roots,
                               std::vector<std::string>& notes) {
  for (const ConsumerPlacement& p : placements) {
    if (!p.concluded()) continue;
    Evidence moved = evidence[p.named];
    moved.identified_share = 1.0 / p.left;
    if (p.placed == p.named) {
      evidence[p.named] = moved;
      continue;
    }
    evidence[p.named] = Evidence{};
    if (!evidence[p.placed].outranks(moved)) evidence[p.placed] = moved;  // a root there keeps the stronger
    if (std::find(roots.begin(), roots.end(), p.placed) == roots.end())
      std::replace(roots.begin(), roots.end(), p.named, p.placed);
    else
      std::erase(roots, p.named);
    notes.push_back("gpu_consumer: " + context.name_of(p.named) + "'s network receives are held by " +
                    context.name_of(p.placed) + " on the same node: " + p.why +
                    (p.left > 1 ? " (one of " + std::to_string(p.left) + ", its score scaled by that)" : ""));
  }
}

}  // namespace culprit
