//===- SluiceLinalgOps.cpp - contractions, convolution, normalization -----===//
//
// Result-type inference and verifiers of the contraction, convolution,
// pooling, normalization, quantization and recurrent ops. Inference checks
// what a bad model could get wrong (attribute lengths, channel counts) so the
// importer reports it at the node instead of building an invalid op.
//
//===----------------------------------------------------------------------===//

#include "dialects/sluice/SluiceOps.h"
#include "dialects/sluice/Limits.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <map>

#include <set>

using namespace mlir;
using namespace sluice;

namespace {

constexpr int64_t kDynamic = ShapedType::kDynamic;

/// The NumPy matmul result shape of two ranked shapes (1-D promoted).
FailureOr<SmallVector<int64_t>> matmulShape(std::optional<Location> loc,
                                            ArrayRef<int64_t> lhsShape,
                                            ArrayRef<int64_t> rhsShape) {
  SmallVector<int64_t> lhs(lhsShape), rhs(rhsShape);
  if (lhs.empty() || rhs.empty())
    return emitOptionalError(loc, "matmul operands must have rank >= 1");
  bool lhsVector = lhs.size() == 1, rhsVector = rhs.size() == 1;
  if (lhsVector)
    lhs.insert(lhs.begin(), 1);
  if (rhsVector)
    rhs.push_back(1);
  int64_t k1 = lhs.back(), k2 = rhs[rhs.size() - 2];
  if (!ShapedType::isDynamic(k1) && !ShapedType::isDynamic(k2) && k1 != k2)
    return emitOptionalError(loc, "matmul contraction dims differ: ", k1,
                             " vs ", k2);
  auto batch = broadcastShapes(ArrayRef<int64_t>(lhs).drop_back(2),
                               ArrayRef<int64_t>(rhs).drop_back(2));
  if (failed(batch))
    return emitOptionalError(loc, "matmul batch dims do not broadcast");
  SmallVector<int64_t> shape = *batch;
  if (!lhsVector)
    shape.push_back(lhs[lhs.size() - 2]);
  if (!rhsVector)
    shape.push_back(rhs.back());
  return shape;
}

LogicalResult inferMatMulLike(std::optional<Location> loc, Value lhs, Value rhs,
                              Type element, SmallVectorImpl<Type> &inferred) {
  auto lhsType = cast<TensorType>(lhs.getType());
  auto rhsType = cast<TensorType>(rhs.getType());
  if (!lhsType.hasRank() || !rhsType.hasRank()) {
    inferred.push_back(UnrankedTensorType::get(element));
    return success();
  }
  auto shape = matmulShape(loc, lhsType.getShape(), rhsType.getShape());
  if (failed(shape))
    return failure();
  inferred.push_back(RankedTensorType::get(*shape, element));
  return success();
}

/// Checks that a window attribute has one entry per spatial dim (pads: two).
LogicalResult checkWindowAttrs(std::optional<Location> loc, StringRef opName,
                               int64_t spatial, ArrayRef<int64_t> strides,
                               ArrayRef<int64_t> dilations,
                               ArrayRef<int64_t> pads) {
  if ((int64_t)strides.size() != spatial ||
      (int64_t)dilations.size() != spatial ||
      (int64_t)pads.size() != 2 * spatial)
    return emitOptionalError(loc, opName, " expects ", spatial,
                             " strides and dilations and ", 2 * spatial,
                             " pads, got ", strides.size(), ", ",
                             dilations.size(), " and ", pads.size());
  for (int64_t i = 0; i < spatial; ++i)
    if (strides[i] < 1 || dilations[i] < 1)
      return emitOptionalError(loc, opName,
                               " strides and dilations must be positive");
  return success();
}

/// Output size of a sliding window, or kDynamic.
int64_t windowOutputSize(int64_t in, int64_t kernel, int64_t stride,
                         int64_t dilation, int64_t padBegin, int64_t padEnd,
                         bool ceilMode) {
  if (ShapedType::isDynamic(in) || ShapedType::isDynamic(kernel))
    return kDynamic;
  int64_t span = (kernel - 1) * dilation + 1;
  int64_t numer = in + padBegin + padEnd - span;
  if (numer < 0)
    return 0;
  int64_t out = (ceilMode ? (numer + stride - 1) / stride : numer / stride) + 1;
  // A window may start in the end padding only if it still covers input.
  if (ceilMode && (out - 1) * stride >= in + padBegin)
    --out;
  return out;
}

template <typename AdaptorT>
LogicalResult inferConvLike(std::optional<Location> loc, StringRef opName,
                            AdaptorT adaptor, Type element, bool transposed,
                            ArrayRef<int64_t> outputPadding,
                            SmallVectorImpl<Type> &inferred) {
  auto inputType = cast<TensorType>(adaptor.getInput().getType());
  auto weightType = cast<TensorType>(adaptor.getWeight().getType());
  int64_t group = adaptor.getGroup();
  if (group < 1)
    return emitOptionalError(loc, opName, " group must be positive");
  if (!inputType.hasRank() || !weightType.hasRank()) {
    inferred.push_back(UnrankedTensorType::get(element));
    return success();
  }
  int64_t rank = inputType.getRank();
  if (rank < 3 || weightType.getRank() != rank)
    return emitOptionalError(loc, opName,
                             " expects input and weight of equal rank >= 3");
  int64_t spatial = rank - 2;
  if (failed(checkWindowAttrs(loc, opName, spatial, adaptor.getStrides(),
                              adaptor.getDilations(), adaptor.getPads())))
    return failure();
  if (transposed && (int64_t)outputPadding.size() != spatial)
    return emitOptionalError(loc, opName, " expects ", spatial,
                             " output_padding values");
  ArrayRef<int64_t> in = inputType.getShape(), w = weightType.getShape();
  int64_t channels = in[1];
  int64_t outChannels;
  if (!transposed) {
    if (!ShapedType::isDynamic(channels) && !ShapedType::isDynamic(w[1]) &&
        channels != w[1] * group)
      return emitOptionalError(loc, opName, " input has ", channels,
                               " channels but weight expects ", w[1], " x ",
                               group, " groups");
    outChannels = w[0];
  } else {
    if (!ShapedType::isDynamic(channels) && !ShapedType::isDynamic(w[0]) &&
        channels != w[0])
      return emitOptionalError(loc, opName, " input has ", channels,
                               " channels but weight has ", w[0]);
    outChannels = ShapedType::isDynamic(w[1]) ? kDynamic : w[1] * group;
  }
  SmallVector<int64_t> shape = {in[0], outChannels};
  ArrayRef<int64_t> strides = adaptor.getStrides(),
                    dilations = adaptor.getDilations(),
                    pads = adaptor.getPads();
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t x = in[i + 2], k = w[i + 2];
    if (ShapedType::isDynamic(x) || ShapedType::isDynamic(k)) {
      shape.push_back(kDynamic);
      continue;
    }
    int64_t size;
    if (transposed)
      size = strides[i] * (x - 1) + outputPadding[i] + (k - 1) * dilations[i] +
             1 - pads[i] - pads[i + spatial];
    else
      size = windowOutputSize(x, k, strides[i], dilations[i], pads[i],
                              pads[i + spatial], false);
    if (size < 0)
      return emitOptionalError(loc, opName, " output dim ", i,
                               " would be negative");
    shape.push_back(size);
  }
  inferred.push_back(RankedTensorType::get(shape, element));
  return success();
}

