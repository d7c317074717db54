//===- RecognizeMoe.cpp - mixture-of-experts blocks as sluice.moe ---------===//
//
// Forms `sluice.moe` from the structure of a mixture-of-experts block, after
// the activations are recognized and the rewrites of MoeForms.cpp (in the
// same pattern set) have brought its written form to this one:
//
// 1. A learned top-k router over stacked experts (TopKMoePattern):
//      router   logits = tokens @ Wr [+ br]          Wr [D, E] constant
//      gating   w, idx = TopK(Softmax(logits, -1), k, -1)
//               w = w [/ ReduceSum(w, -1, keepdims)]  (normalize)
//      experts  Y = h @ W2 [+ B2]                     [E, T, Do]
//               h = act(u1), or act(u1) * u3          (gated, SwiGLU)
//               u = tokens' @ W [+ B]                 W1, W3 [E, D, F]
//      combine  G = GatherElements(Transpose(Y, [1, 0, 2]), idx, 1)
//               out = ReduceSum(G * w, 1)              [T, Do]
//    with tokens [T, D] (tokens' the same, or as [1, T, D], or expanded to
//    [E, T, D]: batched matmul), W2 [E, F, Do] and the biases [E, 1, N]
//    constants, idx reshaped to [T, k, 1] and expanded to [T, k, Do], w
//    reshaped to [T, k, 1]. The sum over the k choices may also be
//    Reshape(MatMul(w as [T, 1, k], G), [T, Do]) (an einsum), or for k = 1
//    G as [T, Do] (Reshape, or Gather of slot 0) times w as [T, 1].
//    MoeForms.cpp brings here: experts and combines written with einsum,
//    Mixtral's softmax over the top-k logits (normalize), a list of
//    nn.Linear experts (stacked, or summed in a loop), combines through a
//    [T, E] matrix of scattered weights, and the slots scattered back to
//    their tokens (scatter_add, index_add).
// 2. Hard gating by a per-sample index (the sentence's language):
//      out = act(x @ Gather(W1, id) [+ Reshape(Gather(B1, id), [B, 1, F])])
//            @ Gather(W2, id) [+ Reshape(Gather(B2, id), [B, 1, Do])]
//    with x [B, S, D], id [B], the stacks W1 [E, D, F] ... constants,
//    gathered along axis 0.
//
// `act` is sluice.relu, sluice.gelu, sluice.silu or nothing. Every
// intermediate must feed the block alone (the router's logits may have
// other users: they are an operand). Biases become [E, F] / [E, Do]
// constants (the same values). Refused, so the block stays dense as
// written: logits that are not a Linear of the experts' tokens by a
// constant (top-k over the tokens' own features), weights from another
// TopK than the indices (two routers), a TopK over the raw logits that
// weights by them (no softmax) or over another axis than the softmax's
// last one, expert weights that are not constants, gathers by different
// indices, sums over another axis.
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
  Value tokens, w1, b1, w2, b2, w3, b3; // biases and w3 null when absent
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

/// `value` without the views that give the tokens [T, D] leading dims
/// ([1, T, D], or expanded to [E, T, D] for a batched matmul); appends
/// them to `ops`.
Value tokensBehindViews(Value value, SmallVectorImpl<Operation *> &ops) {
  while (true) {
    auto type = rankedType(value);
    Operation *def = value.getDefiningOp();
    if (!type || type.getRank() <= 2 || !def || !isa<ExpandOp, ReshapeOp>(def))
      return value;
    auto from = rankedType(def->getOperand(0));
    if (!from || from.getRank() < 2 ||
        from.getShape().take_back(2) != type.getShape().take_back(2) ||
        llvm::any_of(from.getShape().drop_back(2), [](int64_t d) { return d != 1; }))
      return value;
    ops.push_back(def);
    value = def->getOperand(0);
  }
}

/// `value` as `tokens' @ W [+ B]` with W a constant [E, D, F] and B a
/// constant [E, 1, F]; sets `tokens` and the weight and bias.
bool expertProjection(Value value, Value &tokens, Value &weight, Value &bias,
                      SmallVectorImpl<Operation *> &ops) {
  MatMulOp mm = matmulPlusBias(value, bias, ops);
  if (!mm || !constantOfRank(mm.getRhs(), 3))
    return false;
  weight = mm.getRhs();
  tokens = tokensBehindViews(mm.getLhs(), ops);
  auto w = rankedType(weight);
  if (bias &&
      (!constantOfRank(bias, 3) ||
       rankedType(bias).getShape() != ArrayRef<int64_t>{w.getDimSize(0), 1, w.getDimSize(2)}))
    return false;
  return true;
}

