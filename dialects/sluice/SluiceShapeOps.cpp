//===- SluiceShapeOps.cpp - shape and data-movement ops -------------------===//

#include "dialects/sluice/SluiceOps.h"
#include "dialects/sluice/Limits.h"

#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace sluice;

//===----------------------------------------------------------------------===//
// ShapeOp
//===----------------------------------------------------------------------===//

LogicalResult ShapeOp::inferReturnTypes(MLIRContext *ctx,
                                        std::optional<Location>,
                                        ShapeOp::Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto type = cast<TensorType>(adaptor.getInput().getType());
  int64_t length = ShapedType::kDynamic;
  if (type.hasRank()) {
    auto [s, e] = shapeRange(type.getRank(), adaptor.getStart(),
                             adaptor.getEnd());
    length = e - s;
  }
  inferred.push_back(RankedTensorType::get({length}, IntegerType::get(ctx, 64)));
  return success();
}

OpFoldResult ShapeOp::fold(FoldAdaptor) {
  auto type = dyn_cast<RankedTensorType>(getInput().getType());
  if (!type)
    return {};
  auto [s, e] = shapeRange(type.getRank(), getStart(), getEnd());
  ArrayRef<int64_t> dims = type.getShape().slice(s, e - s);
  if (llvm::any_of(dims, ShapedType::isDynamic))
    return {};
  auto resultType =
      RankedTensorType::get({(int64_t)dims.size()}, IntegerType::get(getContext(), 64));
  return DenseElementsAttr::get(resultType, dims);
}

//===----------------------------------------------------------------------===//
// ReshapeOp
//===----------------------------------------------------------------------===//

/// Resolves an ONNX Reshape target against the input shape. Unknown entries
/// stay dynamic; fails on a shape that cannot hold the input's elements.
static FailureOr<SmallVector<int64_t>>
resolveReshape(std::optional<Location> loc, ArrayRef<int64_t> input,
               ArrayRef<int64_t> target, bool allowZero) {
  SmallVector<int64_t> out(target);
  int64_t inferIndex = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (inferIndex >= 0)
        return emitOptionalError(loc, "reshape target has more than one -1");
      inferIndex = i;
    } else if (out[i] == 0 && !allowZero) {
      if (i >= input.size())
        return emitOptionalError(loc, "reshape target copies dim ", i,
                                 " beyond the input rank ", input.size());
      out[i] = input[i];
    } else if (out[i] < 0) {
      return emitOptionalError(loc, "reshape target has negative dim ", out[i]);
    }
  }
  bool inputStatic = llvm::none_of(input, ShapedType::isDynamic);
  int64_t inputCount = 1;
  for (int64_t d : input)
    inputCount *= ShapedType::isDynamic(d) ? 1 : d;
  int64_t known = 1;
  bool outputStatic = true;
  for (size_t i = 0; i < out.size(); ++i) {
    if ((int64_t)i == inferIndex)
      continue;
    if (ShapedType::isDynamic(out[i]))
      outputStatic = false;
    else
      known *= out[i];
  }
  if (inferIndex >= 0) {
    if (inputStatic && outputStatic) {
      if (known == 0 || inputCount % known != 0)
        return emitOptionalError(loc, "cannot reshape ", inputCount,
                                 " elements with a -1 dim and ", known,
                                 " known elements");
      out[inferIndex] = inputCount / known;
    } else {
      out[inferIndex] = ShapedType::kDynamic;
    }
  } else if (inputStatic && outputStatic && known != inputCount) {
    return emitOptionalError(loc, "cannot reshape ", inputCount,
                             " elements into ", known);
  }
  return out;
}

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          ReshapeOp::Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto inputType = cast<TensorType>(adaptor.getInput().getType());
  auto shapeType = cast<RankedTensorType>(adaptor.getShape().getType());
  Type element = inputType.getElementType();
  auto target = getConstantIntValues(adaptor.getShape());
  if (!target) {
    if (shapeType.isDynamicDim(0)) {
      inferred.push_back(UnrankedTensorType::get(element));
    } else {
      if (shapeType.getDimSize(0) > kMaxInferredRank)
        return emitOptionalError(loc, "reshape to ", shapeType.getDimSize(0),
                                 " dims (a shape operand of that length); at most ",
                                 kMaxInferredRank);
      SmallVector<int64_t> shape(shapeType.getDimSize(0), ShapedType::kDynamic);
      inferred.push_back(RankedTensorType::get(shape, element));
    }
    return success();
  }
  SmallVector<int64_t> input;
  if (inputType.hasRank())
    input.assign(inputType.getShape().begin(), inputType.getShape().end());
  else
    input.assign(target->size(), ShapedType::kDynamic);
  auto shape = resolveReshape(loc, input, *target, adaptor.getAllowzero());
  if (failed(shape))
    return failure();
  inferred.push_back(RankedTensorType::get(*shape, element));
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType() &&
      cast<RankedTensorType>(getType()).hasStaticShape())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// TransposeOp
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            TransposeOp::Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto type = cast<TensorType>(adaptor.getInput().getType());
  if (!type.hasRank()) {
    inferred.push_back(type);
    return success();
  }
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if ((int64_t)perm.size() != type.getRank())
    return emitOptionalError(loc, "transpose perm has ", perm.size(),
                             " entries for rank ", type.getRank());
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= type.getRank())
      return emitOptionalError(loc, "transpose perm entry ", p, " out of range");
    shape.push_back(type.getDimSize(p));
  }
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

