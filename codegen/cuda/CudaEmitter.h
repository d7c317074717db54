//===- CudaEmitter.h - kernel groups to CUDA C++ (cuda target) ---*- C++ -*-===//
//
// The cuda target's emit phase: a planned module becomes model.cu (device
// kernels for the group forms of CudaGroups.h, cuBLASLt and cuDNN calls, and
// the run function enqueueing every step on one stream) plus host.cpp (cpu
// kernels, from the cpu emitter, for the groups no cuda emitter takes: they
// run as host steps between staging copies). The bundle writer builds both
// into model.so with nvcc for sm_80 and sm_90 (plus PTX).
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_CODEGEN_CUDA_CUDAEMITTER_H
#define SLUICE_CODEGEN_CUDA_CUDAEMITTER_H

#include "codegen/common/ModelFacts.h"

#include <string>
#include <vector>

namespace sluice::codegen {

struct CudaModel : ModelFacts {
  std::string deviceSource; ///< model.cu
  std::string hostSource;   ///< host.cpp; empty when no step runs on the host
  /// kind: "kernel" (generated), "library" (cuBLASLt, cuDNN), "host".
  std::vector<StepInfo> steps;
  int64_t kernels = 0, libraryCalls = 0, hostSteps = 0;
  /// Pinned host staging the host steps need (the largest step's inputs
  /// and results, each 64-byte aligned).
  int64_t hostArenaBytes = 0;
  /// The library workspace the largest cuBLASLt/cuDNN call asks for.
  int64_t workspaceBytes = 0;
  bool usesCudnn = false;
  /// Host steps call OpenBLAS.
  bool hostUsesBlas = false;
  /// One line per group left to the host: "<kernel> (<op>, node '<n>'): why".
  std::vector<std::string> remarks;
};

/// Emits the planned function `main` of `module` for the cuda target.
mlir::FailureOr<CudaModel> emitCudaModel(mlir::ModuleOp module);

/// The GPU architectures cuda bundles are built for, as the manifest lists
/// them: machine code for each "sm_XY", PTX for each "compute_XY" (JIT on
/// newer GPUs).
const std::vector<std::string> &cudaArchitectures();

} // namespace sluice::codegen

#endif // SLUICE_CODEGEN_CUDA_CUDAEMITTER_H
