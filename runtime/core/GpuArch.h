//===- GpuArch.h - which of a bundle's GPU codes a device can run -*- C++ -*-===//
//
// A cuda bundle's library carries machine code (cubin, "sm_XY") for some
// architectures and PTX ("compute_XY") that the driver compiles for newer
// ones. Whether a GPU can run the bundle is a pure function of that list and
// the GPU's compute capability, kept apart from CUDA so that it is unit
// tested on machines without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_RUNTIME_CORE_GPUARCH_H
#define SLUICE_RUNTIME_CORE_GPUARCH_H

#include <string>
#include <vector>

namespace sluice::runtime {

/// One entry of a manifest's "gpu_architectures".
struct GpuArch {
  enum class Code { Cubin, Ptx };
  /// What a suffix restricts: none ("sm_90"), architecture-specific
  /// ("sm_90a": only that exact capability), family ("sm_100f": the same
  /// major, minor at least this one).
  enum class Variant { Plain, Specific, Family };
  Code code = Code::Cubin;
  Variant variant = Variant::Plain;
  int major = 0, minor = 0;
};

/// Parses "sm_XY", "compute_XY" (with an optional "a" or "f" suffix; the
/// last digit is the minor version: sm_90 is 9.0, sm_120 is 12.0). False if
/// `text` is none of these.
bool parseGpuArch(const std::string &text, GpuArch &arch);

/// Whether code for `arch` runs on a GPU of compute capability
/// `major`.`minor`: a cubin runs on the same major with a minor at least
/// its own (an arch-specific one only on its exact capability); PTX is
/// compiled by the driver for any capability at least its own (family and
/// arch-specific PTX only within its major / on its exact capability).
bool gpuArchRuns(const GpuArch &arch, int major, int minor);

/// The entry of `architectures` a GPU of capability `major`.`minor` would
/// run, preferring a cubin (no JIT at load) and among cubins the newest;
/// -1 if none can run there. Entries that do not parse are skipped (the
/// manifest reader rejects them first).
int pickGpuArch(const std::vector<std::string> &architectures, int major,
                int minor);

/// The one-line refusal when pickGpuArch finds nothing: names the bundle,
/// the GPU and its sm_XY, and what the bundle carries.
std::string gpuArchMismatch(const std::string &bundleDir,
                            const std::string &gpuName, int major, int minor,
                            const std::vector<std::string> &architectures);

} // namespace sluice::runtime

#endif // SLUICE_RUNTIME_CORE_GPUARCH_H
