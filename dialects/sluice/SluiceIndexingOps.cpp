//===- SluiceIndexingOps.cpp - gathers, scatters, index-driven ops --------===//
//
// Result-type inference and verifiers of the indexing family. Shapes that
// depend on operand values (OneHot's depth, Resize's scales and sizes,
// Compress's condition) are static only when those operands are constants;
// shapes that depend on data (NonZero, Unique, NonMaxSuppression) stay
// dynamic.
//
//===----------------------------------------------------------------------===//

#include "dialects/sluice/SluiceOps.h"



using namespace mlir;
using namespace sluice;

static constexpr int64_t kDynamic = ShapedType::kDynamic;

/// Whether a dim is statically known to differ from `expected`.
static bool dimDiffers(int64_t dim, int64_t expected) {
  return !ShapedType::isDynamic(dim) && !ShapedType::isDynamic(expected) &&
         dim != expected;
}

/// Checks that `value`, when one of `allowed`, is accepted; emits an op error
/// naming `what` otherwise.
static LogicalResult checkOneOf(Operation *op, StringRef what, StringRef value,
                                ArrayRef<StringRef> allowed) {
  if (llvm::is_contained(allowed, value))
    return success();
  auto diag = op->emitOpError() << what << " must be one of";
  for (StringRef a : allowed)
    diag << " '" << a << "'";
  return diag << ", got '" << value << "'";
}

/// A scatter or ScatterND reduction: ONNX has none/add/mul/max/min.
static LogicalResult checkScatterReduction(Operation *op,
                                           std::optional<ReduceKind> kind) {
  if (kind && *kind == ReduceKind::mean)
    return op->emitOpError("reduction must be sum, prod, max or min");
  return success();
}

//===----------------------------------------------------------------------===//
// GatherOp
//===----------------------------------------------------------------------===//

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         GatherOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto input = cast<TensorType>(adaptor.getInput().getType());
  auto indices = cast<TensorType>(adaptor.getIndices().getType());
  if (!input.hasRank() || !indices.hasRank()) {
    inferred.push_back(UnrankedTensorType::get(input.getElementType()));
    return success();
  }
  auto axis = normalizeAxis(adaptor.getAxis(), input.getRank());
  if (failed(axis))
    return emitOptionalError(loc, "gather axis ", (int64_t)adaptor.getAxis(),
                             " out of range for rank ", input.getRank());
  SmallVector<int64_t> shape(input.getShape().take_front(*axis));
  shape.append(indices.getShape().begin(), indices.getShape().end());
  shape.append(input.getShape().begin() + *axis + 1, input.getShape().end());
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult GatherOp::verify() {
  auto input = cast<TensorType>(getInput().getType());
  if (input.hasRank() && input.getRank() == 0)
    return emitOpError("input must have rank >= 1");
  return success();
}

//===----------------------------------------------------------------------===//
// GatherElementsOp
//===----------------------------------------------------------------------===//

LogicalResult GatherElementsOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc,
    GatherElementsOp::Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  auto input = cast<TensorType>(adaptor.getInput().getType());
  auto indices = cast<TensorType>(adaptor.getIndices().getType());
  if (input.hasRank() &&
      failed(normalizeAxis(adaptor.getAxis(), input.getRank())))
    return emitOptionalError(loc, "gather_elements axis ", (int64_t)adaptor.getAxis(),
                             " out of range for rank ", input.getRank());
  inferred.push_back(indices.clone(input.getElementType()));
  return success();
}

LogicalResult GatherElementsOp::verify() {
  auto input = cast<TensorType>(getInput().getType());
  auto indices = cast<TensorType>(getIndices().getType());
  if (input.hasRank() && input.getRank() == 0)
    return emitOpError("input must have rank >= 1");
  if (input.hasRank() && indices.hasRank() &&
      input.getRank() != indices.getRank())
    return emitOpError("indices rank ")
           << indices.getRank() << " differs from input rank "
           << input.getRank();
  return success();
}

//===----------------------------------------------------------------------===//
// GatherNDOp
//===----------------------------------------------------------------------===//

