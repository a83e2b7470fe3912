#include "analysis/receiver_explanations.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <source_location>
#include <string>
#include <utility>

#include "analysis/backlog_inside_node.hpp"
#include "analysis/gated_holds.hpp"
#include "analysis/late_posters.hpp"
#include "analysis/peer_roles.hpp"
#include "analysis/withheld_credit.hpp"

namespace culprit {
namespace {

struct Connection {
  size_t index;
  const EdgeFacts& facts;
  uint64_t comm;
  double send_steps, recv_steps;
  double flush, consume;  // the receiver's own excess over the window (0: none)
  double withheld;        // credit withheld per step beyond the receiver's peers (0: none)
  double credit_margin, flush_margin, consume_margin;  // how far each cleared its guards
};

// A receiver's own time over the window. The channels of one communicator run side by side,
// so its inputs there overlap and the longest counts; its communicators' collectives run one
// after another, so their times add. A GPU slow to consume is slow in every communicator it
// receives in; a sibling that only looks slow because it feeds that GPU over NVLink is so in
// the one communicator they share, and adds up to less.
class ReceiverTimes {
 public:
  // `share`: the chance that the class is right where the data cannot tell it from another.
  void offer(uint32_t process, uint64_t comm, double ns, CulpritClass cls, double margin, double share = 1,
             std::source_location where = std::source_location::current()) {
    Time& t = times_[{process, cls}];
    if (ns > t.longest_part) {
      t.longest_part = ns;
      t.found_at = where;
    }
    t.longest_by_comm[comm] = std::max(t.longest_by_comm[comm], ns);
    t.margin = std::max(t.margin, margin);
    t.share = std::min(t.share, share);
  }
  // `receives`: the communicators each process receives in from the network.
  void commit(const ProcessContext& context, const std::map<uint32_t, std::set<uint64_t>>& receives,
              std::vector<Evidence>& evidence, std::vector<WaitEdge>& holds) const {
    const std::map<std::string, std::vector<uint32_t>> slow_consumers = slow_everywhere_by_host(context, receives);
    for (const auto& [who, t] : times_) {
      double total = 0;
      for (const auto& [comm, ns] : t.longest_by_comm) total += ns;
      const bool gpu_time = who.second == CulpritClass::kGpuConsumer || who.second == CulpritClass::kGpuProducer;
      if (gpu_time && !slow_everywhere(who, receives)) {
        // Slow in some communicators and on time in others: neither a slow consumer nor a slow
        // GPU, which is slow in each. In the slow ones it feeds a GPU of its node over NVLink
        // that is (hidden_consumers.hpp): its buffers held, its credit withheld, however that
        // looks. Where such a GPU shows itself, slow to consume everywhere it receives, it
        // waits on it.
        auto peers = slow_consumers.find(context.host_of(who.first));
        if (peers != slow_consumers.end() && std::ranges::find(peers->second, who.first) == peers->second.end()) {
          for (uint32_t peer : peers->second) holds.push_back({who.first, peer, total, "backpressure"});
          continue;
        }
      }
      evidence[who.first].offer(total, who.second, std::nullopt, t.margin, t.share, t.found_at);
    }
  }

 private:
  struct Time {
    std::map<uint64_t, double> longest_by_comm;
    double margin = 0;  // the strongest of its parts
    double share = 1;   // the weakest identification of its class among its parts
    double longest_part = 0;        // the longest single offer, and the test that made it
    std::source_location found_at;
  };

  // Slow (in its class) in every communicator it receives in, as a GPU slow in its own work
  // or slow to consume is.
  bool slow_everywhere(const std::pair<uint32_t, CulpritClass>& who,
                       const std::map<uint32_t, std::set<uint64_t>>& receives) const {
    auto t = times_.find(who);
    auto in = receives.find(who.first);
    if (t == times_.end() || in == receives.end()) return false;
    for (uint64_t comm : in->second)
      if (!t->second.longest_by_comm.count(comm)) return false;
    return true;
  }

