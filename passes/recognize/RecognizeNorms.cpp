//===- RecognizeNorms.cpp - LayerNorm and RMSNorm from reduction chains ----===//
//
// torch.onnx before opset 17 writes LayerNorm as
//   d = x - ReduceMean(x); var = ReduceMean(d^2); y = d / Sqrt(var + eps)
//   [* scale] [+ bias]
// and every LLaMA-style model writes RMSNorm as
//   y = x * Rsqrt(ReduceMean(x^2) + eps) [* weight]
// (Rsqrt as Reciprocal(Sqrt) or 1 / Sqrt, or a Div by the Sqrt; optionally
// inside a Cast to f32 and back). Both are matched from the variance
// ReduceMean, which they share, and become one row op. Only reductions over
// the trailing axes with keepdims are recognized (the composites normalize
// dims [axis, rank)), and only when every intermediate feeds the chain alone.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/recognize/Match.h"

namespace sluice {
#define GEN_PASS_DEF_RECOGNIZENORMSPASS
#include "passes/Passes.h.inc"
} // namespace sluice

using namespace mlir;
using namespace sluice;
using namespace sluice::recognize;

namespace {

/// The first axis of a keepdims mean over the trailing axes of its input
/// ([axis, rank)), or nullopt.
std::optional<int64_t> trailingMeanAxis(ReduceOp reduce) {
  auto type = rankedType(reduce.getInput());
  if (!type || reduce.getKind() != ReduceKind::mean || !reduce.getKeepdims() ||
      !reduce.getAxes())
    return std::nullopt;
  auto axes = intConstant(reduce.getAxes());
  if (!axes || axes->empty())
    return std::nullopt;
  int64_t rank = type.getRank();
  SmallVector<int64_t> normalized;
  for (int64_t a : *axes) {
    if (a < -rank || a >= rank)
      return std::nullopt;
    normalized.push_back(a < 0 ? a + rank : a);
  }
  llvm::sort(normalized);
  for (size_t i = 0; i < normalized.size(); ++i)
    if (normalized[i] != rank - (int64_t)normalized.size() + (int64_t)i)
      return std::nullopt;
  return normalized.front();
}

/// t of `t^2` written as Pow(t, 2) or t * t.
Value squaredValue(Value sq) {
  if (auto pow = sq.getDefiningOp<PowOp>())
    return isSplatNear(pow.getRhs(), 2.0, 0) ? pow.getLhs() : Value();
  if (auto mul = sq.getDefiningOp<MulOp>())
    return mul.getLhs() == mul.getRhs() ? mul.getLhs() : Value();
  return {};
}

/// Whether `side` can be a per-element scale/bias of the normalized dims
/// [axis, rank) of `type`: it broadcasts into those dims only.
bool isNormParameter(Value side, RankedTensorType type, int64_t axis) {
  auto sideType = rankedType(side);
  if (!sideType || sideType.getElementType() != type.getElementType())
    return false;
  ArrayRef<int64_t> shape = sideType.getShape();
  // Leading 1s broadcast over nothing.
  while (!shape.empty() && shape.front() == 1 &&
         (int64_t)shape.size() > type.getRank() - axis)
    shape = shape.drop_front();
  if ((int64_t)shape.size() > type.getRank() - axis)
    return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t dim = type.getDimSize(type.getRank() - shape.size() + i);
    if (shape[i] != 1 && shape[i] != dim)
      return false;
  }
  return true;
}

/// Reshapes a norm parameter to drop its leading 1s (the composites want
/// at most rank - axis dims).
Value trimParameter(OpBuilder &b, Location loc, Value side, int64_t normalizedRank) {
  auto type = rankedType(side);
  if (type.getRank() <= normalizedRank)
    return side;
  ArrayRef<int64_t> shape = type.getShape().take_back(normalizedRank);
  return build<ReshapeOp>(b, loc, side, i64Constant(b, loc, shape), false);
}

