#include "output/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace culprit {
namespace {

std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Copies the bytes of `from` into the already existing `to` (a device or a pipe).
void copy_into(const std::string& from, const std::string& to) {
  const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) throw std::runtime_error("cannot reopen temporary file '" + from + "': " + std::strerror(errno));
  const int out = ::open(to.c_str(), O_WRONLY | O_CLOEXEC);
  if (out < 0) {
    const int err = errno;
    ::close(in);
    throw std::runtime_error("cannot open '" + to + "' for writing: " + std::strerror(err));
  }
  char buffer[1 << 16];
  ssize_t got = 0;
  int err = 0;
  while ((got = ::read(in, buffer, sizeof buffer)) > 0 && err == 0)
    for (ssize_t done = 0; done < got;) {
      const ssize_t put = ::write(out, buffer + done, static_cast<size_t>(got - done));
      if (put < 0 && errno == EINTR) continue;
      if (put <= 0) {
        err = put < 0 ? errno : EIO;
        break;
      }
      done += put;
    }
  if (got < 0 && err == 0) err = errno;
  ::close(in);
  if (::close(out) != 0 && err == 0) err = errno;
  if (err != 0) throw std::runtime_error("cannot write into '" + to + "': " + std::strerror(err));
}

}  // namespace

bool is_stream_target(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

std::string temporary_name_for(const std::string& path) {
  const std::string suffix = ".tmp." + std::to_string(static_cast<long>(::getpid()));
  if (!is_stream_target(path)) return path + suffix;
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string dir = tmpdir && *tmpdir ? tmpdir : "/tmp";
  return dir + "/nccl-culprit-" + path.substr(path.find_last_of('/') + 1) + suffix;
}

void commit_temporary(const std::string& temp_path, const std::string& final_path) {
  if (is_stream_target(final_path)) {
    copy_into(temp_path, final_path);
    remove_quietly(temp_path);
    return;
  }
  const int fd = ::open(temp_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw std::runtime_error("cannot reopen temporary file '" + temp_path +
                             "': " + std::strerror(errno));
  }
  if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) {
    const int err = errno;
    ::close(fd);
    throw std::runtime_error("cannot flush '" + temp_path + "' to disk: " + std::strerror(err));
  }
  ::close(fd);
  if (std::rename(temp_path.c_str(), final_path.c_str()) != 0) {
    throw std::runtime_error("cannot rename '" + temp_path + "' to '" + final_path +
                             "': " + std::strerror(errno));
  }
  // Make the rename itself durable; some file systems refuse fsync on directories: ignore.
  const int dfd = ::open(directory_of(final_path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

void remove_quietly(const std::string& path) noexcept {
  if (!path.empty()) (void)::unlink(path.c_str());
}

}  // namespace culprit
