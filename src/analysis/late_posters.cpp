#include "analysis/late_posters.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis/robust_stats.hpp"

namespace culprit {
namespace {

// A receiver in one communicator, with the latest of its inputs there.
struct Receiver {
  uint32_t process = 0;
  uint64_t comm_hash = 0;
  double late_ns = 0;
};

// Receivers that play the same part: one group of replica communicators, place and stage.
using Peers = std::tuple<uint64_t, FlowPlace, uint32_t>;

// Per group of peers: its receivers.
std::map<Peers, std::vector<Receiver>> by_place(std::span<const PostingDelay> connections) {
  std::map<std::tuple<Peers, uint32_t, uint64_t>, double> latest;
  for (const PostingDelay& c : connections) {
    auto [it, added] = latest.emplace(std::make_tuple(Peers{c.replicas, c.place, c.stage}, c.receiver, c.comm_hash),
                                      c.late_per_step_ns);
    if (!added) it->second = std::max(it->second, c.late_per_step_ns);
  }
  std::map<Peers, std::vector<Receiver>> groups;
  for (const auto& [key, late] : latest)
    groups[std::get<0>(key)].push_back({std::get<1>(key), std::get<2>(key), late});
  return groups;
}

// What a receiver is judged against: the others' median, and their spread about it (clipped
// at 4 deviations, so that a second late poster stays out of the yardstick) plus the
// median's own sampling variance, with one degree of freedom fewer than the others.
struct Yardstick {
  double center = 0;
  double spread = 0;
  double df = 0;
};

Yardstick yardstick_of(std::vector<double> others) {
  Yardstick y;
  y.center = median_of(others);
  for (double& v : others) v -= y.center;
  const double m = static_cast<double>(others.size());
  y.spread = clipped_variance_of(others) * (1 + kMedianEfficiency * kMedianEfficiency / m);
  y.df = m - 1;
  return y;
}

// Leaving one receiver out changes the yardstick of a large place by less than one place in
// it, so past this many receivers one yardstick over all of them serves every receiver
// (linear, not quadratic, in the job's size), as in the gap test.
constexpr size_t kLeaveOneOutPlace = 256;

// The receivers of one place that came significantly later than the others: each against
// the others' yardstick. One at or below the place's median cannot stand above the others'.
void judge_place(const std::vector<Receiver>& place, double tail,
                 std::map<std::pair<uint32_t, uint64_t>, LatePoster>& out) {
  std::vector<double> all;
  for (const Receiver& r : place) all.push_back(r.late_ns);
  const double median = median_of(all);
  const bool leave_one_out = place.size() <= kLeaveOneOutPlace;
  const Yardstick everyone = leave_one_out ? Yardstick{} : yardstick_of(all);
  for (size_t i = 0; i < place.size(); ++i) {
    if (place[i].late_ns <= median) continue;
    Yardstick y = everyone;
    if (leave_one_out) {
      std::vector<double> others = all;
      others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
      y = yardstick_of(std::move(others));
    }
    if (y.spread <= 0 || place[i].late_ns <= y.center) continue;  // no spread measured: nothing to judge by
    LatePoster p;
    p.t = (place[i].late_ns - y.center) / std::sqrt(y.spread);
    p.critical_t = critical_t(y.df, tail);
    if (p.t > p.critical_t) out[{place[i].process, place[i].comm_hash}] = p;
  }
}

}  // namespace

std::map<std::pair<uint32_t, uint64_t>, LatePoster> late_posters(std::span<const PostingDelay> connections,
                                                                 double false_alarm) {
  const auto groups = by_place(connections);
  size_t judged = 0;
  for (const auto& [key, place] : groups) judged += place.size() >= kMinPlace ? place.size() : 0;
  std::map<std::pair<uint32_t, uint64_t>, LatePoster> out;
  if (judged == 0) return out;
  const double tail = false_alarm / static_cast<double>(judged);
  for (const auto& [key, place] : groups)
    if (place.size() >= kMinPlace) judge_place(place, tail, out);
  return out;
}

}  // namespace culprit
