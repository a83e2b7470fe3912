// The clock every recorded event is stamped with: CLOCK_MONOTONIC, or, on a thread that
// called the exported test hook ncclCulpritTestSetTime, the last time it injected.
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>

namespace culprit::plugin {

// True once any thread injected a time: only then is the per-thread test time looked at.
extern std::atomic<bool> g_test_clock;

// The calling thread's injected time, 0 if it never injected one.
uint64_t injected_time_of_this_thread();

// Switches the calling thread to the injected clock at `ns`; true the first time any thread did.
bool inject_time(uint64_t ns);

inline bool test_clock_on() { return g_test_clock.load(std::memory_order_relaxed); }

inline uint64_t now_ns() {
  if (__builtin_expect(test_clock_on(), 0)) {
    if (uint64_t t = injected_time_of_this_thread(); t != 0) return t;
  }
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace culprit::plugin
