// slow_queue_pairs on hand-built queue-pair times (probing's nccl.net_qp).
#include <gtest/gtest.h>

#include "analysis/queue_pair_wires.hpp"

namespace culprit {
namespace {

// One work request of 64 KiB per microsecond: about 65 GB/s; `slower` divides the speed.
QpObservation qp(uint32_t process, double slower = 1.0, uint64_t count = 100) {
  return {process, 0, 42 + process, count, count * 65536, static_cast<uint64_t>(count * 1000 * slower)};
}

TEST(QueuePairWires, AQueuePairAtAQuarterOfTheJobsSpeedIsASlowWire) {
  std::vector<QpObservation> qps = {qp(0), qp(1), qp(2), qp(3, 4.0)};
  std::vector<OutboundSendWait> sends = {{3, 0, 5000}, {3, 2, 9000}, {1, 2, 8000}};
  auto slow = slow_queue_pairs(qps, sends, 4, AttributionConfig{});
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0].process, 3u);
  EXPECT_EQ(slow[0].peer, 2);  // its slowest outbound connection
  EXPECT_DOUBLE_EQ(slow[0].excess_ns, 100 * 1000 * 4.0 - 100 * 1000.0);  // 3 us per request over the 2 us floor
  // Margin: 3 us per request is 1.5x the floor, and 4x slower is 3x the 2x ratio's excess.
  EXPECT_DOUBLE_EQ(slow[0].margin, 1.5);
}

TEST(QueuePairWires, ModeratelySlowerOrFewQueuePairsNameNobody) {
  std::vector<QpObservation> qps = {qp(0), qp(1), qp(2), qp(3, 1.5)};  // under qp_slow_ratio
  EXPECT_TRUE(slow_queue_pairs(qps, {}, 4, AttributionConfig{}).empty());
  std::vector<QpObservation> two = {qp(0), qp(1, 5.0)};  // no baseline from two
  EXPECT_TRUE(slow_queue_pairs(two, {}, 2, AttributionConfig{}).empty());
}

TEST(QueuePairWires, ATinyExcessPerRequestIsNoise) {
  // 10 ns per request at 3x: below abs_floor_ns per work request.
  std::vector<QpObservation> qps = {{0, 0, 1, 100, 100, 500}, {1, 0, 2, 100, 100, 500}, {2, 0, 3, 100, 100, 500},
                                    {3, 0, 4, 100, 100, 1500}};
  EXPECT_TRUE(slow_queue_pairs(qps, {}, 4, AttributionConfig{}).empty());
}

TEST(QueuePairWires, WithoutOutboundConnectionsThePeerIsUnknown) {
  std::vector<QpObservation> qps = {qp(0), qp(1), qp(2), qp(3, 4.0)};
  auto slow = slow_queue_pairs(qps, {}, 4, AttributionConfig{});
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_FALSE(slow[0].peer.has_value());
}

}  // namespace
}  // namespace culprit
