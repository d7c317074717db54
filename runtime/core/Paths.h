//===- Paths.h - file helpers for the bundle loader -------------*- C++ -*-===//
//
// Joining bundle paths and reading small files with messages that name the
// file: what every loader error needs, without std::filesystem (so the
// runtime builds with any C++17 toolchain and links only libc).
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_RUNTIME_CORE_PATHS_H
#define SLUICE_RUNTIME_CORE_PATHS_H

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sluice::runtime {

/// `dir`/`name`, without doubling a trailing slash.
inline std::string joinPath(const std::string &dir, const std::string &name) {
  if (dir.empty())
    return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

/// The largest manifest (or other small bundle file) read: 64 MiB, or
/// SLUICE_MAX_MANIFEST_BYTES when set to a positive integer.
inline size_t maxSmallFileBytes() {
  if (const char *env = std::getenv("SLUICE_MAX_MANIFEST_BYTES")) {
    char *end = nullptr;
    unsigned long long v = std::strtoull(env, &end, 10);
    if (end && *end == '\0' && v > 0)
      return (size_t)v;
  }
  return size_t(64) << 20;
}

/// Reads all of `path` into `text`; on failure sets `error` naming the file.
/// Only a regular file that is not a symbolic link and is at most
/// maxSmallFileBytes(): a FIFO or a device would block or never end, a
/// huge file would be read whole into memory.
inline bool readWholeFile(const std::string &path, std::string &text,
                          std::string &error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    error = path + (errno == ELOOP ? ": is a symbolic link (not followed)"
                                   : ": cannot open: " + std::string(std::strerror(errno)));
    return false;
  }
  struct stat info;
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    error = path + ": not a regular file";
    ::close(fd);
    return false;
  }
  if ((uint64_t)info.st_size > maxSmallFileBytes()) {
    error = path + ": " + std::to_string((unsigned long long)info.st_size) +
            " bytes, more than the limit of " + std::to_string(maxSmallFileBytes()) +
            " (SLUICE_MAX_MANIFEST_BYTES)";
    ::close(fd);
    return false;
  }
  text.clear();
  text.reserve((size_t)info.st_size);
  char buffer[65536];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) != 0) {
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 || text.size() + (size_t)n > maxSmallFileBytes()) {
      error = path + (n < 0 ? ": cannot read: " + std::string(std::strerror(errno))
                            : ": grew past the size limit while read");
      ::close(fd);
      return false;
    }
    text.append(buffer, (size_t)n);
  }
  ::close(fd);
  return true;
}

} // namespace sluice::runtime

#endif // SLUICE_RUNTIME_CORE_PATHS_H
