#include "analysis/late_posters.hpp"

#include <cmath>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "analysis/place_peers.hpp"
#include "analysis/robust_stats.hpp"

namespace culprit {
namespace {

// Receivers by the place they receive at; senders by the place they send from, with the
// lateness of their data: its receiver's wait for it beyond the receiver's own lateness, the
// same connection's figure with the sign turned. Each counts its latest connection.
std::vector<PeerFigure> receivers(std::span<const PostingDelay> connections) {
  std::vector<PeerFigure> out;
  for (const PostingDelay& c : connections)
    out.push_back({c.receiver, c.comm_hash, c.replicas, c.place, c.stage, c.late_per_step_ns, {}, 0});
  return out;
}

std::vector<PeerFigure> senders(std::span<const PostingDelay> connections) {
  std::vector<PeerFigure> out;
  for (const PostingDelay& c : connections)
    if (c.sender)
      out.push_back(
          {c.sender->process, c.comm_hash, c.replicas, c.sender->place, c.sender->stage, -c.late_per_step_ns, {}, 0});
  return out;
}

using Departures = std::map<std::pair<uint32_t, uint64_t>, PeerDeparture>;

// The collective communicators that are rings of their own: every receiver and sender of their
// connections meets one peer per channel, and no other communicator is their replica.
std::set<uint64_t> rings_of_their_own(std::span<const PostingDelay> connections) {
  std::set<uint64_t> rings, not_rings;
  std::map<uint64_t, std::set<uint64_t>> replicas;
  for (const PostingDelay& c : connections) {
    replicas[c.replicas].insert(c.comm_hash);
    const bool ring =
        c.collective && c.place.one_peer_per_channel() && (!c.sender || c.sender->place.one_peer_per_channel());
    (ring ? rings : not_rings).insert(c.comm_hash);
  }
  for (const auto& [family, comms] : replicas)
    if (comms.size() > 1) not_rings.insert(comms.begin(), comms.end());
  for (uint64_t comm : not_rings) rings.erase(comm);
  return rings;
}

// In a ring of its own, every other receiver's figure fell by a late GPU's lateness: half its
// departure is its lateness, and half its input's offset comes with it (late_posters.hpp).
constexpr double kRingVarianceShare = 1.25;

void count_lateness_once_in_rings(std::span<const PostingDelay> connections, Departures& receiving) {
  const std::set<uint64_t> rings = rings_of_their_own(connections);
  for (auto& [who, d] : receiving)
    if (rings.count(who.second)) {
      d.excess /= 2;
      d.variance *= kRingVarianceShare;
    }
}

// Who came late, per (process, communicator): the best margin of its tests.
using Found = std::map<std::pair<uint32_t, uint64_t>, LatePoster>;

// A departure's t and critical value; kept where it clears it and beats what is already kept.
void keep_if_significant(const std::pair<uint32_t, uint64_t>& who, const PeerDeparture& d, double tail, Found& out) {
  if (const std::optional<PeerOutlier> p = significant(d, tail)) keep_stronger(out, who, *p);
}

// A GPU that comes late to a communicator comes late as a receiver and as a sender: the sum
// of its two departures there is one test of its arrival, with the noise of both sides, the
// statistic a small place needs. The two are measured on different connections against
// different peers, but both hold the GPU's own offset from its peers: a healthy GPU's
// natural lateness (the spread between GPUs, at most half of either side's variance, whose
// figures are differences of two GPUs' lateness) counts twice in the sum. So their covariance
// is taken at that bound, sqrt(v_r v_s) / 2: the sum's variance is at most the sides' plus
// sqrt(v_r v_s) (in a ring of healthy GPUs of equal noise, 3 v, not 2 v).
PeerDeparture both_sides_of(const PeerDeparture& receiving, const PeerDeparture& sending) {
  const double shared = std::sqrt(receiving.variance * sending.variance);
  const PooledVariance parts[] = {{receiving.variance + shared / 2, receiving.df},
                                  {sending.variance + shared / 2, sending.df}};
  const double variance = receiving.variance + sending.variance + shared;
  return {receiving.excess + sending.excess, variance, welch_satterthwaite_df(variance, parts)};
}

// But its data may come late for another reason (a slow link behind it), and a large
// sending departure alone could carry the sum: so its receiving departure, which only its own
// lateness raises, must agree, significant on its own at kAgreeing (a guard against that
// other cause, not a finding: the family-wise rate is the sum's).
constexpr double kAgreeing = 0.01;

Departures both_sides(const Departures& receiving, const Departures& sending) {
  Departures out;
  for (const auto& [who, r] : receiving) {
    auto s = sending.find(who);
    if (s == sending.end()) continue;
    const bool agrees = significant(r, kAgreeing).has_value();
    if (agrees) out.emplace(who, both_sides_of(r, s->second));
  }
  return out;
}

}  // namespace

PostingDepartures posting_departures(std::span<const PostingDelay> connections) {
  PostingDepartures out{peer_departures(receivers(connections)), peer_departures(senders(connections))};
  count_lateness_once_in_rings(connections, out.receiving.of);
  return out;
}

std::map<std::pair<uint32_t, uint64_t>, LatePoster> late_posters(const PostingDepartures& departures,
                                                                 double false_alarm) {
  const PeerDepartures& receiving = departures.receiving;
  const PeerDepartures& sending = departures.sending;
  Found out;
  if (receiving.judged == 0) return out;
  // One test per judged receiver, and at most one more per judged sender (both sides).
  const double tail = false_alarm / static_cast<double>(receiving.judged + sending.judged);
  for (const auto& [who, d] : receiving.of) keep_if_significant(who, d, tail, out);
  for (const auto& [who, d] : both_sides(receiving.of, sending.of)) keep_if_significant(who, d, tail, out);
  return out;
}

}  // namespace culprit
