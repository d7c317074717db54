//===- DecomposeComposites.cpp - composites back to primitive ops ---------===//
//
// Each composite of the recognize phase written as the primitive ops that
// define it, exactly the op's semantics (statistics of the norms in fp32).
// Targets without a kernel for a composite run this at the start of the fuse
// phase (Pipeline.cpp, compositesToDecompose); tests run it after the
// recognizers to compare decompose(recognize(G)) with G.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/recognize/Match.h"

#include "llvm/ADT/TypeSwitch.h"

#include <limits>

namespace sluice {
#define GEN_PASS_DEF_DECOMPOSECOMPOSITESPASS
#include "passes/Passes.h.inc"
} // namespace sluice

using namespace mlir;
using namespace sluice;
using namespace sluice::recognize;

namespace {

/// Builds the decompositions at one insertion point; every helper returns
/// null when type inference refuses an op.
struct Decomposer {
  OpBuilder &b;
  Location loc;

  Value scalar(Value like, double v) {
    return scalarConstant(b, loc, rankedType(like) ? rankedType(like).getElementType()
                                                   : cast<TensorType>(like.getType()).getElementType(),
                          v);
  }
  Value mul(Value x, Value y) { return build<MulOp>(b, loc, x, y); }
  Value add(Value x, Value y) { return build<AddOp>(b, loc, x, y); }
  Value castTo(Value x, Type elementType) {
    auto type = cast<RankedTensorType>(x.getType());
    if (type.getElementType() == elementType)
      return x;
    return CastOp::create(b, loc, type.clone(elementType), x, false);
  }
  Value mean(Value x, int64_t axis) {
    auto type = rankedType(x);
    SmallVector<int64_t> axes;
    for (int64_t a = axis; a < type.getRank(); ++a)
      axes.push_back(a);
    return build<ReduceOp>(b, loc, x, i64Constant(b, loc, axes),
                           ReduceKindAttr::get(b.getContext(), ReduceKind::mean),
                           b.getBoolAttr(true), b.getBoolAttr(false));
  }

  Value gelu(GeluOp op) {
    Value x = op.getInput();
    Value phi;
    if (op.getApproximate() == "tanh") {
      Value cube = mul(mul(x, x), x);
      Value inner = add(x, mul(cube, scalar(x, 0.044715)));
      Value t = build<TanhOp>(b, loc, mul(inner, scalar(x, std::sqrt(2.0 / M_PI))));
      phi = add(t, scalar(x, 1.0));
    } else {
      Value e = build<ErfOp>(b, loc, build<DivOp>(b, loc, x, scalar(x, std::sqrt(2.0))));
      phi = add(e, scalar(x, 1.0));
    }
    Value xPhi = mul(x, phi);
    return mul(xPhi, scalar(x, 0.5));
  }

  Value silu(SiluOp op) {
    return mul(op.getInput(), build<SigmoidOp>(b, loc, op.getInput()));
  }

  /// x / sqrt(var + eps) with statistics in fp32; returns {normalized in
  /// x's type, mean (LayerNorm only), inv_std}.
  std::tuple<Value, Value, Value> normalize(Value x, int64_t axis, float epsilon,
                                            bool center) {
    Type elementType = rankedType(x).getElementType();
    Value xf = castTo(x, b.getF32Type());
    Value m, d = xf;
    if (center) {
      m = mean(xf, axis);
      d = build<SubOp>(b, loc, xf, m);
    }
    Value var = mean(mul(d, d), axis);
    Value inv = build<RsqrtOp>(b, loc, add(var, scalar(var, epsilon)));
    return {castTo(mul(d, inv), elementType), m, inv};
  }

  LogicalResult layerNorm(LayerNormOp op) {
    auto type = rankedType(op.getInput());
    if (!type)
      return failure();
    int64_t axis = (int64_t)op.getAxis() < 0 ? (int64_t)op.getAxis() + type.getRank() : (int64_t)op.getAxis();
    auto [y, m, inv] =
        normalize(op.getInput(), axis, op.getEpsilon().convertToFloat(), true);
    y = mul(y, op.getScale());
    if (op.getBias())
      y = add(y, op.getBias());
    if (!y || y.getType() != op.getOutput().getType() ||
        m.getType() != op.getMean().getType() ||
        inv.getType() != op.getInvStdDev().getType())
      return failure();
    op.getOutput().replaceAllUsesWith(y);
    op.getMean().replaceAllUsesWith(m);
    op.getInvStdDev().replaceAllUsesWith(inv);
    return success();
  }

  Value rmsNorm(RmsNormOp op) {
    auto type = rankedType(op.getInput());
    if (!type)
      return {};
    int64_t axis = (int64_t)op.getAxis() < 0 ? (int64_t)op.getAxis() + type.getRank() : (int64_t)op.getAxis();
    auto [y, m, inv] =
        normalize(op.getInput(), axis, op.getEpsilon().convertToFloat(), false);
    return mul(y, op.getScale());
  }

