//===- DecomposeComposites.cpp - composites back to primitive ops ---------===//
//
// Each composite of the recognize phase written as the primitive ops that
// define it, exactly the op's semantics (statistics of the norms in fp32).
// Targets without a kernel for a composite run this at the start of the fuse
// phase (Pipeline.cpp, compositesToDecompose); tests run it after the
// recognizers to compare decompose(recognize(G)) with G. One pattern per
// composite (DecomposePattern<OpTy>); the pass fails on a selected composite
// that its pattern refuses (decompositionRefusal says why: dynamic sequence
// or head dims for causal masks and rotary, parameters that broadcast beyond
// the operand they apply to, result types the primitive ops do not give).
//
//===----------------------------------------------------------------------===//

#include "lib/kernel/Moe.h"
#include "passes/Passes.h"
#include "passes/recognize/Match.h"
#include "passes/recognize/Patterns.h"

#include <limits>

namespace sluice {
#define GEN_PASS_DEF_DECOMPOSECOMPOSITESPASS
#include "passes/Passes.h.inc"
} // namespace sluice

using namespace mlir;
using namespace sluice;
using namespace sluice::recognize;

namespace {

/// Whether broadcasting `param` against `type` leaves `type` as it is: a
/// scale, bias, mask or rotary table that the decomposition combines
/// elementwise with a value of that type keeps the value's type.
bool broadcastsInto(Value param, RankedTensorType type) {
  auto paramType = rankedType(param);
  if (!paramType)
    return false;
  auto shape = broadcastShapes(type.getShape(), paramType.getShape());
  return succeeded(shape) && ArrayRef<int64_t>(*shape) == type.getShape();
}

/// The [axis, rank)-normalized axis of a norm on `type`.
int64_t normAxis(int64_t axis, RankedTensorType type) {
  return axis < 0 ? axis + type.getRank() : axis;
}

//===----------------------------------------------------------------------===//
// Preconditions: why a composite cannot be decomposed (nullptr: it can).
// Each decomposition below infers every op's type; these make sure that
// inference succeeds and ends at the composite's own result types.
//===----------------------------------------------------------------------===//

const char *decompositionRefusal(GeluOp op) {
  return op.getType() == op.getInput().getType() ? nullptr
                                                 : "the result type is not the input's";
}

const char *decompositionRefusal(SiluOp op) {
  return op.getType() == op.getInput().getType() ? nullptr
                                                 : "the result type is not the input's";
}

const char *decompositionRefusal(LayerNormOp op) {
  auto type = rankedType(op.getInput());
  if (!type)
    return "the input is not ranked";
  if (!broadcastsInto(op.getScale(), type) || (op.getBias() && !broadcastsInto(op.getBias(), type)))
    return "the scale or bias broadcasts beyond the input's shape";
  if (op.getOutput().getType() != type)
    return "the result type is not the input's";
  SmallVector<int64_t> statShape(type.getShape());
  for (int64_t i = normAxis(op.getAxis(), type); i < type.getRank(); ++i)
    statShape[i] = 1;
  auto statType = RankedTensorType::get(statShape, Float32Type::get(op.getContext()));
  if (op.getMean().getType() != statType || op.getInvStdDev().getType() != statType)
    return "the statistics are not f32 with the normalized dims of size 1";
  return nullptr;
}

const char *decompositionRefusal(RmsNormOp op) {
  auto type = rankedType(op.getInput());
  if (!type)
    return "the input is not ranked";
  if (!broadcastsInto(op.getScale(), type))
    return "the scale broadcasts beyond the input's shape";
  if (op.getType() != type)
    return "the result type is not the input's";
  return nullptr;
}

const char *decompositionRefusal(AttentionOp op) {
  auto q = rankedType(op.getQuery()), k = rankedType(op.getKey()), v = rankedType(op.getValue());
  if (!q || !k || !v)
    return "query, key or value is not ranked";
  int64_t rank = q.getRank();
  if (op.getRotaryCos()) {
    // The rotate-half slices need the head size as a constant.
    int64_t d = q.getDimSize(rank - 1);
    if (ShapedType::isDynamic(d) || d % 2 || k.getDimSize(rank - 1) != d)
      return "rotary embeddings on a head size that is not static and even";
    for (Value table : {op.getRotaryCos(), op.getRotarySin()})
      if (!broadcastsInto(table, q) || !broadcastsInto(table, k))
        return "a rotary table broadcasts beyond the query's or the key's shape";
  }
  // scores = Q K^T: [batch(Q) x batch(K), Sq, Sk].
  auto batch = broadcastShapes(q.getShape().drop_back(2), k.getShape().drop_back(2));
  if (failed(batch))
    return "the query's and key's batch dims do not broadcast";
  SmallVector<int64_t> scoresShape(*batch);
  scoresShape.append({q.getDimSize(rank - 2), k.getDimSize(rank - 2)});
  auto scores = RankedTensorType::get(scoresShape, q.getElementType());
  if (op.getMask() && !broadcastsInto(op.getMask(), scores))
    return "the mask broadcasts beyond the scores' shape";
  // The causal mask is a constant [Sq, Sk].
  if (op.getCausal() && (scores.isDynamicDim(rank - 2) || scores.isDynamicDim(rank - 1)))
    return "a causal mask over a dynamic sequence length";
  // The result: probs V, [batch(scores) x batch(V), Sq, Dv].
  auto outBatch = broadcastShapes(ArrayRef<int64_t>(scoresShape).drop_back(2),
                                  v.getShape().drop_back(2));
  if (failed(outBatch))
    return "the value's batch dims do not broadcast";
  SmallVector<int64_t> outShape(*outBatch);
  outShape.append({scoresShape[rank - 2], v.getDimSize(rank - 1)});
  if (RankedTensorType::get(outShape, q.getElementType()) != op.getType())
    return "the result type is not [B..., Sq, Dv] of the operands";
  return nullptr;
}

const char *decompositionRefusal(MoeOp op) {
  if (op.getExpertOffset())
    return "an expert-parallel moe holds only some experts (no dense form)";
  auto tokens = rankedType(op.getTokens()), router = rankedType(op.getRouter());
  if (!tokens || !router || !tokens.hasStaticShape() || !router.hasStaticShape())
    return "the tokens or the router are not static";
  return nullptr;
}

//===----------------------------------------------------------------------===//
// The decompositions
//===----------------------------------------------------------------------===//

/// Builds the decompositions at one insertion point, each op with its
/// inferred type (the preconditions above make inference succeed).
struct Decomposer {
  OpBuilder &b;
  Location loc;

