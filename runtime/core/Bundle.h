//===- Bundle.h - a loaded bundle: manifest, weights, library ---*- C++ -*-===//
//
// What sluice_model_load builds: the checked manifest, weights.bin mapped
// read-only and the model library opened. Immutable once loaded, so any
// number of contexts on any threads may share one.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_RUNTIME_CORE_BUNDLE_H
#define SLUICE_RUNTIME_CORE_BUNDLE_H

#include "runtime/core/Manifest.h"

#include "sluice/bundle_abi.h"

#include <memory>
#include <string>

namespace sluice::runtime {

class Bundle {
public:
  /// Loads the bundle in `dir`; on failure returns null and sets `error`
  /// (naming the folder or the file at fault).
  static std::unique_ptr<Bundle> load(const std::string &dir,
                                      std::string &error);
  ~Bundle();
  Bundle(const Bundle &) = delete;
  Bundle &operator=(const Bundle &) = delete;

  const std::string &dir() const { return dir_; }
  const Manifest &manifest() const { return manifest_; }
  /// weights.bin, page-aligned (a 64-byte-aligned empty block when the
  /// bundle has no weights).
  const unsigned char *weights() const { return weights_; }
  /// The library's sluice_model_run.
  int32_t run(const SluiceRunArgs &args) const { return run_(&args); }
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
  const unsigned char *weights_ = nullptr;
  void *mapping_ = nullptr;
  size_t mappedBytes_ = 0;
  void *library_ = nullptr;
  int32_t (*run_)(const SluiceRunArgs *) = nullptr;
  int32_t (*init_)(void **, void *, char *, size_t) = nullptr;
  void (*release_)(void *) = nullptr;
  int32_t (*check_)(void *, char *, size_t) = nullptr;
};

} // namespace sluice::runtime

#endif // SLUICE_RUNTIME_CORE_BUNDLE_H
