// Streams a file line by line in fixed-size chunks: memory stays bounded by the chunk and
// the longest accepted line, never by the file. Over-long lines are skipped and counted.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace culprit {

struct LineReadResult {
  bool opened = false;
  std::string error;             // open or read failure (errno text), empty on success
  uint64_t bytes = 0;
  uint64_t lines = 0;
  uint64_t overlong_lines = 0;   // lines longer than max_line, skipped
};

// Calls on_line for every line (without the newline). Lines longer than max_line bytes are
// skipped without being held in memory.
LineReadResult for_each_line(const std::string& path,
                             const std::function<void(std::string_view)>& on_line,
                             size_t max_line = 1 << 20, size_t chunk = 4 << 20);

// The same over a buffer in memory (mock data, tests).
LineReadResult for_each_line_in(std::string_view content,
                                const std::function<void(std::string_view)>& on_line,
                                size_t max_line = 1 << 20);

}  // namespace culprit
