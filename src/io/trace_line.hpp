// Tolerant scanner for one event line of NCCL's example-profiler trace. Real files are not
// always valid JSON (unquoted ncclFloat32, 0x... pointers and (nil) in 2.28-2.29.2, curly
// quotes pasted in), so this reads `"key": value` pairs by hand instead of using a JSON
// parser, and accepts bare tokens as values.
//
// Speed: the plugin prints every line with the same fprintf layout (keys in a fixed order,
// one space after ':' and ','), so a fast path reads that layout directly and only lines
// that deviate from it go through the general key/value scanner. Both give the same result.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace culprit {

struct TraceArg {
  std::string_view key;
  std::string_view value;  // without quotes; a nested object keeps its braces
};

struct TraceLine {
  static constexpr int kMaxArgs = 24;

  std::string_view name;
  std::string_view cat;
  char ph = 0;             // 'b' or 'e' (other phases are kept as read)
  int64_t id = -1;
  int64_t pid = -1;
  int64_t ts_ns = 0;       // "ts" (microseconds with 6 decimals) in integer nanoseconds
  bool has_ts = false;
  // Layout hints (FORMATS.md §2): some argument was an unquoted token that is not a number
  // (2.28-2.29.2 `ncclFloat32`, `0x...`, `(nil)`), or `"key":value` without the space.
  bool bare_token = false;
  bool tight_colon = false;
  TraceArg args[kMaxArgs];  // the first kMaxArgs arguments; only args[0..n_args) are valid
  int n_args = 0;
  int extra_args = 0;       // arguments beyond kMaxArgs (dropped)

  // Value of an argument, empty view when absent.
  std::string_view arg(std::string_view key) const;
  bool has_arg(std::string_view key) const;
  // Clears the fields without touching the argument array (cheap).
  void reset();
};

// Parses `line` into `out`. Returns false for a line that is not an event object. The views
// in `out` point into `line` (or into `scratch` when the line had to be normalised).
bool parse_trace_line(std::string_view line, TraceLine& out, std::string& scratch);

// Decimal text to integers; false on anything that is not a plain number.
bool parse_u64(std::string_view text, uint64_t* out);
bool parse_i64(std::string_view text, int64_t* out);
// Microseconds with a decimal fraction ("1467846.533691") to nanoseconds, exactly
// (digits beyond the third decimal are truncated). Negative values are rejected.
bool parse_us_to_ns(std::string_view text, int64_t* out);

}  // namespace culprit