/// Window attributes must agree in rank whatever the operand types say.
LogicalResult verifyWindow(Operation *op, ArrayRef<int64_t> strides,
                           ArrayRef<int64_t> dilations,
                           ArrayRef<int64_t> pads) {
  if (dilations.size() != strides.size() || pads.size() != 2 * strides.size())
    return op->emitOpError("expects as many strides as dilations and twice "
                           "as many pads, got ")
           << strides.size() << ", " << dilations.size() << " and "
           << pads.size();
  if (llvm::any_of(strides, [](int64_t s) { return s < 1; }) ||
      llvm::any_of(dilations, [](int64_t d) { return d < 1; }))
    return op->emitOpError("strides and dilations must be positive");
  return success();
}

template <typename OpT> LogicalResult verifyConv(OpT op) {
  if (op.getGroup() < 1)
    return op.emitOpError("group must be positive, got ") << op.getGroup();
  return verifyWindow(op, op.getStrides(), op.getDilations(), op.getPads());
}

/// The shape of a per-axis quantization parameter must be a scalar or a 1-D
/// tensor as long as the input's `axis` dim.
LogicalResult verifyQuantParams(Operation *op, Value input, Value scale,
                                Value zeroPoint, int64_t axis,
                                int64_t blockSize) {
  auto inputType = cast<TensorType>(input.getType());
  auto scaleType = cast<TensorType>(scale.getType());
  if (zeroPoint) {
    auto zpType = cast<TensorType>(zeroPoint.getType());
    if (scaleType.hasRank() && zpType.hasRank() &&
        scaleType.getShape() != zpType.getShape())
      return op->emitOpError("scale and zero point shapes differ");
  }
  if (blockSize < 0)
    return op->emitOpError("block_size must be >= 0, got ") << blockSize;
  if (blockSize > 0) {
    // Blocked (opset 21): the scale has the input's rank, the blocked dim
    // holds ceil(dim / block_size) entries, the others the input's dims.
    if (!scaleType.hasRank() || !inputType.hasRank())
      return success();
    if (scaleType.getRank() != inputType.getRank())
      return op->emitOpError("blocked scale has rank ")
             << scaleType.getRank() << ", the input " << inputType.getRank();
    auto normalized = normalizeAxis(axis, inputType.getRank());
    if (failed(normalized))
      return op->emitOpError("axis ")
             << axis << " out of range for rank " << inputType.getRank();
    for (int64_t d = 0; d < inputType.getRank(); ++d) {
      int64_t dim = inputType.getDimSize(d), n = scaleType.getDimSize(d);
      if (ShapedType::isDynamic(dim) || ShapedType::isDynamic(n))
        continue;
      int64_t expected = d == *normalized ? (dim + blockSize - 1) / blockSize : dim;
      if (n != expected)
        return op->emitOpError("blocked scale dim ")
               << d << " is " << n << ", expected " << expected
               << " (block_size " << blockSize << ")";
    }
    return success();
  }
  if (!scaleType.hasRank() || scaleType.getRank() == 0)
    return success();
  if (scaleType.getRank() > 1)
    return op->emitOpError("scale must be a scalar or 1-D (per axis)");
  if (!inputType.hasRank())
    return success();
  auto normalized = normalizeAxis(axis, inputType.getRank());
  if (failed(normalized))
    return op->emitOpError("axis ")
           << axis << " out of range for rank " << inputType.getRank();
  int64_t dim = inputType.getDimSize(*normalized), n = scaleType.getDimSize(0);
  if (!ShapedType::isDynamic(dim) && !ShapedType::isDynamic(n) && n != 1 &&
      n != dim)
    return op->emitOpError("per-axis scale has ")
           << n << " values for a dim of size " << dim;
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// MatMulOp, MatMulIntegerOp
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         MatMulOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  Type element = cast<TensorType>(adaptor.getLhs().getType()).getElementType();
  return inferMatMulLike(loc, adaptor.getLhs(), adaptor.getRhs(), element,
                         inferred);
}

