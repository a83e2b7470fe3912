// The own-work straggler signal on hand-built gaps: persistent small stragglers are named,
// spikes, noise and the normal spread of hardware are not (own_work_stragglers.hpp).
#include "analysis/own_work_stragglers.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace culprit {
namespace {

// Standard normal draws from a fully specified generator (Box-Muller over mt19937), so the
// inputs are the same on every standard library.
class Normal {
 public:
  explicit Normal(uint32_t seed) : rng_(seed) {}
  double operator()() {
    const double u1 = (static_cast<double>(rng_()) + 1.0) / 4294967297.0;
    const double u2 = static_cast<double>(rng_()) / 4294967296.0;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  std::mt19937 rng_;
};

struct Job {
  int ranks = 16;
  int samples = 20;
  double gap_us = 2000;   // own work before each collective
  double period_us = 2500;
  double jitter = 0.05;   // log-normal sigma of every single gap
  double hetero = 0;      // log-normal sigma of each GPU's static speed
  int straggler = -1;
  double factor = 1.0;    // the straggler's gaps are this many times longer
  int spike_rank = -1;    // one gap of this rank is spike times longer
  double spike = 1.0;
  bool bimodal = false;   // gaps alternate between a long and a short kind
  uint32_t seed = 1;
  // Where set, the GPUs' speeds come from a stream of their own, so that jobs with the same
  // speed_seed (a GPU's ranks in two communicators) have the same GPUs.
  uint32_t speed_seed = 0;

  std::vector<std::vector<GapSample>> storage{};
  std::vector<GapObservation> build() {
    Normal z(seed), speeds(speed_seed);
    storage.assign(static_cast<size_t>(ranks), {});
    std::vector<GapObservation> out;
    for (int r = 0; r < ranks; ++r) {
      const double draw = speed_seed ? speeds() : z();
      const double speed = std::exp(hetero * draw) * (r == straggler ? factor : 1.0);
      double sum = 0;
      for (int k = 0; k < samples; ++k) {
        double gap = gap_us * 1000 * speed * std::exp(jitter * z());
        if (bimodal && k % 2 == 1) gap *= 0.05;
        if (r == spike_rank && k == samples / 2) gap *= spike;
        storage[static_cast<size_t>(r)].push_back({static_cast<uint64_t>(100 + k), std::log(gap)});
        sum += gap;
      }
      GapObservation g;
      g.process = static_cast<uint32_t>(r);
      g.role = 7;
      g.samples = samples;
      g.mean_gap_ns = sum / samples;
      g.mean_period_ns = g.mean_gap_ns + (period_us - gap_us) * 1000;
      out.push_back(g);
    }
    for (size_t r = 0; r < out.size(); ++r) out[r].gaps = storage[r];
    return out;
  }
};

std::vector<uint32_t> named(Job& job, const StragglerConfig& config = {}) {
  std::vector<uint32_t> out;
  for (const OwnWorkStraggler& s : own_work_stragglers(job.build(), config)) out.push_back(s.process);
  return out;
}

TEST(OwnWorkStragglers, PersistentTenPercentStragglerIsNamed) {
  // 64 GPUs, 40 gaps each with 5 % noise: a GPU 10 % slower every time.
  Job job;
  job.ranks = 64;
  job.samples = 40;
  job.straggler = 5;
  job.factor = 1.10;
  EXPECT_EQ(named(job), std::vector<uint32_t>{5});
  auto found = own_work_stragglers(job.build());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_GT(found[0].t, found[0].critical_t);
  // Its margin: t over its critical value (0.2 ms per gap is far above both floors).
  EXPECT_DOUBLE_EQ(found[0].margin, found[0].t / found[0].critical_t);
  // Its extra own time: about 0.2 ms per gap, over 40 gaps.
  EXPECT_NEAR(found[0].excess_ns, 0.1 * 2e6 * 40, 0.35 * 0.1 * 2e6 * 40);
}

TEST(OwnWorkStragglers, TheMarginIsTheTightestOfTheTestAndItsFloors) {
  OwnWorkStraggler s;
  s.t = 9;
  s.critical_t = 4.5;  // 2x its critical value
  const StragglerConfig config;  // floors: 20 us per gap and 1 % of the period
  EXPECT_DOUBLE_EQ(straggler_margin(s, 1e6, 1e6, config), 2.0);
  EXPECT_DOUBLE_EQ(straggler_margin(s, 30e3, 1e6, config), 1.5);   // 30 us of the 20 us floor
  EXPECT_DOUBLE_EQ(straggler_margin(s, 30e3, 2.5e6, config), 1.2);  // 30 us of 1 % of 2.5 ms
}

TEST(OwnWorkStragglers, OneSpikeIsNotAStraggler) {
  Job job;
  job.spike_rank = 3;
  job.spike = 3.0;  // one gap three times longer
  EXPECT_TRUE(named(job).empty());
}

TEST(OwnWorkStragglers, HeavyNoiseAloneNamesNobodyOverManySeeds) {
  int false_roots = 0;
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    Job job;
    job.seed = seed;
    job.jitter = 0.3;
    job.hetero = 0.05;
    job.samples = 8;
    false_roots += static_cast<int>(named(job).size());
  }
  EXPECT_EQ(false_roots, 0);
}

TEST(OwnWorkStragglers, HardwareSpreadIsNotAStragglerButAFaultWellBeyondItIs) {
  int false_roots = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    Job job;
    job.seed = seed;
    job.hetero = 0.1;
    job.ranks = 32;
    false_roots += static_cast<int>(named(job).size());
  }
  EXPECT_EQ(false_roots, 0);
  Job faulty;
  faulty.hetero = 0.1;
  faulty.ranks = 32;
  faulty.straggler = 9;
  faulty.factor = 2.0;
  EXPECT_EQ(named(faulty), std::vector<uint32_t>{9});
}