LogicalResult TransposeOp::verify() {
  SmallVector<bool> seen(getPerm().size(), false);
  for (int64_t p : getPerm()) {
    if (p < 0 || p >= (int64_t)seen.size() || seen[p])
      return emitOpError("perm must be a permutation of [0, rank)");
    seen[p] = true;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

static constexpr int64_t kDynamic = ShapedType::kDynamic;

/// The static length of a 1-D parameter operand, or kDynamic.
static int64_t staticLength(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.getRank() == 1 ? type.getDimSize(0) : kDynamic;
}

/// The static element count of a tensor value, or kDynamic.
static int64_t staticNumElements(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.hasStaticShape() ? type.getNumElements() : kDynamic;
}

/// A result of `rank` dynamic dims, or unranked when the rank is unknown.
static Type dynamicOfRank(int64_t rank, Type element) {
  if (rank == kDynamic)
    return UnrankedTensorType::get(element);
  return RankedTensorType::get(SmallVector<int64_t>(rank, kDynamic), element);
}

/// Normalizes constant `axes` against `rank`, rejecting repeats.
static FailureOr<SmallVector<int64_t>>
normalizeAxes(std::optional<Location> loc, ArrayRef<int64_t> axes, int64_t rank,
              StringRef what) {
  SmallVector<int64_t> out;
  SmallVector<bool> seen(rank, false);
  for (int64_t axis : axes) {
    auto a = normalizeAxis(axis, rank);
    if (failed(a))
      return emitOptionalError(loc, what, " axis ", axis,
                               " is out of range for rank ", rank);
    if (seen[*a])
      return emitOptionalError(loc, what, " axis ", axis, " is repeated");
    seen[*a] = true;
    out.push_back(*a);
  }
  return out;
}

//===----------------------------------------------------------------------===//
// SliceOp
//===----------------------------------------------------------------------===//

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        SliceOp::Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto type = cast<TensorType>(adaptor.getInput().getType());
  Type element = type.getElementType();
  int64_t n = kDynamic;
  for (Value v : {adaptor.getStarts(), adaptor.getEnds(), adaptor.getAxes(),
                  adaptor.getSteps()}) {
    int64_t len = staticLength(v);
    if (len != kDynamic && n != kDynamic && len != n)
      return emitOptionalError(loc, "slice starts, ends, axes and steps must "
                                    "have the same length");
    if (len != kDynamic)
      n = len;
  }
  if (!type.hasRank()) {
    inferred.push_back(type);
    return success();
  }
  int64_t rank = type.getRank();
  auto axesValues = getConstantIntValues(adaptor.getAxes());
  if (!axesValues) {
    inferred.push_back(dynamicOfRank(rank, element));
    return success();
  }
  auto axes = normalizeAxes(loc, *axesValues, rank, "slice");
  if (failed(axes))
    return failure();
  auto starts = getConstantIntValues(adaptor.getStarts());
  auto ends = getConstantIntValues(adaptor.getEnds());
  auto steps = getConstantIntValues(adaptor.getSteps());
  if (steps && llvm::is_contained(*steps, 0))
    return emitOptionalError(loc, "slice step cannot be 0");
  SmallVector<int64_t> shape(type.getShape());
  for (auto [i, axis] : llvm::enumerate(*axes)) {
    int64_t dim = shape[axis];
    if (!starts || !ends || !steps || ShapedType::isDynamic(dim) ||
        i >= starts->size() || i >= ends->size() || i >= steps->size()) {
      shape[axis] = kDynamic;
      continue;
    }
    shape[axis] = sliceRange(dim, (*starts)[i], (*ends)[i], (*steps)[i]).second;
  }
  inferred.push_back(RankedTensorType::get(shape, element));
  return success();
}

//===----------------------------------------------------------------------===//
// ConcatOp
//===----------------------------------------------------------------------===//

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         ConcatOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  if (adaptor.getInputs().empty())
    return emitOptionalError(loc, "concat needs at least one input");
  Type element = cast<TensorType>(adaptor.getInputs()[0].getType()).getElementType();
  std::optional<SmallVector<int64_t>> shape;
  int64_t axis = 0;
  for (Value input : adaptor.getInputs()) {
    auto type = dyn_cast<RankedTensorType>(input.getType());
    if (!type)
      continue;
    if (!shape) {
      auto a = normalizeAxis(adaptor.getAxis(), type.getRank());
      if (failed(a))
        return emitOptionalError(loc, "concat axis ", (int64_t)adaptor.getAxis(),
                                 " is out of range for rank ", type.getRank());
      axis = *a;
      shape = SmallVector<int64_t>(type.getShape());
      shape->data()[axis] = 0;
    }
    if (type.getRank() != (int64_t)shape->size())
      return emitOptionalError(loc, "concat inputs must have the same rank");
    for (int64_t d = 0; d < type.getRank(); ++d) {
      int64_t dim = type.getDimSize(d);
      int64_t &out = (*shape)[d];
      if (d == axis) {
        out = ShapedType::isDynamic(out) || ShapedType::isDynamic(dim)
                  ? kDynamic
                  : out + dim;
      } else if (ShapedType::isDynamic(out)) {
        out = dim;
      } else if (!ShapedType::isDynamic(dim) && dim != out) {
        return emitOptionalError(loc, "concat inputs differ in dim ", d, ": ",
                                 out, " vs ", dim);
      }
    }
  }
  // An unranked input leaves the size along the axis unknown.
  if (shape && llvm::any_of(adaptor.getInputs(), [](Value v) {
        return !isa<RankedTensorType>(v.getType());
      }))
    (*shape)[axis] = kDynamic;
  inferred.push_back(makeTensorType(
      shape ? std::optional<ArrayRef<int64_t>>(*shape) : std::nullopt, element));
  return success();
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1 && getInputs()[0].getType() == getType())
    return getInputs()[0];
  return {};
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  return success();
}

