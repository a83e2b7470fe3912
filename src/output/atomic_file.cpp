#include "output/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
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

}  // namespace

std::string temporary_name_for(const std::string& path) {
  return path + ".tmp." + std::to_string(static_cast<long>(::getpid()));
}

void commit_temporary(const std::string& temp_path, const std::string& final_path) {
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