/// The stacked experts `Y = h @ W2 [+ B2]` of type [E, T, Do], h = act(u1)
/// or act(u1) * u3 (either order; without an activation the first factor
/// is u1).
FailureOr<ExpertMlp> matchStackedExperts(Value y) {
  ExpertMlp mlp;
  Value tokens3;
  MatMulOp down = matmulPlusBias(y, mlp.b2, mlp.ops);
  if (!down || !constantOfRank(down.getRhs(), 3))
    return failure();
  mlp.w2 = down.getRhs();
  auto w2Type = rankedType(mlp.w2);
  if (mlp.b2 && (!constantOfRank(mlp.b2, 3) ||
                 rankedType(mlp.b2).getShape() !=
                     ArrayRef<int64_t>{w2Type.getDimSize(0), 1, w2Type.getDimSize(2)}))
    return failure();
  Value hidden = down.getLhs(), activated = hidden, up;
  if (auto gate = hidden.getDefiningOp<MulOp>()) {
    // The gated expert: the activated factor is u1, the other u3.
    Value operand;
    SmallVector<Operation *> probe;
    bool rhsActivated = activationOf(gate.getLhs(), operand, probe) == "none" &&
                        activationOf(gate.getRhs(), operand, probe) != "none";
    activated = rhsActivated ? gate.getRhs() : gate.getLhs();
    up = rhsActivated ? gate.getLhs() : gate.getRhs();
    mlp.ops.push_back(gate);
  }
  Value u1;
  mlp.activation = activationOf(activated, u1, mlp.ops);
  if (!expertProjection(u1, mlp.tokens, mlp.w1, mlp.b1, mlp.ops))
    return failure();
  if (up && (!expertProjection(up, tokens3, mlp.w3, mlp.b3, mlp.ops) || tokens3 != mlp.tokens ||
             mlp.w3.getType() != mlp.w1.getType()))
    return failure();
  auto tokens = rankedType(mlp.tokens);
  auto w1 = rankedType(mlp.w1), w2 = rankedType(mlp.w2);
  if (!tokens || tokens.getRank() != 2 || tokens.getDimSize(1) != w1.getDimSize(1) ||
      w2.getDimSize(0) != w1.getDimSize(0) || w2.getDimSize(1) != w1.getDimSize(2))
    return failure();
  return mlp;
}

/// `value` through single-use reshapes that only add or drop unit dims
/// (the same elements in the same order); appends them to `ops`.
Value behindUnitReshapes(Value value, SmallVectorImpl<Operation *> &ops) {
  while (auto reshape = value.getDefiningOp<ReshapeOp>()) {
    auto from = rankedType(reshape.getInput()), to = rankedType(value);
    if (!value.hasOneUse() || !from || !to)
      break;
    auto nonUnit = [](ArrayRef<int64_t> shape) {
      return llvm::to_vector(llvm::make_filter_range(shape, [](int64_t d) { return d != 1; }));
    };
    if (nonUnit(from.getShape()) != nonUnit(to.getShape()))
      break;
    ops.push_back(reshape);
    value = reshape.getInput();
  }
  return value;
}

/// The weighted sum over the k choices at `root`: the gathered outputs G
/// [T, k, Do] and the weights as the combine reads them.
struct WeightedChoices {
  GatherElementsOp chosen;
  Value weights; // [T, k] behind its views
  SmallVector<Operation *> ops;
};

