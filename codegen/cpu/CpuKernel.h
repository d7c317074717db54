//===- CpuKernel.h - one kernel group as cpu code: the host-step interface -*- C++ -*-===//
//
// What the cuda target needs of the cpu target, and all it may include of it
// (scripts/check-layers.py): a group that has no cuda kernel runs on the
// host as the cpu kernel for it ("host steps", docs/architecture.md).
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_CODEGEN_CPU_CPUKERNEL_H
#define SLUICE_CODEGEN_CPU_CPUKERNEL_H

#include "codegen/common/WeightTransform.h"
#include "dialects/sluice/SluiceOps.h"

#include <set>
#include <string>

namespace sluice::codegen {

/// Whether the cpu target has an op emitter for `op` (CpuOpRegistry, CpuEmitter.h).
bool cpuImplements(mlir::Operation *op);

/// The weight layout the cpu kernel of `kernel` wants for its input
/// `input` (a WeightTransformQuery): the int8 GEMM's packed B
/// (groups/Int8Gemm.cpp). The cuda target stores weights the same way, so
/// that its host steps read what the cpu kernels expect.
std::optional<WeightTransform> cpuWeightTransform(KernelOp kernel, unsigned input);

/// The C++ of one kernel group as a cpu function
/// `static int32_t <name>(void *const *b, const SluiceRunArgs *args)`
/// (b: the kernel's inputs then its results), with its constant arrays in
/// `namespace <name>_data`. Headers it needs are added to `headers`. The
/// cuda target uses it for host steps.
mlir::FailureOr<std::string> emitCpuKernel(KernelOp kernel, std::set<std::string> &headers);

} // namespace sluice::codegen

#endif // SLUICE_CODEGEN_CPU_CPUKERNEL_H
