//===- FuzzFile.h - fuzz input as a file, for readers that take paths -*- C++ -*-===//
//
// Some readers take a path (the .npy/.pb readers, the ONNX importer). A fuzz
// target writes its input to one file per process under TMPDIR and passes
// that path; the file is rewritten for every input.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_TEST_FUZZ_FUZZFILE_H
#define SLUICE_TEST_FUZZ_FUZZFILE_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <unistd.h>

namespace sluice::fuzz {

/// Writes `data` to TMPDIR/sluice-fuzz-<pid><suffix> and returns the path
/// (empty if it cannot be written).
inline std::string writeInput(const uint8_t *data, size_t size, const char *suffix) {
  const char *dir = std::getenv("TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") + "/sluice-fuzz-" +
                     std::to_string((long)::getpid()) + suffix;
  std::FILE *file = std::fopen(path.c_str(), "wb");
  if (!file)
    return "";
  bool ok = std::fwrite(data, 1, size, file) == size;
  ok = std::fclose(file) == 0 && ok;
  return ok ? path : "";
}

} // namespace sluice::fuzz

#endif // SLUICE_TEST_FUZZ_FUZZFILE_H
