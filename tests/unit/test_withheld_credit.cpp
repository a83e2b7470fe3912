// why_credit_withheld: a receiver that waited about as much less than its peers as the credit
// it withheld came late; one that waited as long as they did held its buffers; in between,
// or where its wait was not judged, nothing decides. why_p2p_credit_withheld: a send/recv
// receiver whose own data came on time held its buffers; why_collective_credit_withheld: a
// member of a collective that waited far less on its receives than on its sends held its
// buffers (withheld_credit.hpp).
#include "analysis/withheld_credit.hpp"

#include <gtest/gtest.h>

namespace culprit {
namespace {

// A wait deficit of `deficit_ms` against peers spread by `sigma_ms`, 30 degrees of freedom.
WaitDeficit deficit(double deficit_ms, double sigma_ms) { return {deficit_ms * 1e6, sigma_ms * 1e6, 30}; }

TEST(WithheldCredit, AReceiverThatWaitedLessByWhatItWithheldCameLate) {
  // Simulated probing exports: a 2x slow GPU of a 38x3x6 tree withheld 3.68 ms of credit per
  // op and waited 3.54 ms less than its peers (spread 0.13 ms).
  EXPECT_EQ(why_credit_withheld(3.68e6, deficit(3.54, 0.13)), WithheldBy::kLatePost);
}

TEST(WithheldCredit, AReceiverThatWaitedAsLongAsItsPeersHeldItsBuffers) {
  // A 2.6x slow consumer of a 48x2x2 ring withheld 17.6 ms per op and waited 0.1 ms more than
  // its peers (spread 1.08 ms): it waited on its sends for the input it held back.
  EXPECT_EQ(why_credit_withheld(17.63e6, deficit(-0.11, 1.08)), WithheldBy::kHeldBuffers);
}

TEST(WithheldCredit, NothingDecidesWithinTheSpreadOrWithoutAJudgedWait) {
  // Halfway between the two, or a spread as wide as what was withheld.
  EXPECT_EQ(why_credit_withheld(4e6, deficit(2.0, 0.3)), WithheldBy::kUnknown);
  EXPECT_EQ(why_credit_withheld(9.18e6, deficit(45.8, 23.0)), WithheldBy::kUnknown);
  // A receiver whose wait was not judged (it only receives there), or peers with no spread.
  EXPECT_EQ(why_credit_withheld(17.63e6, std::nullopt), WithheldBy::kUnknown);
  EXPECT_EQ(why_credit_withheld(17.63e6, deficit(0, 0)), WithheldBy::kUnknown);
  EXPECT_EQ(why_credit_withheld(0, deficit(0, 1)), WithheldBy::kUnknown);
}

TEST(WithheldCredit, TheDecisionNeedsTheDeficitClearOfTheMidpoint) {
  // W = 10 ms, spread 1 ms, 30 degrees of freedom: the critical value at 1 % is about 2.46.
  EXPECT_EQ(why_credit_withheld(10e6, deficit(7.6, 1)), WithheldBy::kLatePost);
  EXPECT_EQ(why_credit_withheld(10e6, deficit(7.3, 1)), WithheldBy::kUnknown);
  EXPECT_EQ(why_credit_withheld(10e6, deficit(2.4, 1)), WithheldBy::kHeldBuffers);
  EXPECT_EQ(why_credit_withheld(10e6, deficit(2.7, 1)), WithheldBy::kUnknown);
}

// A departure of `excess_us` per step in a spread of `sigma_us`, six degrees of freedom.
PeerDeparture departure(double excess_us, double sigma_us) { return {excess_us * 1e3, sigma_us * sigma_us * 1e6, 6}; }

TEST(WithheldCredit, ASendRecvReceiverWhoseOwnDataCameOnTimeHeldItsBuffers) {
  // Simulated probing exports, eight 2-stage pipelines: a GPU of stage 0 1.7x slower to consume
  // posted 172 us per step later than the other stage-0 receivers (its sender waited 123 us for
  // credit, theirs 5-9), while its data reached stage 1 2 us earlier than theirs (spread 5 us).
  EXPECT_EQ(why_p2p_credit_withheld(departure(172, 20), departure(-2, 5)), WithheldBy::kHeldBuffers);
}

TEST(WithheldCredit, ASendRecvReceiverLateOnBothSidesOrInBetweenIsNotDecided) {
  // Late on its sends as much as on its receives: a late GPU, or a middle stage slow to consume
  // what it forwards; this rule decides no late post.
  EXPECT_EQ(why_p2p_credit_withheld(departure(172, 20), departure(160, 5)), WithheldBy::kUnknown);
  // Its sends 80 us late, within the spread of the midpoint (86 us): nothing decides.
  EXPECT_EQ(why_p2p_credit_withheld(departure(172, 20), departure(80, 5)), WithheldBy::kUnknown);
  // Nothing withheld beyond its peers, or senders with no spread.
  EXPECT_EQ(why_p2p_credit_withheld(departure(-10, 20), departure(-50, 5)), WithheldBy::kUnknown);
  EXPECT_EQ(why_p2p_credit_withheld(departure(172, 20), departure(-2, 0)), WithheldBy::kUnknown);
}

TEST(WithheldCredit, AMemberThatWaitedLessOnItsReceivesThanOnItsSendsHeldItsBuffers) {
  // Simulated probing exports, members' deficits per op against their peers (ms, spread):
  // a 1.98x consumer of a ring+dp 32x4x2 waited 13.7 (0.62) less on its receives, 0.93 (0.79)
  // on its sends.
  EXPECT_EQ(why_collective_credit_withheld({deficit(0.93, 0.79), deficit(13.7, 0.62)}), WithheldBy::kHeldBuffers);
  // A 4.6x consumer of a ring+dp 4x7x2, judged against three others (their spread to two
  // degrees of freedom): 63.8 (1.7) and 9.3 (3.8), t 5.8 against 6.9: not decided.
  const WaitDeficit few_sent{9.3e6, 3.8e6, 2}, few_received{63.8e6, 1.7e6, 2};
  EXPECT_EQ(why_collective_credit_withheld({few_sent, few_received}), WithheldBy::kUnknown);
}

TEST(WithheldCredit, AMemberLateOnBothSidesOrInBetweenIsNotDecided) {
  // A 2.37x GPU of a tree+dp 7x3x6 waited 10.5 ms less on its sends and on its receives.
  EXPECT_EQ(why_collective_credit_withheld({deficit(10.5, 1.06), deficit(10.5, 1.0)}), WithheldBy::kUnknown);
  // A 2.43x consumer of a ring 5x1x3: 4.1 ms less on its sends against peers spread by 1.3,
  // 10.6 on its receives: within the spread of half of it.
  EXPECT_EQ(why_collective_credit_withheld({deficit(4.1, 1.33), deficit(10.6, 0.82)}), WithheldBy::kUnknown);
  // A receiving deficit of its peers' spread only says nothing; nor sides without a spread.
  EXPECT_EQ(why_collective_credit_withheld({deficit(0.0, 1.0), deficit(-1.0, 1.0)}), WithheldBy::kUnknown);
  EXPECT_EQ(why_collective_credit_withheld({deficit(0.0, 0.0), deficit(13.7, 0.6)}), WithheldBy::kUnknown);
}

}  // namespace
}  // namespace culprit
