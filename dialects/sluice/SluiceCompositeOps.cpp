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
    return emitOptionalError(loc, "rms_norm axis ", (int64_t)adaptor.getAxis(),
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
  int64_t window = getWindowAttr().getInt();
  if (window < 0 || (window > 0 && !getCausal()))
    return emitOpError("window must be 0 (none) or positive with causal, got ") << window;
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

//===----------------------------------------------------------------------===//
// MoeOp
//===----------------------------------------------------------------------===//

LogicalResult MoeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                      MoeOp::Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  auto tokens = cast<TensorType>(adaptor.getTokens().getType());
  auto w2 = cast<TensorType>(adaptor.getW2().getType());
  if (!tokens.hasRank() || !w2.hasRank()) {
    inferred.push_back(UnrankedTensorType::get(tokens.getElementType()));
    return success();
  }
  if (tokens.getRank() < 2 || w2.getRank() != 3)
    return emitOptionalError(loc, "moe needs tokens of rank >= 2 and w2 [E, F, Do]");
  SmallVector<int64_t> shape(tokens.getShape());
  shape.back() = w2.getDimSize(2);
  inferred.push_back(RankedTensorType::get(shape, tokens.getElementType()));
  return success();
}

LogicalResult MoeOp::verify() {
  StringRef gating = getGating(), act = getActivation();
  if (gating != "top_k" && gating != "hard")
    return emitOpError("gating must be \"top_k\" or \"hard\", not \"") << gating << "\"";
  if (act != "none" && act != "relu" && act != "gelu" && act != "gelu_tanh" && act != "silu")
    return emitOpError("unknown activation \"") << act << "\"";
  int64_t experts = getExperts(), topK = getTopK();
  if (experts < 1 || topK < 1 || topK > experts)
    return emitOpError("needs 1 <= top_k <= experts, got top_k ")
           << topK << " of " << experts;
  if (gating == "hard" && topK != 1)
    return emitOpError("hard gating routes each token to one expert (top_k = 1)");
  auto tokens = cast<TensorType>(getTokens().getType());
  auto router = cast<TensorType>(getRouter().getType());
  auto w1 = cast<TensorType>(getW1().getType());
  auto w2 = cast<TensorType>(getW2().getType());
  Type element = tokens.getElementType();
  if (w1.getElementType() != element || w2.getElementType() != element ||
      (getW3() && cast<TensorType>(getW3().getType()).getElementType() != element))
    return emitOpError("expert weights must have the tokens' element type");
  if (getB3() && !getW3())
    return emitOpError("b3 without w3: the up projection's bias needs its weight");
  if (gating == "top_k" ? !isa<FloatType>(router.getElementType())
                        : !router.getElementType().isInteger())
    return emitOpError(gating == "top_k" ? "top_k gating needs float router logits"
                                         : "hard gating needs an integer expert index");
  if (!tokens.hasRank() || !router.hasRank() || !w1.hasRank() || !w2.hasRank())
    return success();
  auto known = [](int64_t a, int64_t b) {
    return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
  };
  if (w1.getRank() != 3 || w2.getRank() != 3)
    return emitOpError("w1 and w2 must be [E, D, F] and [E, F, Do]");
  int64_t local = w1.getDimSize(0);
  if (!known(local, w2.getDimSize(0)) || !known(w1.getDimSize(2), w2.getDimSize(1)) ||
      !known(w1.getDimSize(1), tokens.getDimSize(tokens.getRank() - 1)))
    return emitOpError("expert weight shapes do not chain: w1 ")
           << w1 << ", w2 " << w2 << ", tokens " << tokens;
  if (!ShapedType::isDynamic(local) && (getExpertOffset() ? experts % local : local != experts))
    return emitOpError("holds ") << local << " experts of " << experts;
  if (Value w3Value = getW3()) {
    auto w3 = cast<TensorType>(w3Value.getType());
    if (w3.hasRank() &&
        (w3.getRank() != 3 || !known(w3.getDimSize(0), local) ||
         !known(w3.getDimSize(1), w1.getDimSize(1)) || !known(w3.getDimSize(2), w1.getDimSize(2))))
      return emitOpError("w3 ") << w3 << " is not w1's [E, D, F] " << w1;
  }
  for (auto [bias, width] :
       {std::pair(getB1(), w1.getDimSize(2)), std::pair(getB2(), w2.getDimSize(2)),
        std::pair(getB3(), w1.getDimSize(2))}) {
    if (!bias)
      continue;
    auto b = cast<TensorType>(bias.getType());
    if (b.getElementType() != element)
      return emitOpError("biases must have the tokens' element type");
    if (b.hasRank() && (b.getRank() != 2 || !known(b.getDimSize(0), local) ||
                        !known(b.getDimSize(1), width)))
      return emitOpError("bias ") << b << " is not [E, width]";
  }
  if (gating == "top_k") {
    if (router.getRank() != tokens.getRank() ||
        !known(router.getDimSize(router.getRank() - 1), experts))
      return emitOpError("router logits must be [N..., ") << experts << "]";
    for (int64_t d = 0; d + 1 < tokens.getRank(); ++d)
      if (!known(router.getDimSize(d), tokens.getDimSize(d)))
        return emitOpError("router logits and tokens differ in dim ") << d;
  } else if (router.getRank() != 1 || tokens.getRank() != 3 ||
             !known(router.getDimSize(0), tokens.getDimSize(0))) {
    return emitOpError("hard gating needs an index [B] for tokens [B, S, D]");
  }
  return success();
}

#define GET_OP_CLASSES
#include "dialects/sluice/SluiceCompositeOps.cpp.inc"