LogicalResult GatherNDOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           GatherNDOp::Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  auto input = cast<TensorType>(adaptor.getInput().getType());
  auto indices = cast<TensorType>(adaptor.getIndices().getType());
  Type element = input.getElementType();
  int64_t batch = adaptor.getBatchDims();
  if (!input.hasRank() || !indices.hasRank() ||
      (indices.getRank() > 0 && indices.isDynamicDim(indices.getRank() - 1))) {
    inferred.push_back(UnrankedTensorType::get(element));
    return success();
  }
  int64_t r = input.getRank(), q = indices.getRank();
  if (q < 1 || r < 1)
    return emitOptionalError(loc, "gather_nd needs input and indices of rank >= 1");
  if (batch < 0 || batch >= std::min(q, r))
    return emitOptionalError(loc, "gather_nd batch_dims ", batch,
                             " must be below both ranks");
  int64_t k = indices.getDimSize(q - 1);
  if (k < 1 || batch + k > r)
    return emitOptionalError(loc, "gather_nd index tuples of length ", k,
                             " do not fit input rank ", r, " after ", batch,
                             " batch dims");
  for (int64_t i = 0; i < batch; ++i)
    if (dimDiffers(input.getDimSize(i), indices.getDimSize(i)))
      return emitOptionalError(loc, "gather_nd batch dim ", i,
                               " differs between input and indices");
  SmallVector<int64_t> shape(input.getShape().take_front(batch));
  shape.append(indices.getShape().begin() + batch, indices.getShape().end() - 1);
  shape.append(input.getShape().begin() + batch + k, input.getShape().end());
  inferred.push_back(RankedTensorType::get(shape, element));
  return success();
}

LogicalResult GatherNDOp::verify() {
  if ((int64_t)getBatchDims() < 0)
    return emitOpError("batch_dims must be non-negative");
  return success();
}

//===----------------------------------------------------------------------===//
// ScatterElementsOp / ScatterNDOp
//===----------------------------------------------------------------------===//

LogicalResult ScatterElementsOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc,
    ScatterElementsOp::Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  auto input = cast<TensorType>(adaptor.getInput().getType());
  if (input.hasRank() &&
      failed(normalizeAxis(adaptor.getAxis(), input.getRank())))
    return emitOptionalError(loc, "scatter_elements axis ", (int64_t)adaptor.getAxis(),
                             " out of range for rank ", input.getRank());
  inferred.push_back(input);
  return success();
}

LogicalResult ScatterElementsOp::verify() {
  auto input = cast<TensorType>(getInput().getType());
  auto indices = cast<TensorType>(getIndices().getType());
  auto updates = cast<TensorType>(getUpdates().getType());
  if (input.getElementType() != updates.getElementType())
    return emitOpError("updates element type differs from input");
  if (indices.hasRank() && updates.hasRank()) {
    if (indices.getRank() != updates.getRank())
      return emitOpError("indices and updates must have the same shape");
    for (auto [a, b] : llvm::zip(indices.getShape(), updates.getShape()))
      if (dimDiffers(a, b))
        return emitOpError("indices and updates must have the same shape");
  }
  if (input.hasRank() && indices.hasRank() &&
      input.getRank() != indices.getRank())
    return emitOpError("indices rank ")
           << indices.getRank() << " differs from input rank "
           << input.getRank();
  return checkScatterReduction(*this, getReduction());
}

LogicalResult ScatterNDOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location>,
                                            ScatterNDOp::Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  inferred.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult ScatterNDOp::verify() {
  auto input = cast<TensorType>(getInput().getType());
  auto indices = cast<TensorType>(getIndices().getType());
  auto updates = cast<TensorType>(getUpdates().getType());
  if (input.getElementType() != updates.getElementType())
    return emitOpError("updates element type differs from input");
  if (input.hasRank() && indices.hasRank() && updates.hasRank()) {
    int64_t r = input.getRank(), q = indices.getRank();
    if (q < 1)
      return emitOpError("indices must have rank >= 1");
    int64_t k = indices.getDimSize(q - 1);
    if (!ShapedType::isDynamic(k)) {
      if (k > r)
        return emitOpError("index tuples of length ")
               << k << " exceed input rank " << r;
      // updates.shape == indices.shape[:-1] + input.shape[k:]
      if (updates.getRank() != q - 1 + r - k)
        return emitOpError("updates rank ")
               << updates.getRank() << " must be " << q - 1 + r - k;
      for (int64_t i = 0; i < q - 1; ++i)
        if (dimDiffers(updates.getDimSize(i), indices.getDimSize(i)))
          return emitOpError("updates dim ") << i << " differs from indices";
      for (int64_t i = k; i < r; ++i)
        if (dimDiffers(updates.getDimSize(q - 1 + i - k), input.getDimSize(i)))
          return emitOpError("updates dim ")
                 << q - 1 + i - k << " differs from input dim " << i;
    }
  }
  return checkScatterReduction(*this, getReduction());
}

//===----------------------------------------------------------------------===//
// OneHotOp
//===----------------------------------------------------------------------===//

