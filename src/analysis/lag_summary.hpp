// The passage lags of a GPU (pipeline/passage_lag.hpp) as a mean with its standard error, and
// whether they lie beyond a bound at a one-sided 1e-3: what consumer_position.hpp and
// backlog_inside_node.hpp read from the sums the nodes send.
#pragma once

#include <cstdint>

namespace culprit {

// Mean and standard error of one kind of lag of one GPU, over its ranks in some communicators.
struct LagSummary {
  double mean = 0;
  double se = 0;
  uint32_t samples = 0;
};

// From a sum, a sum of squares and a count.
LagSummary summarize(double sum, double sq_sum, uint32_t n);

// How far the mean may lie from the true lag at a one-sided 1e-3 (its standard error times
// Student's critical value), over three samples or more.
double noise_at_tail(const LagSummary& s);

// Below (above) `bound` at a one-sided 1e-3, over three samples or more.
bool significantly_below(const LagSummary& s, double bound);
bool significantly_above(const LagSummary& s, double bound);

}  // namespace culprit