struct NormMatch {
  bool layerNorm = false;
  Value input;        // x
  Value normalized;   // the value the composite replaces
  Value scale, bias;  // optional
  int64_t axis = 0;
  double epsilon = 0;
  SmallVector<Operation *> chain;
};

/// Matches the chain through the variance mean `variance`.
std::optional<NormMatch> matchNorm(ReduceOp variance) {
  NormMatch m;
  auto axis = trailingMeanAxis(variance);
  if (!axis)
    return std::nullopt;
  m.axis = *axis;
  Value sq = variance.getInput();
  Value t = squaredValue(sq);
  if (!t || !singleUse(sq))
    return std::nullopt;
  auto type = rankedType(t);
  if (!type || sq.getType() != type)
    return std::nullopt;
  m.chain = {variance, sq.getDefiningOp()};
  // LayerNorm when t = x - mean(x) over the same axes.
  m.input = t;
  if (auto sub = t.getDefiningOp<SubOp>()) {
    auto mean = sub.getRhs().getDefiningOp<ReduceOp>();
    if (mean && mean.getInput() == sub.getLhs() && trailingMeanAxis(mean) == axis &&
        singleUse(mean.getResult()) && sub.getLhs().getType() == type) {
      m.layerNorm = true;
      m.input = sub.getLhs();
      m.chain.append({sub, mean});
    }
  }
  // var + eps
  Value var = variance.getResult();
  if (!singleUse(var))
    return std::nullopt;
  auto addEps = dyn_cast<AddOp>(*var.getUsers().begin());
  if (!addEps)
    return std::nullopt;
  Value epsValue = otherOperand(addEps, var);
  auto eps = epsValue ? splatValue(epsValue) : std::nullopt;
  if (!eps || *eps < 0 || addEps.getType() != var.getType() ||
      !singleUse(addEps.getResult()))
    return std::nullopt;
  m.epsilon = *eps;
  m.chain.push_back(addEps);
  // t / sqrt(.), t * rsqrt(.), t * reciprocal(sqrt(.)), t * (1 / sqrt(.)).
  Operation *next = *addEps->getUsers().begin();
  Operation *normOp = nullptr;
  Value inv;
  if (auto rsqrt = dyn_cast<RsqrtOp>(next)) {
    m.chain.push_back(rsqrt);
    inv = rsqrt.getResult();
  } else if (auto sqrt = dyn_cast<SqrtOp>(next)) {
    m.chain.push_back(sqrt);
    if (!singleUse(sqrt.getResult()))
      return std::nullopt;
    Operation *user = *sqrt->getUsers().begin();
    if (auto div = dyn_cast<DivOp>(user)) {
      if (div.getRhs() == sqrt.getResult() && div.getLhs() == t)
        normOp = div;
      else if (div.getRhs() == sqrt.getResult() && isSplatNear(div.getLhs(), 1.0, 0)) {
        m.chain.push_back(div);
        inv = div.getResult();
      }
    } else if (auto recip = dyn_cast<ReciprocalOp>(user)) {
      m.chain.push_back(recip);
      inv = recip.getResult();
    }
  }
  if (inv) {
    if (!singleUse(inv))
      return std::nullopt;
    auto mul = dyn_cast<MulOp>(*inv.getUsers().begin());
    if (!mul || otherOperand(mul, inv) != t)
      return std::nullopt;
    normOp = mul;
  }
  if (!normOp || normOp->getResult(0).getType() != type)
    return std::nullopt;
  m.chain.push_back(normOp);
  // t feeds the square and the normalization only (LayerNorm: t is ours).
  if (m.layerNorm && !onlyUsedBy(t, {sq.getDefiningOp(), normOp}))
    return std::nullopt;
  m.normalized = normOp->getResult(0);

  // RMSNorm: statistics in fp32 inside a Cast pair.
  if (!m.layerNorm) {
    auto castIn = m.input.getDefiningOp<CastOp>();
    if (castIn && m.normalized.hasOneUse()) {
      auto castOut = dyn_cast<CastOp>(*m.normalized.getUsers().begin());
      if (castOut && castOut.getType() == castIn.getInput().getType() &&
          isa<FloatType>(castIn.getInput().getType().getElementType()) &&
          !castIn.getTruncateBf16() && !castOut.getTruncateBf16() &&
          onlyUsedBy(m.input, {sq.getDefiningOp(), normOp})) {
        m.chain.append({castIn, castOut});
        m.input = castIn.getInput();
        m.normalized = castOut.getResult();
        type = rankedType(m.input);
      }
    }
  }
  // Optional scale, then (LayerNorm) bias.
  if (m.normalized.hasOneUse())
    if (auto mul = dyn_cast<MulOp>(*m.normalized.getUsers().begin())) {
      Value side = otherOperand(mul, m.normalized);
      if (side && mul.getType() == type && isNormParameter(side, type, m.axis)) {
        m.scale = side;
        m.chain.push_back(mul);
        m.normalized = mul.getResult();
      }
    }
  if (m.layerNorm && m.normalized.hasOneUse())
    if (auto add = dyn_cast<AddOp>(*m.normalized.getUsers().begin())) {
      Value side = otherOperand(add, m.normalized);
      if (side && add.getType() == type && isNormParameter(side, type, m.axis)) {
        m.bias = side;
        m.chain.push_back(add);
        m.normalized = add.getResult();
      }
    }
  return m;
}

