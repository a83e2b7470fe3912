// Line writer for the NCCL example-profiler trace layout (shared by both renderers).
#pragma once

#include <charconv>
#include <cstdint>
#include <string>

namespace culprit::mock {

class Out {
 public:
  explicit Out(size_t reserve) { s_.reserve(reserve); }
  void lit(const char* v) { s_.append(v); }
  void lit(const std::string& v) { s_.append(v); }
  void u64(uint64_t v) {
    char b[24];
    auto r = std::to_chars(b, b + sizeof b, v);
    s_.append(b, r.ptr);
  }
  void i64(int64_t v) {
    char b[24];
    auto r = std::to_chars(b, b + sizeof b, v);
    s_.append(b, r.ptr);
  }
  void fixed6(double v) {  // printf("%f")
    char b[64];
    auto r = std::to_chars(b, b + sizeof b, v, std::chars_format::fixed, 6);
    s_.append(b, r.ptr);
  }
  // {"name": "N", "cat": "C", "ph": "b", "id": I, "pid": P, "tid": 1, "ts": T
  void head(const char* name, const char* cat, bool begin, int64_t id, int64_t pid, double ts_us) {
    lit("{\"name\": \"");
    lit(name);
    lit("\", \"cat\": \"");
    lit(cat);
    lit(begin ? "\", \"ph\": \"b\", \"id\": " : "\", \"ph\": \"e\", \"id\": ");
    i64(id);
    lit(", \"pid\": ");
    i64(pid);
    lit(", \"tid\": 1, \"ts\": ");
    fixed6(ts_us);
  }
  void end_line() { lit("},\n"); }        // "e" lines
  void end_args_line() { lit("}},\n"); }  // "b" lines with args
  std::string take() { return std::move(s_); }

 private:
  std::string s_;
};


}  // namespace culprit::mock
