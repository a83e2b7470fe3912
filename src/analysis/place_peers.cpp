#include "analysis/place_peers.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>
#include <vector>

#include "analysis/robust_stats.hpp"

namespace culprit {
namespace {

// One GPU in one communicator, with its figure and its prior spread.
struct Member {
  uint32_t process = 0;
  uint64_t comm_hash = 0;
  double value = 0;
  double prior_sigma = 0;
};

using Peers = std::tuple<uint64_t, FlowPlace, uint32_t, FlowPlace>;  // family, place, stage, far place
using Groups = std::map<Peers, std::vector<Member>>;

// The members of each group of peers, each with its largest figure (and largest prior); by
// their places channel by channel (`per_channel`), or by their connections' counts alone.
Groups grouped(std::span<const PeerFigure> figures, bool per_channel) {
  std::map<std::tuple<Peers, uint32_t, uint64_t>, std::pair<double, double>> largest;
  for (const PeerFigure& f : figures) {
    const Peers peers = per_channel ? Peers{f.family, f.place, f.stage, f.far_place}
                                    : Peers{f.family, f.place.counts(), f.stage, f.far_place.counts()};
    const auto key = std::make_tuple(peers, f.process, f.comm_hash);
    auto [it, added] = largest.emplace(key, std::make_pair(f.value, f.prior_sigma));
    if (!added) it->second = {std::max(it->second.first, f.value), std::max(it->second.second, f.prior_sigma)};
  }
  Groups groups;
  for (const auto& [key, figure] : largest)
    groups[std::get<0>(key)].push_back({std::get<1>(key), std::get<2>(key), figure.first, figure.second});
  return groups;
}

// What is known of a place's spread before looking: its members' typical prior (their
// median, which one outlier cannot move), weighted as kPriorDf observations against the
// spread measured (the conjugate update of a variance, as the gap test's prior). 0: none.
constexpr double kPriorDf = 4;
double prior_of(const std::vector<Member>& place) {
  std::vector<double> priors;
  for (const Member& m : place) priors.push_back(m.prior_sigma);
  return median_of(priors);
}

// A measured variance of single figures (df degrees of freedom) with the place's prior, and
// the variance of a departure from a center whose own variance is `center_share` of it.
PeerDeparture departure_with_prior(double excess, double measured, double df, double prior, double center_share) {
  const PooledVariance pooled = with_prior(measured, df, prior, prior > 0 ? kPriorDf : 0);
  return {excess, pooled.variance * (1 + center_share), pooled.df};
}

using Departures = std::map<std::pair<uint32_t, uint64_t>, PeerDeparture>;

// What a member is judged against: the others' median, and their spread about it (clipped
// at 4 deviations, so that a second outlier stays out of the yardstick) plus the median's
// own sampling variance, with one degree of freedom fewer than the others. A clip keeps
// kMinPlace - 1 of them at least, the fewest that measure a spread: of three others, the
// deviation that would clip one is measured by the middle one alone, and it clipped healthy
// members (a tree of two nodes, whose leaves and roots share a place, judged each leaf by
// the two roots alone and named it beyond them).
struct Yardstick {
  double center = 0;
  double spread = 0;        // of single figures
  double center_share = 0;  // the center's variance, as a share of it
  double df = 0;
};

Yardstick yardstick_of(std::vector<double> others) {
  Yardstick y;
  y.center = median_of(others);
  for (double& v : others) v -= y.center;
  const double m = static_cast<double>(others.size());
  y.spread = clipped_variance_of(others, nullptr, kMinPlace - 1);
  y.center_share = kMedianEfficiency * kMedianEfficiency / m;
  y.df = m - 1;
  return y;
}

// Leaving one member out changes the yardstick of a large place by less than one place in
// it, so past this many members one yardstick over all of them serves every member (linear,
// not quadratic, in the job's size), as in the gap test.
constexpr size_t kLeaveOneOutPlace = 256;

// The departures of the members of one place, where the others show a spread to judge by.
void departures_in_place(const std::vector<Member>& place, Departures& out) {
  std::vector<double> all;
  for (const Member& m : place) all.push_back(m.value);
  const bool leave_one_out = place.size() <= kLeaveOneOutPlace;
  const Yardstick everyone = leave_one_out ? Yardstick{} : yardstick_of(all);
  const double prior = prior_of(place);
  for (size_t i = 0; i < place.size(); ++i) {
    Yardstick y = everyone;
    if (leave_one_out) {
      std::vector<double> others = all;
      others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
      y = yardstick_of(std::move(others));
    }
    if (y.spread <= 0 && prior <= 0) continue;  // no spread known: nothing to judge by
    out[{place[i].process, place[i].comm_hash}] =
        departure_with_prior(place[i].value - y.center, y.spread, y.df, prior, y.center_share);
  }
}

// Places of few members (the stages of a few replicated pipelines) measure their own spread
// to few degrees of freedom, or none. But GPUs of one family of replica communicators differ
// in their figures by their speeds and their noise alike in every place and stage, while the
// places differ in their typical figures (their schedule). So a member can be compared with
// the others of its place (their median) in the spread measured within all the family's
// places together: from the differences of each pair of members of one place (a place's
// typical figure cancels in them; sigma = 1.0483 x their median absolute value), without
// the judged member. Places of kPooledPlace members or more measure their own spread well
// and stay out (their pairs would be many).
constexpr size_t kPooledPlace = 32;
// The degrees of freedom of that spread per independent contrast (places of two or three
// members, 3-30 places; simulated, 2 / its squared coefficient of variation: 0.42-0.60; more
// in larger places). Its mean is 3-40 % above the true variance in so few places, which errs
// on the safe side.
constexpr double kPairScaleEfficiency = 0.5;

class FamilySpread {
 public:
  explicit FamilySpread(std::vector<const std::vector<Member>*> places) : places_(std::move(places)) {
    std::set<uint64_t> comms;
    for (const auto* place : places_) {
      contrasts_ += place->size() - 1;
      for (const Member& m : *place) comms.insert(m.comm_hash);
    }
    replicated_ = comms.size() > 1;
    if (members() > kLeaveOneOutPlace) everyone_ = spread_without(nullptr, 0);
  }
  // Enough contrasts to measure a spread by: kMinPlace in all, kMinPlace - 1 besides the judged
  // member's (as a place's own spread needs kMinPlace - 1 others).
  bool measures() const { return contrasts_ >= kMinPlace; }
  // Its degrees of freedom, leaving the judged member out.
  double df() const { return df_of(contrasts_ - 1); }
  size_t members() const { return contrasts_ + places_.size(); }