  Value scalar(Value like, double v) {
    return scalarConstant(b, loc, cast<TensorType>(like.getType()).getElementType(), v);
  }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
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
    return ReduceOp::create(b, loc, x, i64Constant(b, loc, axes),
                            ReduceKindAttr::get(b.getContext(), ReduceKind::mean),
                            b.getBoolAttr(true), b.getBoolAttr(false));
  }

  SmallVector<Value> decompose(GeluOp op) {
    Value x = op.getInput();
    Value phi;
    if (op.getApproximate() == "tanh") {
      Value cube = mul(mul(x, x), x);
      Value inner = add(x, mul(cube, scalar(x, 0.044715)));
      Value t = TanhOp::create(b, loc, mul(inner, scalar(x, std::sqrt(2.0 / M_PI))));
      phi = add(t, scalar(x, 1.0));
    } else {
      Value e = ErfOp::create(b, loc, DivOp::create(b, loc, x, scalar(x, std::sqrt(2.0))));
      phi = add(e, scalar(x, 1.0));
    }
    Value xPhi = mul(x, phi);
    return {mul(xPhi, scalar(x, 0.5))};
  }

  SmallVector<Value> decompose(SiluOp op) {
    return {mul(op.getInput(), SigmoidOp::create(b, loc, op.getInput()))};
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
      d = SubOp::create(b, loc, xf, m);
    }
    Value var = mean(mul(d, d), axis);
    Value inv = RsqrtOp::create(b, loc, add(var, scalar(var, epsilon)));
    return {castTo(mul(d, inv), elementType), m, inv};
  }

  SmallVector<Value> decompose(LayerNormOp op) {
    int64_t axis = normAxis(op.getAxis(), rankedType(op.getInput()));
    auto [y, m, inv] = normalize(op.getInput(), axis, op.getEpsilon().convertToFloat(), true);
    y = mul(y, op.getScale());
    if (op.getBias())
      y = add(y, op.getBias());
    return {y, m, inv};
  }

  SmallVector<Value> decompose(RmsNormOp op) {
    int64_t axis = normAxis(op.getAxis(), rankedType(op.getInput()));
    auto [y, m, inv] = normalize(op.getInput(), axis, op.getEpsilon().convertToFloat(), false);
    return {mul(y, op.getScale())};
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
      return SliceOp::create(b, loc, x, starts, ends, axes, steps);
    };
    Value direct = mul(x, cos);
    Value upper = NegOp::create(b, loc, half(d / 2, d));
    Value lower = half(0, d / 2);
    Value rotated = ConcatOp::create(b, loc, ValueRange{upper, lower}, b.getI64IntegerAttr(-1));
    return add(direct, mul(rotated, sin));
  }

  SmallVector<Value> decompose(AttentionOp op) {
    Value q = op.getQuery(), k = op.getKey();
    auto qType = rankedType(q);
    int64_t rank = qType.getRank();
    if (op.getRotaryCos()) {
      q = rotary(q, op.getRotaryCos(), op.getRotarySin());
      k = rotary(k, op.getRotaryCos(), op.getRotarySin());
    }
    SmallVector<int64_t> perm;
    for (int64_t i = 0; i < rank; ++i)
      perm.push_back(i);
    std::swap(perm[rank - 1], perm[rank - 2]);
    Value scores = MatMulOp::create(b, loc, q, TransposeOp::create(b, loc, k, perm));
    scores = mul(scores, scalar(scores, op.getScale().convertToFloat()));
    Type elementType = qType.getElementType();
    const double inf = std::numeric_limits<double>::infinity();
    if (Value mask = op.getMask()) {
      if (rankedType(mask).getElementType().isInteger(1))
        scores = SelectOp::create(b, loc, mask, scores, scalar(scores, -inf));
      else
        scores = add(scores, castTo(mask, elementType));
    }
    if (op.getCausal()) {
      auto sType = rankedType(scores);
      int64_t sq = sType.getDimSize(rank - 2), sk = sType.getDimSize(rank - 1);
      int64_t window = op.getWindowAttr().getInt();
      auto maskType = RankedTensorType::get({sq, sk}, elementType);
      SmallVector<Attribute> values;
      for (int64_t i = 0; i < sq; ++i)
        for (int64_t j = 0; j < sk; ++j)
          values.push_back(FloatAttr::get(
              elementType, j <= i + sk - sq && (window == 0 || j > i + sk - sq - window)
                               ? 0.0
                               : -inf));
      scores = add(scores, ConstantOp::create(b, loc, DenseElementsAttr::get(maskType, values)));
    }
    Value probs = SoftmaxOp::create(b, loc, scores, b.getI64IntegerAttr(-1), b.getBoolAttr(false));
    return {MatMulOp::create(b, loc, probs, op.getValue())};
  }

  Value activation(StringRef name, Value x) {
    if (name == "relu")
      return ReluOp::create(b, loc, x);
    if (name == "gelu" || name == "gelu_tanh")
      return GeluOp::create(b, loc, x, name == "gelu" ? "none" : "tanh");
    if (name == "silu")
      return SiluOp::create(b, loc, x);
    return x;
  }
  Value reshape(Value x, ArrayRef<int64_t> shape) {
    return ReshapeOp::create(b, loc, x, i64Constant(b, loc, shape));
  }

  /// The canonical forms of RecognizeMoe.cpp: top_k as the router's
  /// softmax and TopK, every expert on every token as batched MatMuls over
  /// the stacks (a gated expert's two projections multiplied), the chosen
  /// outputs gathered and summed with their weights; hard gating as the
  /// sample's expert weights gathered by its index.
  SmallVector<Value> decompose(MoeOp op) {
    auto tokensType = rankedType(op.getTokens());
    auto w1Type = rankedType(op.getW1()), w2Type = rankedType(op.getW2());
    int64_t e = w1Type.getDimSize(0), d = w1Type.getDimSize(1), f = w1Type.getDimSize(2);
    int64_t dOut = w2Type.getDimSize(2);
    if (op.getGating() == "hard") {
      Value index = op.getRouter();
      int64_t batch = tokensType.getDimSize(0);
      auto gathered = [&](Value stack) {
        return GatherOp::create(b, loc, stack, index, b.getI64IntegerAttr(0));
      };
      auto projection = [&](Value w, Value bias) {
        Value p = MatMulOp::create(b, loc, op.getTokens(), gathered(w));
        return bias ? add(p, reshape(gathered(bias), {batch, 1, f})) : p;
      };
      Value h = activation(op.getActivation(), projection(op.getW1(), op.getB1()));
      if (op.getW3())
        h = mul(h, projection(op.getW3(), op.getB3()));
      Value y = MatMulOp::create(b, loc, h, gathered(op.getW2()));
      if (op.getB2())
        y = add(y, reshape(gathered(op.getB2()), {batch, 1, dOut}));
      return {y};
    }
    int64_t t = tokensType.getNumElements() / d, k = op.getTopK();
    Value tokens = reshape(op.getTokens(), {t, d});
    Value logits = reshape(op.getRouter(), {t, e});
    Value probs = SoftmaxOp::create(b, loc, logits, b.getI64IntegerAttr(-1), b.getBoolAttr(false));
    auto topk = TopKOp::create(b, loc, probs, i64Constant(b, loc, {k}), b.getI64IntegerAttr(-1),
                               b.getBoolAttr(true), b.getBoolAttr(true));
    Value weights = topk.getValues();
    if (op.getNormalize()) {
      Value sum = ReduceOp::create(b, loc, weights, i64Constant(b, loc, {-1}),
                                   ReduceKindAttr::get(b.getContext(), ReduceKind::sum),
                                   b.getBoolAttr(true), b.getBoolAttr(false));
      weights = DivOp::create(b, loc, weights, sum);
    }
    auto projection = [&](Value w, Value bias) {
      Value p = MatMulOp::create(b, loc, tokens, w); // [E, T, F]
      return bias ? add(p, reshape(bias, {e, 1, f})) : p;
    };
    Value h = activation(op.getActivation(), projection(op.getW1(), op.getB1()));
    if (op.getW3())
      h = mul(h, projection(op.getW3(), op.getB3()));
    Value y = MatMulOp::create(b, loc, h, op.getW2()); // [E, T, Do]
    if (op.getB2())
      y = add(y, reshape(op.getB2(), {e, 1, dOut}));
    y = TransposeOp::create(b, loc, y, ArrayRef<int64_t>{1, 0, 2});
    Value indices = ExpandOp::create(b, loc, reshape(topk.getIndices(), {t, k, 1}),
                                     i64Constant(b, loc, {t, k, dOut}));
    Value chosen = GatherElementsOp::create(b, loc, y, indices, b.getI64IntegerAttr(1));
    Value weighted = mul(chosen, reshape(weights, {t, k, 1}));
    Value out = ReduceOp::create(b, loc, weighted, i64Constant(b, loc, {1}),
                                 ReduceKindAttr::get(b.getContext(), ReduceKind::sum),
                                 b.getBoolAttr(false), b.getBoolAttr(false));
    SmallVector<int64_t> outShape(tokensType.getShape());
    outShape.back() = dOut;
    return {reshape(out, outShape)};
  }
};

