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
// One pattern (NormPattern) matches both, rooted at the variance mean.
// A second (FoldBatchNormIntoConv) folds an inference batch_norm with
// constant parameters into the f32 conv before it.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/recognize/Match.h"
#include "passes/recognize/Patterns.h"

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
/// at most rank - axis dims); `side` has a static shape when it has more.
Value trimParameter(PatternRewriter &rewriter, Location loc, Value side,
                    int64_t normalizedRank) {
  auto type = rankedType(side);
  if (type.getRank() <= normalizedRank)
    return side;
  ArrayRef<int64_t> shape = type.getShape().take_back(normalizedRank);
  return ReshapeOp::create(rewriter, loc, RankedTensorType::get(shape, type.getElementType()),
                           side, i64Constant(rewriter, loc, shape), /*allowzero=*/false);
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

/// Matches `t^2` and, for LayerNorm, `t = x - mean(x)` over the variance's
/// axes: fills m.input, m.layerNorm and the start of m.chain; returns t.
FailureOr<Value> matchSquare(ReduceOp variance, NormMatch &m, PatternRewriter &rewriter) {
  auto axis = trailingMeanAxis(variance);
  if (!axis)
    return rewriter.notifyMatchFailure(variance,
                                       "not a keepdims mean over the trailing axes");
  m.axis = *axis;
  Value sq = variance.getInput();
  Value t = squaredValue(sq);
  if (!t || !singleUse(sq))
    return rewriter.notifyMatchFailure(variance, "not the mean of a single-use square");
  auto type = rankedType(t);
  if (!type || sq.getType() != type)
    return rewriter.notifyMatchFailure(variance, "the square changes its operand's type");
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
  return t;
}

/// Matches `var + eps` and the division of `t` by its square root:
/// t / sqrt(.), t * rsqrt(.), t * reciprocal(sqrt(.)), t * (1 / sqrt(.)).
/// Returns the normalizing op.
FailureOr<Operation *> matchNormalization(ReduceOp variance, Value t, NormMatch &m,
                                          PatternRewriter &rewriter) {
  Value var = variance.getResult();
  if (!singleUse(var))
    return rewriter.notifyMatchFailure(variance, "the variance has other users");
  auto addEps = dyn_cast<AddOp>(*var.getUsers().begin());
  if (!addEps)
    return rewriter.notifyMatchFailure(variance, "the variance is not added to epsilon");
  Value epsValue = otherOperand(addEps, var);
  auto eps = epsValue ? splatValue(epsValue) : std::nullopt;
  if (!eps || *eps < 0 || addEps.getType() != var.getType() ||
      !singleUse(addEps.getResult()))
    return rewriter.notifyMatchFailure(variance,
                                       "not var + eps with a constant eps >= 0, used once");
  m.epsilon = *eps;
  m.chain.push_back(addEps);
  Operation *next = *addEps->getUsers().begin();
  Operation *normOp = nullptr;
  Value inv;
  if (auto rsqrt = dyn_cast<RsqrtOp>(next)) {
    m.chain.push_back(rsqrt);
    inv = rsqrt.getResult();
  } else if (auto sqrt = dyn_cast<SqrtOp>(next)) {
    m.chain.push_back(sqrt);
    if (!singleUse(sqrt.getResult()))
      return rewriter.notifyMatchFailure(variance, "the square root has other users");
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
      return rewriter.notifyMatchFailure(variance, "1/stddev has other users");
    auto mul = dyn_cast<MulOp>(*inv.getUsers().begin());
    if (!mul || otherOperand(mul, inv) != t)
      return rewriter.notifyMatchFailure(variance, "1/stddev does not multiply the input");
    normOp = mul;
  }
  if (!normOp || normOp->getResult(0).getType() != t.getType())
    return rewriter.notifyMatchFailure(variance,
                                       "no division by sqrt(var + eps) of the input's type");
  return normOp;
}

/// RMSNorm: statistics in fp32 inside a Cast pair around the chain.
void matchCastPair(NormMatch &m, Operation *square, Operation *normOp) {
  auto castIn = m.input.getDefiningOp<CastOp>();
  if (!castIn || !m.normalized.hasOneUse())
    return;
  auto castOut = dyn_cast<CastOp>(*m.normalized.getUsers().begin());
  if (castOut && castOut.getType() == castIn.getInput().getType() &&
      isa<FloatType>(castIn.getInput().getType().getElementType()) &&
      !castIn.getTruncateBf16() && !castOut.getTruncateBf16() &&
      onlyUsedBy(m.input, {square, normOp})) {
    m.chain.append({castIn, castOut});
    m.input = castIn.getInput();
    m.normalized = castOut.getResult();
  }
}

/// The optional `* scale`, then (LayerNorm) `+ bias`, each of the input's
/// type and varying along the normalized dims only.
void matchScaleAndBias(NormMatch &m) {
  auto type = rankedType(m.input);
  // The single user of the chain's end, when it is an `OpTy` with a
  // normalization parameter on its other side: that parameter.
  auto parameterOf = [&](auto opTag) -> Value {
    using OpTy = decltype(opTag);
    if (!m.normalized.hasOneUse())
      return Value();
    auto op = dyn_cast<OpTy>(*m.normalized.getUsers().begin());
    if (!op || op.getType() != type)
      return Value();
    Value side = otherOperand(op, m.normalized);
    if (!side || !isNormParameter(side, type, m.axis))
      return Value();
    m.chain.push_back(op);
    m.normalized = op.getResult();
    return side;
  };
  m.scale = parameterOf(MulOp());
  if (m.layerNorm)
    m.bias = parameterOf(AddOp());
}

/// Matches the chain through the variance mean `variance`.
FailureOr<NormMatch> matchNorm(ReduceOp variance, PatternRewriter &rewriter) {
  NormMatch m;
  FailureOr<Value> t = matchSquare(variance, m, rewriter);
  if (failed(t))
    return failure();
  Operation *square = variance.getInput().getDefiningOp();
  FailureOr<Operation *> normOp = matchNormalization(variance, *t, m, rewriter);
  if (failed(normOp))
    return failure();
  m.chain.push_back(*normOp);
  // t feeds the square and the normalization only (LayerNorm: t is ours).
  if (m.layerNorm && !onlyUsedBy(*t, {square, *normOp}))
    return rewriter.notifyMatchFailure(variance, "x - mean(x) has other users");
  m.normalized = (*normOp)->getResult(0);
  if (!m.layerNorm)
    matchCastPair(m, square, *normOp);
  matchScaleAndBias(m);

  // The composite's result has the input's type; a parameter with more dims
  // than the normalized ones is reshaped to a static shape; without a scale
  // the composite gets a constant of ones over the (static) normalized dims.
  auto type = rankedType(m.input);
  int64_t normalizedRank = type.getRank() - m.axis;
  if (m.normalized.getType() != type)
    return rewriter.notifyMatchFailure(variance, "the chain changes the input's type");
  for (Value side : {m.scale, m.bias})
    if (side && rankedType(side).getRank() > normalizedRank &&
        !rankedType(side).hasStaticShape())
      return rewriter.notifyMatchFailure(variance, "a scale or bias to reshape has dynamic dims");
  if (!m.scale && !RankedTensorType::get(type.getShape().drop_front(m.axis),
                                         type.getElementType())
                       .hasStaticShape())
    return rewriter.notifyMatchFailure(variance,
                                       "no scale, and the normalized dims are not static");
  return m;
}

/// LayerNorm `d = x - ReduceMean(x); d / Sqrt(ReduceMean(d^2) + eps)` and
/// RMSNorm `x * Rsqrt(ReduceMean(x^2) + eps)` (the division written as Div,
/// Rsqrt, Reciprocal(Sqrt) or 1 / Sqrt; RMSNorm optionally inside a Cast to
/// a float type and back), then an optional `* scale` and (LayerNorm)
/// `+ bias` that vary along the normalized dims only; rooted at the variance
/// mean, which reduces the trailing axes with keepdims. Every intermediate
/// feeds the chain alone.
struct NormPattern : OpRewritePattern<ReduceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReduceOp variance, PatternRewriter &rewriter) const override {
    FailureOr<NormMatch> m = matchNorm(variance, rewriter);
    if (failed(m))
      return failure();
    Operation *root = m->normalized.getDefiningOp();
    rewriter.setInsertionPoint(root);
    SmallVector<Value> stops{m->input};
    for (Value v : {m->scale, m->bias})
      if (v)
        stops.push_back(v);
    Location loc = chainLoc(root, stops);
    auto type = rankedType(m->input);
    int64_t normalizedRank = type.getRank() - m->axis;
    Value scale = m->scale;
    if (scale) {
      scale = trimParameter(rewriter, loc, scale, normalizedRank);
    } else {
      auto onesType = RankedTensorType::get(type.getShape().drop_front(m->axis),
                                            type.getElementType());
      scale = ConstantOp::create(
          rewriter, loc,
          DenseElementsAttr::get(onesType, FloatAttr::get(type.getElementType(), 1.0)));
    }
    Value bias = m->bias ? trimParameter(rewriter, loc, m->bias, normalizedRank) : Value();
    auto axisAttr = rewriter.getI64IntegerAttr(m->axis);
    auto epsAttr = rewriter.getF32FloatAttr((float)m->epsilon);
    Value replacement;
    if (m->layerNorm)
      replacement =
          LayerNormOp::create(rewriter, loc, m->input, scale, bias, axisAttr, epsAttr).getOutput();
    else
      replacement = RmsNormOp::create(rewriter, loc, m->input, scale, axisAttr, epsAttr);
    rewriter.replaceAllUsesWith(m->normalized, replacement);
    eraseDeadOps(rewriter, m->chain);
    return success();
  }
};