// Jobs with a false alarm among `jobs` healthy jobs of `ranks` GPUs whose speeds differ by
// `hetero` (log-normal sigma), seven gaps each at `jitter`.
int healthy_jobs_with_an_alarm(int ranks, double hetero, double jitter, int jobs) {
  int alarms = 0;
  for (int k = 0; k < jobs; ++k) {
    Job job;
    job.seed = 5000 + static_cast<uint32_t>(k);
    job.ranks = ranks;
    job.samples = 7;
    job.hetero = hetero;
    job.jitter = jitter;
    alarms += named(job).empty() ? 0 : 1;
  }
  return alarms;
}

TEST(OwnWorkStragglers, HealthyJobsRaiseAlarmsAtAFewTimesTheDesignRate) {
  // The test is built for one false alarm in a thousand healthy jobs. It holds only if the
  // yardstick's uncertainty is counted honestly: the spread between GPUs measured once per
  // other GPU (not once per gap), the noise estimate worth the efficiency of a median. Among
  // GPUs that differ by 10 %, counting the spread's estimate as surer than it is raised an
  // alarm in 2-3 % of jobs of 16 GPUs and 1 % of 64 (measured before the yardstick was the
  // others' whole variance with the degrees of freedom of the other GPUs).
  // Still above the design at this spread, measured over 10,000 jobs of each size: 53 alarms
  // in jobs of 16 GPUs and 22 in jobs of 64, against 10 and 10. Two causes, both at a spread
  // of 10 %: the prior (5 %, worth four GPUs) pulls a small job's yardstick below it (with a
  // prior of 10 %: 11 and 16, but a 1.3x straggler among 16 GPUs that differ by 3 % is then
  // named in 17 % of jobs, not 63 %), and in pools of about 15 the clipped variance sometimes
  // settles on a tight core (its 0.1 % quantile is 0.09 of the truth, a plain mean square's
  // 0.22). docs/accuracy.md, "The gap test's own false alarm rate".
  const int jobs = 1000;
  const int alarms = healthy_jobs_with_an_alarm(16, 0.1, 0.15, jobs) + healthy_jobs_with_an_alarm(64, 0.1, 0.15, jobs);
  // 7 in these 2000 jobs (the rate above). 8 keeps it from growing unseen; at the design rate
  // (2 expected) 8 is exceeded once in a thousand runs.
  EXPECT_LE(alarms, 8);
}