/// Any `OpTy` composite whose decomposition has the composite's result types
/// (decompositionRefusal says why not) becomes its primitive ops: GELU as
/// erf/tanh arithmetic, SiLU as x * sigmoid(x), the norms with fp32
/// statistics, attention as rotary, MatMul, scale, mask, Softmax, MatMul.
template <typename OpTy>
struct DecomposePattern : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    if (const char *why = decompositionRefusal(op))
      return rewriter.notifyMatchFailure(op, why);
    rewriter.setInsertionPoint(op);
    Decomposer d{rewriter, op.getLoc()};
    rewriter.replaceOp(op, d.decompose(op));
    return success();
  }
};

/// A sluice.moe the MoE kernel runs stays one op (keep-moe-kernels).
struct DecomposeMoePattern : DecomposePattern<MoeOp> {
  DecomposeMoePattern(MLIRContext *context, bool keepKernels)
      : DecomposePattern<MoeOp>(context), keepKernels(keepKernels) {}

  LogicalResult matchAndRewrite(MoeOp op, PatternRewriter &rewriter) const override {
    if (keepKernels && !kernel::moeKernelRefusal(op))
      return rewriter.notifyMatchFailure(op, "the MoE kernel runs it");
    return DecomposePattern<MoeOp>::matchAndRewrite(op, rewriter);
  }
  bool keepKernels;
};

