//===- SluiceIndexingOps.cpp - gathers, scatters, index-driven ops --------===//

#include "dialects/sluice/SluiceOps.h"

using namespace mlir;
using namespace sluice;

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
    return emitOptionalError(loc, "gather axis ", adaptor.getAxis(),
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

#define GET_OP_CLASSES
#include "dialects/sluice/SluiceIndexingOps.cpp.inc"
