// blame_roots: victims' waits summed on their root, chains, job_share per class, hangs listed first, scores.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "analysis/blame.hpp"
#include "analysis/score.hpp"

namespace culprit {
namespace {

constexpr uint64_t kComm = 0xB1A3Eull;

// Four processes on their own hosts; `busy` is each one's time inside NCCL.
Observations job(const std::vector<uint64_t>& busy) {
  Observations obs;
  for (size_t p = 0; p < busy.size(); ++p) {
    obs.processes.push_back({"h" + std::to_string(p), static_cast<int64_t>(100 + p), static_cast<int64_t>(p), ""});
    GlobalCommRank c;
    c.comm_hash = kComm;
    c.rank = static_cast<int32_t>(p);
    c.process = static_cast<uint32_t>(p);
    c.busy_sum_ns = busy[p];
    obs.comm_ranks.push_back(c);
  }
  return obs;
}

// Everyone attributed to process 1: 0 directly, 2 through 3, 3 directly.
GraphVerdict all_on_one() {
  GraphVerdict g;
  g.roots = {1};
  g.attributed_root = {1, 1, 1, 1};
  g.next_hop = {1, -1, 3, 1};
  g.wait_ns = {5000, 0, 7000, 3000};
  return g;
}

Blame blame_of(const Observations& obs, const std::vector<Evidence>& ev, const GraphVerdict& g,
               const std::vector<uint32_t>& roots) {
  ProcessContext ctx(obs);
  return blame_roots({obs, ctx, ev, g, roots});
}

TEST(Blame, ARootCarriesItsVictimsWaitsAndItsOwnExcessWithTheirChains) {
  Observations obs = job({30000, 10000, 25000, 5000});
  std::vector<Evidence> ev(4);
  ev[1].offer(1000, CulpritClass::kGpuProducer);
  Blame b = blame_of(obs, ev, all_on_one(), {1});
  ASSERT_EQ(b.culprits.size(), 1u);
  const CulpritRow& c = b.culprits[0];
  EXPECT_EQ(c.process_id, 1u);
  EXPECT_EQ(c.host, "h1");
  EXPECT_EQ(c.pid, 101);
  EXPECT_EQ(c.culprit_class, "gpu_producer");
  EXPECT_EQ(c.peer_process_id, -1);
  EXPECT_EQ(c.victims, 3u);
  EXPECT_EQ(c.blame_ns, 5000u + 7000u + 3000u + 1000u);
  EXPECT_DOUBLE_EQ(c.blame_share, 1.0);
  // Victims' time inside NCCL beyond the root's own: 20 + 15 + 0 us of 70 us.
  EXPECT_DOUBLE_EQ(c.job_share, 0.5);
  // Evidence of unknown margin: scored as at its guard.
  EXPECT_DOUBLE_EQ(c.score, calibrated_score(ev[1]));

  ASSERT_EQ(b.processes.size(), 4u);
  EXPECT_EQ(b.processes[1].role, "culprit");
  EXPECT_EQ(b.processes[1].culprit_class, "gpu_producer");
  EXPECT_EQ(b.processes[1].chain_depth, 0);
  EXPECT_EQ(b.processes[0].role, "victim");
  EXPECT_EQ(b.processes[0].attributed_root, 1);
  EXPECT_EQ(b.processes[0].chain_depth, 1);
  EXPECT_EQ(b.processes[2].chain_depth, 2);
  EXPECT_EQ(b.processes[2].wait_ns, 7000u);
  EXPECT_EQ(b.processes[2].culprit_class, "none");
  // One row per hop of each victim's chain, the victim at hop 0 and the root last.
  ASSERT_EQ(b.chains.size(), 2u + 3u + 2u);
  EXPECT_EQ(b.chains[2].victim, 2u);
  EXPECT_EQ(b.chains[2].hop, 0u);
  EXPECT_EQ(b.chains[3].process_id, 3u);
  EXPECT_EQ(b.chains[4].process_id, 1u);
  EXPECT_EQ(b.chains[4].hop, 2u);
}

TEST(Blame, JobShareIsMeasuredForHangsAndTimedSlowGpusOnly) {
  GraphVerdict g = all_on_one();
  g.attributed_root[3] = -1;  // process 3 healthy: two victims
  g.next_hop[3] = -1;
  // A hang stops its victims and itself: 3 of 4 processes.
  std::vector<Evidence> hang(4);
  hang[1].stop();
  Blame h = blame_of(job({30000, 10000, 25000, 5000}), hang, g, {1});
  EXPECT_EQ(h.culprits[0].culprit_class, "hang");
  EXPECT_DOUBLE_EQ(h.culprits[0].job_share, 0.75);
  EXPECT_EQ(h.culprits[0].blame_ns, 12000u);  // its victims' waits; a hang adds no time
  EXPECT_EQ(h.processes[3].role, "healthy");
  // A slow wire lengthens the root's own NCCL time as much as its victims': not measurable.
  std::vector<Evidence> link(4);
  link[1].offer(1000, CulpritClass::kNetworkLink, 2u);
  Blame l = blame_of(job({30000, 10000, 25000, 5000}), link, g, {1});
  EXPECT_TRUE(std::isnan(l.culprits[0].job_share));
  EXPECT_EQ(l.culprits[0].peer_process_id, 2);
  // A slow GPU whose own NCCL time is unknown: not measurable either.
  std::vector<Evidence> producer(4);
  producer[1].offer(1000, CulpritClass::kGpuProducer);
  Blame p = blame_of(job({30000, 0, 25000, 5000}), producer, g, {1});
  EXPECT_TRUE(std::isnan(p.culprits[0].job_share));
}

TEST(Blame, HangsComeFirstThenMostBlameThenLowestProcess) {
  Observations obs = job({0, 0, 0, 0});
  std::vector<Evidence> ev(4);
  ev[0].offer(5000, CulpritClass::kGpuProducer);
  ev[1].offer(5000, CulpritClass::kFlush);
  ev[2].stop();
  ev[3].offer(9000, CulpritClass::kGpuConsumer);
  GraphVerdict g;
  g.roots = {3, 1, 0, 2};
  g.attributed_root = {0, 1, 2, 3};  // every root is its own
  g.next_hop = {-1, -1, -1, -1};
  g.wait_ns = {0, 0, 0, 0};
  Blame b = blame_of(obs, ev, g, g.roots);
  ASSERT_EQ(b.culprits.size(), 4u);
  EXPECT_EQ(b.culprits[0].process_id, 2u);  // no blame at all, but a hang
  EXPECT_EQ(b.culprits[1].process_id, 3u);
  EXPECT_EQ(b.culprits[2].process_id, 0u);  // 5000 each: the lower id first
  EXPECT_EQ(b.culprits[3].process_id, 1u);
  EXPECT_DOUBLE_EQ(b.culprits[1].blame_share, 9000.0 / 19000.0);
  EXPECT_DOUBLE_EQ(b.culprits[0].blame_share, 0.0);
  EXPECT_TRUE(b.chains.empty());
}

TEST(Blame, ACulpritRowAndItsProcessRowCarryTheCalibratedScoreOfItsEvidence) {
  Observations obs = job({30000, 10000, 25000, 5000});
  std::vector<Evidence> ev(4);
  ev[1].offer(1000, CulpritClass::kGpuProducer, std::nullopt, 1.3);
  Blame b = blame_of(obs, ev, all_on_one(), {1});
  ASSERT_EQ(b.culprits.size(), 1u);
  EXPECT_DOUBLE_EQ(b.culprits[0].score, calibrated_score(ev[1]));
  EXPECT_DOUBLE_EQ(b.culprits[0].margin, 1.3);
  EXPECT_DOUBLE_EQ(b.processes[1].score, b.culprits[0].score);
}

}  // namespace
}  // namespace culprit
