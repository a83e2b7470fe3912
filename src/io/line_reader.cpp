#include "io/line_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <memory>

namespace culprit {

LineReadResult for_each_line(const std::string& path,
                             const std::function<void(std::string_view)>& on_line,
                             size_t max_line, size_t chunk) {
  LineReadResult result;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    result.error = std::strerror(errno);
    return result;
  }
  result.opened = true;
  // Reads of at most the file's size (a node holds thousands of small traces), into a buffer
  // that is not cleared first: every byte is read before it is used.
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
    chunk = std::min(chunk, std::max<size_t>(static_cast<size_t>(st.st_size) + 1, 4096));
  std::unique_ptr<char[]> storage(new char[chunk + max_line + 1]);
  char* const buffer = storage.get();
  size_t filled = 0;       // bytes of the current partial line kept at buffer[0..filled)
  bool skipping = false;   // inside an over-long line: drop bytes until its newline
  for (;;) {
    ssize_t n = ::read(fd, buffer + filled, chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      result.error = std::strerror(errno);
      break;
    }
    if (n == 0) break;
    result.bytes += static_cast<uint64_t>(n);
    size_t end = filled + static_cast<size_t>(n);
    size_t start = 0;
    for (;;) {
      const void* nl = std::memchr(buffer + start, '\n', end - start);
      if (!nl) break;
      size_t pos = static_cast<const char*>(nl) - buffer;
      if (skipping) {
        // the tail of an over-long line that began in an earlier chunk
      } else if (pos - start > max_line) {
        ++result.overlong_lines;
      } else {
        ++result.lines;
        on_line(std::string_view(buffer + start, pos - start));
      }
      skipping = false;
      start = pos + 1;
    }
    size_t rest = end - start;
    if (skipping || rest > max_line) {
      if (!skipping) ++result.overlong_lines;
      skipping = true;
      filled = 0;
    } else {
      std::memmove(buffer, buffer + start, rest);
      filled = rest;
    }
  }
  if (filled > 0 && !skipping) {
    ++result.lines;
    on_line(std::string_view(buffer, filled));
  }
  ::close(fd);
  return result;
}

LineReadResult for_each_line_in(std::string_view content,
                                const std::function<void(std::string_view)>& on_line,
                                size_t max_line) {
  LineReadResult result;
  result.opened = true;
  result.bytes = content.size();
  size_t start = 0;
  while (start < content.size()) {
    size_t pos = content.find('\n', start);
    if (pos == std::string_view::npos) pos = content.size();
    if (pos - start > max_line) {
      ++result.overlong_lines;
    } else {
      ++result.lines;
      on_line(content.substr(start, pos - start));
    }
    start = pos + 1;
  }
  return result;
}

}  // namespace culprit