  // The departures of a place's members.
  void departures(const std::vector<Member>& place, Departures& out) const {
    for (size_t i = 0; i < place.size(); ++i) departure_of(place, i, out);
  }

 private:
  struct Spread {
    double sigma = 0;
    double df = 0;
    size_t contrasts = 0;
  };
  static double df_of(size_t contrasts) {
    return std::max(1.0, kPairScaleEfficiency * static_cast<double>(contrasts));
  }

  void departure_of(const std::vector<Member>& place, size_t judged, Departures& out) const {
    std::vector<double> others;
    for (size_t k = 0; k < place.size(); ++k)
      if (k != judged) others.push_back(place[k].value);
    const double m = static_cast<double>(others.size());
    const double center = median_of(others);
    const Spread spread = everyone_.sigma > 0 ? everyone_ : yardstick_for(place, judged);
    const double prior = prior_of(place);
    if (spread.sigma <= 0 && prior <= 0) return;
    // The others' median is their mean where they are one or two.
    const double center_share = (others.size() <= 2 ? 1.0 : kMedianEfficiency * kMedianEfficiency) / m;
    out[{place[judged].process, place[judged].comm_hash}] =
        departure_with_prior(place[judged].value - center, spread.sigma * spread.sigma, spread.df, prior, center_share);
  }

