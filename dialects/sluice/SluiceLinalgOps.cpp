//===- SluiceLinalgOps.cpp - contractions, convolution, normalization -----===//

#include "dialects/sluice/SluiceOps.h"

using namespace mlir;
using namespace sluice;

//===----------------------------------------------------------------------===//
// MatMulOp
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         MatMulOp::Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  auto lhsType = cast<TensorType>(adaptor.getLhs().getType());
  auto rhsType = cast<TensorType>(adaptor.getRhs().getType());
  Type element = lhsType.getElementType();
  if (!lhsType.hasRank() || !rhsType.hasRank()) {
    inferred.push_back(UnrankedTensorType::get(element));
    return success();
  }
  SmallVector<int64_t> lhs(lhsType.getShape()), rhs(rhsType.getShape());
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
  inferred.push_back(RankedTensorType::get(shape, element));
  return success();
}

#define GET_OP_CLASSES
#include "dialects/sluice/SluiceLinalgOps.cpp.inc"
