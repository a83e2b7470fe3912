// What the writers fill in when the caller left it out, so that every results file (HDF5 and
// JSON) carries a valid header: the format version this writer implements, the tool version
// when empty, and the current UTC time (ISO 8601, "2025-01-02T03:04:05Z") when created_utc is
// empty.
#pragma once

#include <string>

#include "core/results.hpp"

namespace culprit {

RunInfo completed_run_info(const RunInfo& info);

// The current time in UTC as "YYYY-MM-DDTHH:MM:SSZ".
std::string utc_now_iso8601();

}  // namespace culprit
