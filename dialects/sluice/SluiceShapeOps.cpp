//===- SluiceShapeOps.cpp - shape and data-movement ops -------------------===//

#include "dialects/sluice/SluiceOps.h"

using namespace mlir;
using namespace sluice;

//===----------------------------------------------------------------------===//
// ShapeOp
//===----------------------------------------------------------------------===//

/// The [start, end) dim range of Shape (opset 15 semantics: clamped, negative
/// values count from the back).
static std::pair<int64_t, int64_t> shapeRange(int64_t rank, int64_t start,
                                              std::optional<int64_t> end) {
  auto clamp = [&](int64_t v) {
    if (v < 0)
      v += rank;
    return std::clamp<int64_t>(v, 0, rank);
  };
  int64_t s = clamp(start), e = end ? clamp(*end) : rank;
  return {s, std::max(s, e)};
}

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

#define GET_OP_CLASSES
#include "dialects/sluice/SluiceShapeOps.cpp.inc"
