//===- ReplayMain.cpp - runs a fuzz target over a corpus, without libFuzzer ===//
//
// The ordinary (gcc) build links each fuzz target with this main instead of
// libFuzzer's, so that CI replays the committed corpus
// (test/fuzz/corpus/<target>/) on every run: each file once, in name order.
// A crash fails the ctest; a slow input prints its time.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <dirent.h>
#include <sys/stat.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {
void collect(const std::string &path, std::vector<std::string> &files) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    return;
  if (!S_ISDIR(info.st_mode)) {
    files.push_back(path);
    return;
  }
  DIR *dir = ::opendir(path.c_str());
  if (!dir)
    return;
  while (dirent *entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..")
      collect(path + "/" + name, files);
  }
  ::closedir(dir);
}
} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i)
    collect(argv[i], files);
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "%s: no corpus files under the given paths\n", argv[0]);
    return 1;
  }
  for (const std::string &file : files) {
    std::ifstream in(file, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto start = std::chrono::steady_clock::now();
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (seconds > 1.0)
      std::printf("slow input (%.1f s): %s\n", seconds, file.c_str());
  }
  std::printf("replayed %zu inputs, none crashed\n", files.size());
  return 0;
}
