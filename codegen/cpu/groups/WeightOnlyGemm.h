//===- WeightOnlyGemm.h - cpu GEMM groups with a Form W prologue -*- C++ -*-===//
//
// The cpu emitter of GEMM groups whose B is a weight-only quantized weight
// (docs/quantization.md, Form W); groups/Gemm.cpp hands such groups here.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_CODEGEN_CPU_GROUPS_WEIGHTONLYGEMM_H
#define SLUICE_CODEGEN_CPU_GROUPS_WEIGHTONLYGEMM_H

#include "codegen/common/GroupContext.h"

namespace sluice::codegen {

/// Whether `kernel` (a GEMM group) holds the Form W dequantization of its
/// matmul's B.
bool isWeightOnlyGemmGroup(KernelOp kernel);
/// The group as a call of sluice_wonly_gemm (sluice_gen/cpu_wonly.h) with
/// its epilogue.
mlir::LogicalResult emitWeightOnlyGemmGroup(GroupContext &ctx);

} // namespace sluice::codegen

#endif // SLUICE_CODEGEN_CPU_GROUPS_WEIGHTONLYGEMM_H
