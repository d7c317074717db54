//===- RecognizeMoe.cpp - mixture-of-experts MLPs as sluice.moe ----------===//
//
// Forms `sluice.moe` from the two forms exporters write for a
// mixture-of-experts MLP (issue 17), after the activations are recognized:
//
// 1. Learned top-k router, experts computed densely and gathered (a plain
//    PyTorch MoE, torch.onnx):
//      p = Softmax(logits, -1); values, idx = TopK(p, k, -1)
//      w = values [/ ReduceSum(values, -1, keepdims)]
//      Y = Transpose(act(tokens @ W1 [+ B1]) @ W2 [+ B2], [1, 0, 2])  [T, E, Do]
//      out = ReduceSum(GatherElements(Y, Expand(Reshape(idx, [T, k, 1])), 1)
//                      * Reshape(w, [T, k, 1]), axes = [1], keepdims = 0)
//    with W1 [E, D, F], W2 [E, F, Do] constants, B1 [E, 1, F], B2 [E, 1, Do]
//    constants, tokens [T, D].
// 2. Hard gating by a per-sample index (the sentence's language):
//      out = act(x @ Gather(W1, id) [+ Reshape(Gather(B1, id), [B, 1, F])])
//            @ Gather(W2, id) [+ Reshape(Gather(B2, id), [B, 1, Do])]
//    with x [B, S, D], id [B], the stacks W1 [E, D, F] ... constants,
//    gathered along axis 0.
//
// `act` is sluice.relu, sluice.gelu, sluice.silu or nothing. Every
// intermediate must feed the chain alone. Biases become [E, F] / [E, Do]
// constants (the same values). Refused (stay as they are): a TopK not on
// the softmax's probabilities of the last axis, a combine that sums over
// another axis, weights that are not constant stacks, an index that
// differs between the gathers.
//
//===----------------------------------------------------------------------===//

#include "passes/recognize/Match.h"
#include "passes/recognize/Patterns.h"

using namespace mlir;
using namespace sluice;
using namespace sluice::recognize;

