// The own-delay evidence pass on hand-built observations (own_delay.hpp): which clock it
// reads, and who it finds.
#include "analysis/own_delay.hpp"

#include <gtest/gtest.h>

#include <cmath>

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

}  // namespace
}  // namespace culprit