LogicalResult
MatMulIntegerOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                  MatMulIntegerOp::Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferred) {
  return inferMatMulLike(loc, adaptor.getLhs(), adaptor.getRhs(),
                         IntegerType::get(ctx, 32), inferred);
}

//===----------------------------------------------------------------------===//
// Convolutions
//===----------------------------------------------------------------------===//

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       ConvOp::Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  Type element =
      cast<TensorType>(adaptor.getInput().getType()).getElementType();
  return inferConvLike(loc, "conv", adaptor, element, false, {}, inferred);
}

LogicalResult ConvOp::verify() { return verifyConv(*this); }

LogicalResult
ConvTransposeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  ConvTransposeOp::Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferred) {
  Type element =
      cast<TensorType>(adaptor.getInput().getType()).getElementType();
  return inferConvLike(loc, "conv_transpose", adaptor, element, true,
                       adaptor.getOutputPadding(), inferred);
}

LogicalResult ConvTransposeOp::verify() {
  if (getOutputPadding().size() != getStrides().size())
    return emitOpError("expects one output_padding value per stride");
  return verifyConv(*this);
}

LogicalResult ConvIntegerOp::inferReturnTypes(MLIRContext *ctx,
                                              std::optional<Location> loc,
                                              ConvIntegerOp::Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  return inferConvLike(loc, "conv_integer", adaptor, IntegerType::get(ctx, 32),
                       false, {}, inferred);
}