//===----------------------------------------------------------------------===//
// SplitOp
//===----------------------------------------------------------------------===//

LogicalResult SplitOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        SplitOp::Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto type = cast<TensorType>(adaptor.getInput().getType());
  int64_t count = adaptor.getNumOutputs();
  if (count < 1)
    return emitOptionalError(loc, "split needs at least one output");
  if (adaptor.getSizes() && staticLength(adaptor.getSizes()) != kDynamic &&
      staticLength(adaptor.getSizes()) != count)
    return emitOptionalError(loc, "split has ", staticLength(adaptor.getSizes()),
                             " sizes for ", count, " outputs");
  if (!type.hasRank()) {
    inferred.append(count, type);
    return success();
  }
  auto axis = normalizeAxis(adaptor.getAxis(), type.getRank());
  if (failed(axis))
    return emitOptionalError(loc, "split axis ", (int64_t)adaptor.getAxis(),
                             " is out of range for rank ", type.getRank());
  int64_t dim = type.getDimSize(*axis);
  SmallVector<int64_t> pieces(count, kDynamic);
  if (adaptor.getSizes()) {
    if (auto sizes = getConstantIntValues(adaptor.getSizes())) {
      int64_t total = 0;
      for (int64_t s : *sizes) {
        if (s < 0)
          return emitOptionalError(loc, "split size ", s, " is negative");
        total += s;
      }
      if (!ShapedType::isDynamic(dim) && total != dim)
        return emitOptionalError(loc, "split sizes sum to ", total,
                                 " but the dim is ", dim);
      pieces.assign(sizes->begin(), sizes->end());
    }
  } else if (!ShapedType::isDynamic(dim)) {
    int64_t chunk = (dim + count - 1) / count;
    for (int64_t i = 0; i < count; ++i)
      pieces[i] = std::clamp<int64_t>(dim - i * chunk, 0, chunk);
  }
  for (int64_t piece : pieces) {
    SmallVector<int64_t> shape(type.getShape());
    shape[*axis] = piece;
    inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  }
  return success();
}

