#include "analysis/queue_pair_wires.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "analysis/place_peers.hpp"

namespace culprit {
namespace {

double idle_log_ns(const QpObservation& q) { return q.idle_log_ns_sum / static_cast<double>(q.idle_sends); }

// The variance of that mean from its own sends' jitter. Its peers' spread holds theirs at their
// counts of idle sends; one that had few is noisier than they are (a queue pair that paces its
// communicator is seldom idle), and without this a few slow draws would make it stand out.
double own_sampling_variance(const QpObservation& q) {
  const double n = static_cast<double>(q.idle_sends);
  const double mean = q.idle_log_ns_sum / n;
  const double variance = std::max(0.0, (q.idle_log_ns_sq_sum - n * mean * mean) / (n - 1));
  return variance / n;
}

std::optional<uint32_t> slowest_outbound_peer(uint32_t process, std::span<const OutboundSendWait> sends) {
  std::optional<uint32_t> peer;
  double worst = -1;
  for (const OutboundSendWait& s : sends)
    if (s.src == process && s.send_wait_per_step_ns > worst) {
      worst = s.send_wait_per_step_ns;
      peer = s.dst;
    }
  return peer;
}

}  // namespace

std::vector<SlowQueuePair> slow_queue_pairs(std::span<const QpObservation> qps,
                                            std::span<const OutboundSendWait> sends, size_t n_processes,
                                            double false_alarm) {
  // Peers are the queue pairs of one work-request length: one place of one "communicator"
  // keyed by that length, so that a process's queue pairs of one length count by their slowest.
  std::vector<PeerFigure> figures;
  std::map<std::pair<uint32_t, uint64_t>, const QpObservation*> slowest;
  for (const QpObservation& q : qps) {
    if (q.process >= n_processes || q.wr_length == 0 || q.idle_sends < kMinIdleSends) continue;
    PeerFigure f;
    f.process = q.process;
    f.comm_hash = q.wr_length;
    f.family = q.wr_length;
    f.value = idle_log_ns(q);
    f.prior_sigma = kLinkPriorSigma;
    figures.push_back(f);
    auto [it, added] = slowest.emplace(std::make_pair(q.process, q.wr_length), &q);
    if (!added && f.value > idle_log_ns(*it->second)) it->second = &q;
  }
  std::vector<SlowQueuePair> slow;
  const PeerDepartures departures = peer_departures(figures);
  if (departures.judged == 0) return slow;
  const double tail = false_alarm / static_cast<double>(departures.judged);
  for (const auto& [who, peers] : departures.of) {
    const QpObservation& q = *slowest.at(who);
    PeerDeparture d = peers;
    // Its own jitter joins the yardstick, with the fewer degrees of freedom of the two (the
    // safe side of combining them).
    d.variance += own_sampling_variance(q);
    d.df = std::min(d.df, static_cast<double>(q.idle_sends - 1));
    const std::optional<PeerOutlier> p = significant(d, tail);
    if (!p) continue;
    // Each of its sends spent that much longer on its wire than its peers' (the departure is of logs).
    const double idle_ns = std::exp(idle_log_ns(q));
    const double excess_per_send = idle_ns * (1 - std::exp(-d.excess));
    // Its sends as full-size ones (receive work requests have no length).
    const double sends_of_that_length = static_cast<double>(q.bytes) / static_cast<double>(q.wr_length);
    slow.push_back({q.process, excess_per_send * sends_of_that_length, slowest_outbound_peer(q.process, sends),
                    p->margin()});
  }
  return slow;
}

}  // namespace culprit