LogicalResult ConvIntegerOp::verify() { return verifyConv(*this); }

//===----------------------------------------------------------------------===//
// PoolOp
//===----------------------------------------------------------------------===//

LogicalResult PoolOp::inferReturnTypes(MLIRContext *ctx,
                                       std::optional<Location> loc,
                                       PoolOp::Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto type = cast<TensorType>(adaptor.getInput().getType());
  Type element = type.getElementType();
  Type i64 = IntegerType::get(ctx, 64);
  bool withIndices = adaptor.getReturnIndices();
  if (withIndices && adaptor.getKind() != PoolKind::max)
    return emitOptionalError(loc, "pool indices exist only for max pooling");
  if (!type.hasRank()) {
    inferred.push_back(type);
    if (withIndices)
      inferred.push_back(UnrankedTensorType::get(i64));
    return success();
  }
  int64_t spatial = type.getRank() - 2;
  if (spatial < 1)
    return emitOptionalError(loc, "pool expects an input of rank >= 3");
  ArrayRef<int64_t> kernel = adaptor.getKernelShape();
  if ((int64_t)kernel.size() != spatial)
    return emitOptionalError(loc, "pool expects ", spatial,
                             " kernel dims, got ", kernel.size());
  if (llvm::any_of(kernel, [](int64_t k) { return k < 1; }))
    return emitOptionalError(loc, "pool kernel dims must be positive");
  if (failed(checkWindowAttrs(loc, "pool", spatial, adaptor.getStrides(),
                              adaptor.getDilations(), adaptor.getPads())))
    return failure();
  SmallVector<int64_t> shape = {type.getDimSize(0), type.getDimSize(1)};
  for (int64_t i = 0; i < spatial; ++i)
    shape.push_back(windowOutputSize(
        type.getDimSize(i + 2), kernel[i], adaptor.getStrides()[i],
        adaptor.getDilations()[i], adaptor.getPads()[i],
        adaptor.getPads()[i + spatial], adaptor.getCeilMode()));
  inferred.push_back(RankedTensorType::get(shape, element));
  if (withIndices)
    inferred.push_back(RankedTensorType::get(shape, i64));
  return success();
}

LogicalResult PoolOp::verify() {
  if (getKind() == PoolKind::lp && getP() < 1)
    return emitOpError("lp pooling needs p >= 1");
  if (getStorageOrder() != 0 && getStorageOrder() != 1)
    return emitOpError("storage_order must be 0 or 1");
  if (getKernelShape().size() != getStrides().size() ||
      llvm::any_of(getKernelShape(), [](int64_t k) { return k < 1; }))
    return emitOpError("expects one positive kernel dim per stride");
  return verifyWindow(*this, getStrides(), getDilations(), getPads());
}

//===----------------------------------------------------------------------===//
// MaxUnpoolOp
//===----------------------------------------------------------------------===//

