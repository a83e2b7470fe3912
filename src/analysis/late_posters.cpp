#include "analysis/late_posters.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>
#include <vector>

#include "analysis/robust_stats.hpp"

namespace culprit {
namespace {

// The standard error of a median is about sqrt(pi/2) times that of a mean.
constexpr double kMedianEfficiency = 1.2533;

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

// One receiver against the others of its place: their median, and their spread about it
// (clipped at 4 deviations, so that a second late poster stays out of the yardstick) plus
// the median's own sampling variance.
std::optional<LatePoster> judge(const std::vector<Receiver>& place, size_t judged, double tail) {
  std::vector<double> others;
  for (size_t i = 0; i < place.size(); ++i)
    if (i != judged) others.push_back(place[i].late_ns);
  const double center = median_of(others);
  if (place[judged].late_ns <= center) return std::nullopt;
  for (double& v : others) v -= center;
  const double m = static_cast<double>(others.size());
  const double spread = clipped_variance_of(others) * (1 + kMedianEfficiency * kMedianEfficiency / m);
  if (spread <= 0) return std::nullopt;  // no spread measured: nothing to judge it by
  LatePoster p;
  p.t = (place[judged].late_ns - center) / std::sqrt(spread);
  p.critical_t = critical_t(m - 1, tail);
  if (p.t <= p.critical_t) return std::nullopt;
  return p;
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
  for (const auto& [key, place] : groups) {
    if (place.size() < kMinPlace) continue;
    for (size_t i = 0; i < place.size(); ++i)
      if (std::optional<LatePoster> p = judge(place, i, tail)) out[{place[i].process, place[i].comm_hash}] = *p;
  }
  return out;
}

}  // namespace culprit