/// The float values of a constant operand (none when it is no constant).
std::optional<Tensor> constantValues(Value v) {
  auto constant = v ? v.getDefiningOp<ConstantOp>() : ConstantOp();
  if (!constant)
    return std::nullopt;
  auto tensor = tensorFromAttr(constant.getValue());
  if (failed(tensor) || (tensor->dtype() != DType::F32 && tensor->dtype() != DType::F64))
    return std::nullopt;
  return *tensor;
}

/// `batch_norm(conv(x, W, b), scale, bias, mean, var)` with constant f32
/// weights and parameters and no other user of the conv becomes
/// `conv(x, W * s, (b - mean) * s + bias)` with s = scale / sqrt(var + eps)
/// per output channel (in double, rounded once to f32): one launch instead
/// of two (exporters fold it in eval mode; a model exported otherwise
/// keeps it).
struct FoldBatchNormIntoConv : public OpRewritePattern<BatchNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BatchNormOp bn, PatternRewriter &rewriter) const override {
    auto conv = bn.getInput().getDefiningOp<ConvOp>();
    if (!conv || !conv->hasOneUse())
      return failure();
    auto type = dyn_cast<RankedTensorType>(conv.getOutput().getType());
    auto wType = dyn_cast<RankedTensorType>(conv.getWeight().getType());
    if (!type || !wType || !type.getElementType().isF32() || !wType.getElementType().isF32() ||
        !wType.hasStaticShape() || wType.getRank() < 3 || bn.getOutput().getType() != type)
      return failure();
    int64_t m = wType.getDimSize(0);
    auto w = constantValues(conv.getWeight());
    auto scale = constantValues(bn.getScale()), shift = constantValues(bn.getBias()),
         mean = constantValues(bn.getMean()), var = constantValues(bn.getVariance());
    std::optional<Tensor> b;
    if (conv.getBias() && !(b = constantValues(conv.getBias())))
      return failure();
    auto perChannel = [&](const std::optional<Tensor> &t) {
      return t && t->numElements() == m;
    };
    if (!w || !perChannel(scale) || !perChannel(shift) || !perChannel(mean) ||
        !perChannel(var) || (b && !perChannel(b)))
      return failure();
    double eps = (double)bn.getEpsilon().convertToFloat();
    int64_t per = w->numElements() / m;
    std::vector<double> weights = w->toDoubleVector(), bias(m);
    for (int64_t o = 0; o < m; ++o) {
      double s = scale->getDouble(o) / std::sqrt(var->getDouble(o) + eps);
      for (int64_t i = 0; i < per; ++i)
        weights[o * per + i] *= s;
      bias[o] = ((b ? b->getDouble(o) : 0.0) - mean->getDouble(o)) * s + shift->getDouble(o);
    }
    Location loc = bn.getLoc();
    rewriter.setInsertionPoint(conv);
    auto constant = [&](const Tensor &t) -> Value {
      auto ty = RankedTensorType::get(t.shape(), rewriter.getF32Type());
      return ConstantOp::create(rewriter, loc, attrFromTensor(rewriter.getContext(), t, ty));
    };
    std::vector<int64_t> wShape(wType.getShape().begin(), wType.getShape().end());
    Value newW = constant(Tensor::fromDoubles(DType::F32, wShape, weights));
    Value newB = constant(Tensor::fromDoubles(DType::F32, {m}, bias));
    auto folded = ConvOp::create(rewriter, conv.getLoc(), conv.getInput(), newW, newB,
                                 conv.getStridesAttr(), conv.getDilationsAttr(),
                                 conv.getPadsAttr(), conv.getGroupAttr());
    rewriter.replaceOp(bn, folded.getOutput());
    rewriter.eraseOp(conv);
    return success();
  }
};

} // namespace

void sluice::populateRecognizeNormsPatterns(RewritePatternSet &patterns) {
  patterns.add<NormPattern, FoldBatchNormIntoConv>(patterns.getContext());
}
