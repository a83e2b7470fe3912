// Line writer for the NCCL example-profiler trace layout (shared by both renderers).
#pragma once

#include <charconv>
#include <cstdint>
#include <string>

#include "mock/records.hpp"

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
  // An "e" line.
  void end_event(const char* name, const char* cat, int64_t id, int64_t pid, double ts_us) {
    head(name, cat, false, id, pid, ts_us);
    end_line();
  }
  void group_begin(int64_t id, int64_t pid, double ts_us) {
    head("Group", "GROUP", true, id, pid, ts_us);
    lit(", \"args\": {\"groupId\": ");
    i64(id);
    end_args_line();
  }
  // KernelCh b; the plugin never increments its KernelCh counter (every id is 0).
  void kernel_begin(int64_t pid, double ts_us, int channel, uint64_t start_clk, uint64_t stop_clk) {
    head("KernelCh", "GPU", true, 0, pid, ts_us);
    lit(", \"args\": {\"Channel\": ");
    i64(channel);
    lit(", \"StartGpuClk\": ");
    u64(start_clk);
    lit(", \"StopGpuClk\": ");
    u64(stop_clk);
    end_args_line();
  }
  void kernel_end(int64_t pid, double ts_us) { end_event("KernelCh", "GPU", 0, pid, ts_us); }
  std::string take() { return std::move(s_); }

 private:
  std::string s_;
};

// What the example plugin prints for one ProxyOp: ScheduleX b/e, ProgressX b, its 16 step
// slots (a slot the op never reached keeps its previous occupant's stale content, `old`),
// ProgressX e. Shared by both engines' renderers so the two layouts cannot drift apart.
struct ProxyOpPrint {
  const ProxyOpRecord* op = nullptr;
  const ProxyOpRecord* old = nullptr;  // previous occupant of the plugin's pool slot, or null
  int channel = 0;
  int peer = 0;                     // communicator rank of the remote end
  uint64_t trans = 0;               // transSize as the plugin accumulates it
  int64_t pid = 0;
  double origin = 0;                // this process's clock origin (ns)
  double kill = 0;                  // times at or after this were never reached
};
void print_proxy_op(Out& o, const ProxyOpPrint& p, int64_t& op_id, int64_t& step_id);

}  // namespace culprit::mock