LogicalResult MaxUnpoolOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            MaxUnpoolOp::Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto type = cast<TensorType>(adaptor.getInput().getType());
  Type element = type.getElementType();
  if (Value outputShape = adaptor.getOutputShape()) {
    if (auto shape = getConstantIntValues(outputShape)) {
      if (llvm::any_of(*shape, [](int64_t d) { return d < 0; }))
        return emitOptionalError(loc, "max_unpool output_shape is negative");
      inferred.push_back(RankedTensorType::get(*shape, element));
      return success();
    }
    auto shapeType = cast<TensorType>(outputShape.getType());
    if (shapeType.hasStaticShape() && shapeType.getNumElements() > kMaxInferredRank)
      return emitOptionalError(loc, "max_unpool output_shape of ", shapeType.getNumElements(),
                               " dims; at most ", kMaxInferredRank);
    if (shapeType.hasStaticShape())
      inferred.push_back(RankedTensorType::get(
          SmallVector<int64_t>(shapeType.getDimSize(0), kDynamic), element));
    else
      inferred.push_back(UnrankedTensorType::get(element));
    return success();
  }
  if (!type.hasRank()) {
    inferred.push_back(type);
    return success();
  }
  int64_t spatial = type.getRank() - 2;
  ArrayRef<int64_t> kernel = adaptor.getKernelShape(),
                    strides = adaptor.getStrides(), pads = adaptor.getPads();
  if (spatial < 1 || (int64_t)kernel.size() != spatial ||
      (int64_t)strides.size() != spatial || (int64_t)pads.size() != 2 * spatial)
    return emitOptionalError(loc, "max_unpool expects ", spatial,
                             " kernel dims and strides and ", 2 * spatial,
                             " pads");
  SmallVector<int64_t> shape = {type.getDimSize(0), type.getDimSize(1)};
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t in = type.getDimSize(i + 2);
    shape.push_back(ShapedType::isDynamic(in)
                        ? kDynamic
                        : (in - 1) * strides[i] + kernel[i] - pads[i] -
                              pads[i + spatial]);
    if (shape.back() != kDynamic && shape.back() < 0)
      return emitOptionalError(loc, "max_unpool output dim ", i,
                               " would be negative");
  }
  inferred.push_back(RankedTensorType::get(shape, element));
  return success();
}

LogicalResult MaxUnpoolOp::verify() {
  if (getKernelShape().size() != getStrides().size() ||
      getPads().size() != 2 * getStrides().size())
    return emitOpError("expects as many kernel dims as strides and twice as "
                       "many pads");
  if (llvm::any_of(getStrides(), [](int64_t s) { return s < 1; }) ||
      llvm::any_of(getKernelShape(), [](int64_t k) { return k < 1; }))
    return emitOpError("kernel dims and strides must be positive");
  auto inputType = cast<TensorType>(getInput().getType());
  auto indicesType = cast<TensorType>(getIndices().getType());
  if (inputType.hasRank() && indicesType.hasRank() &&
      failed(
          verifyCompatibleShape(inputType.getShape(), indicesType.getShape())))
    return emitOpError("indices shape differs from the input's");
  return success();
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

/// Per-channel parameters must hold one value per channel (dim 1) when both
/// sizes are known.
LogicalResult checkPerChannel(std::optional<Location> loc, StringRef opName,
                              TensorType input, ValueRange params) {
  if (!input.hasRank() || input.getRank() < 2 || input.isDynamicDim(1))
    return success();
  int64_t channels = input.getDimSize(1);
  for (Value param : params) {
    auto type = cast<TensorType>(param.getType());
    if (!type.hasStaticShape())
      continue;
    if (type.getNumElements() != channels)
      return emitOptionalError(loc, opName, " parameter has ",
                               type.getNumElements(), " values for ", channels,
                               " channels");
  }
  return success();
}

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            BatchNormOp::Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto type = cast<TensorType>(adaptor.getInput().getType());
  if (type.hasRank() && type.getRank() < 2)
    return emitOptionalError(loc, "batch_norm expects an input of rank >= 2");
  if (failed(checkPerChannel(loc, "batch_norm", type,
                             {adaptor.getScale(), adaptor.getBias(),
                              adaptor.getMean(), adaptor.getVariance()})))
    return failure();
  inferred.push_back(type);
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            LayerNormOp::Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto type = cast<TensorType>(adaptor.getInput().getType());
  Type f32 = Float32Type::get(ctx);
  inferred.push_back(type);
  if (!type.hasRank()) {
    inferred.push_back(UnrankedTensorType::get(f32));
    inferred.push_back(UnrankedTensorType::get(f32));
    return success();
  }
  auto axis = normalizeAxis(adaptor.getAxis(), type.getRank());
  if (failed(axis))
    return emitOptionalError(loc, "layer_norm axis ", (int64_t)adaptor.getAxis(),
                             " out of range for rank ", type.getRank());
  SmallVector<int64_t> statShape(type.getShape());
  for (int64_t i = *axis; i < type.getRank(); ++i)
    statShape[i] = 1;
  inferred.push_back(RankedTensorType::get(statShape, f32));
  inferred.push_back(RankedTensorType::get(statShape, f32));
  return success();
}