LogicalResult SplitOp::verify() {
  if ((int64_t)getNumOutputs() != (int64_t)getNumResults())
    return emitOpError("num_outputs is ")
           << getNumOutputs() << " but the op has " << getNumResults()
           << " results";
  return success();
}

//===----------------------------------------------------------------------===//
// SqueezeOp, UnsqueezeOp
//===----------------------------------------------------------------------===//

LogicalResult SqueezeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          SqueezeOp::Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto type = cast<TensorType>(adaptor.getInput().getType());
  Type element = type.getElementType();
  if (!type.hasRank()) {
    inferred.push_back(type);
    return success();
  }
  int64_t rank = type.getRank();
  SmallVector<int64_t> shape;
  if (!adaptor.getAxes()) {
    // Which dims go depends on their sizes: unknown with a dynamic dim.
    if (!type.hasStaticShape()) {
      inferred.push_back(UnrankedTensorType::get(element));
      return success();
    }
    for (int64_t d : type.getShape())
      if (d != 1)
        shape.push_back(d);
    inferred.push_back(RankedTensorType::get(shape, element));
    return success();
  }
  auto axesValues = getConstantIntValues(adaptor.getAxes());
  if (!axesValues) {
    int64_t n = staticLength(adaptor.getAxes());
    inferred.push_back(
        dynamicOfRank(n == kDynamic ? kDynamic : rank - n, element));
    return success();
  }
  auto axes = normalizeAxes(loc, *axesValues, rank, "squeeze");
  if (failed(axes))
    return failure();
  for (int64_t d = 0; d < rank; ++d) {
    int64_t dim = type.getDimSize(d);
    if (!llvm::is_contained(*axes, d)) {
      shape.push_back(dim);
      continue;
    }
    if (!ShapedType::isDynamic(dim) && dim != 1)
      return emitOptionalError(loc, "squeeze of dim ", d, " of size ", dim);
  }
  inferred.push_back(RankedTensorType::get(shape, element));
  return success();
}

LogicalResult UnsqueezeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            UnsqueezeOp::Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto type = cast<TensorType>(adaptor.getInput().getType());
  Type element = type.getElementType();
  int64_t n = staticLength(adaptor.getAxes());
  if (!type.hasRank() || n == kDynamic) {
    inferred.push_back(UnrankedTensorType::get(element));
    return success();
  }
  int64_t rank = type.getRank() + n;
  auto axesValues = getConstantIntValues(adaptor.getAxes());
  if (!axesValues) {
    inferred.push_back(dynamicOfRank(rank, element));
    return success();
  }
  auto axes = normalizeAxes(loc, *axesValues, rank, "unsqueeze");
  if (failed(axes))
    return failure();
  SmallVector<int64_t> shape;
  auto inputDims = type.getShape();
  for (int64_t d = 0, next = 0; d < rank; ++d)
    shape.push_back(llvm::is_contained(*axes, d) ? 1 : inputDims[next++]);
  inferred.push_back(RankedTensorType::get(shape, element));
  return success();
}

namespace {
/// Rewrites a squeeze or unsqueeze between static shapes to a reshape to a
/// constant shape, the one rank-changing op later phases need to know.
template <typename OpTy>
struct StaticRankChangeToReshape : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    auto inType = dyn_cast<RankedTensorType>(op.getInput().getType());
    auto outType = dyn_cast<RankedTensorType>(op.getType());
    if (!inType || !outType || !inType.hasStaticShape() ||
        !outType.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "shapes are not static");
    auto shapeType =
        RankedTensorType::get({outType.getRank()}, rewriter.getI64Type());
    Value shape = ConstantOp::create(
        rewriter, op.getLoc(),
        DenseElementsAttr::get(shapeType, outType.getShape()));
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, outType, op.getInput(), shape,
                                           false);
    return success();
  }
};
} // namespace

void SqueezeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                            MLIRContext *context) {
  patterns.add<StaticRankChangeToReshape<SqueezeOp>>(context);
}

void UnsqueezeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                              MLIRContext *context) {
  patterns.add<StaticRankChangeToReshape<UnsqueezeOp>>(context);
}

//===----------------------------------------------------------------------===//
// ExpandOp, TileOp, PadOp
//===----------------------------------------------------------------------===//

LogicalResult ExpandOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         ExpandOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto type = cast<TensorType>(adaptor.getInput().getType());
  Type element = type.getElementType();
  int64_t n = staticLength(adaptor.getShape());
  if (n != kDynamic && n > kMaxInferredRank)
    return emitOptionalError(loc, "expand to ", n, " dims (a shape operand of that length); at most ",
                             kMaxInferredRank);
  if (!type.hasRank() || n == kDynamic) {
    inferred.push_back(UnrankedTensorType::get(element));
    return success();
  }
  if (auto target = getConstantIntValues(adaptor.getShape())) {
    for (int64_t d : *target)
      if (d < 0)
        return emitOptionalError(loc, "expand shape has negative dim ", d);
    auto shape = broadcastShapes(type.getShape(), *target);
    if (failed(shape))
      return emitOptionalError(loc, "cannot expand ", type, " to shape [",
                               llvm::make_range(target->begin(), target->end()),
                               "]");
    inferred.push_back(RankedTensorType::get(*shape, element));
    return success();
  }
  // Unknown target: a static input dim other than 1 survives broadcasting.
  int64_t rank = std::max<int64_t>(type.getRank(), n);
  SmallVector<int64_t> shape(rank, kDynamic);
  for (int64_t i = 0; i < type.getRank(); ++i) {
    int64_t dim = type.getDimSize(type.getRank() - 1 - i);
    if (!ShapedType::isDynamic(dim) && dim != 1)
      shape[rank - 1 - i] = dim;
  }
  inferred.push_back(RankedTensorType::get(shape, element));
  return success();
}

LogicalResult TileOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       TileOp::Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto type = cast<TensorType>(adaptor.getInput().getType());
  if (!type.hasRank()) {
    inferred.push_back(type);
    return success();
  }
  int64_t n = staticLength(adaptor.getRepeats());
  if (n != kDynamic && n != type.getRank())
    return emitOptionalError(loc, "tile has ", n, " repeats for rank ",
                             type.getRank());
  SmallVector<int64_t> shape(type.getRank(), kDynamic);
  if (auto repeats = getConstantIntValues(adaptor.getRepeats())) {
    for (auto [i, r] : llvm::enumerate(*repeats)) {
      if (r < 0)
        return emitOptionalError(loc, "tile repeat ", r, " is negative");
      int64_t dim = type.getDimSize(i);
      int64_t product;
      if (!ShapedType::isDynamic(dim) && !llvm::MulOverflow(dim, r, product))
        shape[i] = product;
    }
  }
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      PadOp::Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  auto type = cast<TensorType>(adaptor.getInput().getType());
  if (!type.hasRank()) {
    inferred.push_back(type);
    return success();
  }
  int64_t rank = type.getRank();
  int64_t n = staticLength(adaptor.getPads());
  if (n != kDynamic && n != 2 * rank)
    return emitOptionalError(loc, "pad has ", n, " pads for rank ", rank,
                             " (expects ", 2 * rank, ")");
  SmallVector<int64_t> shape(rank, kDynamic);
  if (auto pads = getConstantIntValues(adaptor.getPads())) {
    for (int64_t d = 0; d < rank; ++d) {
      int64_t dim = type.getDimSize(d);
      if (ShapedType::isDynamic(dim))
        continue;
      int64_t grown, size;
      if (llvm::AddOverflow(dim, (*pads)[d], grown) ||
          llvm::AddOverflow(grown, (*pads)[d + rank], size))
        return emitOptionalError(loc, "pads of dim ", d, " overflow");
      shape[d] = size;
      if (size < 0)
        return emitOptionalError(loc, "pad crops dim ", d, " of size ", dim,
                                 " below zero");
    }
  }
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

