// Evidence helper for inputs without kernel clocks: a GPU's figure in one communicator (how
// late it came, how long it made its proxy wait) against the GPUs that play the same part.
//
// Without kernel clocks a GPU's own work is not measured, and every job has a slowest GPU:
// only a figure far beyond the spread of its peers' tells a GPU that is its own cause from
// the slowest healthy one. Peers are the GPUs of one family of replica communicators
// (wire_groups.hpp: the same kind, size and chunk), the same place in the data flow
// (flow_places.hpp) and the same pipeline stage. A place of kMinPlace members or more is
// judged in its own spread (clipped at 4 deviations, so that a second outlier stays out of
// the yardstick); a place of fewer than kPooledPlace members may instead be judged in its
// family's spread, measured from pairs within each of the family's places (the places'
// typical figures cancel in them; without the judged GPU's own communicator where the family
// holds others and three contrasts remain: its members wait on it and depart with it),
// whichever has more degrees of freedom. A place is first
// taken channel by channel (FlowPlace::per_channel); a GPU that leaves no judged peers so is
// judged among the GPUs of as many connections (FlowPlace::counts). Where the figures
// carry a prior spread, the place's typical prior joins the measured spread as four
// observations (the conjugate update of a variance).
//
// What it cannot tell apart: a GPU from the peers of a place too small to measure a spread
// in a family too small as well (a pipeline of one GPU per stage), nor, without a prior, one
// of a place whose other members show no spread at all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <utility>

#include "analysis/flow_places.hpp"

namespace culprit {

// One connection's figure for one GPU, with what makes its peers: its communicator's family
// of replicas (the first of its kind, size and chunk), its place there and its stage (0:
// none). A GPU with several connections of one communicator in one place counts its largest.
// One in several places of a communicator (a pipeline stage's sends backward and forward) is
// judged in each, but keeps the departure of the place judged last (docs/accuracy.md, "a GPU
// in several places of one communicator": its farthest departure named more, and more wrongly).
struct PeerFigure {
  uint32_t process = 0;
  uint64_t comm_hash = 0;
  uint64_t family = 0;
  FlowPlace place;
  uint32_t stage = 0;
  double value = 0;
  // Where the figure is a connection's (a wire's): the place of the GPU at its other end,
  // which its peers share too (a parent that two children send to shares its NIC between
  // them). Default: none.
  FlowPlace far_place;
  // The spread healthy GPUs are known to show in this figure before looking (0: nothing
  // known), weighed against the spread its peers show: a place's yardstick where its peers
  // show none, or few.
  double prior_sigma = 0;
};

// A GPU's figure beyond its peers' typical one (negative below it), the variance of that
// departure under the peers' spread, and that variance's degrees of freedom.
struct PeerDeparture {
  double excess = 0;
  double variance = 0;
  double df = 0;
};

// Per (process, communicator) judged, its departure; `judged` counts them (one test each).
struct PeerDepartures {
  std::map<std::pair<uint32_t, uint64_t>, PeerDeparture> of;
  size_t judged = 0;
};

// Fewest members of one place that measure a spread: three others.
inline constexpr size_t kMinPlace = 4;

// Links of one kind differ in speed by about this much (log scale): the prior spread of a
// figure that times a wire (send_wait_peers.hpp, queue_pair_wires.hpp).
inline constexpr double kLinkPriorSigma = 0.1;

PeerDepartures peer_departures(std::span<const PeerFigure> figures);

// A departure's t against its critical value at the tail probability `tail`.
struct PeerOutlier {
  double t = 0;
  double critical_t = 0;
  double margin() const { return t / critical_t; }  // how many times its critical value
};

// Keeps `p` for `who` unless an outlier of a larger margin is kept there already (a GPU judged
// by several tests, or in several communicators, is as strong as its strongest).
template <typename Key>
void keep_stronger(std::map<Key, PeerOutlier>& kept, const Key& who, const PeerOutlier& p) {
  auto [it, added] = kept.emplace(who, p);
  if (!added && p.margin() > it->second.margin()) it->second = p;
}
// The departure's t and critical value where it is positive and clears it.
std::optional<PeerOutlier> significant(const PeerDeparture& d, double tail);

}  // namespace culprit
