//===- SluiceReductionOps.cpp - reductions, softmax, top-k, scans ---------===//

#include "dialects/sluice/SluiceOps.h"

using namespace mlir;
using namespace sluice;

//===----------------------------------------------------------------------===//
// ReduceOp
//===----------------------------------------------------------------------===//

LogicalResult ReduceOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         ReduceOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto type = cast<TensorType>(adaptor.getInput().getType());
  Type element = type.getElementType();
  if (!type.hasRank()) {
    inferred.push_back(type);
    return success();
  }
  int64_t rank = type.getRank();
  std::optional<SmallVector<int64_t>> axes;
  if (!adaptor.getAxes())
    axes.emplace();
  else
    axes = getConstantIntValues(adaptor.getAxes());
  if (!axes) {
    // Axes known only at run time: rank survives with keepdims.
    if (adaptor.getKeepdims())
      inferred.push_back(RankedTensorType::get(
          SmallVector<int64_t>(rank, ShapedType::kDynamic), element));
    else
      inferred.push_back(UnrankedTensorType::get(element));
    return success();
  }
  SmallVector<bool> reduced(rank, axes->empty() && !adaptor.getNoopWithEmptyAxes());
  for (int64_t axis : *axes) {
    auto normalized = normalizeAxis(axis, rank);
    if (failed(normalized))
      return emitOptionalError(loc, "reduce axis ", axis,
                               " out of range for rank ", rank);
    // ONNX does not define a repeated axis ([1, -2] of a rank-3 input):
    // refused rather than guessed.
    if (reduced[*normalized])
      return emitOptionalError(loc, "reduce axis ", axis, " is repeated (dim ",
                               *normalized, ")");
    reduced[*normalized] = true;
  }
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i])
      shape.push_back(type.getDimSize(i));
    else if (adaptor.getKeepdims())
      shape.push_back(1);
  }
  inferred.push_back(RankedTensorType::get(shape, element));
  return success();
}

//===----------------------------------------------------------------------===//
// SoftmaxOp
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location>,
                                          SoftmaxOp::Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  inferred.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult SoftmaxOp::verify() {
  auto type = cast<TensorType>(getInput().getType());
  if (type.hasRank() && failed(normalizeAxis(getAxis(), type.getRank())))
    return emitOpError("axis ")
           << (int64_t)getAxis() << " out of range for rank " << type.getRank();
  return success();
}

//===----------------------------------------------------------------------===//
// ArgMaxOp / ArgMinOp
//===----------------------------------------------------------------------===//

/// The input shape with `axis` dropped (or kept as 1): shared by the
/// arg-reductions, whose result is always i64.
static LogicalResult inferArgReduce(MLIRContext *context,
                                    std::optional<Location> loc, Value input,
                                    int64_t axis, bool keepdims,
                                    SmallVectorImpl<Type> &inferred) {
  Type i64 = IntegerType::get(context, 64);
  auto type = cast<TensorType>(input.getType());
  if (!type.hasRank()) {
    inferred.push_back(UnrankedTensorType::get(i64));
    return success();
  }
  auto normalized = normalizeAxis(axis, type.getRank());
  if (failed(normalized))
    return emitOptionalError(loc, "axis ", axis, " out of range for rank ",
                             type.getRank());
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    if (i != *normalized)
      shape.push_back(type.getDimSize(i));
    else if (keepdims)
      shape.push_back(1);
  }
  inferred.push_back(RankedTensorType::get(shape, i64));
  return success();
}

/// An arg-reduction over a dim of size 0 has no answer.
template <typename OpTy>
static LogicalResult verifyArgReduce(OpTy op) {
  auto type = cast<TensorType>(op.getInput().getType());
  if (!type.hasRank())
    return success();
  auto axis = normalizeAxis(op.getAxis(), type.getRank());
  if (failed(axis))
    return op.emitOpError("axis ")
           << (int64_t)op.getAxis() << " out of range for rank "
           << type.getRank();
  if (type.getDimSize(*axis) == 0)
    return op.emitOpError("cannot reduce an empty dim to an index");
  return success();
}

LogicalResult ArgMaxOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> loc,
                                         ArgMaxOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  return inferArgReduce(context, loc, adaptor.getInput(),
                        (int64_t)adaptor.getAxis(),
                        adaptor.getKeepdims(), inferred);
}

LogicalResult ArgMaxOp::verify() { return verifyArgReduce(*this); }

LogicalResult ArgMinOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> loc,
                                         ArgMinOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  return inferArgReduce(context, loc, adaptor.getInput(),
                        (int64_t)adaptor.getAxis(),
                        adaptor.getKeepdims(), inferred);
}

LogicalResult ArgMinOp::verify() { return verifyArgReduce(*this); }

//===----------------------------------------------------------------------===//
// TopKOp
//===----------------------------------------------------------------------===//

LogicalResult TopKOp::inferReturnTypes(MLIRContext *context,
                                       std::optional<Location> loc,
                                       TopKOp::Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto type = cast<TensorType>(adaptor.getInput().getType());
  Type element = type.getElementType(), i64 = IntegerType::get(context, 64);
  if (!type.hasRank()) {
    inferred.push_back(UnrankedTensorType::get(element));
    inferred.push_back(UnrankedTensorType::get(i64));
    return success();
  }
  auto axis = normalizeAxis(adaptor.getAxis(), type.getRank());
  if (failed(axis))
    return emitOptionalError(loc, "axis ", (int64_t)adaptor.getAxis(),
                             " out of range for rank ", type.getRank());
  SmallVector<int64_t> shape(type.getShape());
  shape[*axis] = ShapedType::kDynamic;
  if (auto k = getConstantIntValues(adaptor.getK())) {
    if (k->size() != 1)
      return emitOptionalError(loc, "k must hold one value, got ", k->size());
    int64_t extent = type.getDimSize(*axis);
    if ((*k)[0] < 0)
      return emitOptionalError(loc, "k must be non-negative, got ", (*k)[0]);
    if (!ShapedType::isDynamic(extent) && (*k)[0] > extent)
      return emitOptionalError(loc, "k = ", (*k)[0],
                               " exceeds the axis dim of size ", extent);
    shape[*axis] = (*k)[0];
  }
  inferred.push_back(RankedTensorType::get(shape, element));
  inferred.push_back(RankedTensorType::get(shape, i64));
  return success();
}

LogicalResult TopKOp::verify() {
  auto kType = cast<TensorType>(getK().getType());
  if (kType.hasStaticShape() && kType.getNumElements() != 1)
    return emitOpError("k must be a one-element tensor");
  return success();
}

//===----------------------------------------------------------------------===//
// CumSumOp
//===----------------------------------------------------------------------===//

LogicalResult CumSumOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location>,
                                         CumSumOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  inferred.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult CumSumOp::verify() {
  auto axisType = cast<TensorType>(getAxis().getType());
  if (axisType.hasRank() &&
      (axisType.getRank() > 1 ||
       (axisType.hasStaticShape() && axisType.getNumElements() != 1)))
    return emitOpError("axis must be a scalar or a one-element 1-D tensor");
  auto type = cast<TensorType>(getInput().getType());
  if (auto axis = getConstantIntValues(getAxis());
      axis && axis->size() == 1 && type.hasRank() &&
      failed(normalizeAxis((*axis)[0], type.getRank())))
    return emitOpError("axis ") << (*axis)[0] << " out of range for rank "
                                << type.getRank();
  return success();
}

#define GET_OP_CLASSES
#include "dialects/sluice/SluiceReductionOps.cpp.inc"