namespace {

/// An expert MLP found in the graph: what sluice.moe takes besides the
/// routing, and the ops it came from.
struct ExpertMlp {
  Value tokens, w1, b1, w2, b2; // biases null when absent
  StringRef activation = "none";
  SmallVector<Operation *> ops;
};

/// The constant `value` is, when it is one of `rank` dims.
ConstantOp constantOfRank(Value value, int64_t rank) {
  auto constant = value.getDefiningOp<ConstantOp>();
  auto type = rankedType(value);
  return constant && type && type.hasStaticShape() && type.getRank() == rank ? constant
                                                                             : ConstantOp();
}

/// A constant holding `bias` (a constant of E x width values in any shape
/// such as [E, 1, width]) as [E, width].
Value expertBias(PatternRewriter &rewriter, Location loc, ConstantOp bias, int64_t experts,
                 int64_t width) {
  auto tensor = tensorFromAttr(bias.getValue());
  if (failed(tensor) || tensor->numElements() != experts * width)
    return {};
  auto type = RankedTensorType::get({experts, width}, rankedType(bias).getElementType());
  return ConstantOp::create(
      rewriter, loc,
      attrFromTensor(rewriter.getContext(), tensor->reshaped({experts, width}), type));
}

/// The activation `value` is the result of (setting `input` to its operand),
/// or "none" with `input` = `value`.
StringRef activationOf(Value value, Value &input, SmallVectorImpl<Operation *> &ops) {
  Operation *def = value.getDefiningOp();
  input = value;
  if (!def || def->getNumOperands() != 1)
    return "none";
  StringRef name;
  if (isa<ReluOp>(def))
    name = "relu";
  else if (auto gelu = dyn_cast<GeluOp>(def))
    name = gelu.getApproximate() == "tanh" ? "gelu_tanh" : "gelu";
  else if (isa<SiluOp>(def))
    name = "silu";
  else
    return "none";
  input = def->getOperand(0);
  ops.push_back(def);
  return name;
}

/// `value` as `MatMul(lhs, rhs) [+ bias]` (either order of the add); sets
/// `bias` to the addend (null without one).
MatMulOp matmulPlusBias(Value value, Value &bias, SmallVectorImpl<Operation *> &ops) {
  bias = {};
  if (auto add = value.getDefiningOp<AddOp>()) {
    for (unsigned i = 0; i < 2; ++i)
      if (auto mm = add->getOperand(i).getDefiningOp<MatMulOp>()) {
        if (!singleUse(mm.getResult()))
          continue;
        bias = add->getOperand(1 - i);
        ops.append({add, mm});
        return mm;
      }
    return {};
  }
  if (auto mm = value.getDefiningOp<MatMulOp>()) {
    ops.push_back(mm);
    return mm;
  }
  return {};
}

/// The dense experts of form 1: `Y = act(tokens @ W1 [+ B1]) @ W2 [+ B2]`
/// of type [E, T, Do] with constant stacks.
FailureOr<ExpertMlp> matchDenseExperts(Value y) {
  ExpertMlp mlp;
  Value b2Value, hidden, b1Value;
  MatMulOp down = matmulPlusBias(y, b2Value, mlp.ops);
  if (!down)
    return failure();
  mlp.activation = activationOf(down.getLhs(), hidden, mlp.ops);
  MatMulOp up = matmulPlusBias(hidden, b1Value, mlp.ops);
  if (!up)
    return failure();
  ConstantOp w1 = constantOfRank(up.getRhs(), 3), w2 = constantOfRank(down.getRhs(), 3);
  auto tokens = rankedType(up.getLhs());
  if (!w1 || !w2 || !tokens || tokens.getRank() != 2)
    return failure();
  auto w1Type = rankedType(w1), w2Type = rankedType(w2);
  int64_t e = w1Type.getDimSize(0), f = w1Type.getDimSize(2), dOut = w2Type.getDimSize(2);
  if (w2Type.getDimSize(0) != e || w2Type.getDimSize(1) != f ||
      tokens.getDimSize(1) != w1Type.getDimSize(1))
    return failure();
  for (auto [bias, width] : {std::pair(b1Value, f), std::pair(b2Value, dOut)}) {
    if (!bias)
      continue;
    // [E, 1, width]: one bias row per expert, broadcast over the tokens.
    ConstantOp constant = constantOfRank(bias, 3);
    if (!constant || rankedType(constant).getShape() != ArrayRef<int64_t>{e, 1, width})
      return failure();
  }
  mlp.tokens = up.getLhs();
  mlp.w1 = w1;
  mlp.w2 = w2;
  mlp.b1 = b1Value;
  mlp.b2 = b2Value;
  return mlp;
}

/// Form 1, anchored at the combining ReduceSum over the k choices.
struct DenseTopKMoePattern : OpRewritePattern<ReduceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReduceOp reduce, PatternRewriter &rewriter) const override {
    auto outType = rankedType(reduce.getOutput());
    auto axes = reduce.getAxes() ? intConstant(reduce.getAxes()) : std::nullopt;
    if (reduce.getKind() != ReduceKind::sum || reduce.getKeepdims() || !axes ||
        *axes != SmallVector<int64_t>{1} || !outType || outType.getRank() != 2)
      return rewriter.notifyMatchFailure(reduce, "not a sum over the k choices of [T, k, D]");
    auto mul = reduce.getInput().getDefiningOp<MulOp>();
    if (!mul || !singleUse(mul.getResult()))
      return rewriter.notifyMatchFailure(reduce, "not a sum of weighted expert outputs");
    GatherElementsOp gather;
    Value weightView;
    for (unsigned i = 0; i < 2; ++i)
      if (auto g = mul->getOperand(i).getDefiningOp<GatherElementsOp>()) {
        gather = g;
        weightView = mul->getOperand(1 - i);
      }
    if (!gather || gather.getAxis() != 1 || !singleUse(gather.getResult()))
      return rewriter.notifyMatchFailure(reduce, "no gather of the chosen experts' outputs");
    auto transpose = gather.getInput().getDefiningOp<TransposeOp>();
    if (!transpose || transpose.getPerm() != ArrayRef<int64_t>{1, 0, 2} ||
        !singleUse(transpose.getResult()))
      return rewriter.notifyMatchFailure(reduce, "expert outputs not [E, T, D] transposed");
    // The gather's indices: the top-k indices [T, k] as [T, k, 1], expanded.
    SmallVector<Operation *> routing{reduce, mul, gather, transpose};
    Value indices = gather.getIndices();
    while (auto def = indices.getDefiningOp()) {
      if (!isa<ExpandOp, ReshapeOp>(def) || !singleUse(indices))
        break;
      routing.push_back(def);
      indices = def->getOperand(0);
    }
    auto topk = indices.getDefiningOp<TopKOp>();
    if (!topk || indices != topk.getIndices())
      return rewriter.notifyMatchFailure(reduce, "the gathered experts are not a TopK's");
    auto probsType = rankedType(topk.getInput());
    auto softmax = topk.getInput().getDefiningOp<SoftmaxOp>();
    if (!probsType || probsType.getRank() != 2 || !topk.getLargest() ||
        ((int64_t)topk.getAxis() != -1 && topk.getAxis() != 1) || !softmax || softmax.getLog() ||
        ((int64_t)softmax.getAxis() != -1 && softmax.getAxis() != 1) ||
        !singleUse(softmax.getResult()))
      return rewriter.notifyMatchFailure(reduce, "TopK is not over the router's softmax");
    int64_t k = rankedType(topk.getValues()).getDimSize(1);
    // The weights: the top-k probabilities, optionally renormalized.
    SmallVector<Operation *> weightOps;
    Value weights = weightView;
    if (auto reshape = weights.getDefiningOp<ReshapeOp>()) {
      weightOps.push_back(reshape);
      weights = reshape.getInput();
    }
    if (rankedType(weightView).getShape() != ArrayRef<int64_t>{outType.getDimSize(0), k, 1})
      return rewriter.notifyMatchFailure(reduce, "the weights are not [T, k, 1]");
    bool normalize = false;
    if (auto div = weights.getDefiningOp<DivOp>()) {
      auto sum = div.getRhs().getDefiningOp<ReduceOp>();
      auto sumAxes = sum && sum.getAxes() ? intConstant(sum.getAxes()) : std::nullopt;
      if (div.getLhs() != topk.getValues() || !sum || sum.getInput() != topk.getValues() ||
          sum.getKind() != ReduceKind::sum || !sum.getKeepdims() || !sumAxes ||
          (*sumAxes != SmallVector<int64_t>{-1} && *sumAxes != SmallVector<int64_t>{1}))
        return rewriter.notifyMatchFailure(reduce, "weights are not the renormalized top-k");
      weightOps.append({div, sum});
      normalize = true;
    } else if (weights != topk.getValues()) {
      return rewriter.notifyMatchFailure(reduce, "weights are not the top-k probabilities");
    }
    auto mlp = matchDenseExperts(transpose.getInput());
    if (failed(mlp))
      return rewriter.notifyMatchFailure(reduce, "the experts are not constant dense stacks");
    int64_t experts = rankedType(mlp->w1).getDimSize(0);
    if (probsType.getDimSize(1) != experts ||
        rankedType(mlp->tokens).getDimSize(0) != outType.getDimSize(0))
      return rewriter.notifyMatchFailure(reduce, "router and experts disagree on E or T");
    SmallVector<Operation *> chain(routing);
    chain.append(weightOps);
    chain.append(mlp->ops);
    chain.append({topk, softmax});
    for (Operation *op : ArrayRef(chain).drop_front())
      for (Value result : op->getResults())
        if (!onlyUsedBy(result, chain))
          return rewriter.notifyMatchFailure(reduce, "an intermediate has users outside the MoE");
    rewriter.setInsertionPoint(reduce);
    Location loc = chainLoc(reduce, {mlp->tokens, softmax.getInput()});
    auto bias = [&](Value b, Value w) -> Value {
      if (!b)
        return {};
      auto shape = rankedType(w).getShape();
      return expertBias(rewriter, loc, b.getDefiningOp<ConstantOp>(), shape[0], shape[2]);
    };
    Value b1 = bias(mlp->b1, mlp->w1), b2 = bias(mlp->b2, mlp->w2);
    if ((mlp->b1 && !b1) || (mlp->b2 && !b2))
      return rewriter.notifyMatchFailure(reduce, "a bias that cannot be read");
    auto moe = MoeOp::create(rewriter, loc, outType, mlp->tokens, softmax.getInput(), mlp->w1, b1,
                             mlp->w2, b2, Value(), Value(), Value(), experts, k, "top_k",
                             mlp->activation, normalize);
    rewriter.replaceOp(reduce, moe.getResult());
    eraseDeadOps(rewriter, chain);
    return success();
  }
};

