//===- Cache.h - sluice-compile's bundle cache ------------------*- C++ -*-===//
//
// Compiling the same model with the same flags again redoes the whole
// pipeline and, worse, the c++/nvcc build of the generated source. The
// compile cache keeps each finished bundle (and its --report) under a key
// that covers everything the bundle is made from: the model's bytes and its
// external data, the options, this compiler's own binary and the code
// generator's headers, and the toolchain the emit step calls (its version,
// the GPU architectures, the host CPU that -march=native builds for). A hit
// hard-links (or copies) the cached bundle to -o. docs/tools.md, "Compile
// cache".
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_TOOLS_DRIVER_CACHE_H
#define SLUICE_TOOLS_DRIVER_CACHE_H

#include "tools/driver/Pipeline.h"

#include <string>
#include <vector>

namespace sluice::cache {

/// The cache folder, or "" when the cache is off: `flagDir` (--cache-dir)
/// when given; else $SLUICE_CACHE_DIR, where "none", "off" or "0" turn the
/// cache off (ctest sets "none", so that tests never write the user's
/// cache); else $XDG_CACHE_HOME/sluice; else $HOME/.cache/sluice.
/// `noCache` (--no-cache) turns it off whatever else is set.
std::string cacheDirectory(const std::string &flagDir, bool noCache);

/// What a compile is made of, beyond the options themselves.
struct KeyInputs {
  /// The cache folder: its .digests folder remembers the digests of large
  /// files by their stat stamps, so that a hit need not read them again.
  std::string cacheDir;
  /// The Sluice version the compiler stamps bundles with.
  std::string compilerVersion;
  /// The model file as given on the command line.
  std::string modelPath;
  /// The driver's choices that are not CompilerOptions: target, GPU
  /// architectures, the cluster file.
  const CompilerOptions *options = nullptr;
  std::vector<std::string> gpuArchitectures;
  std::string clusterFile;
  /// The command line's flags (argv without the program, the model and
  /// what only says where output goes: -o, --report, --quiet, --cache-dir,
  /// --no-cache), a second net under the options: a flag the options do
  /// not spell out still changes the key. Their order does not matter.
  std::vector<std::string> flags;
};

/// The flags of argv[1..argc) that go into the key (KeyInputs::flags):
/// each flag joined with a separate value that follows it, sorted.
std::vector<std::string> keyFlags(int argc, char **argv, const std::string &model);

/// Computes the key (32 hex digits) and `recipe`, the text it hashes (one
/// "ingredient: value" line each, stored beside the entry so that a miss
/// can be explained by diffing two recipes). False, with `error`, when an
/// ingredient cannot be read (the model, a --bind file ...).
bool computeKey(const KeyInputs &inputs, std::string &key, std::string &recipe, std::string &error);

/// When `cacheDir` holds `key`, puts its bundle at `output` (the same
/// replacement rules as a compile: an old bundle there is replaced, files
/// that are not the bundle's are kept), sets `report` to the cached
/// --report text and returns true. False when there is no usable entry
/// (with `error` saying why when there was one whose files changed since it
/// was stored: it is removed); true with `error` set when there is one but
/// it cannot be placed at `output`.
bool restore(const std::string &cacheDir, const std::string &key, const std::string &output,
             std::string &report, std::string &error);

/// Stores the bundle folder `bundle` with its `report` and `recipe` under
/// `key`: built in a temporary folder and renamed into place, so that
/// concurrent compiles and interrupted ones never leave a partial entry.
/// False with `error` when it cannot (the compile itself has succeeded: a
/// caller warns).
bool store(const std::string &cacheDir, const std::string &key, const std::string &bundle,
           const std::string &report, const std::string &recipe, std::string &error);

} // namespace sluice::cache

#endif // SLUICE_TOOLS_DRIVER_CACHE_H
