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
    return emitOpError("axis ") << getAxis() << " out of range for rank "
                                << type.getRank();
  return success();
}

#define GET_OP_CLASSES
#include "dialects/sluice/SluiceReductionOps.cpp.inc"