TEST(OwnWorkStragglers, GapsOfDifferentKindsAreComparedGapByGap) {
  // Gaps of two very different kinds (say, before a forward and a backward collective):
  // compared with the same gap of the role peers, a 1.5x straggler among four is clear; the
  // mixture alone is not.
  Job healthy;
  healthy.bimodal = true;
  healthy.ranks = 4;
  healthy.samples = 40;
  EXPECT_TRUE(named(healthy).empty());
  Job faulty = healthy;
  faulty.straggler = 2;
  faulty.factor = 1.5;
  EXPECT_EQ(named(faulty), std::vector<uint32_t>{2});
}

TEST(OwnWorkStragglers, AStragglerThatCostsNothingIsNotNamed) {
  // Significant but tiny: 60 us more per gap of a 100 ms period.
  Job job;
  job.gap_us = 200;
  job.period_us = 100000;
  job.straggler = 1;
  job.factor = 1.3;
  EXPECT_TRUE(named(job).empty());
  StragglerConfig lenient;
  lenient.min_share = 0;
  lenient.min_excess_ns = 0;
  EXPECT_EQ(named(job, lenient), std::vector<uint32_t>{1});
}

TEST(OwnWorkStragglers, SumsOnlyStillNameAGrossStraggler) {
  Job job;
  job.jitter = 0;
  job.straggler = 4;
  job.factor = 3.0;
  std::vector<GapObservation> ranks = job.build();
  for (GapObservation& g : ranks) g.gaps = {};  // hand-built observations carry sums only
  auto found = own_work_stragglers(ranks);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].process, 4u);
  for (GapObservation& g : ranks) g.mean_gap_ns = ranks[0].mean_gap_ns;
  EXPECT_TRUE(own_work_stragglers(ranks).empty());
}

TEST(OwnWorkStragglers, AFewGpusNeedALargerDeparture) {
  // Four GPUs cannot measure their spread: the prior decides, so 1.15x is not enough and 2x is.
  Job job;
  job.ranks = 4;
  job.jitter = 0.1;
  job.straggler = 0;
  job.factor = 1.15;
  EXPECT_TRUE(named(job).empty());
  job.factor = 2.0;
  EXPECT_EQ(named(job), std::vector<uint32_t>{0});
}

// GPUs named when the GPUs of `first` (its role) also hold ranks in a second set of roles,
// drawn as `second` with the same GPU speeds and noise of their own: `role_of(process)` is each
// GPU's role there, none when it returns 0 (no second ranks at all); `apart` gives the second
// ranks processes of their own (+100), so that nothing combines them.
std::vector<uint32_t> named_in_two_roles(Job first, Job second, uint64_t (*role_of)(uint32_t), bool apart = false) {
  first.speed_seed = second.speed_seed = first.seed + 7;
  second.seed = first.seed + 1000;
  std::vector<GapObservation> ranks = first.build();
  const std::vector<GapObservation> more = second.build();
  for (GapObservation g : more) {
    g.role = role_of(g.process);
    if (g.role == 0) continue;
    if (apart) g.process += 100;
    ranks.push_back(g);
  }
  std::vector<uint32_t> found;
  for (const OwnWorkStraggler& s : own_work_stragglers(ranks)) found.push_back(s.process);
  return found;
}

uint64_t one_data_parallel_group(uint32_t) { return 8; }
uint64_t pairs_of_two_nodes_of_four(uint32_t gpu) { return 20 + gpu % 4; }  // {g, g + 4}
uint64_t no_second_role(uint32_t) { return 0; }

// Three GPUs each holding a rank in two communicators over the same three (a world and a
// data-parallel group), as a job of three nodes of one GPU; GPU 1's gaps `factor` x longer.
std::vector<uint32_t> three_gpus_in_two_communicators(uint32_t seed, double factor) {
  const Job world{
      .ranks = 3, .samples = 8, .jitter = 0.1, .hetero = 0.05, .straggler = 1, .factor = factor, .seed = seed};
  return named_in_two_roles(world, world, one_data_parallel_group);
}

