#include "io/trace_line.hpp"

#include <cstring>

namespace culprit {
namespace {

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

inline void skip_space(std::string_view s, size_t& i) {
  while (i < s.size() && is_space(s[i])) ++i;
}

// Replaces the UTF-8 curly quotes “ and ” by plain quotes (a copy-paste artefact seen in
// the wild). Returns true when anything was replaced.
bool normalise_quotes(std::string_view line, std::string& scratch) {
  if (line.find('\xE2') == std::string_view::npos) return false;
  scratch.clear();
  bool changed = false;
  for (size_t i = 0; i < line.size(); ++i) {
    if (i + 2 < line.size() && line[i] == '\xE2' && line[i + 1] == '\x80' &&
        (line[i + 2] == '\x9C' || line[i + 2] == '\x9D')) {
      scratch.push_back('"');
      i += 2;
      changed = true;
    } else {
      scratch.push_back(line[i]);
    }
  }
  return changed;
}

// Reads a key in quotes at s[i]; leaves i after the closing quote.
bool read_key(std::string_view s, size_t& i, std::string_view* key) {
  if (i >= s.size() || s[i] != '"') return false;
  size_t end = s.find('"', i + 1);
  if (end == std::string_view::npos) return false;
  *key = s.substr(i + 1, end - i - 1);
  i = end + 1;
  return true;
}

// Reads a value: "quoted", {nested object}, or a bare token up to ',' or '}'.
bool read_value(std::string_view s, size_t& i, std::string_view* value) {
  if (i >= s.size()) return false;
  if (s[i] == '"') {
    size_t end = i + 1;
    while (end < s.size() && s[end] != '"') end += (s[end] == '\\') ? 2 : 1;
    if (end >= s.size()) return false;
    *value = s.substr(i + 1, end - i - 1);
    i = end + 1;
    return true;
  }
  if (s[i] == '{' || s[i] == '[') {
    int depth = 0;
    size_t start = i;
    bool in_string = false;
    for (; i < s.size(); ++i) {
      char c = s[i];
      if (in_string) {
        if (c == '\\') ++i;
        else if (c == '"') in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) {
          ++i;
          *value = s.substr(start, i - start);
          return true;
        }
      }
    }
    return false;
  }
  size_t start = i;
  while (i < s.size() && s[i] != ',' && s[i] != '}') ++i;
  size_t end = i;
  while (end > start && is_space(s[end - 1])) --end;
  if (end == start) return false;
  *value = s.substr(start, end - start);
  return true;
}

// Parses the pairs of an object whose '{' is at s[i]; calls on_pair(key, value, raw_start).
template <typename F>
bool read_object(std::string_view s, size_t& i, F&& on_pair) {
  if (i >= s.size() || s[i] != '{') return false;
  ++i;
  for (;;) {
    skip_space(s, i);
    if (i >= s.size()) return false;
    if (s[i] == '}') {
      ++i;
      return true;
    }
    if (s[i] == ',') {
      ++i;
      continue;
    }
    std::string_view key, value;
    if (!read_key(s, i, &key)) return false;
    skip_space(s, i);
    if (i >= s.size() || s[i] != ':') return false;
    ++i;
    skip_space(s, i);
    size_t value_start = i;
    if (!read_value(s, i, &value)) return false;
    if (!on_pair(key, value, s[value_start])) return false;
  }
}

}  // namespace

std::string_view TraceLine::arg(std::string_view key) const {
  for (int k = 0; k < n_args; ++k)
    if (args[k].key == key) return args[k].value;
  return {};
}

bool TraceLine::has_arg(std::string_view key) const {
  for (int k = 0; k < n_args; ++k)
    if (args[k].key == key) return true;
  return false;
}

bool parse_u64(std::string_view t, uint64_t* out) {
  if (t.empty() || t.size() > 20) return false;
  uint64_t v = 0;
  for (char c : t) {
    if (c < '0' || c > '9') return false;
    uint64_t next = v * 10 + static_cast<uint64_t>(c - '0');
    if (next / 10 != v) return false;  // overflow
    v = next;
  }
  *out = v;
  return true;
}

bool parse_i64(std::string_view t, int64_t* out) {
  bool negative = !t.empty() && t[0] == '-';
  uint64_t v = 0;
  if (!parse_u64(negative ? t.substr(1) : t, &v)) return false;
  if (v > static_cast<uint64_t>(INT64_MAX)) return false;
  *out = negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return true;
}

bool parse_us_to_ns(std::string_view t, int64_t* out) {
  size_t dot = t.find('.');
  std::string_view whole = t.substr(0, dot);
  uint64_t us = 0;
  if (!parse_u64(whole, &us) || us > static_cast<uint64_t>(INT64_MAX / 1000)) return false;
  uint64_t ns = 0;
  if (dot != std::string_view::npos) {
    std::string_view frac = t.substr(dot + 1);
    int digits = 0;
    for (char c : frac) {
      if (c < '0' || c > '9') return false;
      if (digits < 3) ns = ns * 10 + static_cast<uint64_t>(c - '0');
      ++digits;
    }
    for (; digits < 3; ++digits) ns *= 10;
  }
  *out = static_cast<int64_t>(us * 1000 + ns);
  return true;
}

bool parse_trace_line(std::string_view line, TraceLine& out, std::string& scratch) {
  if (normalise_quotes(line, scratch)) line = scratch;
  size_t i = 0;
  skip_space(line, i);
  out = TraceLine();
  bool ok = read_object(line, i, [&](std::string_view key, std::string_view value, char first) {
    if (key == "name") {
      out.name = value;
    } else if (key == "cat") {
      out.cat = value;
    } else if (key == "ph") {
      out.ph = value.empty() ? 0 : value[0];
    } else if (key == "id") {
      parse_i64(value, &out.id);
    } else if (key == "pid") {
      parse_i64(value, &out.pid);
    } else if (key == "ts") {
      out.has_ts = parse_us_to_ns(value, &out.ts_ns);
    } else if (key == "args" && first == '{') {
      size_t j = 0;
      return read_object(value, j, [&](std::string_view k, std::string_view v, char) {
        if (out.n_args < TraceLine::kMaxArgs) out.args[out.n_args++] = {k, v};
        return true;
      });
    }
    return true;
  });
  return ok && !out.name.empty() && out.ph != 0;
}

}  // namespace culprit