bool rewriteNorm(ReduceOp variance) {
  auto m = matchNorm(variance);
  if (!m)
    return false;
  Operation *root = m->normalized.getDefiningOp();
  OpBuilder b(root);
  SmallVector<Value> stops{m->input};
  for (Value v : {m->scale, m->bias})
    if (v)
      stops.push_back(v);
  Location loc = chainLoc(root, stops);
  auto type = rankedType(m->input);
  int64_t normalizedRank = type.getRank() - m->axis;
  Value scale = m->scale;
  if (scale) {
    scale = trimParameter(b, loc, scale, normalizedRank);
  } else {
    auto onesType = RankedTensorType::get(type.getShape().drop_front(m->axis),
                                          type.getElementType());
    scale = ConstantOp::create(
        b, loc, DenseElementsAttr::get(onesType, FloatAttr::get(type.getElementType(), 1.0)));
  }
  Value bias = m->bias ? trimParameter(b, loc, m->bias, normalizedRank) : Value();
  Value replacement;
  auto epsAttr = b.getF32FloatAttr((float)m->epsilon);
  if (m->layerNorm)
    replacement = build<LayerNormOp>(b, loc, m->input, scale, bias,
                                     b.getI64IntegerAttr(m->axis), epsAttr);
  else
    replacement = build<RmsNormOp>(b, loc, m->input, scale,
                                   b.getI64IntegerAttr(m->axis), epsAttr);
  if (!replacement || replacement.getType() != m->normalized.getType()) {
    if (replacement)
      replacement.getDefiningOp()->erase();
    return false;
  }
  m->normalized.replaceAllUsesWith(replacement);
  eraseDeadOps(m->chain);
  return true;
}

struct RecognizeNormsPass
    : public ::sluice::impl::RecognizeNormsPassBase<RecognizeNormsPass> {
  using RecognizeNormsPassBase::RecognizeNormsPassBase;

  void runOnOperation() override {
    // A match erases ops after the variance mean: restart the scan after
    // each rewrite (graphs have tens of norms at most).
    bool changed = true;
    while (changed) {
      changed = false;
      getOperation().walk([&](ReduceOp reduce) {
        if (rewriteNorm(reduce)) {
          changed = true;
          return WalkResult::interrupt();
        }
        return WalkResult::advance();
      });
    }
  }
};

} // namespace
