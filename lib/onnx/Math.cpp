//===- Math.cpp - ONNX contractions, convolution, normalization -----------===//
//
// MatMul, Gemm, convolutions, pooling, normalizations, einsum, the
// quantization ops and the recurrent ops. auto_pad is resolved here from
// static shapes, so the sluice ops only ever see explicit pads; ONNX function
// ops without a sluice op (MeanVarianceNormalization, LpNormalization, the
// global pools, DynamicQuantizeLinear, QLinear*) decompose into primitives.
//
//===----------------------------------------------------------------------===//

#include "lib/onnx/Binder.h"
#include "lib/reference/Evaluator.h"
#include "lib/support/TensorFiles.h"

#include "dialects/sluice/SluiceOps.h"

#include "llvm/Support/MathExtras.h"

#include <onnx/onnx_pb.h>

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

//===----------------------------------------------------------------------===//
// Windows: kernel, strides, dilations, pads with auto_pad resolved
//===----------------------------------------------------------------------===//

struct WindowAttrs {
  std::vector<int64_t> kernel, strides, dilations, pads;
};

/// Hostile window attributes would divide by zero or index past a vector
/// later (shape inference, the kernels): kernel dims, strides and
/// dilations must be at least 1, pads at least 0, all below 2^31, and the
/// kernel's rank must be the input's spatial rank. One error naming the
/// attribute and its value.
LogicalResult checkWindowValues(Binder &b, RankedTensorType input,
                                ArrayRef<int64_t> kernel,
                                ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> dilations,
                                ArrayRef<int64_t> pads) {
  constexpr int64_t kLimit = int64_t(1) << 31;
  auto check = [&](const char *name, ArrayRef<int64_t> values,
                   int64_t least) {
    for (size_t i = 0; i < values.size(); ++i)
      if (values[i] < least || values[i] >= kLimit)
        return b.fail(std::string(name) + "[" + std::to_string(i) + "] is " +
                      std::to_string(values[i]) + "; it must be at least " +
                      std::to_string(least) + " (and below 2^31)");
    return success();
  };
  if (failed(check("kernel_shape", kernel, 1)) ||
      failed(check("strides", strides, 1)) ||
      failed(check("dilations", dilations, 1)) ||
      failed(check("pads", pads, 0)))
    return failure();
  if (input && !kernel.empty() &&
      input.getRank() != (int64_t)kernel.size() + 2)
    return b.fail("kernel_shape has " + std::to_string(kernel.size()) +
                  " dims but the input of rank " +
                  std::to_string(input.getRank()) + " has " +
                  std::to_string(std::max<int64_t>(input.getRank() - 2, 0)) +
                  " spatial dims");
  return success();
}