LogicalResult LayerNormOp::verify() {
  auto type = cast<TensorType>(getInput().getType());
  auto scaleType = cast<TensorType>(getScale().getType());
  if (scaleType.getElementType() != type.getElementType())
    return emitOpError("scale element type differs from the input's");
  return success();
}

LogicalResult
InstanceNormOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                 InstanceNormOp::Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  auto type = cast<TensorType>(adaptor.getInput().getType());
  if (type.hasRank() && type.getRank() < 3)
    return emitOptionalError(loc,
                             "instance_norm expects an input of rank >= 3");
  if (failed(checkPerChannel(loc, "instance_norm", type,
                             {adaptor.getScale(), adaptor.getBias()})))
    return failure();
  inferred.push_back(type);
  return success();
}

LogicalResult GroupNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            GroupNormOp::Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto type = cast<TensorType>(adaptor.getInput().getType());
  if (type.hasRank() && type.getRank() < 2)
    return emitOptionalError(loc, "group_norm expects an input of rank >= 2");
  inferred.push_back(type);
  return success();
}

LogicalResult GroupNormOp::verify() {
  auto type = cast<TensorType>(getInput().getType());
  int64_t groups = getNumGroups();
  if (groups < 1)
    return emitOpError("num_groups must be positive");
  if (type.hasRank() && !type.isDynamicDim(1) && type.getDimSize(1) % groups)
    return emitOpError("channels (")
           << type.getDimSize(1) << ") are not divisible by num_groups ("
           << groups << ")";
  return success();
}

