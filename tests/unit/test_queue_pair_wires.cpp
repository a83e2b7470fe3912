// slow_queue_pairs on hand-built queue-pair times (probing's nccl.net_qp): the idle-send test.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "analysis/queue_pair_wires.hpp"

namespace culprit {
namespace {

// A queue pair of `process` with 200 sends of `length` bytes, `idle` of which found it idle
// and took `idle_ns` (the mean of their logs), their logs spread by `jitter` about it.
QpObservation qp(uint32_t process, double idle_ns, uint64_t length = 131072, uint64_t idle = 16,
                 double jitter = 0.05) {
  QpObservation q;
  q.process = process;
  q.qp_num = 42 + process;
  q.count = 200;
  q.bytes = 200 * length;
  q.sum_ns = static_cast<uint64_t>(200 * idle_ns * 3);  // queued sends last longer: not used
  q.wr_length = length;
  q.idle_sends = idle;
  const double n = static_cast<double>(idle);
  q.idle_log_ns_sum = n * std::log(idle_ns);
  q.idle_log_ns_sq_sum = n * std::log(idle_ns) * std::log(idle_ns) + (n - 1) * jitter * jitter;
  return q;
}

// Twelve healthy queue pairs of 17 us (7 us of latency and acknowledgement, 10 us of
// transfer), spread as links of one kind are (a few per cent).
std::vector<QpObservation> healthy_job() {
  std::vector<QpObservation> qps;
  const double spread[12] = {1.00, 1.03, 0.97, 1.05, 0.96, 1.02, 0.99, 1.04, 0.98, 1.01, 0.95, 1.06};
  for (uint32_t p = 0; p < 12; ++p) qps.push_back(qp(p, 17000 * spread[p]));
  return qps;
}

TEST(QueuePairWires, AWireTwiceAsSlowAmongTwelveIsNamed) {
  std::vector<QpObservation> qps = healthy_job();
  qps[5] = qp(5, 7000 + 10000 * 2.0);  // a 2x wire: 27 us where its peers take 17
  std::vector<OutboundSendWait> sends = {{5, 6, 9000}, {5, 7, 12000}, {4, 5, 8000}};
  auto slow = slow_queue_pairs(qps, sends, 12);
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0].process, 5u);
  EXPECT_EQ(slow[0].peer, 7u);  // its slowest outbound connection
  EXPECT_GT(slow[0].margin, 1.0);
  // Each of its 200 sends took 10 us beyond its peers' typical 17 us (their median).
  EXPECT_NEAR(slow[0].excess_ns / 200, 27000 - 17000, 1);
}

TEST(QueuePairWires, HealthyQueuePairsNameNobody) {
  EXPECT_TRUE(slow_queue_pairs(healthy_job(), {}, 12).empty());
}

TEST(QueuePairWires, OnlyQueuePairsOfOneLengthArePeers) {
  // Half the job sends 1 MiB chunks (longer on any wire): compared with the 128 KiB queue
  // pairs they would all stand out; among themselves none does.
  std::vector<QpObservation> qps = healthy_job();
  for (uint32_t p = 12; p < 18; ++p) qps.push_back(qp(p, 7000 + 80000 * (1 + 0.01 * (p % 3)), 1048576));
  EXPECT_TRUE(slow_queue_pairs(qps, {}, 18).empty());
}

TEST(QueuePairWires, TooFewIdleSendsOrFewPeersJudgeNobody) {
  std::vector<QpObservation> qps = healthy_job();
  qps[5] = qp(5, 17000 * 3, 131072, kMinIdleSends - 1);  // three draws of its jitter
  EXPECT_TRUE(slow_queue_pairs(qps, {}, 12).empty());
  std::vector<QpObservation> three = {qp(0, 17000), qp(1, 17500), qp(2, 17000 * 3)};  // no two others to judge by
  EXPECT_TRUE(slow_queue_pairs(three, {}, 3).empty());
}

// A queue pair that paces its communicator is seldom idle: the mean of its few idle sends
// carries their jitter, which its peers' many do not show.
TEST(QueuePairWires, AFewNoisyIdleSendsAreJudgedWithTheirOwnJitter) {
  std::vector<QpObservation> qps = healthy_job();
  qps[5] = qp(5, 17000 * 2, 131072, 9, 0.5);  // nine sends, jitter 0.5: twice as long by chance
  EXPECT_TRUE(slow_queue_pairs(qps, {}, 12).empty());
  qps[5] = qp(5, 17000 * 2, 131072, 60, 0.05);  // sixty sends, steady: its wire
  ASSERT_EQ(slow_queue_pairs(qps, {}, 12).size(), 1u);
}

TEST(QueuePairWires, AProcessIsJudgedByItsSlowestQueuePairAndUnknownProcessesAreSkipped) {
  std::vector<QpObservation> qps = healthy_job();
  QpObservation second = qp(3, 17000 * 2);  // process 3's second queue pair, to a slow wire
  second.qp_num = 99;
  qps.push_back(second);
  qps.push_back(qp(40, 17000 * 3));  // a process the job does not hold
  auto slow = slow_queue_pairs(qps, {}, 12);
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0].process, 3u);
  EXPECT_FALSE(slow[0].peer.has_value());  // no outbound connection known
}

}  // namespace
}  // namespace culprit
