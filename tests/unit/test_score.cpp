// calibrated_score: rises with the margin from the guard, never above the ceiling; a hang
// scores the ceiling; no evidence scores nothing; the measured calibration is a probability.
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/score.hpp"

namespace culprit {
namespace {

Evidence found(double margin) {
  Evidence e;
  e.offer(1000, CulpritClass::kGpuProducer, std::nullopt, margin);
  return e;
}

TEST(Score, IsTheLogisticOfTheLogMarginUnderTheCeiling) {
  const ScoreCalibration c{0.98, 1.0, 10.0};
  EXPECT_DOUBLE_EQ(calibrated_score(found(1.0), c), 0.98 / (1 + std::exp(-1.0)));
  EXPECT_DOUBLE_EQ(calibrated_score(found(1.2), c), 0.98 / (1 + std::exp(-(1.0 + 10.0 * std::log(1.2)))));
  EXPECT_NEAR(calibrated_score(found(1e6), c), 0.98, 1e-9);
}

TEST(Score, RisesWithTheMarginAndStaysAProbability) {
  const ScoreCalibration c = measured_calibration();
  double previous = 0;
  for (double margin : {1.0, 1.05, 1.1, 1.25, 1.5, 2.0, 5.0, 50.0}) {
    const double s = calibrated_score(found(margin), c);
    EXPECT_GT(s, previous) << margin;
    EXPECT_LE(s, c.ceiling) << margin;
    EXPECT_GT(s, 0) << margin;
    previous = s;
  }
  EXPECT_LT(c.ceiling, 1.0);  // some findings name the wrong process whatever their margin
}

TEST(Score, AHangScoresTheCeilingAndNoEvidenceNothing) {
  const ScoreCalibration c{0.97, 0.5, 8.0};
  Evidence hang;
  hang.stop();
  EXPECT_DOUBLE_EQ(calibrated_score(hang, c), 0.97);
  EXPECT_DOUBLE_EQ(calibrated_score(Evidence{}, c), 0.0);
}

TEST(Score, AnUnknownMarginCountsAsAtTheGuard) {
  const ScoreCalibration c{0.99, 1.0, 10.0};
  EXPECT_DOUBLE_EQ(calibrated_score(found(0), c), calibrated_score(found(1.0), c));
}

}  // namespace
}  // namespace culprit