TEST(OwnWorkStragglers, AStragglerIsNotPartOfItsOwnYardstick) {
  // The straggler holds two of the six departures that measure the spread between GPUs.
  // Measured with them, a 1.6x GPU among GPUs that differ by 5 % looked like ordinary spread
  // in most draws; judged against the other two, it is named in most.
  int found_both = 0, false_roots = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const std::vector<uint32_t> found = three_gpus_in_two_communicators(seed, 1.6);
    found_both += found == std::vector<uint32_t>{1} ? 1 : 0;  // once, from both communicators
    for (uint32_t p : found) false_roots += p != 1 ? 1 : 0;
  }
  // Measured: 39 of 40 (each GPU's two departures combined into one). With the straggler in
  // the pool, 11 (measured when each communicator rank was judged apart).
  EXPECT_GE(found_both, 35);
  EXPECT_EQ(false_roots, 0);
  // The same shape without a straggler names nobody, over many draws.
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    false_roots += static_cast<int>(three_gpus_in_two_communicators(seed, 1.0).size());
  }
  EXPECT_EQ(false_roots, 0);
}

// The GPUs of `shape` in a world and a data-parallel communicator of the same members, drawn
// with `seed`, its straggler `factor` x slower; `apart`: each communicator's ranks given to
// processes of their own, so that nothing combines them.
std::vector<uint32_t> in_world_and_data_parallel(Job shape, uint32_t seed, double factor, bool apart) {
  shape.seed = seed;
  shape.factor = factor;
  return named_in_two_roles(shape, shape, one_data_parallel_group, apart);
}

// 16 GPUs, 7 gaps each at 20 % noise, GPU 3 the straggler. No spread between GPUs: the
// prior's decides, with the noise.
std::vector<uint32_t> gpus_in_two_communicators(uint32_t seed, double factor, bool apart) {
  return in_world_and_data_parallel({.ranks = 16, .samples = 7, .jitter = 0.2, .hetero = 0, .straggler = 3}, seed,
                                    factor, apart);
}

// Over seeds 1..`seeds`, a job drawn by `draw(seed, factor, apart)` whose straggler is GPU
// `straggler`, `factor` x slower: the draws that name it alone with each GPU's ranks one
// process (together), those that name it in either of its processes when apart, and every
// other GPU named in those draws and in healthy ones (factor 1, together).
struct Tally {
  int together = 0, apart = 0, false_roots = 0;
};
Tally tally(std::vector<uint32_t> (*draw)(uint32_t, double, bool), uint32_t straggler, double factor, uint32_t seeds) {
  Tally t;
  for (uint32_t seed = 1; seed <= seeds; ++seed) {
    const std::vector<uint32_t> combined = draw(seed, factor, false);
    t.together += combined == std::vector<uint32_t>{straggler} ? 1 : 0;
    for (uint32_t p : combined) t.false_roots += p == straggler ? 0 : 1;
    bool either = false;
    for (uint32_t p : draw(seed, factor, true)) {
      either = either || p == straggler || p == straggler + 100;
      t.false_roots += p == straggler || p == straggler + 100 ? 0 : 1;
    }
    t.apart += either ? 1 : 0;
    t.false_roots += static_cast<int>(draw(seed, 1.0, false).size());
  }
  return t;
}

TEST(OwnWorkStragglers, AGpuIsJudgedOnceFromItsGapsInEveryCommunicator) {
  // Its gaps before either communicator's collectives are its own work at its one speed, with
  // independent noise: together they halve the noise, and the GPU is one test, not two.
  const Tally t = tally(gpus_in_two_communicators, 3, 1.4, 40);
  EXPECT_GE(t.together, 28);  // measured: 32 of 40 (a 1.4x GPU)
  EXPECT_LE(t.apart, 24);     // measured: 20 of 40 named in either communicator
  EXPECT_EQ(t.false_roots, 0);
}

