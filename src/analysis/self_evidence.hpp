// Self evidence: the delay a process caused by itself, as the evidence passes offer it.
// The strongest offer wins and sets the class and the margin (how many times the tightest
// guard of the test that found it the delay clears: 1 is just at the guard; the score,
// blame.hpp). A process that stopped (a hang) is what everyone waits for whatever else it
// shows: stop() replaces its evidence, and it outranks any timed evidence.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <source_location>

#include "analysis/verdict_kinds.hpp"

namespace culprit {

struct Evidence {
  double ns = 0;  // the delay in ns (0 for a stopped process: a hang is no time)
  CulpritClass culprit_class = CulpritClass::kNone;
  std::optional<uint32_t> peer;  // the far end, for network_link
  bool stopped = false;
  double margin = 0;  // 0: not known; infinite for a stopped process
  // The chance that what the evidence shows is this process's own and not another's that the
  // data cannot tell from it (hidden_consumers.hpp), or of its class and not another's
  // (late_posters.hpp); 1 where nothing else would look the same.
  double identified_share = 1;
  // Where the offer that won was made (NCCL_CULPRIT_DEBUG prints it): which test found it.
  std::source_location found_at;

  // `share`: the evidence's identified_share (below 1 where the data cannot tell its class
  // from another's).
  void offer(double value, CulpritClass cls, std::optional<uint32_t> other = std::nullopt, double guard_margin = 0,
             double share = 1, std::source_location where = std::source_location::current()) {
    if (stopped || value <= ns) return;
    ns = value;
    culprit_class = cls;
    peer = other;
    margin = guard_margin;
    identified_share = share;
    found_at = where;
  }
  void stop(std::source_location where = std::source_location::current()) {
    *this = {};
    found_at = where;
    stopped = true;
    culprit_class = CulpritClass::kHang;
    margin = std::numeric_limits<double>::infinity();
  }
  bool any() const { return stopped || ns > 0; }
  // Stopped first, then the longer delay.
  bool outranks(const Evidence& other) const {
    return stopped != other.stopped ? stopped : ns > other.ns;
  }
};

}  // namespace culprit
