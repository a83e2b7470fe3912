#include "output/text_format.hpp"

#include <cinttypes>
#include <cstdarg>
#include <cstdio>

namespace culprit {

std::string format(const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  const int n = std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  if (n < 0) return {};
  if (static_cast<std::size_t>(n) < sizeof buf) return std::string(buf, static_cast<std::size_t>(n));
  std::string out(static_cast<std::size_t>(n) + 1, '\0');
  va_start(args, fmt);
  std::vsnprintf(out.data(), out.size(), fmt, args);
  va_end(args);
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::string duration(uint64_t ns) {
  if (ns < 1000) return format("%" PRIu64 " ns", ns);
  const double v = static_cast<double>(ns);
  if (ns < 1000000) return format("%.1f us", v / 1e3);
  if (ns < 1000000000) return format("%.1f ms", v / 1e6);
  return format("%.2f s", v / 1e9);
}

std::string plural(uint64_t n, const char* one, const char* many) {
  return format("%" PRIu64 " %s", n, n == 1 ? one : many);
}

}  // namespace culprit
