#include "analysis/withheld_credit.hpp"

#include <cmath>

#include "analysis/robust_stats.hpp"

namespace culprit {

WithheldBy why_credit_withheld(double withheld_per_op_ns, const std::optional<WaitDeficit>& deficit, double level) {
  if (!deficit || deficit->sigma_ns <= 0 || withheld_per_op_ns <= 0) return WithheldBy::kUnknown;
  // How far the deficit stands from the point between the two hypotheses (0 and W), in its spread.
  const double t = (deficit->deficit_ns - withheld_per_op_ns / 2) / deficit->sigma_ns;
  const double critical = critical_t(deficit->df, level);
  if (t > critical) return WithheldBy::kLatePost;
  if (t < -critical) return WithheldBy::kHeldBuffers;
  return WithheldBy::kUnknown;
}

WithheldBy why_p2p_credit_withheld(const PeerDeparture& receiving, const PeerDeparture& sending, double level) {
  if (receiving.excess <= 0 || sending.variance <= 0 || sending.df <= 0) return WithheldBy::kUnknown;
  const double t = (receiving.excess / 2 - sending.excess) / std::sqrt(sending.variance);
  return t > critical_t(sending.df, level) ? WithheldBy::kHeldBuffers : WithheldBy::kUnknown;
}

WithheldBy why_collective_credit_withheld(const SideDeficits& deficits, double level) {
  const WaitDeficit& sent = deficits.sending;
  const WaitDeficit& received = deficits.receiving;
  if (received.deficit_ns <= 0 || sent.sigma_ns <= 0 || received.sigma_ns <= 0) return WithheldBy::kUnknown;
  const double sent_var = sent.sigma_ns * sent.sigma_ns, half_received_var = received.sigma_ns * received.sigma_ns / 4;
  const double variance = sent_var + half_received_var;
  const PooledVariance parts[] = {{sent_var, sent.df}, {half_received_var, received.df}};
  const double t = (received.deficit_ns / 2 - sent.deficit_ns) / std::sqrt(variance);
  return t > critical_t(welch_satterthwaite_df(variance, parts), level) ? WithheldBy::kHeldBuffers
                                                                          : WithheldBy::kUnknown;
}

}  // namespace culprit