  // Per host: its GPUs slow to consume in every communicator they receive in.
  std::map<std::string, std::vector<uint32_t>> slow_everywhere_by_host(
      const ProcessContext& context, const std::map<uint32_t, std::set<uint64_t>>& receives) const {
    std::map<std::string, std::vector<uint32_t>> by_host;
    for (const auto& [who, t] : times_)
      if (who.second == CulpritClass::kGpuConsumer && slow_everywhere(who, receives))
        by_host[context.host_of(who.first)].push_back(who.first);
    return by_host;
  }

  std::map<std::pair<uint32_t, CulpritClass>, Time> times_;
};

// The communicators each process receives in from the network (a data-carrying receive half).
std::map<uint32_t, std::set<uint64_t>> receiving_comms(const ReceiverInputs& in) {
  std::map<uint32_t, std::set<uint64_t>> comms;
  for (size_t i = 0; i < in.facts.size(); ++i)
    if (in.facts[i].view.has_recv) comms[in.facts[i].dst].insert(in.observations.edges[i].key.comm_hash);
  return comms;
}

// Per host: its GPUs whose own kernels run late, in process order.
std::map<std::string, std::vector<uint32_t>> late_gpus_by_host(const ReceiverInputs& in) {
  std::map<std::string, std::vector<uint32_t>> late;
  for (uint32_t p = 0; p < in.own_delay.late_ns.size(); ++p)
    if (in.own_delay.late_ns[p] > 0) late[in.context.host_of(p)].push_back(p);
  return late;
}

// What a late post without kernel clocks is judged by: the GPUs that came far later than
// the others of their places (late_posters.hpp), from every connection with both halves;
// those that every other member of a collective waited for (last_arrivals.hpp); every judged
// member's wait deficit, which tells a late post from a hold (withheld_credit.hpp); and the
// communicators whose input records RecvGpuWait.
struct LatePosts {
  PostingDepartures departures;
  std::map<std::pair<uint32_t, uint64_t>, LatePoster> far_later;
  std::map<std::pair<uint32_t, uint64_t>, PeerOutlier> waited_for_by_all;
  std::map<std::pair<uint32_t, uint64_t>, WaitDeficit> wait_deficits;
  std::set<uint64_t> consumption_recorded;
  // The receivers whose late posts no peers judged, in any communicator (late_posters.hpp:
  // none play their part, e.g. a pipeline of one GPU per stage).
  std::set<uint32_t> without_peers;
};

LatePosts late_posts_of(const ReceiverInputs& in) {
  if (in.own_delay.all_work_measured()) return {};  // nothing to judge
  const PeerRoles& roles = in.roles.get();
  std::vector<PostingDelay> delays;
  for (size_t i = 0; i < in.facts.size(); ++i) {
    const EdgeFacts& f = in.facts[i];
    const EdgeKey& key = in.observations.edges[i].key;
    if (f.src == f.dst || !f.view.has_send || !f.view.has_recv) continue;
    const std::optional<PeerRole> to = roles.of(f.dst, key.comm_hash, key.dst_rank);
    if (!to) continue;
    PostingDelay d{f.dst, key.comm_hash, to->family, to->place, to->stage,
                   f.view.step_ns[kSendPeerWait] - f.view.step_ns[kRecvWait], {}};
    if (const std::optional<PeerRole> from = roles.of(f.src, key.comm_hash, key.src_rank))
      d.sender = PostingDelay::Sender{f.src, from->place, from->stage};
    d.collective = !f.p2p;
    delays.push_back(d);
  }
  LatePosts out{posting_departures(delays), {}, in.arrivals.last_arrivals, in.arrivals.wait_deficits, {}, {}};
  out.far_later = late_posters(out.departures);
  std::set<uint32_t> judged;
  for (const auto& entry : out.departures.receiving.of) judged.insert(entry.first.first);
  for (const PostingDelay& d : delays)
    if (!judged.count(d.receiver) && !in.own_delay.work_measured[d.receiver]) out.without_peers.insert(d.receiver);
  for (const EdgeSummary& e : in.observations.edges)
    if (e.phase_ns[kRecvGpuWait] > 0) out.consumption_recorded.insert(e.key.comm_hash);
  return out;
}

// A send/recv receiver's withheld credit told by its own sends there (withheld_credit.hpp),
// where both its sides were judged.
WithheldBy why_p2p_credit_withheld_of(uint32_t receiver, uint64_t comm, const LatePosts& late_posts) {
  auto receiving = late_posts.departures.receiving.of.find({receiver, comm});
  auto sending = late_posts.departures.sending.of.find({receiver, comm});
  if (receiving == late_posts.departures.receiving.of.end() || sending == late_posts.departures.sending.of.end())
    return WithheldBy::kUnknown;
  return why_p2p_credit_withheld(receiving->second, sending->second);
}

// Credit withheld far beyond the receiver's peers, as its own evidence. Where its
// communicator records RecvGpuWait, a hold would show there: a late post. Where not (probing's
// exports), a GPU slow to consume holds its buffers as a late one withholds them, and its own
// wait tells which (withheld_credit.hpp); where it does not, two classes the data cannot tell
// apart, each taken as likely (as consumer_position.hpp takes a node's GPUs).
void offer_withheld_credit(const Connection& c, const ReceiverInputs& in, const LatePosts& late_posts, double weight,
                           double margin, ReceiverTimes& times) {
  const uint32_t receiver = c.facts.dst;
  if (late_posts.consumption_recorded.count(c.comm)) {
    times.offer(receiver, c.comm, weight, CulpritClass::kGpuProducer, margin);
    return;
  }
  const EdgeSummary& e = in.observations.edges[c.index];
  const double withheld_per_op = e.send_ops > 0 ? weight / static_cast<double>(e.send_ops) : 0;
  std::optional<WaitDeficit> deficit;
  if (auto d = late_posts.wait_deficits.find({receiver, c.comm}); d != late_posts.wait_deficits.end())
    deficit = d->second;
  WithheldBy why = why_credit_withheld(withheld_per_op, deficit);
  if (why == WithheldBy::kUnknown && c.facts.p2p) why = why_p2p_credit_withheld_of(receiver, c.comm, late_posts);
  if (why == WithheldBy::kUnknown && !c.facts.p2p) {
    if (auto sides = in.arrivals.side_deficits.find({receiver, c.comm}); sides != in.arrivals.side_deficits.end())
      why = why_collective_credit_withheld(sides->second);
  }
  // A GPU late to a collective only because the collective before ended late for it (behind a
  // slow link there) came late with no fault of its own: where else it is judged, it waited
  // its full share (last_arrivals.hpp, the agreement guard). A stage late to a send/recv call
  // is judged by its own sends there (withheld_credit.hpp); a hold is no lateness.
  if (why == WithheldBy::kLatePost && !c.facts.p2p && !late_wherever_else_judged(in.arrivals, receiver, c.comm))
    return;
  switch (why) {
    case WithheldBy::kLatePost: times.offer(receiver, c.comm, weight, CulpritClass::kGpuProducer, margin); break;
    case WithheldBy::kHeldBuffers: times.offer(receiver, c.comm, weight, CulpritClass::kGpuConsumer, margin); break;
    case WithheldBy::kUnknown: times.offer(receiver, c.comm, weight, CulpritClass::kGpuProducer, margin, 0.5); break;
  }
}

// A slow flush is the receiver's own time whatever holds its lane: its NIC reads each step back
// through PCIe once the step has arrived, before its GPU is told, so a GPU held by what follows
// it (backpressure) withholds credit and consumes late, but flushes no slower. On a
// backpressured lane the flush alone is offered, not the credit the lane explains.
void offer_own_flush(const Connection& c, ReceiverTimes& times) {
  if (c.flush > 0) times.offer(c.facts.dst, c.comm, c.flush, CulpritClass::kFlush, c.flush_margin);
}

void explain_withheld_credit(const Connection& c, const ReceiverInputs& in, const std::vector<uint32_t>& late_on_host,
                             const LatePosts& late_posts, const AttributionConfig& cfg, ReceiverTimes& times,
                             std::vector<WaitEdge>& holds) {
  const EdgeFacts& f = c.facts;
  double weight = c.withheld * c.send_steps;
  holds.push_back({f.src, f.dst, weight, "no_credit"});
  bool late_elsewhere = std::any_of(late_on_host.begin(), late_on_host.end(), [&](uint32_t x) { return x != f.dst; });
  if (!f.p2p && in.lanes.backpressured(c.index, cfg)) {
    for (size_t o : in.lanes.onward_exits(c.index))
      if (in.facts[o].dst != f.dst) holds.push_back({f.dst, in.facts[o].src, weight, "backpressure"});
    offer_own_flush(c, times);
  } else if (late_elsewhere && c.flush == 0 && c.consume == 0) {
    for (uint32_t x : late_on_host)
      if (x != f.dst) holds.push_back({f.dst, x, weight, "node_interior"});
  } else if (c.flush > c.consume) {
    times.offer(f.dst, c.comm, weight + c.flush, CulpritClass::kFlush, std::max(c.credit_margin, c.flush_margin));
  } else if (c.consume > 0) {
    times.offer(f.dst, c.comm, weight + c.consume, CulpritClass::kGpuConsumer,
                std::max(c.credit_margin, c.consume_margin));
  } else if (!f.view.has_recv) {
    // The receiver recorded nothing of this connection (its node sent no data): its senders'
    // wait for its credit is all that is known of it, and names it; whether it was late or
    // slow to consume, nothing tells.
    times.offer(f.dst, c.comm, weight, CulpritClass::kGpuProducer, c.credit_margin, 0.5);
  } else if (auto last = late_posts.waited_for_by_all.find({f.dst, c.comm});
             last != late_posts.waited_for_by_all.end()) {
    // Every other member of the collective waited for it, and it waited for none of them: it
    // came last by far. A GPU slow to consume waits for its own input (last_arrivals.hpp).
    times.offer(f.dst, c.comm, weight, CulpritClass::kGpuProducer, std::min(c.credit_margin, last->second.margin()));
  } else if (auto late = late_posts.far_later.find({f.dst, c.comm}); late != late_posts.far_later.end()) {
    // Its own work unmeasured, it withheld credit far beyond its peers: its own delay.
    // Otherwise its senders wait on it, but it may be the slowest of healthy GPUs
    // (late_posters.hpp).
    const double margin = std::min(c.credit_margin, late->second.margin());
    offer_withheld_credit(c, in, late_posts, weight, margin, times);
  }
}

// A send/recv receiver that came far later than its peers (late_posters.hpp) withholds credit
// from its input by its lateness, where its sender had nothing else to wait for. The credit
// floor (credit_rel_floor: held buffers throttle a pipeline only when they cost a good part
// of a transfer) judges one connection's SendPeerWait alone; the late poster was judged
// already, against its stage's spread, and a stage that withholds a tenth of a step each step
// costs its pipeline that tenth. So where its withheld credit stays under the floor, what it
// withheld beyond its peers' typical lateness, up to all it withheld, is offered as the
// floor's test would have (`c.withheld`, its margin the late poster's), on two conditions:
//   - it came late on both sides: its data came late to its receivers too (significant at 1 %
//     among the senders of its place), as a GPU slow in its own work sends late. A stage late
//     as a receiver alone is also what the schedule leaves a pipeline's first stage beside a
//     slow one, and a stage after a hang;
//   - it is the latest poster of its pipeline: a slow stage's lateness reaches its
//     neighbours through the schedule, less of it the farther they are.
// Not in collectives: a GPU there comes late behind whatever made the GPUs before it late (a
// slow GPU upstream in a tree). Taken so, a healthy GPU was named in 26 more of 603 healthy
// probing runs; without the two conditions, 32 more false culprits on the 22 development
// seeds (docs/accuracy.md). The connection so taken, where it is.
constexpr double kLateSendingLevel = 0.01;  // a guard of the late poster's finding, not a test of its own

bool latest_poster_of_its_communicator(const std::pair<uint32_t, uint64_t>& who, const LatePoster& poster,
                                       const LatePosts& late_posts) {
  for (const auto& [other, found] : late_posts.far_later)
    if (other.second == who.second && other.first != who.first && found.margin() > poster.margin()) return false;
  return true;
}

bool late_as_sender(const std::pair<uint32_t, uint64_t>& who, const LatePosts& late_posts) {
  auto sending = late_posts.departures.sending.of.find(who);
  return sending != late_posts.departures.sending.of.end() &&
         significant(sending->second, kLateSendingLevel).has_value();
}

std::optional<Connection> late_post_under_floor(const Connection& c, const LatePosts& late_posts) {
  const EdgeFacts& f = c.facts;
  if (!f.p2p || f.no_credit || !f.view.has_send || !f.view.has_recv) return std::nullopt;
  const std::pair<uint32_t, uint64_t> who{f.dst, c.comm};
  auto late = late_posts.far_later.find(who);
  auto departure = late_posts.departures.receiving.of.find(who);
  if (late == late_posts.far_later.end() || departure == late_posts.departures.receiving.of.end()) return std::nullopt;
  if (!latest_poster_of_its_communicator(who, late->second, late_posts) || !late_as_sender(who, late_posts))
    return std::nullopt;
  Connection taken = c;
  taken.withheld = std::min(departure->second.excess, f.view.step_ns[kSendPeerWait]);
  taken.credit_margin = late->second.margin();
  if (taken.withheld <= 0) return std::nullopt;
  return taken;
}

using GatedOwn = std::map<std::pair<uint32_t, uint64_t>, double>;

// A collective receiver whose per-step traces set each hold against its output slots
// (gated_holds.hpp) consumes slowly only by its own time per step: what it held waiting for a
// free output slot is backpressure, whatever its lane's sums say. Its excess is bounded so,
// with its margin scaled down alike; below its guards it consumes in time.
void bound_consumption_by_own_time(Connection& c, const GatedOwn& gated_own) {
  const EdgeFacts& f = c.facts;
  const auto own = gated_own.find({f.dst, c.comm});
  if (c.consume <= 0 || f.p2p || own == gated_own.end()) return;
  const double excess = f.anomaly[kRecvGpuWait];
  const double own_excess = std::min(excess, own->second);
  const double margin = c.consume_margin * own_excess / excess;
  c.consume = own_excess > 0 && margin > 1 ? own_excess * c.recv_steps : 0;
  c.consume_margin = margin;
}

// A receiver slow to consume on a backpressured lane: what it holds beyond its peers and
// beyond the backpressure is its own, with its margin scaled down alike. Where its own time
// was measured (bound_consumption_by_own_time), that is it. Otherwise backpressure holds its
// input no longer per step than its onward exits' sends were held (lanes.hpp), a bound off by
// NCCL_STEPS steps: summed over an op's last recorded steps, the holds of a lane that stalled
// and then drained outweigh its sends' waits.
void offer_consumption_beyond_backpressure(const Connection& c, const ReceiverInputs& in, const GatedOwn& gated_own,
                                           const AttributionConfig& cfg, ReceiverTimes& times) {
  const EdgeFacts& f = c.facts;
  if (gated_own.count({f.dst, c.comm})) {
    times.offer(f.dst, c.comm, c.consume, CulpritClass::kGpuConsumer, c.consume_margin);
    return;
  }
  // Past an exit whose data was ready at once the receiver delivered in time: a full buffer
  // holds each input NCCL_STEPS times the exit's pace, which no per-step wait of the exit's
  // bounds (lanes.hpp).
  if (in.lanes.delivered_past_receiver(c.index, cfg)) return;
  const double excess = f.anomaly[kRecvGpuWait];
  const double beyond = std::min(excess, f.view.step_ns[kRecvGpuWait] - in.lanes.onward_hold_ns(c.index));
  const double margin = c.consume_margin * beyond / excess;
  if (beyond > 0 && margin > 1)
    times.offer(f.dst, c.comm, beyond * c.recv_steps, CulpritClass::kGpuConsumer, margin);
}

// Says which GPUs' late posts nothing judged: without kernel clocks a GPU that came late is told
// from the slowest healthy one only by the GPUs that play its part, and these have none.
void note_late_posts_without_peers(const LatePosts& late_posts, const ProcessContext& context,
                                   std::vector<std::string>& notes) {
  if (late_posts.without_peers.empty()) return;
  constexpr size_t kNamed = 3;
  std::string named;
  size_t shown = 0;
  for (uint32_t p : late_posts.without_peers) {
    if (shown++ == kNamed) break;
    named += (named.empty() ? "" : ", ") + context.name_of(p);
  }
  if (late_posts.without_peers.size() > kNamed) named += ", ...";
  notes.push_back(std::to_string(late_posts.without_peers.size()) +
                  " GPU(s) without kernel clocks have no peers that play their part in the data flow (" + named +
                  "; e.g. a pipeline of one GPU per stage): a late post of theirs cannot be told from the slowest "
                  "healthy GPU's, so it names nobody by itself, and a straggler among them may go unnamed (add "
                  "nccl.coll_perf to time their own work)");
}

}  // namespace

void explain_receivers(const ReceiverInputs& in, const AttributionConfig& cfg, std::vector<Evidence>& evidence,
                       std::vector<WaitEdge>& holds, std::vector<std::string>& notes) {
  const std::map<std::string, std::vector<uint32_t>> late_by_host = late_gpus_by_host(in);
  const LatePosts late_posts = late_posts_of(in);
  note_late_posts_without_peers(late_posts, in.context, notes);
  static const std::vector<uint32_t> kNoneLate;
  // Looked up only for the connections that need it: most need nothing explained.
  const auto late_on_host_of = [&](uint32_t receiver) -> const std::vector<uint32_t>& {
    auto late = late_by_host.find(in.context.host_of(receiver));
    return late == late_by_host.end() ? kNoneLate : late->second;
  };
  const GatedOwn gated_own = gated_own_time_per_step(in.observations);
  ReceiverTimes times;
  for (size_t i = 0; i < in.facts.size(); ++i) {
    const EdgeFacts& f = in.facts[i];
    const EdgeSummary& e = in.observations.edges[i];
    Connection c{i,
                 f,
                 e.key.comm_hash,
                 static_cast<double>(e.send_steps),
                 static_cast<double>(e.recv_steps),
                 0,
                 0,
                 f.anomaly[kSendPeerWait],
                 f.margin[kSendPeerWait],
                 f.margin[kRecvFlushWait],
                 f.margin[kRecvGpuWait]};
    c.flush = f.slow_flush ? f.anomaly[kRecvFlushWait] * c.recv_steps : 0;
    c.consume = f.slow_consume ? f.anomaly[kRecvGpuWait] * c.recv_steps : 0;
    bound_consumption_by_own_time(c, gated_own);
    if (f.behind_backlog && c.consume > 0)
      if (const std::optional<uint32_t> late = late_gpu_behind(in.context, in.own_delay.late_ns, f.dst, c.comm)) {
        holds.push_back({f.dst, *late, c.consume, "node_interior"});
        c.consume = 0;
      }
    bool own_work_measured = in.own_delay.work_measured[f.dst];
    if (f.no_credit && (!own_work_measured || c.flush > 0 || c.consume > 0)) {
      explain_withheld_credit(c, in, late_on_host_of(f.dst), late_posts, cfg, times, holds);
    } else if (c.flush == 0 && c.consume == 0) {
      // Nothing of its own to explain (its lane need not be looked at), but a late post under
      // the credit floor.
      if (const auto under = own_work_measured ? std::nullopt : late_post_under_floor(c, late_posts))
        explain_withheld_credit(*under, in, late_on_host_of(f.dst), late_posts, cfg, times, holds);
    } else if (f.p2p || !in.lanes.backpressured(i, cfg)) {
      offer_own_flush(c, times);
      if (c.consume > 0) times.offer(f.dst, c.comm, c.consume, CulpritClass::kGpuConsumer, c.consume_margin);
    } else {
      offer_own_flush(c, times);
      if (c.consume > 0) offer_consumption_beyond_backpressure(c, in, gated_own, cfg, times);
    }
  }
  times.commit(in.context, receiving_comms(in), evidence, holds);
}

}  // namespace culprit
