#include "plugin/plugin_clock.hpp"

namespace culprit::plugin {

std::atomic<bool> g_test_clock{false};

namespace {
thread_local uint64_t t_test_now = 0;
}  // namespace

uint64_t injected_time_of_this_thread() { return t_test_now; }

bool inject_time(uint64_t ns) {
  t_test_now = ns;
  return !g_test_clock.exchange(true, std::memory_order_relaxed);
}

}  // namespace culprit::plugin
