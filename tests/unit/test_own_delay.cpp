// The own-delay evidence pass on hand-built observations (own_delay.hpp): which clock it
// reads, and who it finds.
#include "analysis/own_delay.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <vector>

namespace culprit {
namespace {

constexpr uint64_t kWorld = 0xabc;

Observations ring(int ranks) {
  Observations obs;
  for (int r = 0; r < ranks; ++r) {
    obs.processes.push_back({"node" + std::to_string(r / 4), 100 + r, r, ""});
    GlobalCommRank c;
    c.comm_hash = kWorld;
    c.rank = r;
    c.process = static_cast<uint32_t>(r);
    c.has_collective = true;
    obs.comm_ranks.push_back(c);
  }
  return obs;
}

// Gaps of `us` per collective over 20 sequences, with a small deterministic ripple.
void gaps(GlobalCommRank& c, double us) {
  for (uint64_t seq = 0; seq < 20; ++seq) {
    const double gap = us * 1000 * (1 + 0.02 * std::sin(static_cast<double>(seq * 7 + static_cast<uint64_t>(c.rank))));
    c.gaps.push_back({seq, std::log(gap)});
    c.gap_sum_ns += static_cast<uint64_t>(gap);
    c.gap_period_sum_ns += static_cast<uint64_t>(gap + 500000);
    c.gap_samples += 1;
  }
}

OwnDelay run(const Observations& obs) {
  std::map<uint64_t, int32_t> sizes{{kWorld, static_cast<int32_t>(obs.comm_ranks.size())}};
  return measure_own_delay(obs, obs.processes, sizes, {}, AttributionConfig{});
}

TEST(OwnDelay, KernelGapsNameTheStragglerOfACollective) {
  Observations obs = ring(16);
  for (GlobalCommRank& c : obs.comm_ranks) gaps(c, c.rank == 9 ? 2600 : 2000);  // rank 9: 1.3x
  const OwnDelay d = run(obs);
  EXPECT_TRUE(d.have_gaps);
  for (uint32_t p = 0; p < 16; ++p) {
    EXPECT_TRUE(d.work_measured[p]);
    EXPECT_EQ(d.late_ns[p] > 0, p == 9) << "process " << p;
  }
  EXPECT_NEAR(d.late_ns[9], 20 * 600e3, 0.1 * 20 * 600e3);  // 0.6 ms more in each of 20 gaps
  EXPECT_FALSE(d.diagnostics.empty());
}

TEST(OwnDelay, HealthyGapsNameNobody) {
  Observations obs = ring(16);
  for (GlobalCommRank& c : obs.comm_ranks) gaps(c, 2000);
  const OwnDelay d = run(obs);
  EXPECT_TRUE(d.have_gaps);
  for (double late : d.late_ns) EXPECT_EQ(late, 0);
}

TEST(OwnDelay, WithoutKernelClocksTheRankWithShortReceiveOpsPostedLate) {
  // No gaps, no kernel starts: every rank's receive ops end together, the late one's are short.
  Observations obs = ring(8);
  for (GlobalCommRank& c : obs.comm_ranks) {
    c.op_samples = 20;
    c.op_time_sum_ns = static_cast<uint64_t>(20 * (c.rank == 3 ? 1.0e6 : 5.0e6));
  }
  const OwnDelay d = run(obs);
  EXPECT_FALSE(d.have_gaps);
  for (uint32_t p = 0; p < 8; ++p) {
    EXPECT_FALSE(d.work_measured[p]);
    EXPECT_EQ(d.late_ns[p] > 0, p == 3) << "process " << p;
  }
}

// A connection of the world communicator from rank `src` to rank `dst` on channel 0.
void connect(Observations& obs, int32_t src, int32_t dst) {
  EdgeSummary e;
  e.key = EdgeKey{kWorld, src, dst, 0};
  obs.edges.push_back(e);
}

TEST(OwnDelay, ShortReceiveOpsAreComparedOnlyAmongRanksInTheSamePlace) {
  // Eight ranks without kernel clocks, rank 3's receive ops a fifth of the others'. In a ring
  // every rank receives from one and sends to one: it posted late, and is named.
  Observations ring_obs = ring(8);
  for (GlobalCommRank& c : ring_obs.comm_ranks) {
    c.op_samples = 20;
    c.op_time_sum_ns = static_cast<uint64_t>(20 * (c.rank == 3 ? 1.0e6 : 5.0e6));
  }
  Observations tree_obs = ring_obs;
  for (int32_t r = 0; r < 8; ++r) connect(ring_obs, r, (r + 1) % 8);
  EXPECT_GT(run(ring_obs).late_ns[3], 0);
  // As a binary tree (root 0, rank r's parent (r - 1) / 2; data up and down), a leaf, an
  // interior rank and the root receive different data at different times: short ops there
  // are the place, not a late GPU, and nobody is judged.
  for (int32_t r = 1; r < 8; ++r) {
    connect(tree_obs, r, (r - 1) / 2);
    connect(tree_obs, (r - 1) / 2, r);
  }
  const OwnDelay d = run(tree_obs);
  for (uint32_t p = 0; p < 8; ++p) EXPECT_EQ(d.late_ns[p], 0) << "process " << p;
}

// `pipelines` send/recv pipelines of `stages` stages each (one communicator per pipeline,
// rank = stage), one GPU per stage; GPU g = pipeline * stages + stage. Its mean gap is
// stage_us[stage] x speed(g) (x a ripple of +-3 % across GPUs), over 12 gaps.
struct Pipelines {
  Observations obs;
  std::map<uint64_t, int32_t> sizes;
  Pipelines(int pipelines, int stages, const std::vector<double>& stage_us, const std::function<double(int)>& speed) {
    for (int g = 0; g < pipelines * stages; ++g) {
      const int pipeline = g / stages, stage = g % stages;
      obs.processes.push_back({"node" + std::to_string(stage), 100 + g, g, ""});
      GlobalCommRank c;
      c.comm_hash = 0x1000 + static_cast<uint64_t>(pipeline);
      c.rank = stage;
      c.process = static_cast<uint32_t>(g);
      c.has_collective = false;
      const double gap_ns = stage_us[static_cast<size_t>(stage)] * 1000 * speed(g) * (1 + 0.03 * std::sin(g * 2.1));
      c.gap_samples = 12;
      c.gap_sum_ns = static_cast<uint64_t>(12 * gap_ns);
      c.gap_period_sum_ns = static_cast<uint64_t>(12 * (gap_ns + 400000));
      obs.comm_ranks.push_back(c);
      sizes[c.comm_hash] = stages;
    }
  }
  OwnDelay run() const { return measure_own_delay(obs, obs.processes, sizes, {}, AttributionConfig{}); }
};

TEST(OwnDelay, APipelineStageIsJudgedByItsWorkAgainstItsReplicas) {
  // Four pipelines of three stages: each stage's GPUs are replicas. GPU 7 (pipeline 2, stage
  // 1) at 1.3x among GPUs within +-3 % is named (stage_work.hpp), with its work beyond its
  // replicas'; a diagnostic line says so.
  Pipelines slow(4, 3, {1000, 2000, 1500}, [](int g) { return g == 7 ? 1.3 : 1.0; });
  const OwnDelay d = slow.run();
  EXPECT_TRUE(d.have_gaps);
  for (uint32_t p = 0; p < 12; ++p) EXPECT_EQ(d.late_ns[p] > 0, p == 7) << "process " << p;
  EXPECT_NEAR(d.late_ns[7], 12 * 600e3, 0.15 * 12 * 600e3);  // 0.6 ms more in each of 12 gaps
  bool described = false;
  for (const std::string& line : d.diagnostics) described = described || line.rfind("stage work node1:107", 0) == 0;
  EXPECT_TRUE(described);
  // GPUs of one job differing by up to 10 % in speed, spread evenly: no straggler.
  Pipelines uneven(4, 3, {1000, 2000, 1500}, [](int g) { return 0.95 + 0.1 * (g % 5) / 4.0; });
  for (double late : uneven.run().late_ns) EXPECT_EQ(late, 0);
}

TEST(OwnDelay, AFewPipelineStagesAreJudgedByThePrior) {
  // Three pipelines of one send/recv stage role (three GPUs): too few to measure their spread;
  // the prior judges: 1.3x is not named, 1.7x is.
  Pipelines modest(3, 1, {2000}, [](int g) { return g == 1 ? 1.3 : 1.0; });
  for (double late : modest.run().late_ns) EXPECT_EQ(late, 0);
  Pipelines gross(3, 1, {2000}, [](int g) { return g == 1 ? 1.7 : 1.0; });
  const OwnDelay d = gross.run();
  for (uint32_t p = 0; p < 3; ++p) EXPECT_EQ(d.late_ns[p] > 0, p == 1) << "process " << p;
}

}  // namespace
}  // namespace culprit