LogicalResult LrnOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      LrnOp::Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  if (adaptor.getSize() < 1)
    return emitOptionalError(loc, "lrn size must be positive");
  inferred.push_back(adaptor.getInput().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// EinsumOp
//===----------------------------------------------------------------------===//

std::string
EinsumOp::parseEquation(StringRef equation, ArrayRef<int64_t> ranks,
                        SmallVectorImpl<SmallVector<int64_t>> &operandLabels,
                        SmallVectorImpl<int64_t> &outputLabels) {
  std::string eq;
  for (char c : equation)
    if (c != ' ')
      eq.push_back(c);
  StringRef text(eq);
  auto [lhs, rhs] = text.split("->");
  bool explicitOutput = text.contains("->");
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  if (terms.size() != ranks.size())
    return "equation has " + std::to_string(terms.size()) + " inputs, op has " +
           std::to_string(ranks.size());
  // Letters of each term; the ellipsis' position (or -1).
  int64_t maxEllipsis = 0;
  SmallVector<std::pair<std::string, int64_t>> parsed;
  for (auto [term, rank] : llvm::zip(terms, ranks)) {
    std::string letters;
    int64_t ellipsisAt = -1;
    for (size_t i = 0; i < term.size(); ++i) {
      if (term.substr(i).starts_with("...")) {
        if (ellipsisAt >= 0)
          return "more than one ellipsis in a term";
        ellipsisAt = letters.size();
        i += 2;
      } else if (llvm::isAlpha(term[i])) {
        letters.push_back(term[i]);
      } else {
        return std::string("unexpected character '") + term[i] + "'";
      }
    }
    int64_t ellipsisDims = rank - (int64_t)letters.size();
    if (ellipsisDims < 0 || (ellipsisAt < 0 && ellipsisDims != 0))
      return "term '" + term.str() + "' does not match an operand of rank " +
             std::to_string(rank);
    maxEllipsis = std::max(maxEllipsis, ellipsisDims);
    parsed.push_back({letters, ellipsisAt});
  }
  std::map<int64_t, int> counts;
  for (auto [entry, rank] : llvm::zip(parsed, ranks)) {
    auto &[letters, ellipsisAt] = entry;
    int64_t ellipsisDims = rank - (int64_t)letters.size();
    SmallVector<int64_t> labels;
    for (int64_t i = 0; i < (int64_t)letters.size(); ++i) {
      if (i == ellipsisAt)
        for (int64_t e = 0; e < ellipsisDims; ++e)
          labels.push_back(256 + maxEllipsis - ellipsisDims + e);
      labels.push_back((unsigned char)letters[i]);
      ++counts[(unsigned char)letters[i]];
    }
    if (ellipsisAt == (int64_t)letters.size())
      for (int64_t e = 0; e < ellipsisDims; ++e)
        labels.push_back(256 + maxEllipsis - ellipsisDims + e);
    operandLabels.push_back(labels);
  }
  outputLabels.clear();
  if (explicitOutput) {
    bool sawEllipsis = false;
    for (size_t i = 0; i < rhs.size(); ++i) {
      if (rhs.substr(i).starts_with("...")) {
        if (sawEllipsis)
          return "more than one ellipsis in the output";
        sawEllipsis = true;
        for (int64_t e = 0; e < maxEllipsis; ++e)
          outputLabels.push_back(256 + e);
        i += 2;
      } else if (llvm::isAlpha(rhs[i])) {
        int64_t label = (unsigned char)rhs[i];
        if (!counts.count(label))
          return std::string("output label '") + rhs[i] +
                 "' is not in any input";
        if (llvm::is_contained(outputLabels, label))
          return std::string("output label '") + rhs[i] + "' repeats";
        outputLabels.push_back(label);
      } else {
        return std::string("unexpected character '") + rhs[i] + "'";
      }
    }
    if (!sawEllipsis && maxEllipsis > 0)
      return "the output omits the ellipsis dims";
  } else {
    for (int64_t e = 0; e < maxEllipsis; ++e)
      outputLabels.push_back(256 + e);
    for (auto [label, count] : counts)
      if (count == 1)
        outputLabels.push_back(label);
  }
  return "";
}

LogicalResult EinsumOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         EinsumOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  if (adaptor.getInputs().empty())
    return emitOptionalError(loc, "einsum needs at least one input");
  Type element =
      cast<TensorType>(adaptor.getInputs()[0].getType()).getElementType();
  SmallVector<int64_t> ranks;
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value input : adaptor.getInputs()) {
    auto type = cast<TensorType>(input.getType());
    if (!type.hasRank()) {
      inferred.push_back(UnrankedTensorType::get(element));
      return success();
    }
    ranks.push_back(type.getRank());
    shapes.push_back(type.getShape());
  }
  SmallVector<SmallVector<int64_t>> labels;
  SmallVector<int64_t> outLabels;
  std::string error =
      parseEquation(adaptor.getEquation(), ranks, labels, outLabels);
  if (!error.empty())
    return emitOptionalError(loc, "einsum '", adaptor.getEquation(),
                             "': ", error);
  // Sizes per label: 1 broadcasts (ellipsis dims only), dynamic is unknown.
  std::map<int64_t, int64_t> sizes;
  for (auto [operandLabels, shape] : llvm::zip(labels, shapes))
    for (auto [label, size] : llvm::zip(operandLabels, shape)) {
      auto it = sizes.find(label);
      if (it == sizes.end() || it->second == 1 ||
          (ShapedType::isDynamic(it->second) && size != 1)) {
        sizes[label] = size;
        continue;
      }
      if (!ShapedType::isDynamic(size) && size != 1 &&
          !ShapedType::isDynamic(it->second) && size != it->second)
        return emitOptionalError(
            loc, "einsum dims of one label differ: ", it->second, " vs ", size);
    }
  SmallVector<int64_t> shape;
  for (int64_t label : outLabels)
    shape.push_back(sizes[label]);
  inferred.push_back(RankedTensorType::get(shape, element));
  return success();
}

//===----------------------------------------------------------------------===//
// DetOp
//===----------------------------------------------------------------------===//

