//===- QuantizeWeights.h - weight-only quantization (w8a16/w4a16) -*- C++ -*-===//
//
// The compress phase's weight-only quantization (docs/quantization.md, Form W):
// the arithmetic on a weight matrix (quantizeWeightMatrix, pure and tested
// in gtest) and the rewrite of a function's GEMMs (quantizeWeightsOnly, which
// the sluice-quantize-weights pass and the accuracy guard call).
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_PASSES_COMPRESS_QUANTIZEWEIGHTS_H
#define SLUICE_PASSES_COMPRESS_QUANTIZEWEIGHTS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sluice {

/// A [K, N] weight quantized symmetrically in blocks of `group` rows of K
/// per column: w[k][n] ~ values[k N + n] * scale(scales[(k / group) N + n]).
struct QuantizedWeight {
  int bits = 8;
  int64_t group = 0;
  std::vector<int8_t> values;   ///< K * N, in [-127, 127] (8 bits) or [-8, 7] (4 bits)
  std::vector<uint16_t> scales; ///< ceil(K / group) * N f16 bit patterns
};

/// Quantizes the row-major [k, n] matrix `w` to `bits` (8 or 4) with one
/// scale per column and block of `group` rows (group = k: per column). The
/// scale is max|w| / 127 (bits 8) or / 7 (bits 4) over the block, rounded to
/// f16 first (a zero or underflowing scale becomes f16's smallest normal), so
/// the stored scale is the one the values are quantized with; values are
/// w / scale rounded half to even and clamped to the range.
QuantizedWeight quantizeWeightMatrix(const float *w, int64_t k, int64_t n, int bits, int64_t group);

/// Rewrites every `sluice.matmul` of `func` that `selected` accepts and
/// whose B is a 2-D float constant (A of rank >= 2) into Form W with `bits`
/// (8: int8 per column; 4: int4 in blocks of min(group, K) along K): integer
/// and f16 scale constants, a dequantize_linear and, for non-f16
/// activations, a cast; all at the matmul's location. Fails with `error`
/// on bad `bits` / `group`.
mlir::LogicalResult quantizeWeightsOnly(mlir::func::FuncOp func, int bits, int64_t group,
                                        llvm::function_ref<bool(mlir::Operation *)> selected,
                                        std::string &error);

} // namespace sluice

#endif // SLUICE_PASSES_COMPRESS_QUANTIZEWEIGHTS_H
