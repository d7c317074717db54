//===- Signal.cpp - ONNX signal-processing ops ----------------------------===//
//
// The window functions (HannWindow, HammingWindow, BlackmanWindow) are
// generalized cosine windows, built from range, cast and cos so that they
// fold to constants when the size is known.
//
//===----------------------------------------------------------------------===//

#include "lib/onnx/Binder.h"
#include "lib/reference/Evaluator.h"
#include "lib/support/TensorFiles.h"

#include "dialects/sluice/SluiceOps.h"

#include <onnx/onnx_pb.h>

#include <cmath>

using namespace mlir;
using namespace sluice;

namespace sluice::onnx_import {
namespace {

/// w[n] = sum_k a_k cos(2 pi k n / N), N = size (periodic) or size - 1
/// (symmetric), computed in f64 and cast to output_datatype (default float).
LogicalResult cosineWindow(Binder &b, ArrayRef<double> coefficients) {
  Value size = b.input(0);
  if (!size)
    return b.fail("window needs a size input");
  DType dtype;
  int outputType = b.attrInt("output_datatype", onnx::TensorProto::FLOAT);
  if (!dtypeFromOnnx(outputType, dtype))
    return b.fail("unsupported output_datatype " + Twine(outputType));
  Type f64 = b.b.getF64Type();
  Type sizeType = b.elementType(0);
  // Range wants scalars of one type: reshape a [1]-shaped size to a scalar.
  Value scalarSize = size;
  if (auto ranked = b.rankedType(0); ranked && ranked.getRank() == 1)
    scalarSize = b.create<ReshapeOp>(size, b.constI64({}), false);
  Value n = b.create<RangeOp>(b.constScalar(sizeType, 0), scalarSize,
                              b.constScalar(sizeType, 1));
  Value nf = b.castTo(n, f64);
  Value length = b.castTo(scalarSize, f64);
  if (b.attrInt("periodic", 1) == 0)
    length = b.create<SubOp>(length, b.constScalar(f64, 1));
  Value phase = b.create<DivOp>(b.create<MulOp>(nf, b.constScalar(f64, 2 * M_PI)), length);
  Value window = b.constScalar(f64, coefficients[0]);
  for (size_t k = 1; k < coefficients.size(); ++k) {
    Value term = b.create<CosOp>(b.create<MulOp>(phase, b.constScalar(f64, k)));
    window = b.create<AddOp>(window, b.create<MulOp>(term, b.constScalar(f64, coefficients[k])));
  }
  return b.output(b.castTo(window, typeFromDType(b.b.getContext(), dtype)));
}

LogicalResult hannHandler(Binder &b) { return cosineWindow(b, {0.5, -0.5}); }

LogicalResult hammingHandler(Binder &b) {
  return cosineWindow(b, {25.0 / 46.0, -21.0 / 46.0});
}

LogicalResult blackmanHandler(Binder &b) {
  return cosineWindow(b, {0.42, -0.5, 0.08});
}

/// Moves dim `from` of a rank-`rank` tensor to position `to`.
SmallVector<int64_t> movePermutation(int64_t rank, int64_t from, int64_t to) {
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    if (i != from)
      perm.push_back(i);
  perm.insert(perm.begin() + to, from);
  return perm;
}

/// DFT (opset 17): x is [batch, signal dims..., 1 or 2] (real or complex);
/// the transform runs along `axis`. Forward: X[k] = sum_l x[l] e^{-2 pi i k l
/// / N}; inverse uses e^{+...} and divides by N; onesided keeps N/2 + 1 bins.
LogicalResult dftHandler(Binder &b) {
  auto type = b.rankedType(0);
  if (!type || !type.hasStaticShape())
    return b.fail("DFT needs a static input shape");
  int64_t rank = type.getRank();
  int64_t components = type.getDimSize(rank - 1);
  if (rank < 3 || (components != 1 && components != 2))
    return b.fail("DFT input must be [batch, signal dims..., 1 or 2]");
  int64_t axis = b.attrInt("axis", 1);
  if (axis < 0)
    axis += rank - 1;
  if (axis < 1 || axis >= rank - 1)
    return b.fail("DFT axis " + Twine(b.attrInt("axis", 1)) + " is not a signal dim");
  int64_t length = type.getDimSize(axis), n = length;
  if (b.hasInput(1)) {
    auto given = getConstantIntValues(b.input(1));
    if (!given || given->size() != 1 || (*given)[0] <= 0)
      return b.fail("DFT dft_length must be a positive constant");
    n = (*given)[0];
  }
  bool inverse = b.attrInt("inverse", 0) != 0;
  bool onesided = b.attrInt("onesided", 0) != 0;
  if (onesided && (inverse || components == 2))
    return b.fail("DFT onesided needs a real input and a forward transform");
  int64_t bins = onesided ? n / 2 + 1 : n;
  Type element = type.getElementType();
  auto dtype = dtypeFromType(element);
  if (failed(dtype) || !isFloatDType(*dtype))
    return b.fail("DFT needs a floating-point input");

  // cos/sin matrices [length, bins]; rows past n (truncation) are zero, and
  // padding needs no rows at all.
  Tensor cosine(*dtype, {length, bins}), sine(*dtype, {length, bins});
  double scale = inverse ? 1.0 / n : 1.0;
  for (int64_t l = 0; l < std::min(length, n); ++l)
    for (int64_t k = 0; k < bins; ++k) {
      double angle = 2 * M_PI * (double)((k * l) % n) / n;
      cosine.setDouble(l * bins + k, scale * std::cos(angle));
      sine.setDouble(l * bins + k, scale * std::sin(angle));
    }
  Value cosM = b.constTensor(cosine), sinM = b.constTensor(sine);

  // Bring the signal axis last, the complex parts out: [..., length].
  auto moveAxis = [&](Value v, int64_t from, int64_t to) {
    return from == to ? v : b.create<TransposeOp>(v, movePermutation(rank, from, to));
  };
  Value x = moveAxis(b.input(0), axis, rank - 2);
  auto part = [&](int64_t index) {
    return b.create<GatherOp>(x, b.constI64Scalar(index), rank - 1);
  };
  Value real = part(0);
  Value imag = components == 2 ? part(1) : Value();
  auto mm = [&](Value v, Value m) { return b.create<MatMulOp>(v, m); };
  // Forward: re = xr cos + xi sin, im = xi cos - xr sin; inverse flips sin.
  Value outReal = mm(real, cosM), outImag = b.create<NegOp>(mm(real, sinM));
  if (inverse)
    outImag = mm(real, sinM);
  if (imag) {
    Value imagSin = mm(imag, sinM);
    outReal = inverse ? b.create<SubOp>(outReal, imagSin) : b.create<AddOp>(outReal, imagSin);
    outImag = b.create<AddOp>(outImag, mm(imag, cosM));
  }
  // Stack as [..., bins, 2] and move the axis back.
  SmallVector<int64_t> shape(type.getShape().begin(), type.getShape().end());
  shape.erase(shape.begin() + axis);
  shape.back() = bins;
  shape.push_back(1);
  Value stacked = b.create<ConcatOp>(
      ValueRange{b.create<ReshapeOp>(outReal, b.constI64(shape), false),
                 b.create<ReshapeOp>(outImag, b.constI64(shape), false)},
      rank - 1);
  return b.output(moveAxis(stacked, rank - 2, axis));
}

} // namespace

void registerSignalHandlers(OpRegistry &r) {
  r.on("DFT", 17, dftHandler);
  r.on("HannWindow", 17, hannHandler);
  r.on("HammingWindow", 17, hammingHandler);
  r.on("BlackmanWindow", 17, blackmanHandler);
}

} // namespace sluice::onnx_import