LogicalResult PadOp::verify() {
  if (Value value = getConstantValue()) {
    if (getElementTypeOrSelf(value.getType()) !=
        getElementTypeOrSelf(getInput().getType()))
      return emitOpError("constant_value must have the input's element type");
    int64_t count = staticNumElements(value);
    if (count != kDynamic && count != 1)
      return emitOpError("constant_value must hold one element, not ") << count;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOfShapeOp, RangeOp
//===----------------------------------------------------------------------===//

LogicalResult
ConstantOfShapeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                    ConstantOfShapeOp::Adaptor adaptor,
                                    SmallVectorImpl<Type> &inferred) {
  Type element = adaptor.getValue().getElementType();
  if (auto shape = getConstantIntValues(adaptor.getShape())) {
    for (int64_t d : *shape)
      if (d < 0)
        return emitOptionalError(loc, "constant_of_shape has negative dim ", d);
    inferred.push_back(RankedTensorType::get(*shape, element));
    return success();
  }
  int64_t n = staticLength(adaptor.getShape());
  if (n != kDynamic && n > kMaxInferredRank)
    return emitOptionalError(loc, "constant_of_shape with ", n,
                             " dims (a shape operand of that length); at most ", kMaxInferredRank);
  inferred.push_back(dynamicOfRank(n, element));
  return success();
}

LogicalResult ConstantOfShapeOp::verify() {
  if (getValue().getNumElements() != 1)
    return emitOpError("value must hold one element, not ")
           << getValue().getNumElements();
  return success();
}

LogicalResult RangeOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        RangeOp::Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  Type element = cast<TensorType>(adaptor.getStart().getType()).getElementType();
  int64_t length = kDynamic;
  auto start = getConstantFloatValues(adaptor.getStart());
  auto limit = getConstantFloatValues(adaptor.getLimit());
  auto delta = getConstantFloatValues(adaptor.getDelta());
  if (start && limit && delta && start->size() == 1 && limit->size() == 1 &&
      delta->size() == 1) {
    if ((*delta)[0] == 0)
      return emitOptionalError(loc, "range delta cannot be 0");
    double count = std::ceil(((*limit)[0] - (*start)[0]) / (*delta)[0]);
    // A length that is not representable stays dynamic; the evaluator
    // reports it when it runs.
    if (!std::isnan(count) && count < double(int64_t(1) << 62))
      length = std::max<int64_t>(0, (int64_t)count);
  }
  inferred.push_back(RankedTensorType::get({length}, element));
  return success();
}

LogicalResult RangeOp::verify() {
  for (Value v : getOperands()) {
    int64_t count = staticNumElements(v);
    if (count != kDynamic && count != 1)
      return emitOpError("start, limit and delta must be scalars");
  }
  return success();
}

//===----------------------------------------------------------------------===//
// TriluOp, ReverseSequenceOp
//===----------------------------------------------------------------------===//

LogicalResult TriluOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                        TriluOp::Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  inferred.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult TriluOp::verify() {
  auto type = dyn_cast<RankedTensorType>(getInput().getType());
  if (type && type.getRank() < 2)
    return emitOpError("input must have rank >= 2, not ") << type.getRank();
  if (Value k = getK()) {
    int64_t count = staticNumElements(k);
    if (count != kDynamic && count != 1)
      return emitOpError("k must be a scalar");
  }
  return success();
}

LogicalResult ReverseSequenceOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ReverseSequenceOp::Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  inferred.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult ReverseSequenceOp::verify() {
  int64_t batch = getBatchAxis(), time = getTimeAxis();
  if (batch < 0 || batch > 1 || time < 0 || time > 1 || batch == time)
    return emitOpError("batch_axis and time_axis must be 0 and 1 in some order");
  auto type = dyn_cast<RankedTensorType>(getInput().getType());
  if (!type)
    return success();
  if (type.getRank() < 2)
    return emitOpError("input must have rank >= 2, not ") << type.getRank();
  int64_t n = staticLength(getSequenceLens()), dim = type.getDimSize(batch);
  if (n != kDynamic && !ShapedType::isDynamic(dim) && n != dim)
    return emitOpError("has ") << n << " sequence lengths for a batch of "
                               << dim;
  return success();
}

#define GET_OP_CLASSES
#include "dialects/sluice/SluiceShapeOps.cpp.inc"