/// `root` as ReduceSum(G * w, 1), Reshape(MatMul(w, G)) or, for k = 1,
/// G as [T, Do] * w.
std::optional<WeightedChoices> matchWeightedChoices(Operation *root) {
  WeightedChoices sum;
  sum.ops.push_back(root);
  auto outType = rankedType(root->getResult(0));
  if (!outType || outType.getRank() != 2 || !outType.hasStaticShape())
    return std::nullopt;
  int64_t t = outType.getDimSize(0), dOut = outType.getDimSize(1);
  // Whether `view` shows G and `weights` w as this form reads them:
  // `squeezed`, G [T, 1, Do] as [T, Do] and w [T, 1] (k = 1); `rowWeights`,
  // w as [T, 1, k] (a matmul); otherwise w as [T, k, 1].
  auto accept = [&](Value view, Value weights, bool squeezed, bool rowWeights) -> bool {
    SmallVector<Operation *> ops;
    auto gather = view.getDefiningOp<GatherElementsOp>();
    if (squeezed) {
      if (auto reshape = view.getDefiningOp<ReshapeOp>()) {
        gather = reshape.getInput().getDefiningOp<GatherElementsOp>();
        ops.push_back(reshape);
      } else if (auto slot = view.getDefiningOp<GatherOp>()) {
        auto index = intConstant(slot.getIndices());
        auto indexType = rankedType(slot.getIndices());
        if (!index || index->size() != 1 || (*index)[0] != 0 || slot.getAxis() != 1 || !indexType ||
            indexType.getRank() != 0)
          return false;
        gather = slot.getInput().getDefiningOp<GatherElementsOp>();
        ops.push_back(slot);
      }
      if (!view.hasOneUse())
        return false;
    }
    auto type = gather ? rankedType(gather.getResult()) : RankedTensorType();
    if (!type || type.getRank() != 3 || type.getDimSize(0) != t || type.getDimSize(2) != dOut ||
        (squeezed && type.getDimSize(1) != 1) || !gather->hasOneUse())
      return false;
    int64_t k = type.getDimSize(1);
    SmallVector<int64_t> shape = squeezed     ? SmallVector<int64_t>{t, 1}
                                 : rowWeights ? SmallVector<int64_t>{t, 1, k}
                                              : SmallVector<int64_t>{t, k, 1};
    auto weightsType = rankedType(weights);
    if (!weightsType || weightsType.getShape() != ArrayRef<int64_t>(shape))
      return false;
    Value behind = behindUnitReshapes(weights, ops);
    if (rankedType(behind).getShape() != ArrayRef<int64_t>{t, k})
      return false;
    sum.chosen = gather;
    sum.weights = behind;
    sum.ops.append(ops);
    return true;
  };
  if (auto reduce = dyn_cast<ReduceOp>(root)) {
    auto axes = reduce.getAxes() ? intConstant(reduce.getAxes()) : std::nullopt;
    auto mul = reduce.getInput().getDefiningOp<MulOp>();
    if (reduce.getKind() != ReduceKind::sum || reduce.getKeepdims() || !axes ||
        *axes != SmallVector<int64_t>{1} || !mul || !mul->hasOneUse())
      return std::nullopt;
    sum.ops.push_back(mul);
    for (unsigned side = 0; side < 2; ++side)
      if (accept(mul->getOperand(side), mul->getOperand(1 - side), false, false))
        return sum;
    return std::nullopt;
  }
  if (auto reshape = dyn_cast<ReshapeOp>(root)) {
    auto matmul = reshape.getInput().getDefiningOp<MatMulOp>();
    if (!matmul || !matmul->hasOneUse())
      return std::nullopt;
    sum.ops.push_back(matmul);
    if (accept(matmul.getRhs(), matmul.getLhs(), false, true))
      return sum;
    return std::nullopt;
  }
  if (auto mul = dyn_cast<MulOp>(root))
    for (unsigned side = 0; side < 2; ++side)
      if (accept(mul->getOperand(side), mul->getOperand(1 - side), true, false))
        return sum;
  return std::nullopt;
}

/// The router of a top-k MoE: which TopK chose the experts, whether its
/// weights are renormalized, the logits.
struct Routing {
  TopKOp topk;
  SoftmaxOp softmax;
  Value logits;
  bool normalize = false;
  SmallVector<Operation *> ops;
};

/// The routing behind the gathered experts' indices `indices` ([T, k, Do]:
/// the top-k indices as [T, k, 1], expanded) and the weights `weights`
/// ([T, k]): the top-k probabilities of one softmax, optionally divided by
/// their sum.
std::optional<Routing> matchRouting(Value indices, Value weights) {
  Routing routing;
  auto type = rankedType(indices);
  if (auto expand = indices.getDefiningOp<ExpandOp>()) {
    if (!indices.hasOneUse())
      return std::nullopt;
    routing.ops.push_back(expand);
    indices = expand.getInput();
  }
  // Every column of a token's slot reads the same expert: the indices are
  // [T, k, 1], broadcast.
  auto column = rankedType(indices);
  if (!type || !column || type.getRank() != 3 || column.getRank() != 3 ||
      column.getDimSize(0) != type.getDimSize(0) || column.getDimSize(1) != type.getDimSize(1) ||
      column.getDimSize(2) != 1)
    return std::nullopt;
  indices = behindUnitReshapes(indices, routing.ops);
  auto topk = indices.getDefiningOp<TopKOp>();
  auto probs = topk ? rankedType(topk.getInput()) : RankedTensorType();
  if (!topk || indices != topk.getIndices() || !probs || probs.getRank() != 2 ||
      !topk.getLargest() || ((int64_t)topk.getAxis() != -1 && topk.getAxis() != 1))
    return std::nullopt;
  auto softmax = topk.getInput().getDefiningOp<SoftmaxOp>();
  if (!softmax || softmax.getLog() || ((int64_t)softmax.getAxis() != -1 && softmax.getAxis() != 1))
    return std::nullopt;
  routing.topk = topk;
  routing.softmax = softmax;
  routing.logits = softmax.getInput();
  routing.ops.append({topk, softmax});
  if (auto div = weights.getDefiningOp<DivOp>()) {
    auto sum = div.getRhs().getDefiningOp<ReduceOp>();
    auto axes = sum && sum.getAxes() ? intConstant(sum.getAxes()) : std::nullopt;
    if (div.getLhs() != topk.getValues() || !sum || sum.getInput() != topk.getValues() ||
        sum.getKind() != ReduceKind::sum || !sum.getKeepdims() || !axes ||
        (*axes != SmallVector<int64_t>{-1} && *axes != SmallVector<int64_t>{1}))
      return std::nullopt;
    routing.ops.append({div, sum});
    routing.normalize = true;
  } else if (weights != topk.getValues()) {
    return std::nullopt;
  }
  return routing;
}

