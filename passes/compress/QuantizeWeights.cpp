//===- QuantizeWeights.cpp - weight-only quantization (w8a16/w4a16) -------===//
//
// `--quantize=w8a16|w4a16`: the weights of GEMMs become int8 (per output
// column) or int4 (blocks of G rows along K) with f16 scales, the
// activations stay as they are (docs/quantization.md, Form W):
//
//   %w  = sluice.matmul %x, %B                       B: float constant [K, N]
// becomes
//   %q  = sluice.constant : tensor<KxNxi8>           or tensor<KxNxi4>
//   %s  = sluice.constant : tensor<Nxf16>            or tensor<ceil(K/G)xNxf16>
//   %d  = sluice.dequantize_linear %q, %s {axis = 1} or {axis = 0, block_size = G}
//   %c  = sluice.cast %d : f16 -> f32                (unless x is f16)
//   %w  = sluice.matmul %x, %c
//
// The fuse phase makes %d and %c the GEMM's prologue; the targets
// dequantize inside the GEMM (cpu: sluice_gen/cpu_wonly.h), so memory-bound
// GEMMs (LLM decoding) read 4x / 8x fewer weight bytes than fp32.
//
//===----------------------------------------------------------------------===//

#include "passes/compress/QuantizeWeights.h"

#include "dialects/sluice/SluiceOps.h"
#include "lib/reference/Evaluator.h"
#include "lib/support/Locations.h"
#include "lib/support/Tensor.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <cmath>

namespace sluice {
#define GEN_PASS_DEF_QUANTIZEWEIGHTSPASS
#include "passes/Passes.h.inc"
} // namespace sluice

using namespace mlir;
using namespace sluice;

QuantizedWeight sluice::quantizeWeightMatrix(const float *w, int64_t k, int64_t n, int bits,
                                             int64_t group) {
  QuantizedWeight q;
  q.bits = bits;
  q.group = std::max<int64_t>(1, std::min(group, k));
  const int qmax = bits == 8 ? 127 : 7, qmin = bits == 8 ? -127 : -8;
  const int64_t blocks = (k + q.group - 1) / q.group;
  q.values.assign(k * n, 0);
  q.scales.assign(blocks * n, 0);
  // f16's smallest normal: a zero block (or one whose scale underflows)
  // quantizes to zeros or saturates gently instead of dividing by zero.
  const float smallest = halfToFloat(0x0400);
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t k0 = b * q.group, k1 = std::min(k, k0 + q.group);
    for (int64_t j = 0; j < n; ++j) {
      float amax = 0.0f;
      for (int64_t p = k0; p < k1; ++p)
        if (std::isfinite(w[p * n + j]))
          amax = std::max(amax, std::fabs(w[p * n + j]));
      // Round the scale to f16 before quantizing: the values are chosen for
      // the scale the kernel will multiply by.
      uint16_t bitsF16 = floatToHalf(std::min(amax / (float)qmax, 65504.0f));
      float scale = halfToFloat(bitsF16);
      if (!(scale >= smallest)) {
        bitsF16 = 0x0400;
        scale = smallest;
      }
      q.scales[b * n + j] = bitsF16;
      for (int64_t p = k0; p < k1; ++p) {
        float v = w[p * n + j] / scale;
        float r = std::nearbyint(v); // the default mode: half to even
        if (std::isnan(v))
          r = 0.0f;
        q.values[p * n + j] = (int8_t)std::min<float>(qmax, std::max<float>(qmin, r));
      }
    }
  }
  return q;
}

