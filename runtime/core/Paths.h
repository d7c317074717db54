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
#include <cstdio>
#include <cstring>
#include <string>

namespace sluice::runtime {

/// `dir`/`name`, without doubling a trailing slash.
inline std::string joinPath(const std::string &dir, const std::string &name) {
  if (dir.empty())
    return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

/// Reads all of `path` into `text`; on failure sets `error` naming the file.
inline bool readWholeFile(const std::string &path, std::string &text,
                          std::string &error) {
  std::FILE *file = std::fopen(path.c_str(), "rb");
  if (!file) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  text.clear();
  char buffer[65536];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0)
    text.append(buffer, n);
  bool failed = std::ferror(file);
  std::fclose(file);
  if (failed) {
    error = path + ": cannot read";
    return false;
  }
  return true;
}

} // namespace sluice::runtime

#endif // SLUICE_RUNTIME_CORE_PATHS_H
