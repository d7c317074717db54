//===- GemmBatches.h - batch offsets of batched GEMM operands ---*- C++ -*-===//
//
// Where each batch of a batched GEMM operand starts: shared by the float,
// int8 and weight-only GEMM emitters of both targets.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_CODEGEN_COMMON_GEMMBATCHES_H
#define SLUICE_CODEGEN_COMMON_GEMMBATCHES_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>

namespace sluice::codegen {

/// Offset of batch `flat` (row-major over `batch`) in an operand of shape
/// `shape` (its last two dims are the matrix) with `strides`; the operand's
/// batch dims are right-aligned and broadcast.
inline int64_t batchOffset(llvm::ArrayRef<int64_t> batch, int64_t flat,
                           llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> strides) {
  int64_t offset = 0, rest = flat;
  int64_t opBatch = (int64_t)shape.size() - 2;
  for (int64_t d = (int64_t)batch.size() - 1; d >= 0; --d) {
    int64_t c = rest % batch[d];
    rest /= batch[d];
    int64_t od = d - ((int64_t)batch.size() - opBatch);
    if (od >= 0 && shape[od] != 1)
      offset += c * strides[od];
  }
  return offset;
}

} // namespace sluice::codegen

#endif // SLUICE_CODEGEN_COMMON_GEMMBATCHES_H
