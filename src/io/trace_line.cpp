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
  if (std::memchr(line.data(), '\xE2', line.size()) == nullptr) return false;
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

// Parses the pairs of an object whose '{' is at s[i]; calls on_pair(key, value, raw_first).
// `tight` (optional) is set when a ':' is not followed by a space.
template <typename F>
bool read_object(std::string_view s, size_t& i, F&& on_pair, bool* tight = nullptr) {
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
    if (tight && i < s.size() && !is_space(s[i])) *tight = true;
    skip_space(s, i);
    size_t value_start = i;
    if (!read_value(s, i, &value)) return false;
    if (!on_pair(key, value, s[value_start])) return false;
  }
}

// A bare (unquoted) token that is not a number: 2.28-2.29.2's ncclFloat32, 0x..., (nil).
inline bool bare_non_number(std::string_view v) {
  for (char c : v)
    if (!((c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+')) return true;
  return false;
}

// The "args" object at s[i] into out.args.
bool read_args(std::string_view s, size_t& i, TraceLine& out) {
  return read_object(
      s, i,
      [&](std::string_view k, std::string_view v, char first) {
        if (out.n_args < TraceLine::kMaxArgs) out.args[out.n_args++] = {k, v};
        else ++out.extra_args;
        if (first != '"' && first != '{' && first != '[' && bare_non_number(v)) out.bare_token = true;
        return true;
      },
      &out.tight_colon);
}

// The general scanner: any key order, any spacing, unknown keys ignored.
bool parse_general(std::string_view line, TraceLine& out) {
  size_t i = 0;
  skip_space(line, i);
  out.reset();
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
      out.n_args = 0;
      out.extra_args = 0;
      return read_args(value, j, out);
    }
    return true;
  });
  return ok && !out.name.empty() && out.ph != 0;
}

// Fast path for the plugin's own layout:
// {"name": "N", "cat": "C", "ph": "b", "id": I, "pid": P, "tid": T, "ts": S[, "args": {...}]}
// Returns false as soon as anything differs; the caller then uses the general scanner.
class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}
  bool lit(const char* text, size_t n) {
    if (s_.size() - i_ < n || std::memcmp(s_.data() + i_, text, n) != 0) return false;
    i_ += n;
    return true;
  }
  // A quoted string's body up to the closing quote (which is consumed); no escapes.
  bool str(std::string_view* out) {
    size_t start = i_;
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (c == '"') {
        *out = s_.substr(start, i_ - start);
        ++i_;
        return true;
      }
      if (c == '\\') return false;
      ++i_;
    }
    return false;
  }
  // A bare token up to ',' or '}' (not consumed).
  std::string_view token() {
    size_t start = i_;
    while (i_ < s_.size() && s_[i_] != ',' && s_[i_] != '}') ++i_;
    return s_.substr(start, i_ - start);
  }
  bool at(char c) const { return i_ < s_.size() && s_[i_] == c; }
  size_t pos() const { return i_; }
  void set(size_t i) { i_ = i; }
  std::string_view text() const { return s_; }

 private:
  std::string_view s_;
  size_t i_ = 0;
};

#define CULPRIT_LIT(c, text) (c).lit(text, sizeof(text) - 1)

bool parse_fast(std::string_view line, TraceLine& out) {
  Cursor c(line);
  out.reset();
  std::string_view ph, tok;
  if (!CULPRIT_LIT(c, "{\"name\": \"") || !c.str(&out.name) || out.name.empty()) return false;
  if (!CULPRIT_LIT(c, ", \"cat\": \"") || !c.str(&out.cat)) return false;
  // A phase is one letter; a NUL there is damage, not an event.
  if (!CULPRIT_LIT(c, ", \"ph\": \"") || !c.str(&ph) || ph.size() != 1 || ph[0] == 0) return false;
  out.ph = ph[0];
  if (!CULPRIT_LIT(c, ", \"id\": ")) return false;
  tok = c.token();
  if (!parse_i64(tok, &out.id)) return false;
  if (!CULPRIT_LIT(c, ", \"pid\": ")) return false;
  tok = c.token();
  if (!parse_i64(tok, &out.pid)) return false;
  if (!CULPRIT_LIT(c, ", \"tid\": ")) return false;
  tok = c.token();
  if (tok.empty() || tok.front() == ' ' || tok.back() == ' ') return false;
  if (!CULPRIT_LIT(c, ", \"ts\": ")) return false;
  tok = c.token();
  if (!parse_us_to_ns(tok, &out.ts_ns)) return false;
  out.has_ts = true;
  if (c.at('}')) return true;
  if (!CULPRIT_LIT(c, ", \"args\": ") || !c.at('{')) return false;
  size_t i = c.pos();
  if (!read_args(line, i, out)) return false;
  c.set(i);
  return c.at('}');
}

#undef CULPRIT_LIT

}  // namespace

void TraceLine::reset() {
  name = {};
  cat = {};
  ph = 0;
  id = -1;
  pid = -1;
  ts_ns = 0;
  has_ts = false;
  bare_token = false;
  tight_colon = false;
  n_args = 0;
  extra_args = 0;
}

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
  if (t.size() < 20) {  // at most 19 digits: cannot overflow
    for (char c : t) {
      unsigned d = static_cast<unsigned char>(c) - '0';
      if (d > 9) return false;
      v = v * 10 + d;
    }
  } else {
    for (char c : t) {
      unsigned d = static_cast<unsigned char>(c) - '0';
      if (d > 9) return false;
      if (v > (UINT64_MAX - d) / 10) return false;  // overflow
      v = v * 10 + d;
    }
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
      unsigned d = static_cast<unsigned char>(c) - '0';
      if (d > 9) return false;
      if (digits < 3) ns = ns * 10 + d;
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
  while (i < line.size() && is_space(line[i])) ++i;
  if (parse_fast(line.substr(i), out)) return true;
  return parse_general(line, out);
}

}  // namespace culprit
