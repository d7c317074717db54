//===- Math.cpp - ONNX contractions, convolution, normalization -----------===//
//
// MatMul, Gemm, convolutions, pooling, normalizations, einsum and the
// quantization ops.
//
//===----------------------------------------------------------------------===//

#include "lib/onnx/Binder.h"

#include "dialects/sluice/SluiceOps.h"

using namespace mlir;
using namespace sluice;

namespace sluice::onnx_import {
namespace {

LogicalResult matMulHandler(Binder &b) {
  return b.output(b.create<MatMulOp>(b.input(0), b.input(1)));
}

/// Y = alpha * A' B' + beta * C with A' = transA ? A^T : A (same for B).
LogicalResult gemmHandler(Binder &b) {
  Value a = b.input(0), bm = b.input(1);
  if (b.attrInt("transA", 0))
    a = b.create<TransposeOp>(a, ArrayRef<int64_t>{1, 0});
  if (b.attrInt("transB", 0))
    bm = b.create<TransposeOp>(bm, ArrayRef<int64_t>{1, 0});
  Value y = b.create<MatMulOp>(a, bm);
  Type element = b.elementType(0);
  float alpha = b.attrFloat("alpha", 1.0f), beta = b.attrFloat("beta", 1.0f);
  if (alpha != 1.0f)
    y = b.create<MulOp>(y, b.constScalar(element, alpha));
  if (b.hasInput(2)) {
    Value c = b.input(2);
    if (beta != 1.0f)
      c = b.create<MulOp>(c, b.constScalar(element, beta));
    y = b.create<AddOp>(y, c);
  }
  return b.output(y);
}

} // namespace

void registerMathHandlers(OpRegistry &r) {
  r.on("MatMul", 1, matMulHandler);
  r.on("Gemm", 1, gemmHandler);
}

} // namespace sluice::onnx_import