/// `value` as `Gather(stack, index, axis 0)` of a constant stack of `rank`
/// dims; null otherwise.
ConstantOp gatheredStack(Value value, Value index, int64_t rank,
                         SmallVectorImpl<Operation *> &ops) {
  auto gather = value.getDefiningOp<GatherOp>();
  if (!gather || gather.getAxis() != 0 || gather.getIndices() != index ||
      !singleUse(gather.getResult()))
    return {};
  ops.push_back(gather);
  return constantOfRank(gather.getInput(), rank);
}

/// A bias of form 2: Reshape(Gather(B [E, width], index), [B, 1, width]).
ConstantOp gatheredBias(Value value, Value index, SmallVectorImpl<Operation *> &ops) {
  auto reshape = value.getDefiningOp<ReshapeOp>();
  auto type = rankedType(value);
  if (!reshape || !singleUse(reshape.getResult()) || !type || type.getRank() != 3 ||
      type.getDimSize(1) != 1)
    return {};
  ops.push_back(reshape);
  return gatheredStack(reshape.getInput(), index, 2, ops);
}

/// Form 2, anchored at the down projection's MatMul with a gathered weight.
struct HardGatedMoePattern : OpRewritePattern<MatMulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatMulOp down, PatternRewriter &rewriter) const override {
    auto gatherDown = down.getRhs().getDefiningOp<GatherOp>();
    if (!gatherDown)
      return rewriter.notifyMatchFailure(down, "the weight is not gathered by an index");
    Value index = gatherDown.getIndices();
    auto indexType = rankedType(index);
    if (!indexType || indexType.getRank() != 1)
      return rewriter.notifyMatchFailure(down, "not one expert index per sample");
    SmallVector<Operation *> ops{down};
    ConstantOp w2 = gatheredStack(down.getRhs(), index, 3, ops);
    Value hidden, b1Value;
    StringRef activation = activationOf(down.getLhs(), hidden, ops);
    if (!w2 || (activation != "none" && !singleUse(down.getLhs())))
      return rewriter.notifyMatchFailure(down, "not a stack of expert weights");
    MatMulOp up = matmulPlusBias(hidden, b1Value, ops);
    if (!up || !singleUse(hidden) || (b1Value && !singleUse(up.getResult())))
      return rewriter.notifyMatchFailure(down, "no expert up-projection before it");
    ConstantOp w1 = gatheredStack(up.getRhs(), index, 3, ops);
    auto tokens = rankedType(up.getLhs());
    if (!w1 || !tokens || tokens.getRank() != 3 || tokens.getDimSize(0) != indexType.getDimSize(0))
      return rewriter.notifyMatchFailure(down, "tokens are not [B, S, D] for an index [B]");
    ConstantOp b1;
    if (b1Value && !(b1 = gatheredBias(b1Value, index, ops)))
      return rewriter.notifyMatchFailure(down, "the up-projection bias is not gathered");
    // An optional down-projection bias: the MatMul's one user.
    Operation *root = down;
    ConstantOp b2;
    if (down->hasOneUse())
      if (auto add = dyn_cast<AddOp>(*down->user_begin())) {
        SmallVector<Operation *> biasOps;
        if ((b2 = gatheredBias(otherOperand(add, down.getResult()), index, biasOps))) {
          root = add;
          ops.push_back(add);
          ops.append(biasOps);
        }
      }
    auto w1Type = rankedType(w1), w2Type = rankedType(w2);
    int64_t experts = w1Type.getDimSize(0);
    if (w2Type.getDimSize(0) != experts || w2Type.getDimSize(1) != w1Type.getDimSize(2) ||
        (b1 && rankedType(b1).getShape() != ArrayRef<int64_t>{experts, w1Type.getDimSize(2)}) ||
        (b2 && rankedType(b2).getShape() != ArrayRef<int64_t>{experts, w2Type.getDimSize(2)}))
      return rewriter.notifyMatchFailure(down, "the expert stacks do not chain");
    rewriter.setInsertionPoint(root);
    Location loc = chainLoc(root, {up.getLhs(), index});
    auto moe = MoeOp::create(rewriter, loc, root->getResult(0).getType(), up.getLhs(), index, w1,
                             b1 ? Value(b1) : Value(), w2, b2 ? Value(b2) : Value(), Value(),
                             Value(), Value(), experts, 1, "hard", activation, false);
    rewriter.replaceOp(root, moe.getResult());
    eraseDeadOps(rewriter, ops);
    return success();
  }
};

} // namespace

void sluice::populateRecognizeMoePatterns(RewritePatternSet &patterns) {
  patterns.add<DenseTopKMoePattern, HardGatedMoePattern>(patterns.getContext());
}
