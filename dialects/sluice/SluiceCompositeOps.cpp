//===- SluiceCompositeOps.cpp - recognized composites ---------------------===//

#include "dialects/sluice/SluiceOps.h"

using namespace mlir;
using namespace sluice;

//===----------------------------------------------------------------------===//
// GeluOp, SiluOp
//===----------------------------------------------------------------------===//

LogicalResult GeluOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                       GeluOp::Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  inferred.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult GeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate must be \"none\" or \"tanh\", not \"")
           << getApproximate() << "\"";
  return success();
}

LogicalResult SiluOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                       SiluOp::Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  inferred.push_back(adaptor.getInput().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// RmsNormOp
//===----------------------------------------------------------------------===//

LogicalResult RmsNormOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          RmsNormOp::Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  auto type = cast<TensorType>(adaptor.getInput().getType());
  if (type.hasRank() && failed(normalizeAxis(adaptor.getAxis(), type.getRank())))
    return emitOptionalError(loc, "rms_norm axis ", adaptor.getAxis(),
                             " out of range for rank ", type.getRank());
  inferred.push_back(type);
  return success();
}

LogicalResult RmsNormOp::verify() {
  auto type = cast<TensorType>(getInput().getType());
  auto scaleType = cast<TensorType>(getScale().getType());
  if (scaleType.getElementType() != type.getElementType())
    return emitOpError("scale element type differs from the input's");
  if (type.hasRank() && scaleType.hasRank()) {
    int64_t axis = *normalizeAxis(getAxis(), type.getRank());
    if (scaleType.getRank() > type.getRank() - axis)
      return emitOpError("scale has more dims than the normalized dims");
  }
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            AttentionOp::Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto q = cast<TensorType>(adaptor.getQuery().getType());
  auto v = cast<TensorType>(adaptor.getValue().getType());
  if (!q.hasRank() || !v.hasRank()) {
    inferred.push_back(UnrankedTensorType::get(q.getElementType()));
    return success();
  }
  if (q.getRank() < 2 || v.getRank() < 2)
    return emitOptionalError(loc, "attention operands need rank >= 2");
  SmallVector<int64_t> shape(q.getShape());
  shape.back() = v.getShape().back();
  inferred.push_back(RankedTensorType::get(shape, q.getElementType()));
  return success();
}

LogicalResult AttentionOp::verify() {
  auto q = cast<TensorType>(getQuery().getType());
  auto k = cast<TensorType>(getKey().getType());
  auto v = cast<TensorType>(getValue().getType());
  if (k.getElementType() != q.getElementType() || v.getElementType() != q.getElementType())
    return emitOpError("query, key and value must have one element type");
  if (!q.hasRank() || !k.hasRank() || !v.hasRank())
    return success();
  if (q.getRank() != k.getRank() || q.getRank() != v.getRank())
    return emitOpError("query, key and value must have one rank");
  auto known = [](int64_t a, int64_t b) {
    return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
  };
  int64_t r = q.getRank();
  if (!known(q.getDimSize(r - 1), k.getDimSize(r - 1)))
    return emitOpError("query and key head sizes differ");
  if (!known(k.getDimSize(r - 2), v.getDimSize(r - 2)))
    return emitOpError("key and value sequence lengths differ");
  for (int64_t d = 0; d < r - 2; ++d)
    for (TensorType t : {k, v})
      if (!known(q.getDimSize(d), t.getDimSize(d)) && t.getDimSize(d) != 1)
        return emitOpError("batch dim ") << d << " of key/value does not broadcast to the query's";
  if ((getRotaryCos() == nullptr) != (getRotarySin() == nullptr))
    return emitOpError("rotary_cos and rotary_sin go together");
  if (getRotaryCos() && !ShapedType::isDynamic(q.getDimSize(r - 1)) &&
      q.getDimSize(r - 1) % 2)
    return emitOpError("rotary embeddings need an even head size");
  if (auto mask = getMask()) {
    auto m = cast<TensorType>(mask.getType());
    if (m.hasRank() && m.getRank() > r)
      return emitOpError("mask has more dims than the scores");
    if (!m.getElementType().isInteger(1) && m.getElementType() != q.getElementType())
      return emitOpError("a float mask must have the query's element type");
  }
  return success();
}

#define GET_OP_CLASSES
#include "dialects/sluice/SluiceCompositeOps.cpp.inc"
