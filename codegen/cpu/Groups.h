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
/// issue 15): sluice_int8_gemm_ep with the epilogue it can fold
/// (groups/Int8Gemm.cpp). Lone int8 contractions come here too.
LogicalResult emitInt8GemmGroup(GroupContext &ctx);
/// Whether `kernel` is a GEMM group with an int8 anchor.
bool isInt8GemmGroup(KernelOp kernel);
/// Form F2 with a float sluice.conv anchor (groups/Conv.cpp): the
/// convolution with its epilogue as oneDNN post-ops, or as a loop after it.
LogicalResult emitConvGroup(GroupContext &ctx);
/// Whether `kernel` is a GEMM group with a float convolution anchor.
bool isConvGroup(KernelOp kernel);
/// Whether `kernel` is a conv group whose epilogue runs as the
/// convolution's post-ops (ReLU, residual Add, or both).
bool hasConvPostOps(KernelOp kernel);
LogicalResult emitRowGroup(GroupContext &ctx);
LogicalResult emitAttentionGroup(GroupContext &ctx);

} // namespace sluice::codegen

#endif // SLUICE_CODEGEN_CPU_GROUPS_H
