// slow_send_waits on hand-built pipelines: a send/recv connection whose SendWait per step
// stands far above its peers' is a slow link; the slowest of a healthy spread, and a link
// slow like all its peers, are not (send_wait_peers.hpp).
#include "analysis/send_wait_peers.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pass_fixtures.hpp"

namespace culprit {
namespace {

// Six replicated pipelines of two stages: GPU i (node i) sends to GPU 6 + i (node 6 + i)
// over communicator 0x20 + i; `wait[i]` is that connection's SendWait per step.
struct Pipelines {
  Observations obs;
  std::vector<SendWaitFigure> sends;

  explicit Pipelines(const std::vector<double>& wait) {
    std::vector<std::string> hosts;
    for (int p = 0; p < 12; ++p) hosts.push_back("node" + std::to_string(p));
    test::add_collective_processes(obs, 0x10, hosts);
    for (uint32_t i = 0; i < 6; ++i) {
      const uint64_t comm = 0x20 + i;
      test::add_comm_ranks(obs, comm, {i, 6 + i}, /*collective=*/false);
      EdgeSummary e;
      e.key = {comm, 0, 1, 0, 0};
      e.send_steps = e.recv_steps = 16;
      e.send_bytes = e.recv_bytes = 16 * (512 << 10);
      obs.edges.push_back(e);
      sends.push_back({i, i, comm, 0, 6 + i, 1, wait[i], 16});
    }
  }
  std::vector<SlowSendWait> judged() const { return slow_send_waits(PeerRoles(ProcessContext(obs), obs), sends); }
};

TEST(SendWaitPeers, ALinkFarSlowerThanItsPeersIsNamed) {
  // SendWait 77-80 us per step on five links, 470 us on the sixth (a 5.7x link).
  const auto slow = Pipelines({77e3, 80e3, 470e3, 78e3, 79e3, 76e3}).judged();
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0].connection, 2u);
  EXPECT_NEAR(slow[0].excess_ns, (470e3 - 78.5e3) * 16, 1e3 * 16);
  EXPECT_GT(slow[0].margin, 1);
}

TEST(SendWaitPeers, TheSlowestOfAHealthySpreadIsNotNamed) {
  EXPECT_TRUE(Pipelines({77e3, 85e3, 92e3, 78e3, 70e3, 81e3}).judged().empty());
}

TEST(SendWaitPeers, LinksAllAsSlowNameNone) {
  // A slow switch under every link of the place: no link stands out of its peers.
  EXPECT_TRUE(Pipelines({470e3, 480e3, 460e3, 475e3, 465e3, 470e3}).judged().empty());
}

TEST(SendWaitPeers, ACollectiveLinkSetsThePaceWhereEveryOpOfItOutlastsAStepMuchSlowerThanATransfer) {
  // Steps of 360 us where a typical link moves one in 46 us: a link that spent 400 us per step
  // in its quickest op cannot keep up; one that spent 300 us queued behind its flow's bursts.
  const CollectivePace compute_paced{360e3, 46e3, 40e3};
  EXPECT_TRUE(sets_the_pace(400e3, compute_paced, 1.5));
  EXPECT_FALSE(sets_the_pace(300e3, compute_paced, 1.5));
  // A flow the network paces: the slowest healthy link is as busy as a step, but the step is
  // no slower than a typical link's transfer by link_ratio.
  EXPECT_FALSE(sets_the_pace(60e3, CollectivePace{55e3, 50e3, 45e3}, 1.5));
  EXPECT_FALSE(sets_the_pace(60e3, CollectivePace{}, 1.5));  // no pace measured
}

TEST(SendWaitPeers, ACollectiveLinkWhoseEveryOpOutlastsAFullWindowOfTypicalSendsIsSlowAtAnyPace) {
  // A data-parallel ring of four nodes whose 4x link makes every member wait for data: the
  // median send cycle (1280 us per step) is its own slow channel's, so the link (485 us per
  // step in its quickest op) sets no pace; but 8 sends at a typical link's quickest op's 50 us
  // take 400 us.
  const CollectivePace own_slow_channel{1280e3, 52e3, 50e3};
  EXPECT_FALSE(sets_the_pace(485e3, own_slow_channel, 1.5));
  EXPECT_GT(full_windows_outlasted(485e3, own_slow_channel, 8), 1);
  // A healthy link whose data came in bursts: 297 us per step, 5.3x a typical link's 56 us.
  EXPECT_LE(full_windows_outlasted(297e3, CollectivePace{1690e3, 61e3, 56e3}, 8), 1);
  // Exactly a full window queued is what a wire like its peers' can show.
  EXPECT_LE(full_windows_outlasted(400e3, own_slow_channel, 8), 1);
  EXPECT_LE(full_windows_outlasted(485e3, CollectivePace{1280e3, 52e3, 0}, 8), 1);  // none measured
  // The typical link's mean SendWait would not bound it: only its quickest op's does.
  EXPECT_GT(full_windows_outlasted(420e3, CollectivePace{554e3, 120e3, 50e3}, 8), 1);
}

TEST(SendWaitPeers, BeyondAnyHealthyWindowALinkIsSlowWhateverItsPeersSpread) {
  // A typical link's quickest op: 50 us per step. A full window of 8 sends on a wire 1.35x
  // slower (three deviations of 10 %) takes 540 us: no healthy link's own queue reaches it.
  const CollectivePace pace{700e3, 60e3, 50e3};
  EXPECT_NEAR(beyond_any_healthy_window(1080e3, pace, 8), 2.0, 0.01);
  EXPECT_GT(beyond_any_healthy_window(560e3, pace, 8), 1);
  // Past a full window at its peers' speed, but not at a healthy slower link's: the peer test
  // must decide (full_windows_outlasted).
  EXPECT_GT(full_windows_outlasted(500e3, pace, 8), 1);
  EXPECT_LT(beyond_any_healthy_window(500e3, pace, 8), 1);
  EXPECT_EQ(beyond_any_healthy_window(1080e3, CollectivePace{700e3, 60e3, 0}, 8), 0);  // none measured
}

}  // namespace
}  // namespace culprit