LogicalResult DetOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      DetOp::Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  auto type = cast<TensorType>(adaptor.getInput().getType());
  if (!type.hasRank()) {
    inferred.push_back(type);
    return success();
  }
  int64_t rank = type.getRank();
  if (rank < 2)
    return emitOptionalError(loc, "det expects rank >= 2");
  int64_t m = type.getDimSize(rank - 2), n = type.getDimSize(rank - 1);
  if (!ShapedType::isDynamic(m) && !ShapedType::isDynamic(n) && m != n)
    return emitOptionalError(loc, "det expects square matrices, got ", m, "x",
                             n);
  inferred.push_back(RankedTensorType::get(type.getShape().drop_back(2),
                                           type.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Quantization
//===----------------------------------------------------------------------===//

LogicalResult
QuantizeLinearOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location>,
                                   QuantizeLinearOp::Adaptor adaptor,
                                   SmallVectorImpl<Type> &inferred) {
  Type element = IntegerType::get(ctx, 8, IntegerType::Unsigned);
  if (Value zp = adaptor.getZeroPoint())
    element = cast<TensorType>(zp.getType()).getElementType();
  auto type = cast<TensorType>(adaptor.getInput().getType());
  inferred.push_back(type.clone(element));
  return success();
}

LogicalResult QuantizeLinearOp::verify() {
  return verifyQuantParams(*this, getInput(), getScale(), getZeroPoint(),
                           getAxis(), getBlockSize());
}

LogicalResult
DequantizeLinearOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                     DequantizeLinearOp::Adaptor adaptor,
                                     SmallVectorImpl<Type> &inferred) {
  Type element =
      cast<TensorType>(adaptor.getScale().getType()).getElementType();
  auto type = cast<TensorType>(adaptor.getInput().getType());
  inferred.push_back(type.clone(element));
  return success();
}

LogicalResult DequantizeLinearOp::verify() {
  if (Value zp = getZeroPoint())
    if (cast<TensorType>(zp.getType()).getElementType() !=
        cast<TensorType>(getInput().getType()).getElementType())
      return emitOpError("zero point element type differs from the input's");
  return verifyQuantParams(*this, getInput(), getScale(), getZeroPoint(),
                           getAxis(), getBlockSize());
}

//===----------------------------------------------------------------------===//
// RnnOp
//===----------------------------------------------------------------------===//

LogicalResult RnnOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      RnnOp::Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  auto type = cast<TensorType>(adaptor.getInput().getType());
  Type element = type.getElementType();
  StringRef cell = adaptor.getCell(), direction = adaptor.getDirection();
  if (cell != "rnn" && cell != "gru" && cell != "lstm")
    return emitOptionalError(loc, "rnn cell must be rnn, gru or lstm, got '",
                             cell, "'");
  if (direction != "forward" && direction != "reverse" &&
      direction != "bidirectional")
    return emitOptionalError(loc, "rnn direction '", direction,
                             "' is not forward, reverse or bidirectional");
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  int64_t hidden = adaptor.getHiddenSize();
  if (hidden < 1)
    return emitOptionalError(loc, "rnn hidden_size must be positive");
  size_t extras = adaptor.getExtras().size();
  if (cell == "lstm" ? extras != 2 : extras != 0)
    return emitOptionalError(loc, "rnn expects initial_c and peepholes ",
                             "operands exactly for lstm");
  int64_t seq = kDynamic, batch = kDynamic;
  if (type.hasRank()) {
    if (type.getRank() != 3)
      return emitOptionalError(loc, "rnn input must be (seq, batch, features)");
    seq = type.getDimSize(0);
    batch = type.getDimSize(1);
  }
  inferred.push_back(
      RankedTensorType::get({seq, dirs, batch, hidden}, element));
  inferred.push_back(RankedTensorType::get({dirs, batch, hidden}, element));
  if (cell == "lstm")
    inferred.push_back(RankedTensorType::get({dirs, batch, hidden}, element));
  return success();
}

LogicalResult RnnOp::verify() {
  StringRef cell = getCell();
  size_t perDirection = cell == "lstm" ? 3 : cell == "gru" ? 2 : 1;
  size_t dirs = getDirection() == "bidirectional" ? 2 : 1;
  size_t acts = getActivations().size();
  if (acts != perDirection * dirs)
    return emitOpError("expects ")
           << perDirection * dirs << " activations, got " << acts;
  static const std::set<std::string> known = {
      "Relu",       "Tanh",        "Sigmoid",
      "Affine",     "LeakyRelu",   "ThresholdedRelu",
      "ScaledTanh", "HardSigmoid", "Elu",
      "Softsign",   "Softplus"};
  for (Attribute a : getActivations())
    if (!known.count(cast<StringAttr>(a).getValue().str()))
      return emitOpError("unknown activation '")
             << cast<StringAttr>(a).getValue() << "'";
  return success();
}

#define GET_OP_CLASSES
#include "dialects/sluice/SluiceLinalgOps.cpp.inc"
