// libFuzzer target: the line scanner and number parsers of trace_line.hpp, and the streaming
// line reader (file, small chunks) against the in-memory one.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "io/line_reader.hpp"
#include "io/trace_line.hpp"

using namespace culprit;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

bool inside(std::string_view part, std::string_view whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);

  // The scanner: views point into the line or the scratch copy; a parsed line is an event.
  TraceLine ev;
  std::string scratch;
  if (parse_trace_line(text, ev, scratch)) {
    check(!ev.name.empty() && ev.ph != 0);
    check(ev.n_args >= 0 && ev.n_args <= TraceLine::kMaxArgs);
    std::string_view base = scratch.empty() ? text : std::string_view(scratch);
    check(inside(ev.name, base) || inside(ev.name, text));
    for (int k = 0; k < ev.n_args; ++k) {
      check(inside(ev.args[k].key, base) || inside(ev.args[k].key, text));
      (void)ev.arg(ev.args[k].key);
    }
    if (ev.has_ts) check(ev.ts_ns >= 0);
  }

  // Numbers: a parsed value prints back to the same digits (no leading zeros there).
  uint64_t u = 0;
  if (parse_u64(text, &u) && size > 0 && size <= 20 && (text[0] != '0' || size == 1))
    check(std::to_string(u) == text);
  int64_t i = 0;
  (void)parse_i64(text, &i);
  int64_t ns = 0;
  if (parse_us_to_ns(text, &ns)) check(ns >= 0);

  // The streaming reader over a file with small chunks sees the same lines as the
  // in-memory reader.
  if (size > 0 && size < 4096) {
    const size_t max_line = 1 + data[0] % 64;
    const size_t chunk = 1 + data[size - 1] % 32;
    std::vector<std::string> mem, file;
    LineReadResult m = for_each_line_in(text, [&](std::string_view l) { mem.emplace_back(l); }, max_line);
    int fd = memfd_create("fuzz", 0);
    if (fd >= 0) {
      size_t off = 0;
      while (off < size) {
        ssize_t n = write(fd, data + off, size - off);
        if (n <= 0) break;
        off += static_cast<size_t>(n);
      }
      LineReadResult f = for_each_line("/proc/self/fd/" + std::to_string(fd),
                                       [&](std::string_view l) { file.emplace_back(l); }, max_line, chunk);
      close(fd);
      check(f.error.empty());
      check(mem == file);
      check(m.overlong_lines == f.overlong_lines);
    }
  }
  return 0;
}
