// why_credit_withheld: a receiver that waited about as much less than its peers as the credit
// it withheld came late; one that waited as long as they did held its buffers; in between,
// or where its wait was not judged, nothing decides (withheld_credit.hpp).
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

}  // namespace
}  // namespace culprit
