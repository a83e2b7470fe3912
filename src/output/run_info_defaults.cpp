#include "output/run_info_defaults.hpp"

#include <ctime>

#include "core/version.hpp"

namespace culprit {

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return std::string(buf, n);
}

RunInfo completed_run_info(const RunInfo& info) {
  RunInfo out = info;
  out.format_version = kFormatVersion;
  if (out.tool_version.empty()) out.tool_version = kToolVersion;
  if (out.created_utc.empty()) out.created_utc = utc_now_iso8601();
  return out;
}

}  // namespace culprit