/// Reads the window attributes of a conv or pool node whose data input is
/// input 0. `kernelFromWeight` takes missing kernel_shape from the weight.
FailureOr<WindowAttrs> readWindow(Binder &b, bool kernelFromWeight,
                                  unsigned weightInput = 1) {
  auto type = b.rankedType(0);
  WindowAttrs w;
  w.kernel = b.attrInts("kernel_shape");
  if (w.kernel.empty() && kernelFromWeight) {
    auto weight = b.rankedType(weightInput);
    if (!weight || weight.getRank() < 3)
      return b.fail("needs kernel_shape or a ranked weight");
    for (int64_t d : weight.getShape().drop_front(2)) {
      if (ShapedType::isDynamic(d))
        return b.fail("needs kernel_shape or a static weight shape");
      w.kernel.push_back(d);
    }
  }
  int64_t spatial = (int64_t)w.kernel.size();
  if (spatial == 0) {
    if (!type || type.getRank() < 3)
      return b.fail("needs kernel_shape or a ranked input");
    spatial = type.getRank() - 2;
  }
  w.strides = b.attrInts("strides", std::vector<int64_t>(spatial, 1));
  w.dilations = b.attrInts("dilations", std::vector<int64_t>(spatial, 1));
  w.pads = b.attrInts("pads", std::vector<int64_t>(2 * spatial, 0));
  if ((int64_t)w.strides.size() != spatial ||
      (int64_t)w.dilations.size() != spatial ||
      (int64_t)w.pads.size() != 2 * spatial)
    return b.fail("strides, dilations or pads do not match the kernel rank");
  if (failed(checkWindowValues(b, type, w.kernel, w.strides, w.dilations,
                               w.pads)))
    return failure();
  std::string autoPad = b.attrString("auto_pad", "NOTSET");
  if (autoPad == "VALID") {
    std::fill(w.pads.begin(), w.pads.end(), 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    if (!type || type.getRank() != spatial + 2)
      return b.fail("auto_pad " + autoPad + " needs a ranked input");
    for (int64_t d = 0; d < spatial; ++d) {
      int64_t in = type.getDimSize(d + 2);
      if (ShapedType::isDynamic(in))
        return b.fail("auto_pad " + autoPad + " needs static spatial dims");
      int64_t out = (in + w.strides[d] - 1) / w.strides[d];
      int64_t span = (w.kernel[d] - 1) * w.dilations[d] + 1;
      int64_t total =
          std::max<int64_t>(0, (out - 1) * w.strides[d] + span - in);
      int64_t small = total / 2, large = total - small;
      w.pads[d] = autoPad == "SAME_UPPER" ? small : large;
      w.pads[d + spatial] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else if (autoPad != "NOTSET") {
    return b.fail("unknown auto_pad '" + autoPad + "'");
  }
  return w;
}

LogicalResult convHandler(Binder &b) {
  auto w = readWindow(b, true);
  if (failed(w))
    return failure();
  return b.output(b.create<ConvOp>(
      b.input(0), b.input(1), b.input(2), ArrayRef<int64_t>(w->strides),
      ArrayRef<int64_t>(w->dilations), ArrayRef<int64_t>(w->pads),
      (uint64_t)b.attrInt("group", 1)));
}

/// Pads follow output_shape when given (total padding split by auto_pad:
/// the larger half at the end for SAME_UPPER, at the start otherwise).
LogicalResult convTransposeHandler(Binder &b) {
  auto w = readWindow(b, true);
  if (failed(w))
    return failure();
  int64_t spatial = (int64_t)w->kernel.size();
  std::vector<int64_t> outputPadding =
      b.attrInts("output_padding", std::vector<int64_t>(spatial, 0));
  if ((int64_t)outputPadding.size() != spatial)
    return b.fail("output_padding does not match the kernel rank");
  std::vector<int64_t> outputShape = b.attrInts("output_shape");
  std::string autoPad = b.attrString("auto_pad", "NOTSET");
  if (outputShape.empty() &&
      (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER")) {
    auto type = b.rankedType(0);
    for (int64_t d = 0; d < spatial; ++d)
      outputShape.push_back(type.getDimSize(d + 2) * w->strides[d]);
  }
  if (!outputShape.empty()) {
    if ((int64_t)outputShape.size() == spatial + 2)
      outputShape.erase(outputShape.begin(), outputShape.begin() + 2);
    auto type = b.rankedType(0);
    if ((int64_t)outputShape.size() != spatial || !type ||
        type.getRank() != spatial + 2)
      return b.fail("output_shape needs a ranked input of matching rank");
    for (int64_t d = 0; d < spatial; ++d) {
      int64_t in = type.getDimSize(d + 2);
      if (ShapedType::isDynamic(in))
        return b.fail("output_shape needs static spatial dims");
      int64_t total = w->strides[d] * (in - 1) + outputPadding[d] +
                      (w->kernel[d] - 1) * w->dilations[d] + 1 - outputShape[d];
      // Floor division as in the ONNX reference: a negative total (output
      // larger than the natural size) extends the end.
      int64_t small = llvm::divideFloorSigned(total, 2), large = total - small;
      w->pads[d] = autoPad == "SAME_UPPER" ? small : large;
      w->pads[d + spatial] = autoPad == "SAME_UPPER" ? large : small;
    }
  }
  return b.output(b.create<ConvTransposeOp>(
      b.input(0), b.input(1), b.input(2), ArrayRef<int64_t>(w->strides),
      ArrayRef<int64_t>(w->dilations), ArrayRef<int64_t>(w->pads),
      ArrayRef<int64_t>(outputPadding), (uint64_t)b.attrInt("group", 1)));
}

/// MaxPool, AveragePool, LpPool.
template <PoolKind kind> LogicalResult poolHandler(Binder &b) {
  if (!b.hasAttr("kernel_shape"))
    return b.fail("pooling needs kernel_shape");
  if (b.attrInts("kernel_shape").empty())
    return b.fail("kernel_shape is empty");
  auto w = readWindow(b, false);
  if (failed(w))
    return failure();
  bool withIndices = kind == PoolKind::max && b.numOutputs() > 1 &&
                     !b.proto().output(1).empty();
  int64_t p = 2;
  if (kind == PoolKind::lp)
    p = b.opset() < 2 ? (int64_t)b.attrFloat("p", 2.0f) : b.attrInt("p", 2);
  Operation *op = b.createOp<PoolOp>(
      b.input(0), kind, ArrayRef<int64_t>(w->kernel),
      ArrayRef<int64_t>(w->strides), ArrayRef<int64_t>(w->dilations),
      ArrayRef<int64_t>(w->pads), b.attrInt("ceil_mode", 0) != 0,
      b.attrInt("count_include_pad", 0) != 0, (uint64_t)p,
      (uint64_t)b.attrInt("storage_order", 0), withIndices);
  if (!op)
    return failure();
  b.setOutput(0, op->getResult(0));
  if (withIndices)
    b.setOutput(1, op->getResult(1));
  return success();
}

/// MaxUnpool: output_shape (input 2, opset 11) is an operand.
LogicalResult maxUnpoolHandler(Binder &b) {
  std::vector<int64_t> kernel = b.attrInts("kernel_shape");
  if (kernel.empty())
    return b.fail("MaxUnpool needs kernel_shape");
  int64_t spatial = (int64_t)kernel.size();
  std::vector<int64_t> strides =
      b.attrInts("strides", std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> pads =
      b.attrInts("pads", std::vector<int64_t>(2 * spatial, 0));
  if ((int64_t)strides.size() != spatial ||
      (int64_t)pads.size() != 2 * spatial)
    return b.fail("strides or pads do not match the kernel rank");
  if (failed(checkWindowValues(b, b.rankedType(0), kernel, strides, {}, pads)))
    return failure();
  return b.output(b.create<MaxUnpoolOp>(
      b.input(0), b.input(1), b.input(2), ArrayRef<int64_t>(kernel),
      ArrayRef<int64_t>(strides), ArrayRef<int64_t>(pads)));
}

/// Reduces over every spatial dim (2 .. rank), keeping dims.
Value reduceSpatial(Binder &b, Value x, ReduceKind kind) {
  auto type = b.rankedType(0);
  if (!type) {
    (void)b.fail("global pooling needs a ranked input");
    return Value();
  }
  std::vector<int64_t> axes;
  for (int64_t d = 2; d < type.getRank(); ++d)
    axes.push_back(d);
  return b.create<ReduceOp>(x, b.constI64(axes), kind, true, false);
}

template <ReduceKind kind> LogicalResult globalPoolHandler(Binder &b) {
  return b.output(reduceSpatial(b, b.input(0), kind));
}

/// (sum |x|^p)^(1/p) over the spatial dims.
LogicalResult globalLpPoolHandler(Binder &b) {
  Type element = b.elementType(0);
  double p = b.opset() < 2 ? b.attrFloat("p", 2.0f) : b.attrInt("p", 2);
  Value magnitude = b.create<AbsOp>(b.input(0));
  Value powered = b.create<PowOp>(magnitude, b.constScalar(element, p));
  Value sum = reduceSpatial(b, powered, ReduceKind::sum);
  Value inverseP = b.constScalar(element, 1.0 / p);
  return b.output(b.create<PowOp>(sum, inverseP));
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

/// Whether the node names output `i` (optional outputs may be empty).
bool usesOutput(Binder &b, unsigned i) {
  return i < b.numOutputs() && !b.proto().output(i).empty();
}

LogicalResult batchNormHandler(Binder &b) {
  bool training =
      b.opset() >= 14
          ? b.attrInt("training_mode", 0) != 0
          : b.opset() < 7 && b.attrInt("is_test", 0) == 0 && usesOutput(b, 1);
  if (b.opset() < 9 && b.attrInt("spatial", 1) == 0)
    return b.fail("BatchNormalization with spatial=0 is not supported");
  FloatAttr epsilon = b.b.getF32FloatAttr(b.attrFloat("epsilon", 1e-5f));
  if (!training)
    return b.output(b.create<BatchNormOp>(b.input(0), b.input(1), b.input(2),
                                          b.input(3), b.input(4), epsilon));
  if (b.opset() < 14)
    return b.fail("BatchNormalization in training mode needs opset >= 14");
  // Training mode (opset 14+): normalize with the batch statistics (biased
  // variance) and blend them into the running ones with `momentum`.
  Value x = b.input(0);
  auto type = b.rankedType(0);
  if (!type || type.getRank() < 2)
    return b.fail("BatchNormalization in training mode needs a ranked input");
  std::vector<int64_t> axes = {0};
  for (int64_t d = 2; d < type.getRank(); ++d)
    axes.push_back(d);
  Value batchMean =
      b.create<ReduceOp>(x, b.constI64(axes), ReduceKind::mean, true, false);
  Value centered = b.create<SubOp>(x, batchMean);
  Value squares = b.create<MulOp>(centered, centered);
  Value batchVar = b.create<ReduceOp>(squares, b.constI64(axes),
                                      ReduceKind::mean, false, false);
  batchMean =
      b.create<ReduceOp>(x, b.constI64(axes), ReduceKind::mean, false, false);
  Value y = b.create<BatchNormOp>(x, b.input(1), b.input(2), batchMean,
                                  batchVar, epsilon);
  if (!y)
    return failure();
  b.setOutput(0, y);
  Type element = b.elementType(3);
  double momentum = b.attrFloat("momentum", 0.9f);
  auto blend = [&](Value running, Value current) {
    Value kept = b.create<MulOp>(running, b.constScalar(element, momentum));
    Value added =
        b.create<MulOp>(current, b.constScalar(element, 1.0 - momentum));
    return b.create<AddOp>(kept, added);
  };
  for (unsigned i = 1; i < 3; ++i) {
    if (!usesOutput(b, i))
      continue;
    Value running = blend(b.input(i + 2), i == 1 ? batchMean : batchVar);
    if (!running)
      return failure();
    b.setOutput(i, running);
  }
  return success();
}

LogicalResult layerNormHandler(Binder &b) {
  if (b.attrInt("stash_type", 1) != 1)
    return b.fail("LayerNormalization supports only stash_type 1 (float)");
  Operation *op = b.createOp<LayerNormOp>(
      b.input(0), b.input(1), b.input(2),
      b.b.getI64IntegerAttr(b.attrInt("axis", -1)),
      b.b.getF32FloatAttr(b.attrFloat("epsilon", 1e-5f)));
  if (!op)
    return failure();
  for (unsigned i = 0; i < 3 && i < b.numOutputs(); ++i)
    b.setOutput(i, op->getResult(i));
  return success();
}

LogicalResult instanceNormHandler(Binder &b) {
  return b.output(b.create<InstanceNormOp>(
      b.input(0), b.input(1), b.input(2),
      b.b.getF32FloatAttr(b.attrFloat("epsilon", 1e-5f))));
}

LogicalResult groupNormHandler(Binder &b) {
  if (!b.hasAttr("num_groups"))
    return b.fail("GroupNormalization needs num_groups");
  return b.output(b.create<GroupNormOp>(
      b.input(0), b.input(1), b.input(2),
      b.b.getI64IntegerAttr(b.attrInt("num_groups", 1)),
      b.b.getF32FloatAttr(b.attrFloat("epsilon", 1e-5f))));
}

LogicalResult lrnHandler(Binder &b) {
  if (!b.hasAttr("size"))
    return b.fail("LRN needs size");
  // A size below 1 sums over no channel: the evaluator ran it, dividing by
  // a window it never formed.
  if (int64_t size = b.attrInt("size", 1); size < 1)
    return b.fail("LRN size is " + Twine(size) + "; it must be at least 1");
  return b.output(
      b.create<LrnOp>(b.input(0), b.b.getI64IntegerAttr(b.attrInt("size", 1)),
                      b.b.getF32FloatAttr(b.attrFloat("alpha", 1e-4f)),
                      b.b.getF32FloatAttr(b.attrFloat("beta", 0.75f)),
                      b.b.getF32FloatAttr(b.attrFloat("bias", 1.0f))));
}

/// (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over `axes`, as the ONNX
/// function body does.
LogicalResult mvnHandler(Binder &b) {
  Value x = b.input(0);
  Type element = b.elementType(0);
  Value axes = b.constI64(b.attrInts("axes", {0, 2, 3}));
  Value mean = b.create<ReduceOp>(x, axes, ReduceKind::mean, true, false);
  if (!mean) // bad axes: reported once, not again by the second reduce
    return failure();
  Value squares = b.create<MulOp>(x, x);
  Value meanOfSquares =
      b.create<ReduceOp>(squares, axes, ReduceKind::mean, true, false);
  Value squaredMean = b.create<MulOp>(mean, mean);
  Value variance = b.create<SubOp>(meanOfSquares, squaredMean);
  Value root = b.create<SqrtOp>(variance);
  Value stdDev = b.create<AddOp>(root, b.constScalar(element, 1e-9));
  Value centered = b.create<SubOp>(x, mean);
  return b.output(b.create<DivOp>(centered, stdDev));
}

/// x / ||x||_p along `axis` (p is 1 or 2); a zero norm gives 0, not NaN, as
/// in the ONNX reference.
LogicalResult lpNormHandler(Binder &b) {
  Value x = b.input(0);
  int64_t p = b.attrInt("p", 2);
  if (p != 1 && p != 2)
    return b.fail("LpNormalization supports p = 1 or 2");
  Value axes = b.constI64({b.attrInt("axis", -1)});
  Value norm;
  if (p == 1)
    norm = b.create<ReduceOp>(b.create<AbsOp>(x), axes, ReduceKind::sum, true,
                              false);
  else
    norm = b.create<SqrtOp>(b.create<ReduceOp>(b.create<MulOp>(x, x), axes,
                                               ReduceKind::sum, true, false));
  Value zero = b.constScalar(b.elementType(0), 0.0);
  Value isZero = b.create<EqualOp>(norm, zero);
  Value quotient = b.create<DivOp>(x, norm);
  return b.output(b.create<SelectOp>(isZero, zero, quotient));
}

//===----------------------------------------------------------------------===//
// Einsum, Det
//===----------------------------------------------------------------------===//

LogicalResult einsumHandler(Binder &b) {
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < b.numInputs(); ++i)
    inputs.push_back(b.input(i));
  return b.output(
      b.create<EinsumOp>(ValueRange(inputs), b.attrString("equation", "")));
}

LogicalResult detHandler(Binder &b) {
  return b.output(b.create<DetOp>(b.input(0)));
}

//===----------------------------------------------------------------------===//
// Quantization
//===----------------------------------------------------------------------===//

/// A one-element 1-D scale or zero point (ONNX Runtime's quantizer writes
/// [1]-shaped scales beside scalar zero points, e.g. for int32 biases) is
/// per-tensor, as ONNX Runtime reads it: a scalar here, so that scale and
/// zero point agree.
Value perTensorParam(Binder &b, Value param) {
  auto type = param ? dyn_cast<RankedTensorType>(param.getType()) : RankedTensorType();
  if (!type || type.getRank() != 1 || type.getDimSize(0) != 1)
    return param;
  return b.create<ReshapeOp>(param, b.constI64({}), false);
}

LogicalResult quantizeHandler(Binder &b) {
  if (b.hasInput(2)) {
    Type zp = b.elementType(2);
    if (!zp.isInteger(8) && !zp.isInteger(4) && !zp.isInteger(16) && !isa<Float8E4M3FNType>(zp))
      return b.fail("QuantizeLinear supports 4-, 8- and 16-bit integer and "
                    "float8e4m3fn zero points");
  }
  // block_size (opset 21): blocked scales keep the input's rank, so the
  // one-element reshape of per-tensor parameters does not apply.
  int64_t blockSize = b.attrInt("block_size", 0);
  auto param = [&](unsigned i) {
    return blockSize > 0 ? b.input(i) : perTensorParam(b, b.input(i));
  };
  // output_dtype (opset 21) without a zero point: a zero one of that type
  // (the result type is the zero point's).
  Value scale = param(1), zeroPoint = param(2);
  if (!zeroPoint && b.attrInt("output_dtype", 0) != 0) {
    DType dtype = DType::F32;
    bool ok = dtypeFromOnnx(b.attrInt("output_dtype", 0), dtype);
    bool integer = isNibbleDType(dtype) || dtype == DType::I8 || dtype == DType::U8 ||
                   dtype == DType::I16 || dtype == DType::U16;
    if (!ok || !(integer || dtype == DType::F8E4M3))
      return b.fail("QuantizeLinear output_dtype must be an integer type of 4 to 16 bits "
                    "or FLOAT8E4M3FN");
    // Shaped like the scale (the verifier wants equal shapes).
    std::vector<int64_t> shape;
    if (auto type = dyn_cast<RankedTensorType>(scale.getType()); type && type.hasStaticShape())
      shape.assign(type.getShape().begin(), type.getShape().end());
    zeroPoint = b.constTensor(Tensor(dtype, shape));
  }
  return b.output(b.create<QuantizeLinearOp>(b.input(0), scale, zeroPoint,
                                             b.attrInt("axis", 1),
                                             b.attrInt("saturate", 1) != 0, blockSize));
}

LogicalResult dequantizeHandler(Binder &b) {
  int64_t blockSize = b.attrInt("block_size", 0);
  auto param = [&](unsigned i) {
    return blockSize > 0 ? b.input(i) : perTensorParam(b, b.input(i));
  };
  return b.output(b.create<DequantizeLinearOp>(b.input(0), param(1), param(2),
                                               b.attrInt("axis", 1), blockSize));
}

/// scale = (max(x, 0) - min(x, 0)) / 255, zero point = round(-min / scale)
/// clamped to [0, 255], then uint8 quantization (the ONNX function body).
LogicalResult dynamicQuantizeHandler(Binder &b) {
  Value x = b.input(0);
  Type element = b.elementType(0);
  Value zero = b.constScalar(element, 0.0);
  Value lo = b.create<MinOp>(
      b.create<ReduceOp>(x, Value(), ReduceKind::min, false, false), zero);
  Value hi = b.create<MaxOp>(
      b.create<ReduceOp>(x, Value(), ReduceKind::max, false, false), zero);
  Value range = b.create<SubOp>(hi, lo);
  Value scale = b.create<DivOp>(range, b.constScalar(element, 255.0));
  Value zeroPoint =
      b.create<RoundOp>(b.create<SubOp>(zero, b.create<DivOp>(lo, scale)));
  zeroPoint = b.create<MaxOp>(zeroPoint, zero);
  zeroPoint = b.create<MinOp>(zeroPoint, b.constScalar(element, 255.0));
  if (!zeroPoint)
    return failure();
  zeroPoint = b.castTo(zeroPoint, b.b.getIntegerType(8, false));
  Value y = b.create<QuantizeLinearOp>(x, scale, zeroPoint, int64_t(1), true);
  if (!y)
    return failure();
  b.setOutput(0, y);
  b.setOutput(1, scale);
  b.setOutput(2, zeroPoint);
  return success();
}

/// An absent zero point reads as a scalar 0 of the data input's type.
Value zeroPointOr(Binder &b, unsigned zeroInput, unsigned dataInput) {
  if (b.hasInput(zeroInput))
    return b.input(zeroInput);
  return b.constScalar(b.elementType(dataInput), 0.0);
}

LogicalResult matMulIntegerHandler(Binder &b) {
  // Named values keep the IR order independent of argument evaluation order.
  Value lhsZero = zeroPointOr(b, 2, 0);
  Value rhsZero = zeroPointOr(b, 3, 1);
  return b.output(
      b.create<MatMulIntegerOp>(b.input(0), b.input(1), lhsZero, rhsZero));
}

LogicalResult convIntegerHandler(Binder &b) {
  auto w = readWindow(b, true);
  if (failed(w))
    return failure();
  Value inputZero = zeroPointOr(b, 2, 0);
  Value weightZero = zeroPointOr(b, 3, 1);
  return b.output(b.create<ConvIntegerOp>(
      b.input(0), b.input(1), inputZero, weightZero,
      ArrayRef<int64_t>(w->strides), ArrayRef<int64_t>(w->dilations),
      ArrayRef<int64_t>(w->pads), (uint64_t)b.attrInt("group", 1)));
}

/// A per-channel scale along dim `axis` of a rank-`rank` result, reshaped to
/// broadcast (scalars stay as they are).
Value broadcastableScale(Binder &b, Value scale, int64_t axis, int64_t rank) {
  auto type = dyn_cast<RankedTensorType>(scale.getType());
  if (!type || type.getRank() == 0 || type.getNumElements() == 1)
    return scale;
  std::vector<int64_t> shape(rank, 1);
  shape[axis] = type.getDimSize(0);
  return b.create<ReshapeOp>(scale, b.constI64(shape), false);
}

/// Requantizes an i32 accumulator: quantize(acc * in_scale * w_scale).
Value requantize(Binder &b, Value acc, Value inScale, Value wScale,
                 Value outScale, Value outZero) {
  if (!acc)
    return Value();
  Value accScale = b.create<MulOp>(inScale, wScale);
  Value real = b.create<MulOp>(b.castTo(acc, b.b.getF32Type()), accScale);
  return b.create<QuantizeLinearOp>(real, outScale, outZero, int64_t(1), true);
}

LogicalResult qlinearMatMulHandler(Binder &b) {
  auto out = b.rankedType(0);
  Value acc =
      b.create<MatMulIntegerOp>(b.input(0), b.input(3), b.input(2), b.input(5));
  auto accType = acc ? dyn_cast<RankedTensorType>(acc.getType()) : nullptr;
  if (!out || !accType)
    return acc ? b.fail("QLinearMatMul needs ranked inputs") : failure();
  int64_t rank = accType.getRank();
  Value aScale = rank >= 2 ? broadcastableScale(b, b.input(1), rank - 2, rank)
                           : b.input(1);
  return b.output(
      requantize(b, acc, aScale, b.input(4), b.input(6), b.input(7)));
}

LogicalResult qlinearConvHandler(Binder &b) {
  auto w = readWindow(b, true, /*weightInput=*/3);
  if (failed(w))
    return failure();
  auto type = b.rankedType(0);
  if (!type)
    return b.fail("QLinearConv needs a ranked input");
  int64_t rank = type.getRank();
  Value acc = b.create<ConvIntegerOp>(
      b.input(0), b.input(3), b.input(2), b.input(5),
      ArrayRef<int64_t>(w->strides), ArrayRef<int64_t>(w->dilations),
      ArrayRef<int64_t>(w->pads), (uint64_t)b.attrInt("group", 1));
  if (b.hasInput(8)) {
    std::vector<int64_t> shape(rank - 1, 1);
    shape[0] = -1;
    Value bias = b.create<ReshapeOp>(b.input(8), b.constI64(shape), false);
    acc = b.create<AddOp>(acc, bias);
  }
  Value wScale = broadcastableScale(b, b.input(4), 1, rank);
  return b.output(
      requantize(b, acc, b.input(1), wScale, b.input(6), b.input(7)));
}

//===----------------------------------------------------------------------===//
// Recurrent
//===----------------------------------------------------------------------===//

/// RNN, GRU and LSTM: the absent optional inputs become zeros (full-length
/// sequences), which needs static shapes.
template <int gates> LogicalResult rnnHandler(Binder &b) {
  StringRef cell = gates == 4 ? "lstm" : gates == 3 ? "gru" : "rnn";
  // Layout 1 (batch-major) transposes to the op's seq-major layout and back.
  bool batchMajor = b.attrInt("layout", 0) != 0;
  auto swap01 = [&](Value v) {
    return batchMajor ? b.create<TransposeOp>(v, ArrayRef<int64_t>{1, 0, 2})
                      : v;
  };
  auto xType = b.rankedType(0);
  if (!xType || !xType.hasStaticShape() || xType.getRank() != 3)
    return b.fail("recurrent ops need a static 3-D input");
  std::string direction = b.attrString("direction", "forward");
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  if (!b.hasAttr("hidden_size"))
    return b.fail("hidden_size is required");
  int64_t hidden = b.attrInt("hidden_size", 0);
  int64_t seq = xType.getDimSize(batchMajor ? 1 : 0),
          batch = xType.getDimSize(batchMajor ? 0 : 1);
  auto dtype = dtypeFromType(xType.getElementType());
  if (failed(dtype))
    return b.fail("unsupported element type");
  auto zeros = [&](std::vector<int64_t> shape) {
    return b.constTensor(Tensor(*dtype, shape));
  };
  Value bias = b.hasInput(3) ? b.input(3) : zeros({dirs, 2 * gates * hidden});
  Value lens =
      b.hasInput(4)
          ? b.input(4)
          : b.constTensor(Tensor::fromInt64(std::vector<int64_t>(batch, seq)));
  Value h0 = b.hasInput(5) ? swap01(b.input(5)) : zeros({dirs, batch, hidden});
  SmallVector<Value> extras;
  if (gates == 4) {
    extras.push_back(b.hasInput(6) ? swap01(b.input(6))
                                   : zeros({dirs, batch, hidden}));
    extras.push_back(b.hasInput(7) ? b.input(7) : zeros({dirs, 3 * hidden}));
  }
  std::vector<std::string> defaults =
      gates == 4   ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
      : gates == 3 ? std::vector<std::string>{"Sigmoid", "Tanh"}
                   : std::vector<std::string>{"Tanh"};
  SmallVector<Attribute> acts;
  const onnx::AttributeProto *actAttr = b.attr("activations");
  if (actAttr && actAttr->strings_size() > 0) {
    for (const std::string &name : actAttr->strings())
      acts.push_back(b.b.getStringAttr(name));
    // One direction's list applies to both.
    if (dirs == 2 && acts.size() == defaults.size())
      for (size_t i = 0; i < defaults.size(); ++i)
        acts.push_back(acts[i]);
  } else {
    for (int64_t d = 0; d < dirs; ++d)
      for (const std::string &name : defaults)
        acts.push_back(b.b.getStringAttr(name));
  }
  std::vector<float> alpha = b.attrFloats("activation_alpha"),
                     beta = b.attrFloats("activation_beta");
  FloatAttr clip;
  if (b.hasAttr("clip"))
    clip = b.b.getF32FloatAttr(b.attrFloat("clip", 0.0f));
  Operation *op = b.createOp<RnnOp>(
      swap01(b.input(0)), b.input(1), b.input(2), bias, lens, h0,
      ValueRange(extras), b.b.getStringAttr(cell), b.b.getStringAttr(direction),
      b.b.getI64IntegerAttr(hidden), b.b.getArrayAttr(acts),
      b.b.getDenseF32ArrayAttr(alpha), b.b.getDenseF32ArrayAttr(beta), clip,
      b.b.getBoolAttr(b.attrInt("linear_before_reset", 0) != 0),
      b.b.getBoolAttr(b.attrInt("input_forget", 0) != 0));
  if (!op)
    return failure();
  for (unsigned i = 0; i < op->getNumResults() && i < b.numOutputs(); ++i) {
    Value result = op->getResult(i);
    if (batchMajor)
      result =
          i == 0 ? b.create<TransposeOp>(result, ArrayRef<int64_t>{2, 0, 1, 3})
                 : swap01(result);
    if (!result)
      return failure();
    b.setOutput(i, result);
  }
  return success();
}

} // namespace

void registerMathHandlers(OpRegistry &r) {
  r.on("MatMul", 1, matMulHandler);
  r.on("Gemm", 1, gemmHandler);
  r.on("Conv", 1, convHandler);
  r.on("ConvTranspose", 1, convTransposeHandler);
  r.on("MaxPool", 1, poolHandler<PoolKind::max>);
  r.on("AveragePool", 1, poolHandler<PoolKind::avg>);
  r.on("LpPool", 1, poolHandler<PoolKind::lp>);
  r.on("MaxUnpool", 9, maxUnpoolHandler);
  r.on("GlobalMaxPool", 1, globalPoolHandler<ReduceKind::max>);
  r.on("GlobalAveragePool", 1, globalPoolHandler<ReduceKind::mean>);
  r.on("GlobalLpPool", 1, globalLpPoolHandler);
  r.on("BatchNormalization", 1, batchNormHandler);
  r.on("LayerNormalization", 17, layerNormHandler);
  r.on("InstanceNormalization", 1, instanceNormHandler);
  r.on("GroupNormalization", 18, groupNormHandler);
  r.on("LRN", 1, lrnHandler);
  r.on("MeanVarianceNormalization", 9, mvnHandler);
  r.on("LpNormalization", 1, lpNormHandler);
  r.on("Einsum", 12, einsumHandler);
  r.on("Det", 11, detHandler);
  r.on("QuantizeLinear", 10, quantizeHandler);
  r.on("DequantizeLinear", 10, dequantizeHandler);
  r.on("DynamicQuantizeLinear", 11, dynamicQuantizeHandler);
  r.on("MatMulInteger", 10, matMulIntegerHandler);
  r.on("ConvInteger", 10, convIntegerHandler);
  r.on("QLinearMatMul", 10, qlinearMatMulHandler);
  r.on("QLinearConv", 10, qlinearConvHandler);
  r.on("RNN", 1, rnnHandler<1>);
  r.on("GRU", 1, rnnHandler<3>);
  r.on("LSTM", 1, rnnHandler<4>);
}

} // namespace sluice::onnx_import