LogicalResult OneHotOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         OneHotOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto indices = cast<TensorType>(adaptor.getIndices().getType());
  Type element = cast<TensorType>(adaptor.getValues().getType()).getElementType();
  if (!indices.hasRank()) {
    inferred.push_back(UnrankedTensorType::get(element));
    return success();
  }
  int64_t rank = indices.getRank() + 1;
  auto axis = normalizeAxis(adaptor.getAxis(), rank);
  if (failed(axis))
    return emitOptionalError(loc, "one_hot axis ", (int64_t)adaptor.getAxis(),
                             " out of range for result rank ", rank);
  int64_t depth = kDynamic;
  if (auto values = getConstantIntValues(adaptor.getDepth())) {
    if (values->size() != 1 || (*values)[0] < 1)
      return emitOptionalError(loc, "one_hot depth must be one positive value");
    depth = (*values)[0];
  }
  SmallVector<int64_t> shape(indices.getShape());
  shape.insert(shape.begin() + *axis, depth);
  inferred.push_back(RankedTensorType::get(shape, element));
  return success();
}

LogicalResult OneHotOp::verify() {
  auto depth = cast<TensorType>(getDepth().getType());
  if (depth.hasRank() && (depth.getRank() > 1 ||
                          (depth.hasStaticShape() && depth.getNumElements() != 1)))
    return emitOpError("depth must hold exactly one value");
  auto values = cast<TensorType>(getValues().getType());
  if (values.hasRank() &&
      (values.getRank() != 1 || dimDiffers(values.getDimSize(0), 2)))
    return emitOpError("values must be a 1-D tensor of [off, on]");
  return success();
}

//===----------------------------------------------------------------------===//
// NonZeroOp
//===----------------------------------------------------------------------===//

LogicalResult NonZeroOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location>,
                                          NonZeroOp::Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto input = cast<TensorType>(adaptor.getInput().getType());
  int64_t rank = input.hasRank() ? input.getRank() : kDynamic;
  inferred.push_back(
      RankedTensorType::get({rank, kDynamic}, IntegerType::get(ctx, 64)));
  return success();
}

//===----------------------------------------------------------------------===//
// CompressOp
//===----------------------------------------------------------------------===//

LogicalResult CompressOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           CompressOp::Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  auto input = cast<TensorType>(adaptor.getInput().getType());
  Type element = input.getElementType();
  std::optional<int64_t> axis;
  if (adaptor.getAxis()) {
    if (!input.hasRank()) {
      inferred.push_back(UnrankedTensorType::get(element));
      return success();
    }
    auto normalized = normalizeAxis(*adaptor.getAxis(), input.getRank());
    if (failed(normalized))
      return emitOptionalError(loc, "compress axis ", (int64_t)*adaptor.getAxis(),
                               " out of range for rank ", input.getRank());
    axis = *normalized;
  }
  // The selected extent: the axis dim, or every element when flattening.
  int64_t extent = kDynamic;
  if (axis)
    extent = input.getDimSize(*axis);
  else if (input.hasStaticShape())
    extent = input.getNumElements();
  int64_t kept = kDynamic;
  if (auto condition = getConstantIntValues(adaptor.getCondition());
      condition && !ShapedType::isDynamic(extent)) {
    if ((int64_t)condition->size() > extent)
      return emitOptionalError(loc, "compress condition has ", condition->size(),
                               " entries for a dim of ", extent);
    kept = llvm::count_if(*condition, [](int64_t c) { return c != 0; });
  }
  if (!axis) {
    inferred.push_back(RankedTensorType::get({kept}, element));
    return success();
  }
  SmallVector<int64_t> shape(input.getShape());
  shape[*axis] = kept;
  inferred.push_back(RankedTensorType::get(shape, element));
  return success();
}

LogicalResult CompressOp::verify() {
  auto input = cast<TensorType>(getInput().getType());
  auto condition = cast<TensorType>(getCondition().getType());
  if (!getAxis() || !input.hasRank())
    return success();
  auto axis = normalizeAxis(*getAxis(), input.getRank());
  if (failed(axis))
    return emitOpError("axis ") << (int64_t)*getAxis() << " out of range for rank "
                                << input.getRank();
  int64_t dim = input.getDimSize(*axis), length = condition.getDimSize(0);
  if (!ShapedType::isDynamic(dim) && !ShapedType::isDynamic(length) &&
      length > dim)
    return emitOpError("condition has ")
           << length << " entries for a dim of " << dim;
  return success();
}

//===----------------------------------------------------------------------===//
// ResizeOp
//===----------------------------------------------------------------------===//

