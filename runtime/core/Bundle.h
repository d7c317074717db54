//===- Bundle.h - a loaded bundle: manifest, weights, library ---*- C++ -*-===//
//
// What sluice_model_load builds: the checked manifest, weights.bin mapped
// read-only and the model library opened. Immutable once loaded, so any
// number of contexts on any threads may share one. A multi-rank bundle is
// loaded as one of its ranks (sluice_model_load_rank), which maps only that
// rank's weights file.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_RUNTIME_CORE_BUNDLE_H
#define SLUICE_RUNTIME_CORE_BUNDLE_H

#include "runtime/core/Manifest.h"

#include "sluice/bundle_abi.h"

#include <memory>
#include <string>
#include <vector>

namespace sluice::runtime {

class Bundle {
public:
  /// What `rank` says for a caller of the single-rank API.
  static constexpr int32_t kSingleRank = -1;

  /// Loads the bundle in `dir` as rank `rank` (kSingleRank: the single-rank
  /// API, which refuses a multi-rank bundle); on failure returns null and
  /// sets `error` (naming the folder or the file at fault).
  static std::unique_ptr<Bundle> load(const std::string &dir, int32_t rank,
                                      std::string &error);
  ~Bundle();
  Bundle(const Bundle &) = delete;
  Bundle &operator=(const Bundle &) = delete;

  const std::string &dir() const { return dir_; }
  const Manifest &manifest() const { return manifest_; }
  /// The rank this bundle was loaded as (0 for a single-rank bundle).
  int32_t rank() const { return rank_; }
  /// This rank's weights file, page-aligned (a 64-byte-aligned empty block
  /// when it holds no weights).
  const unsigned char *weights() const { return weights_; }
  /// Its size in bytes.
  uint64_t weightsBytes() const { return manifest_.weights[rank_].bytes; }
  /// The library's sluice_model_run.
  int32_t run(const SluiceRunArgs &args) const { return run_(&args); }
  /// The run function of shape variant `variant` (manifest "variants";
  /// variant 0 of a bundle without them is sluice_model_run).
  int32_t run(const SluiceRunArgs &args, size_t variant) const {
    return runs_[variant](&args);
  }
  /// cuda bundles only (the loader requires them there): the library's
  /// sluice_model_init, sluice_model_release and sluice_model_check.
  int32_t initDevice(void **state, void *stream, char *error,
                     size_t errorSize) const {
    return init_(state, stream, error, errorSize);
  }
  void releaseDevice(void *state) const { release_(state); }
  int32_t checkDevice(void *state, char *error, size_t errorSize) const {
    return check_(state, error, errorSize);
  }

private:
  Bundle() = default;
  bool mapWeights(std::string &error);
  bool openLibrary(std::string &error);

  std::string dir_;
  Manifest manifest_;
  int32_t rank_ = 0;
  const unsigned char *weights_ = nullptr;
  void *mapping_ = nullptr;
  size_t mappedBytes_ = 0;
  void *library_ = nullptr;
  int32_t (*run_)(const SluiceRunArgs *) = nullptr;
  std::vector<int32_t (*)(const SluiceRunArgs *)> runs_;
  int32_t (*init_)(void **, void *, char *, size_t) = nullptr;
  void (*release_)(void *) = nullptr;
  int32_t (*check_)(void *, char *, size_t) = nullptr;
  /// The library's sluice_model_release_scratch (optional).
  void (*releaseScratch_)() = nullptr;
};

} // namespace sluice::runtime

#endif // SLUICE_RUNTIME_CORE_BUNDLE_H
