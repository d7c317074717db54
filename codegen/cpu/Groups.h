//===- Groups.h - kernel-group emitters of the cpu target ---*- C++ -*-===//
//
// The fuse phase leaves kernel groups of five forms (docs/architecture.md,
// "fuse"): elementwise (F1), GEMM with an epilogue (F2), row op with a
// prologue and an epilogue (F3), attention with its views (F4) and single
// ops (F5). emitCpuModel classifies each kernel body and calls one of the
// emitters below; F5 goes through the op registry (CpuEmitter.h).
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_CODEGEN_CPU_GROUPS_H
#define SLUICE_CODEGEN_CPU_GROUPS_H

#include "codegen/common/GroupContext.h"
#include "codegen/common/KernelModel.h"
#include "dialects/sluice/SluiceOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <set>
#include <string>
#include <variant>

namespace sluice::codegen {

LogicalResult emitElementwiseGroup(GroupContext &ctx);

LogicalResult emitGemmGroup(GroupContext &ctx);
/// Form F2 with an int8 matmul_integer / conv_integer anchor (Form I8 of
/// docs/quantization.md): sluice_int8_gemm_ep with the epilogue it can fold
/// (groups/Int8Gemm.cpp). Lone int8 contractions come here too.
LogicalResult emitInt8GemmGroup(GroupContext &ctx);
/// Whether `kernel` is a GEMM group with an int8 anchor.
bool isInt8GemmGroup(KernelOp kernel);
/// The weight layouts of cpu bundles (the WeightTransformQuery their model
/// facts and emitters share): cpuWeightTransform's (the int8 GEMM's packed
/// B, which the cuda target's host steps read too) and the f32 GEMM group's
/// B packed into sluice_sgemm's panels (groups/Gemm.cpp), a layout only
/// cpu bundles built for the host's ISA read.
std::optional<WeightTransform> cpuBundleWeightTransform(KernelOp kernel, unsigned input);
/// While one lives (on this thread), f32 GEMM groups may read packed
/// weights: emitCpuModel holds one. Host steps of cuda bundles, whose
/// weights the cuda target stores, never do.
class CpuBundleEmissionScope {
public:
  CpuBundleEmissionScope();
  ~CpuBundleEmissionScope();
  CpuBundleEmissionScope(const CpuBundleEmissionScope &) = delete;
  CpuBundleEmissionScope &operator=(const CpuBundleEmissionScope &) = delete;

private:
  bool previous;
};
/// Whether the f32 GEMM group `kernel` reads its B packed from weights.bin:
/// the report's "cpu_gemm_packed_weights" counts these.
bool readsPackedWeight(KernelOp kernel);
/// Form F2 with a float sluice.conv anchor (groups/Conv.cpp): the
/// convolution with its epilogue as oneDNN post-ops, or as a loop after it.
LogicalResult emitConvGroup(GroupContext &ctx);
/// Whether `kernel` is a GEMM group with a float convolution anchor.
bool isConvGroup(KernelOp kernel);
/// While one lives (on this thread), the conv groups of `block` keep the
/// activations that only convolutions read in oneDNN's blocked layout
/// (nChw8c / nChw16c): the convolution that writes one stores it so and
/// the ones that read it, as src or residual, read it so, with no reorder
/// to and from NCHW in between (groups/Conv.cpp plans which; oneDNN path
/// only, cpuConvKeepsBlockedLayout). emitCpuModel holds one.
class CpuConvLayoutScope {
public:
  explicit CpuConvLayoutScope(mlir::Block &block);
  ~CpuConvLayoutScope();
  CpuConvLayoutScope(const CpuConvLayoutScope &) = delete;
  CpuConvLayoutScope &operator=(const CpuConvLayoutScope &) = delete;
  /// How many activations are kept blocked: the report's
  /// "cpu_conv_blocked_activations".
  size_t blockedActivations() const { return values.size(); }

private:
  llvm::DenseSet<mlir::Value> values;
  const llvm::DenseSet<mlir::Value> *previous;
};
/// Whether the conv group `kernel` reads or writes a blocked activation (a
/// lone convolution then runs through emitConvGroup, not its op emitter).
bool keepsBlockedActivations(KernelOp kernel);
/// Whether `kernel` is a conv group whose epilogue runs as the
/// convolution's post-ops (ReLU, residual Add, or both).
bool hasConvPostOps(KernelOp kernel);
LogicalResult emitRowGroup(GroupContext &ctx);
LogicalResult emitAttentionGroup(GroupContext &ctx);

} // namespace sluice::codegen

#endif // SLUICE_CODEGEN_CPU_GROUPS_H
