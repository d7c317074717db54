//===- EvalUtils.h - helpers shared by evaluator families -------*- C++ -*-===//
//
// Broadcast indexing, axis handling and typed dispatch for the evaluator's op
// families. Arithmetic runs in double for floating types (results are rounded
// to the element type on store) and in int64 for integers, so the reference is
// at least as accurate as any compiled target.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_LIB_REFERENCE_EVALUTILS_H
#define SLUICE_LIB_REFERENCE_EVALUTILS_H

#include "lib/reference/Evaluator.h"

#include "mlir/IR/Operation.h"

#include <vector>

namespace sluice {

/// Strides into a tensor of `inShape` for iterating `outShape`, with stride 0
/// on broadcast dims (inShape is right-aligned against outShape).
std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &inShape,
                                      const std::vector<int64_t> &outShape);

/// The NumPy broadcast of `shapes`, or failure (with an error on `op`).
mlir::FailureOr<std::vector<int64_t>>
broadcastShapes(mlir::Operation *op,
                const std::vector<std::vector<int64_t>> &shapes);

/// Calls fn(outIndex, inIndices) for every element of `outShape`, where
/// inIndices[k] is the flat index into input k broadcast to outShape.
template <typename Fn>
void forEachBroadcast(const std::vector<int64_t> &outShape,
                      const std::vector<std::vector<int64_t>> &inShapes,
                      Fn &&fn) {
  size_t rank = outShape.size(), n = inShapes.size();
  std::vector<std::vector<int64_t>> strides;
  for (const auto &s : inShapes)
    strides.push_back(broadcastStrides(s, outShape));
  int64_t total = 1;
  for (int64_t d : outShape)
    total *= d;
  std::vector<int64_t> counter(rank, 0), offsets(n, 0);
  for (int64_t i = 0; i < total; ++i) {
    fn(i, offsets);
    for (int64_t d = (int64_t)rank - 1; d >= 0; --d) {
      if (++counter[d] < outShape[d]) {
        for (size_t k = 0; k < n; ++k)
          offsets[k] += strides[k][d];
        break;
      }
      for (size_t k = 0; k < n; ++k)
        offsets[k] -= strides[k][d] * (outShape[d] - 1);
      counter[d] = 0;
    }
  }
}

/// Unravels a flat row-major index into per-dim indices.
void unravelIndex(int64_t flat, const std::vector<int64_t> &shape,
                  std::vector<int64_t> &index);

/// Normalizes `axis` for `rank` or emits an error on `op`.
mlir::FailureOr<int64_t> normalizeAxis(mlir::Operation *op, int64_t axis,
                                       int64_t rank);

/// The evaluator's dtype of an op result.
DType resultDType(mlir::Operation *op, unsigned index = 0);

} // namespace sluice

#endif // SLUICE_LIB_REFERENCE_EVALUTILS_H
