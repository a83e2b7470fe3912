// Wall time of each phase of `analyze` on this process (read, reduce, exchange, analyse,
// write), for the scale benchmark: NCCL_CULPRIT_TIMING=1 makes rank 0 print them on stderr.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace culprit {

class PhaseClock {
 public:
  // Ends the phase that began at the previous lap (or at construction).
  void lap(const char* phase) {
    const auto now = std::chrono::steady_clock::now();
    laps_.emplace_back(phase, std::chrono::duration<double>(now - last_).count());
    last_ = now;
  }

  // "read 0.120 s, reduce 0.031 s, ..."
  std::string summary() const {
    std::string out;
    char buf[64];
    for (const auto& [phase, seconds] : laps_) {
      std::snprintf(buf, sizeof buf, "%s%s %.3f s", out.empty() ? "" : ", ", phase, seconds);
      out += buf;
    }
    return out;
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  std::vector<std::pair<const char*, double>> laps_;
};

}  // namespace culprit
