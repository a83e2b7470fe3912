// The score of a root: a calibrated confidence, the chance that a culprit row with this
// evidence names a true root (process and class).
//
// What it rests on is the margin of the evidence (Evidence::margin): how many times the
// tightest guard of the test that found it the evidence clears. At the guard, a finding may
// be a healthy GPU's or link's chance departure beyond what the test's model of healthy
// spread allows; such departures fall off steeply with the margin (a tail), so the chance
// that a finding is real rises steeply from the guard. Far beyond the guard what remains is
// the share of findings that are real but name the wrong process or class (a victim whose
// waiting looked like its own time): the ceiling. So
//
//   score = ceiling / (1 + exp(-(at_guard + per_log_margin x ln margin)))
//
// with the three constants measured, not chosen: fitted by maximum likelihood to the culprit
// rows of randomized sweeps of fresh seeds (tests/accuracy/calibrate_score.py), and checked
// on the CI seed, which the fit never saw (docs/accuracy.md, "The score"). A hang (a stopped
// process) has infinite margin and scores the ceiling; unknown margin counts as at the guard.
// Where the data cannot tell the process from others that would show the same evidence, the
// score is that times the share of such cases in which it is this process
// (Evidence::identified_share).
#pragma once

#include "analysis/self_evidence.hpp"

namespace culprit {

struct ScoreCalibration {
  double ceiling = 0;
  double at_guard = 0;        // log-odds at margin 1
  double per_log_margin = 0;  // log-odds gained per e-fold of margin
};

// The fit of docs/accuracy.md ("The score").
ScoreCalibration measured_calibration();

double calibrated_score(const Evidence& evidence, const ScoreCalibration& calibration = measured_calibration());

}  // namespace culprit