  /// x * cos + rotate_half(x) * sin.
  Value rotary(Value x, Value cos, Value sin) {
    auto type = rankedType(x);
    int64_t d = type.getDimSize(type.getRank() - 1);
    // (Operands are built one statement at a time: argument evaluation
    // order would otherwise decide the order of the ops.)
    auto half = [&](int64_t start, int64_t end) {
      Value starts = i64Constant(b, loc, {start});
      Value ends = i64Constant(b, loc, {end});
      Value axes = i64Constant(b, loc, {-1});
      Value steps = i64Constant(b, loc, {1});
      return build<SliceOp>(b, loc, x, starts, ends, axes, steps);
    };
    Value direct = mul(x, cos);
    Value rotated = build<ConcatOp>(
        b, loc, ValueRange{build<NegOp>(b, loc, half(d / 2, d)), half(0, d / 2)},
        b.getI64IntegerAttr(-1));
    return add(direct, mul(rotated, sin));
  }

  Value attention(AttentionOp op) {
    Value q = op.getQuery(), k = op.getKey();
    auto qType = rankedType(q), kType = rankedType(k);
    if (!qType || !kType)
      return {};
    int64_t rank = qType.getRank();
    if (op.getRotaryCos()) {
      if (qType.isDynamicDim(rank - 1) || qType.getDimSize(rank - 1) % 2)
        return {};
      q = rotary(q, op.getRotaryCos(), op.getRotarySin());
      k = rotary(k, op.getRotaryCos(), op.getRotarySin());
    }
    SmallVector<int64_t> perm;
    for (int64_t i = 0; i < rank; ++i)
      perm.push_back(i);
    std::swap(perm[rank - 1], perm[rank - 2]);
    Value scores = build<MatMulOp>(
        b, loc, q, build<TransposeOp>(b, loc, k, b.getDenseI64ArrayAttr(perm)));
    scores = mul(scores, scalar(scores, op.getScale().convertToFloat()));
    Type elementType = qType.getElementType();
    const double inf = std::numeric_limits<double>::infinity();
    if (Value mask = op.getMask()) {
      if (rankedType(mask).getElementType().isInteger(1))
        scores = build<SelectOp>(b, loc, mask, scores, scalar(scores, -inf));
      else
        scores = add(scores, castTo(mask, elementType));
    }
    if (op.getCausal()) {
      auto sType = rankedType(scores);
      int64_t sq = sType.getDimSize(rank - 2), sk = sType.getDimSize(rank - 1);
      if (ShapedType::isDynamic(sq) || ShapedType::isDynamic(sk))
        return {};
      auto maskType = RankedTensorType::get({sq, sk}, elementType);
      SmallVector<Attribute> values;
      for (int64_t i = 0; i < sq; ++i)
        for (int64_t j = 0; j < sk; ++j)
          values.push_back(FloatAttr::get(elementType, j <= i + sk - sq ? 0.0 : -inf));
      scores = add(scores, ConstantOp::create(b, loc, DenseElementsAttr::get(maskType, values)));
    }
    Value probs = build<SoftmaxOp>(b, loc, scores, b.getI64IntegerAttr(-1), b.getBoolAttr(false));
    return build<MatMulOp>(b, loc, probs, op.getValue());
  }
};

struct DecomposeCompositesPass
    : public ::sluice::impl::DecomposeCompositesPassBase<DecomposeCompositesPass> {
  using DecomposeCompositesPassBase::DecomposeCompositesPassBase;

  bool selected(Operation *op) {
    return ops.empty() || llvm::is_contained(ops, op->getName().getStringRef().str());
  }

  void runOnOperation() override {
    SmallVector<Operation *> composites;
    getOperation().walk([&](Operation *op) {
      if (isa<GeluOp, SiluOp, LayerNormOp, RmsNormOp, AttentionOp>(op) && selected(op))
        composites.push_back(op);
    });
    for (Operation *op : composites) {
      OpBuilder b(op);
      Decomposer d{b, op->getLoc()};
      LogicalResult result = success();
      if (auto ln = dyn_cast<LayerNormOp>(op)) {
        result = d.layerNorm(ln);
      } else {
        Value replacement = TypeSwitch<Operation *, Value>(op)
                                .Case([&](GeluOp o) { return d.gelu(o); })
                                .Case([&](SiluOp o) { return d.silu(o); })
                                .Case([&](RmsNormOp o) { return d.rmsNorm(o); })
                                .Case([&](AttentionOp o) { return d.attention(o); })
                                .Default([](Operation *) { return Value(); });
        if (!replacement || replacement.getType() != op->getResult(0).getType())
          result = failure();
        else
          op->getResult(0).replaceAllUsesWith(replacement);
      }
      if (failed(result)) {
        op->emitOpError("cannot be decomposed (dynamic sequence or head dims?)");
        return signalPassFailure();
      }
      op->erase();
    }
  }
};

} // namespace