LogicalResult ResizeOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         ResizeOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto input = cast<TensorType>(adaptor.getInput().getType());
  Type element = input.getElementType();
  Value scales = adaptor.getScales(), sizes = adaptor.getSizes();
  if (!scales == !sizes)
    return emitOptionalError(loc, "resize needs exactly one of scales and sizes");
  Value given = scales ? scales : sizes;
  int64_t length = cast<RankedTensorType>(given.getType()).getDimSize(0);
  if (!input.hasRank()) {
    if (ShapedType::isDynamic(length)) {
      inferred.push_back(UnrankedTensorType::get(element));
      return success();
    }
    input = RankedTensorType::get(SmallVector<int64_t>(length, kDynamic), element);
  }
  int64_t rank = input.getRank();
  if (dimDiffers(length, rank))
    return emitOptionalError(loc, "resize ", scales ? "scales" : "sizes",
                             " has ", length, " entries for rank ", rank);
  SmallVector<int64_t> shape(rank, kDynamic);
  if (sizes) {
    if (auto values = getConstantIntValues(sizes)) {
      for (int64_t i = 0; i < rank; ++i) {
        if ((*values)[i] < 0)
          return emitOptionalError(loc, "resize size ", (*values)[i],
                                   " is negative");
        shape[i] = (*values)[i];
      }
    }
  } else if (auto values = getConstantFloatValues(scales)) {
    for (int64_t i = 0; i < rank; ++i) {
      double scale = (float)(*values)[i];
      if (!(scale > 0))
        return emitOptionalError(loc, "resize scale ", scale,
                                 " must be positive");
      if (!input.isDynamicDim(i))
        shape[i] = (int64_t)std::floor(input.getDimSize(i) * scale);
    }
  }
  inferred.push_back(RankedTensorType::get(shape, element));
  return success();
}

LogicalResult ResizeOp::verify() {
  if (failed(checkOneOf(*this, "mode", getMode(), {"nearest", "linear", "cubic"})) ||
      failed(checkOneOf(*this, "coordinate_transformation_mode",
                        getCoordinateTransformationMode(),
                        {"half_pixel", "pytorch_half_pixel", "align_corners",
                         "asymmetric", "tf_half_pixel_for_nn",
                         "tf_crop_and_resize"})) ||
      failed(checkOneOf(*this, "nearest_mode", getNearestMode(),
                        {"round_prefer_floor", "round_prefer_ceil", "floor",
                         "ceil"})))
    return failure();
  if (getMode() != "nearest" && !isa<FloatType>(getElementTypeOrSelf(getInput())))
    return emitOpError("linear and cubic modes need a floating-point input");
  if (getCoordinateTransformationMode() == "tf_crop_and_resize" && !getRoi())
    return emitOpError("tf_crop_and_resize needs a roi operand");
  return success();
}

//===----------------------------------------------------------------------===//
// UniqueOp
//===----------------------------------------------------------------------===//

LogicalResult UniqueOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         UniqueOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto input = cast<TensorType>(adaptor.getInput().getType());
  Type element = input.getElementType(), i64 = IntegerType::get(ctx, 64);
  auto vector = [&](int64_t n) { return RankedTensorType::get({n}, i64); };
  if (!adaptor.getAxis()) {
    int64_t count = input.hasStaticShape() ? input.getNumElements() : kDynamic;
    inferred.append({RankedTensorType::get({kDynamic}, element),
                     vector(kDynamic), vector(count), vector(kDynamic)});
    return success();
  }
  if (!input.hasRank()) {
    inferred.append({UnrankedTensorType::get(element), vector(kDynamic),
                     vector(kDynamic), vector(kDynamic)});
    return success();
  }
  auto axis = normalizeAxis(*adaptor.getAxis(), input.getRank());
  if (failed(axis))
    return emitOptionalError(loc, "unique axis ", (int64_t)*adaptor.getAxis(),
                             " out of range for rank ", input.getRank());
  SmallVector<int64_t> shape(input.getShape());
  shape[*axis] = kDynamic;
  inferred.append({RankedTensorType::get(shape, element), vector(kDynamic),
                   vector(input.getDimSize(*axis)), vector(kDynamic)});
  return success();
}

LogicalResult UniqueOp::verify() {
  auto input = cast<TensorType>(getInput().getType());
  if (getAxis() && input.hasRank() && input.getRank() == 0)
    return emitOpError("axis needs an input of rank >= 1");
  return success();
}

//===----------------------------------------------------------------------===//
// NonMaxSuppressionOp
//===----------------------------------------------------------------------===//