/// Adds the decomposition of `OpTy` when `ops` names it (or is empty).
template <typename OpTy>
void addIfSelected(RewritePatternSet &patterns, ArrayRef<std::string> ops) {
  if (ops.empty() || llvm::is_contained(ops, OpTy::getOperationName().str()))
    patterns.add<DecomposePattern<OpTy>>(patterns.getContext());
}

struct DecomposeCompositesPass
    : public ::sluice::impl::DecomposeCompositesPassBase<DecomposeCompositesPass> {
  using DecomposeCompositesPassBase::DecomposeCompositesPassBase;

  void runOnOperation() override {
    SmallVector<std::string> names(ops.begin(), ops.end());
    RewritePatternSet patterns(&getContext());
    populateDecomposeCompositesPatterns(patterns, names, keepMoeKernels);
    applyRecognizePatterns(getOperation(), std::move(patterns));
    // A selected composite left over is one the target cannot run.
    getOperation().walk([&](Operation *op) {
      if (auto moe = dyn_cast<MoeOp>(op); moe && keepMoeKernels && !kernel::moeKernelRefusal(moe))
        return;
      if (isa<GeluOp, SiluOp, LayerNormOp, RmsNormOp, AttentionOp, MoeOp>(op) &&
          (names.empty() || llvm::is_contained(names, op->getName().getStringRef().str()))) {
        op->emitOpError("cannot be decomposed (dynamic sequence or head dims?)");
        signalPassFailure();
      }
    });
  }
};

} // namespace

void sluice::populateDecomposeCompositesPatterns(RewritePatternSet &patterns,
                                                 ArrayRef<std::string> ops, bool keepMoeKernels) {
  addIfSelected<GeluOp>(patterns, ops);
  addIfSelected<SiluOp>(patterns, ops);
  addIfSelected<LayerNormOp>(patterns, ops);
  addIfSelected<RmsNormOp>(patterns, ops);
  addIfSelected<AttentionOp>(patterns, ops);
  if (ops.empty() || llvm::is_contained(ops, MoeOp::getOperationName().str()))
    patterns.add<DecomposeMoePattern>(patterns.getContext(), keepMoeKernels);
}