/// Whether `logits` are a learned router's: `tokens @ Wr [+ br]` with Wr a
/// constant [D, E] and br a constant.
bool isLearnedRouter(Value logits, Value tokens) {
  Value bias;
  SmallVector<Operation *> ops;
  MatMulOp mm = matmulPlusBias(logits, bias, ops);
  return mm && mm.getLhs() == tokens && constantOfRank(mm.getRhs(), 2) &&
         (!bias || bias.getDefiningOp<ConstantOp>());
}

/// Form 1, anchored at the sum over the k choices (`OpTy`: ReduceOp,
/// ReshapeOp after a MatMul, MulOp for k = 1).
template <typename OpTy> struct TopKMoePattern : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy root, PatternRewriter &rewriter) const override {
    auto sum = matchWeightedChoices(root);
    if (!sum)
      return rewriter.notifyMatchFailure(root, "not a weighted sum of gathered expert outputs");
    GatherElementsOp gather = sum->chosen;
    auto transpose = gather.getInput().getDefiningOp<TransposeOp>();
    if (gather.getAxis() != 1 || !transpose || transpose.getPerm() != ArrayRef<int64_t>{1, 0, 2} ||
        !transpose->hasOneUse())
      return rewriter.notifyMatchFailure(root, "the chosen outputs are not of experts [E, T, D]");
    auto routing = matchRouting(gather.getIndices(), sum->weights);
    if (!routing)
      return rewriter.notifyMatchFailure(root, "the choices and weights are not one softmax's "
                                               "top-k");
    auto mlp = matchStackedExperts(transpose.getInput());
    if (failed(mlp))
      return rewriter.notifyMatchFailure(root, "the experts are not constant stacks");
    auto outType = rankedType(root->getResult(0));
    auto probs = rankedType(routing->logits);
    int64_t experts = rankedType(mlp->w1).getDimSize(0),
            k = rankedType(gather.getResult()).getDimSize(1);
    if (probs.getDimSize(1) != experts || probs.getDimSize(0) != outType.getDimSize(0) ||
        rankedType(mlp->tokens).getDimSize(0) != outType.getDimSize(0))
      return rewriter.notifyMatchFailure(root, "router and experts disagree on E or T");
    if (!isLearnedRouter(routing->logits, mlp->tokens))
      return rewriter.notifyMatchFailure(root, "the logits are not a Linear of the experts' "
                                               "tokens by constant weights");
    SmallVector<Operation *> chain(sum->ops);
    chain.append({gather, transpose});
    chain.append(routing->ops);
    chain.append(mlp->ops);
    for (Operation *op : ArrayRef(chain).drop_front())
      for (Value result : op->getResults())
        if (!onlyUsedBy(result, chain))
          return rewriter.notifyMatchFailure(root, "an intermediate has users outside the MoE");
    rewriter.setInsertionPoint(root);
    Location loc = chainLoc(root, {mlp->tokens, routing->logits});
    auto bias = [&](Value b, Value w) -> Value {
      if (!b)
        return {};
      auto shape = rankedType(w).getShape();
      return expertBias(rewriter, loc, b.getDefiningOp<ConstantOp>(), shape[0], shape[2]);
    };
    Value b1 = bias(mlp->b1, mlp->w1), b2 = bias(mlp->b2, mlp->w2), b3 = bias(mlp->b3, mlp->w3);
    if ((mlp->b1 && !b1) || (mlp->b2 && !b2) || (mlp->b3 && !b3))
      return rewriter.notifyMatchFailure(root, "a bias that cannot be read");
    auto moe = MoeOp::create(rewriter, loc, outType, mlp->tokens, routing->logits, mlp->w1, b1,
                             mlp->w2, b2, mlp->w3, b3, Value(), experts, k, "top_k",
                             mlp->activation, routing->normalize);
    rewriter.replaceAllUsesWith(root->getResult(0), moe.getResult());
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
    rewriter.replaceAllUsesWith(root->getResult(0), moe.getResult());
    eraseDeadOps(rewriter, ops);
    return success();
  }
};

} // namespace

void sluice::populateRecognizeMoePatterns(RewritePatternSet &patterns) {
  populateMoeFormPatterns(patterns);
  patterns.add<TopKMoePattern<ReduceOp>, TopKMoePattern<ReshapeOp>, TopKMoePattern<MulOp>,
               HardGatedMoePattern>(patterns.getContext());
}