LogicalResult NonMaxSuppressionOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location>,
    NonMaxSuppressionOp::Adaptor, SmallVectorImpl<Type> &inferred) {
  inferred.push_back(
      RankedTensorType::get({kDynamic, 3}, IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult NonMaxSuppressionOp::verify() {
  auto boxes = cast<TensorType>(getBoxes().getType());
  auto scores = cast<TensorType>(getScores().getType());
  if (boxes.hasRank() &&
      (boxes.getRank() != 3 || dimDiffers(boxes.getDimSize(2), 4)))
    return emitOpError("boxes must be [batches, boxes, 4]");
  if (scores.hasRank() && scores.getRank() != 3)
    return emitOpError("scores must be [batches, classes, boxes]");
  if (boxes.hasRank() && scores.hasRank() &&
      (dimDiffers(boxes.getDimSize(0), scores.getDimSize(0)) ||
       dimDiffers(boxes.getDimSize(1), scores.getDimSize(2))))
    return emitOpError("boxes and scores disagree on batches or boxes");
  return success();
}

//===----------------------------------------------------------------------===//
// RoiAlignOp
//===----------------------------------------------------------------------===//

LogicalResult RoiAlignOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           RoiAlignOp::Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  auto input = cast<TensorType>(adaptor.getInput().getType());
  auto rois = cast<TensorType>(adaptor.getRois().getType());
  if (input.hasRank() && input.getRank() != 4)
    return emitOptionalError(loc, "roi_align input must be [N, C, H, W]");
  int64_t count = rois.hasRank() ? rois.getDimSize(0) : kDynamic;
  int64_t channels = input.hasRank() ? input.getDimSize(1) : kDynamic;
  inferred.push_back(RankedTensorType::get(
      {count, channels, (int64_t)adaptor.getOutputHeight(),
       (int64_t)adaptor.getOutputWidth()},
      input.getElementType()));
  return success();
}

LogicalResult RoiAlignOp::verify() {
  if (failed(checkOneOf(*this, "mode", getMode(), {"avg", "max"})) ||
      failed(checkOneOf(*this, "coordinate_transformation_mode",
                        getCoordinateTransformationMode(),
                        {"half_pixel", "output_half_pixel"})))
    return failure();
  if ((int64_t)getOutputHeight() < 1 || (int64_t)getOutputWidth() < 1)
    return emitOpError("output size must be positive");
  if ((int64_t)getSamplingRatio() < 0)
    return emitOpError("sampling_ratio must be non-negative");
  auto rois = cast<TensorType>(getRois().getType());
  if (rois.hasRank() &&
      (rois.getRank() != 2 || dimDiffers(rois.getDimSize(1), 4)))
    return emitOpError("rois must be [num_rois, 4]");
  return success();
}

//===----------------------------------------------------------------------===//
// GridSampleOp
//===----------------------------------------------------------------------===//

LogicalResult GridSampleOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             GridSampleOp::Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  auto input = cast<TensorType>(adaptor.getInput().getType());
  auto grid = cast<TensorType>(adaptor.getGrid().getType());
  if ((input.hasRank() && input.getRank() != 4) ||
      (grid.hasRank() && (grid.getRank() != 4 || dimDiffers(grid.getDimSize(3), 2))))
    return emitOptionalError(loc, "grid_sample needs a [N, C, H, W] input and "
                                  "a [N, H_out, W_out, 2] grid");
  int64_t n = input.hasRank() ? input.getDimSize(0) : kDynamic;
  int64_t c = input.hasRank() ? input.getDimSize(1) : kDynamic;
  int64_t h = grid.hasRank() ? grid.getDimSize(1) : kDynamic;
  int64_t w = grid.hasRank() ? grid.getDimSize(2) : kDynamic;
  if (ShapedType::isDynamic(n) && grid.hasRank())
    n = grid.getDimSize(0);
  inferred.push_back(RankedTensorType::get({n, c, h, w}, input.getElementType()));
  return success();
}

LogicalResult GridSampleOp::verify() {
  if (failed(checkOneOf(*this, "mode", getMode(),
                        {"bilinear", "nearest", "bicubic"})) ||
      failed(checkOneOf(*this, "padding_mode", getPaddingMode(),
                        {"zeros", "border", "reflection"})))
    return failure();
  auto input = cast<TensorType>(getInput().getType());
  auto grid = cast<TensorType>(getGrid().getType());
  if (input.hasRank() && grid.hasRank() &&
      dimDiffers(input.getDimSize(0), grid.getDimSize(0)))
    return emitOpError("input and grid disagree on the batch size");
  return success();
}

#define GET_OP_CLASSES
#include "dialects/sluice/SluiceIndexingOps.cpp.inc"