TEST(OwnWorkStragglers, APairIsJudgedOnlyForAGpuOutsideThePool) {
  // Eight GPUs in a world communicator and four data-parallel pairs (two nodes of four). A
  // GPU's world departure judges its speed against the seven others; its pair departure
  // against one, a weaker test of the same question. Judged once, from the world.
  Job world, pairs;
  world.ranks = pairs.ranks = 8;
  world.jitter = pairs.jitter = 0.1;
  world.straggler = pairs.straggler = 3;
  world.factor = pairs.factor = 3.0;
  pairs.seed = 99;
  std::vector<GapObservation> ranks = world.build();
  for (GapObservation g : pairs.build()) {
    g.role = pairs_of_two_nodes_of_four(g.process);
    ranks.push_back(g);
  }
  std::vector<uint32_t> found;
  for (const OwnWorkStraggler& s : own_work_stragglers(ranks)) found.push_back(s.process);
  EXPECT_EQ(found, std::vector<uint32_t>{3});
  // Without the world, the pairs are all there is: GPU 3 is judged against GPU 7.
  std::vector<GapObservation> only_pairs(ranks.begin() + 8, ranks.end());
  found.clear();
  for (const OwnWorkStraggler& s : own_work_stragglers(only_pairs)) found.push_back(s.process);
  EXPECT_EQ(found, std::vector<uint32_t>{3});
}

// Eight GPUs of two nodes in a world communicator and four data-parallel pairs {g, g + 4},
// 7 gaps each at 20 % noise, GPUs differing by 3 %; GPU 1 `factor` x slower. `with_pairs`:
// the pairs' gaps are there too.
std::vector<uint32_t> world_and_pairs(uint32_t seed, double factor, bool with_pairs) {
  const Job world{
      .ranks = 8, .samples = 7, .jitter = 0.2, .hetero = 0.03, .straggler = 1, .factor = factor, .seed = seed};
  return named_in_two_roles(world, world, with_pairs ? pairs_of_two_nodes_of_four : no_second_role);
}

TEST(OwnWorkStragglers, APairMeasuresAGpuThroughItsPartnersPoolDeparture) {
  // GPU 1's pair departure holds its speed less its partner's; the partner's world departure
  // holds the partner's speed: together one more measurement of GPU 1's own departure, with
  // noise of its own, which joins its world departure.
  int with_pairs = 0, world_only = 0, false_roots = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const std::vector<uint32_t> a = world_and_pairs(seed, 1.5, true), b = world_and_pairs(seed, 1.5, false);
    with_pairs += a == std::vector<uint32_t>{1} ? 1 : 0;
    world_only += b == std::vector<uint32_t>{1} ? 1 : 0;
    false_roots += static_cast<int>(world_and_pairs(seed, 1.0, true).size());
  }
  EXPECT_GE(with_pairs, 22);  // measured: 25 of 40 (a 1.5x GPU)
  EXPECT_LE(world_only, 21);  // measured: 18 of 40
  EXPECT_EQ(false_roots, 0);
}

// Two GPUs (a job of two nodes of one GPU), 8 gaps each at 20 % noise, differing by 5 %; GPU
// 1 the straggler.
std::vector<uint32_t> two_gpus_in_two_communicators(uint32_t seed, double factor, bool apart) {
  return in_world_and_data_parallel({.ranks = 2, .samples = 8, .jitter = 0.2, .hetero = 0.05, .straggler = 1}, seed,
                                    factor, apart);
}

TEST(OwnWorkStragglers, APairInTwoCommunicatorsIsOneTest) {
  // Both communicators compare the same two speeds, with independent noise: combined, the
  // noise halves and the GPU is one test, not two.
  const Tally t = tally(two_gpus_in_two_communicators, 1, 1.5, 200);
  EXPECT_GE(t.together, 45);  // measured: 58 of 200 (apart, as each was judged before: 16)
  EXPECT_GT(t.together, t.apart + 10);
  EXPECT_LE(t.false_roots, 2);
  std::printf("a 1.5x GPU of two in two communicators, of 200: %d combined, %d apart; %d false roots\n", t.together,
              t.apart, t.false_roots);
}

}  // namespace
}  // namespace culprit