  // The spread a member is judged in: the family's, without it and, where the family holds
  // other communicators, without any member of its own communicator. They take part in its
  // collectives, and a GPU that comes late makes every other member of its communicator wait,
  // so they depart with it (in a tree+dp job, a slow GPU's data-parallel peers waited 0.3-1.5
  // ms per step more than their replicas' peers, and measured the yardstick that judged it).
  // Where that leaves too few contrasts to measure by (two replicas: one member a place), its
  // communicator stays in.
  Spread yardstick_for(const std::vector<Member>& place, size_t judged) const {
    if (replicated_) {
      const Spread apart = spread_without(&place, judged, true);
      if (apart.contrasts >= kMinPlace - 1) return apart;
    }
    return spread_without(&place, judged, false);
  }

  // The family's spread from its places' pairs, leaving out `judged` of `left_out` and, with
  // `drop_comm`, every member of its communicator.
  Spread spread_without(const std::vector<Member>* left_out, size_t judged, bool drop_comm = false) const {
    const uint64_t comm = left_out != nullptr ? (*left_out)[judged].comm_hash : 0;
    std::vector<double> differences;
    size_t contrasts = 0;
    std::vector<double> kept;
    for (const auto* place : places_) {
      kept.clear();
      for (size_t k = 0; k < place->size(); ++k) {
        const Member& member = (*place)[k];
        if ((place == left_out && k == judged) || (drop_comm && member.comm_hash == comm)) continue;
        kept.push_back(member.value);
      }
      for (size_t a = 0; a < kept.size(); ++a)
        for (size_t b = a + 1; b < kept.size(); ++b) differences.push_back(std::fabs(kept[a] - kept[b]));
      if (!kept.empty()) contrasts += kept.size() - 1;
    }
    if (differences.empty()) return {};
    return {kPairToSigma * median_of(differences), df_of(contrasts), contrasts};
  }

  std::vector<const std::vector<Member>*> places_;
  size_t contrasts_ = 0;
  bool replicated_ = false;  // its places hold members of more than one communicator
  Spread everyone_;
};

// Every judged member's departure. A place is judged in its own spread (from kMinPlace
// members on) or in its family's (below kPooledPlace members), whichever has more degrees of
// freedom. `judged` counts the members judged.
Departures departures_of(const Groups& groups, size_t& judged) {
  std::map<uint64_t, std::vector<const std::vector<Member>*>> pooled;  // per family of replicas
  for (const auto& [key, place] : groups)
    if (place.size() >= 2 && place.size() < kPooledPlace) pooled[std::get<0>(key)].push_back(&place);
  std::map<uint64_t, FamilySpread> families;
  for (auto& [family, places] : pooled) families.emplace(family, FamilySpread(std::move(places)));
  Departures out;
  for (const auto& [key, place] : groups) {
    auto family = families.find(std::get<0>(key));
    const bool by_family = place.size() >= 2 && place.size() < kPooledPlace && family != families.end() &&
                           family->second.measures();
    const double own_df = static_cast<double>(place.size()) - 2;  // others, less one
    if (place.size() >= kMinPlace && !(by_family && family->second.df() > own_df)) {
      departures_in_place(place, out);
    } else if (by_family) {
      family->second.departures(place, out);
    } else {
      continue;
    }
    judged += place.size();
  }
  return out;
}

}  // namespace

PeerDepartures peer_departures(std::span<const PeerFigure> figures) {
  PeerDepartures out;
  out.of = departures_of(grouped(figures, true), out.judged);
  // A GPU whose part channel by channel leaves it too few peers to be judged by is judged
  // among the GPUs of as many connections (one test more each).
  bool parts = false;
  for (const PeerFigure& f : figures)
    parts = parts || f.place.per_channel.size() > 1 || f.far_place.per_channel.size() > 1;
  if (!parts) return out;  // one channel: the two groupings are one
  size_t judged_by_counts = 0;
  for (const auto& [who, d] : departures_of(grouped(figures, false), judged_by_counts))
    if (out.of.emplace(who, d).second) ++out.judged;
  return out;
}

std::optional<PeerOutlier> significant(const PeerDeparture& d, double tail) {
  if (d.excess <= 0 || d.variance <= 0) return std::nullopt;
  PeerOutlier p{d.excess / std::sqrt(d.variance), critical_t(d.df, tail)};
  if (p.t <= p.critical_t) return std::nullopt;
  return p;
}

}  // namespace culprit
