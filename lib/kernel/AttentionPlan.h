//===- AttentionPlan.h - form F4's plan, shared by cpu and cuda -*- C++ -*-===//
//
// An attention group (form F4) is one sluice.attention with view ops on its
// operands and its result. Both targets read every operand in place through
// its strided view and write the result through its output view; this plan
// is what they share: sizes, the options of the op, and for each tensor a
// pointer and strides over [B..., rows, cols] (0 where it broadcasts). The
// targets spell it as a descriptor (sluice_attn_desc on cpu,
// sluice_cuda_attn_desc on cuda) with the same field names
// (codegen/common/AttentionDescriptor.h).
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_LIB_KERNEL_ATTENTIONPLAN_H
#define SLUICE_LIB_KERNEL_ATTENTIONPLAN_H

#include "lib/kernel/Access.h"
#include "lib/kernel/Views.h"
#include "dialects/sluice/SluiceOps.h"

#include <functional>
#include <string>
#include <vector>

namespace sluice::kernel {

/// Most batch dims the descriptors hold (SLUICE_ATTN_MAX_BATCH,
/// SLUICE_CUDA_ATTN_MAX_BATCH).
constexpr size_t kAttentionMaxBatch = 8;

struct AttentionPlan {
  AttentionOp op;
  std::vector<int64_t> batch;
  int64_t sq = 0, sk = 0, d = 0, dv = 0;
  float scale = 1.0f;
  bool causal = false, rotary = false;
  /// With causal: the sliding window's keys per row (0: none).
  int64_t window = 0;
  /// 0: none, 1: additive float mask, 2: boolean keep-mask.
  int maskKind = 0;
  /// Element types of q/k/v/out, of the mask and of cos/sin (the query's
  /// when absent).
  mlir::Type elementType, maskType, rotaryType;
  /// Each operand's pointer expression ("nullptr" when absent) and strides
  /// over the space [B..., rows, cols] (0 where it broadcasts; offsets are
  /// folded into the pointer expression).
  Access q, k, v, mask, out, cosQ, sinQ, cosK, sinK;
};

/// Plans the attention group `kernel`; errors (prefixed "<target> target:")
/// are emitted on the op and failure returned. `leafPointer` gives the
/// pointer expression of a view's base (or fails with an error).
mlir::FailureOr<AttentionPlan> planAttentionGroup(
    KernelOp kernel,
    const std::function<mlir::FailureOr<std::string>(const StridedView &)> &leafPointer,
    llvm::StringRef target);

} // namespace sluice::kernel

#endif // SLUICE_LIB_KERNEL_ATTENTIONPLAN_H