namespace {

/// The Form W operands of one quantized weight (shared by every matmul
/// that reads the same constant).
struct FormW {
  Value values, scales;
  int64_t axis = 1, blockSize = 0;
};

/// Quantizes `weight` (a 2-D float constant) into constants placed before
/// it; failure when its value cannot be read.
FailureOr<FormW> quantizeConstant(OpBuilder &b, ConstantOp weight, Location loc, int bits,
                                  int64_t group) {
  auto type = cast<RankedTensorType>(weight.getType());
  auto tensor = tensorFromAttr(weight.getValue());
  if (failed(tensor))
    return failure();
  ::sluice::Tensor f32 = tensor->castTo(DType::F32);
  int64_t k = type.getDimSize(0), n = type.getDimSize(1);
  // int8 is per column (one block of K rows); int4 in blocks along K.
  QuantizedWeight q = quantizeWeightMatrix(f32.data<float>(), k, n, bits, bits == 8 ? k : group);
  MLIRContext *ctx = b.getContext();
  ::sluice::Tensor values(bits == 8 ? DType::I8 : DType::I4, {k, n});
  std::copy(q.values.begin(), q.values.end(), values.mutableData<int8_t>());
  int64_t blocks = (int64_t)q.scales.size() / n;
  std::vector<int64_t> scaleShape =
      bits == 8 ? std::vector<int64_t>{n} : std::vector<int64_t>{blocks, n};
  ::sluice::Tensor scales(DType::F16, scaleShape);
  std::copy(q.scales.begin(), q.scales.end(), scales.mutableData<uint16_t>());
  auto valuesType = RankedTensorType::get({k, n}, b.getIntegerType(bits));
  auto scalesType = RankedTensorType::get(scaleShape, b.getF16Type());
  FormW form;
  form.values = ConstantOp::create(b, loc, attrFromTensor(ctx, values, valuesType));
  form.scales = ConstantOp::create(b, loc, attrFromTensor(ctx, scales, scalesType));
  form.axis = bits == 8 ? 1 : 0;
  form.blockSize = bits == 8 ? 0 : q.group;
  return form;
}

/// The 2-D float constant `matmul` reads as B when it is a GEMM the
/// weight-only kernels take (A of rank >= 2), else null.
ConstantOp quantizableWeight(MatMulOp matmul) {
  auto constant = matmul.getRhs().getDefiningOp<ConstantOp>();
  auto b = dyn_cast<RankedTensorType>(matmul.getRhs().getType());
  auto a = dyn_cast<RankedTensorType>(matmul.getLhs().getType());
  if (!constant || !a || !b || a.getRank() < 2 || b.getRank() != 2 || !b.hasStaticShape() ||
      b.getNumElements() == 0)
    return nullptr;
  Type element = b.getElementType();
  if (!element.isF32() && !element.isF16() && !element.isBF16())
    return nullptr;
  if (a.getElementType() != element)
    return nullptr;
  return constant;
}

struct QuantizeWeightsPass : public ::sluice::impl::QuantizeWeightsPassBase<QuantizeWeightsPass> {
  using QuantizeWeightsPassBase::QuantizeWeightsPassBase;

  void runOnOperation() override {
    std::string error;
    if (failed(quantizeWeightsOnly(
            getOperation(), (int)bits, group, [](Operation *) { return true; }, error))) {
      getOperation().emitError() << error;
      signalPassFailure();
    }
  }
};

} // namespace

LogicalResult sluice::quantizeWeightsOnly(func::FuncOp func, int bits, int64_t group,
                                          llvm::function_ref<bool(Operation *)> selected,
                                          std::string &error) {
  if (bits != 8 && bits != 4) {
    error = "weight-only quantization takes bits=8 or bits=4, not " + std::to_string(bits);
    return failure();
  }
  if (group <= 0) {
    error = "weight-only quantization needs group > 0, not " + std::to_string(group);
    return failure();
  }
  SmallVector<MatMulOp> matmuls;
  func.walk([&](MatMulOp matmul) {
    if (quantizableWeight(matmul) && selected(matmul))
      matmuls.push_back(matmul);
  });
  llvm::DenseMap<Operation *, FormW> done;
  OpBuilder b(func.getContext());
  for (MatMulOp matmul : matmuls) {
    ConstantOp weight = quantizableWeight(matmul);
    Location loc = matmul.getLoc();
    auto it = done.find(weight);
    if (it == done.end()) {
      b.setInsertionPoint(weight);
      auto form = quantizeConstant(b, weight, loc, bits, group);
      if (failed(form)) {
        error = "cannot read the weight of " + describeOp(matmul) + " to quantize it";
        return failure();
      }
      it = done.try_emplace(weight, *form).first;
    }
    const FormW &form = it->second;
    // One dequantization per matmul: each GEMM group takes its own prologue.
    b.setInsertionPoint(matmul);
    Value w = DequantizeLinearOp::create(b, loc, form.values, form.scales, Value(), form.axis,
                                         form.blockSize);
    Type element = cast<RankedTensorType>(matmul.getRhs().getType()).getElementType();
    if (!element.isF16())
      w = CastOp::create(b, loc, cast<RankedTensorType>(w.getType()).clone(element), w, false);
    matmul.getRhsMutable().assign(w);
  }
  for (auto &[weight, form] : done)
    if (weight->use_empty())
      weight->erase();
  return success();
}
