// Evidence: the strongest offer sets the class and peer; a stop replaces everything and outranks any delay.
#include <gtest/gtest.h>

#include "analysis/self_evidence.hpp"

namespace culprit {
namespace {

TEST(SelfEvidence, NothingOfferedIsNoEvidence) {
  Evidence e;
  EXPECT_FALSE(e.any());
  EXPECT_EQ(e.culprit_class, CulpritClass::kNone);
  e.offer(0, CulpritClass::kGpuProducer);  // no delay is no evidence
  e.offer(-5, CulpritClass::kFlush);
  EXPECT_FALSE(e.any());
  EXPECT_EQ(e.culprit_class, CulpritClass::kNone);
}

TEST(SelfEvidence, TheLongestDelayWinsAndSetsClassAndPeer) {
  Evidence e;
  e.offer(5000, CulpritClass::kGpuConsumer);
  e.offer(3000, CulpritClass::kFlush);  // weaker: ignored
  EXPECT_DOUBLE_EQ(e.ns, 5000);
  EXPECT_EQ(e.culprit_class, CulpritClass::kGpuConsumer);
  EXPECT_FALSE(e.peer.has_value());
  e.offer(5000, CulpritClass::kFlush);  // a tie does not replace the first
  EXPECT_EQ(e.culprit_class, CulpritClass::kGpuConsumer);
  e.offer(9000, CulpritClass::kNetworkLink, 7u);
  EXPECT_DOUBLE_EQ(e.ns, 9000);
  EXPECT_EQ(e.culprit_class, CulpritClass::kNetworkLink);
  ASSERT_TRUE(e.peer.has_value());
  EXPECT_EQ(*e.peer, 7u);
  // A stronger offer without a far end clears the link's peer.
  e.offer(12000, CulpritClass::kGpuProducer);
  EXPECT_EQ(e.culprit_class, CulpritClass::kGpuProducer);
  EXPECT_FALSE(e.peer.has_value());
  EXPECT_TRUE(e.any());
}

TEST(SelfEvidence, AStoppedProcessDropsItsDelayAndIgnoresLaterOffers) {
  Evidence e;
  e.offer(9000, CulpritClass::kNetworkLink, 3u);
  e.stop();
  EXPECT_TRUE(e.stopped);
  EXPECT_TRUE(e.any());
  EXPECT_DOUBLE_EQ(e.ns, 0);  // a hang is no time
  EXPECT_EQ(e.culprit_class, CulpritClass::kHang);
  EXPECT_FALSE(e.peer.has_value());
  e.offer(1e15, CulpritClass::kGpuProducer, 1u);
  EXPECT_DOUBLE_EQ(e.ns, 0);
  EXPECT_EQ(e.culprit_class, CulpritClass::kHang);
  EXPECT_FALSE(e.peer.has_value());
}

TEST(SelfEvidence, StoppedOutranksAnyDelayThenTheLongerDelayOutranks) {
  Evidence hang;
  hang.stop();
  Evidence huge;
  huge.offer(1e15, CulpritClass::kGpuProducer);
  Evidence small;
  small.offer(10, CulpritClass::kFlush);
  EXPECT_TRUE(hang.outranks(huge));
  EXPECT_FALSE(huge.outranks(hang));
  EXPECT_TRUE(huge.outranks(small));
  EXPECT_FALSE(small.outranks(huge));
  EXPECT_TRUE(small.outranks(Evidence{}));
  // Equals outrank neither way.
  Evidence other_hang;
  other_hang.stop();
  EXPECT_FALSE(hang.outranks(other_hang));
  EXPECT_FALSE(other_hang.outranks(hang));
  Evidence same = small;
  EXPECT_FALSE(small.outranks(same));
}

TEST(SelfEvidence, TheWinningOfferSetsHowSurelyItsClassIsKnown) {
  Evidence e;
  e.offer(1000, CulpritClass::kGpuProducer, std::nullopt, 2.0, 0.5);  // a late post, class one of two
  EXPECT_DOUBLE_EQ(e.identified_share, 0.5);
  e.offer(500, CulpritClass::kFlush, std::nullopt, 3.0);  // weaker: changes nothing
  EXPECT_DOUBLE_EQ(e.identified_share, 0.5);
  e.offer(2000, CulpritClass::kFlush, std::nullopt, 3.0);  // stronger, its class known
  EXPECT_EQ(e.culprit_class, CulpritClass::kFlush);
  EXPECT_DOUBLE_EQ(e.identified_share, 1.0);
}

}  // namespace
}  // namespace culprit
