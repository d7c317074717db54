//===- MoeForms.cpp - the written forms of an MoE block, canonicalized ----===//
//
// PyTorch code writes a mixture-of-experts block in many ways; these
// rewrites bring them to the one form the structural matcher of
// RecognizeMoe.cpp reads (experts stacked into [E, ...] constants, the
// chosen experts' outputs gathered by the top-k indices and summed with
// their weights). Each keeps the evaluator's results, float rounding aside,
// whether or not a sluice.moe forms after it:
//
// 1. EinsumToMatMulPattern: an Einsum of two operands whose labels are
//    batch, contracted or kept dims of one operand (no repeated label, none
//    summed in one operand alone) -> MatMul, with the transposes and
//    reshapes that order and merge the dims. Leading labels of the second
//    operand that the first lacks become broadcast batch dims, so
//    "nd,edf->enf" is MatMul(x, W) over the stacked W; "enf,efd->end" is a
//    batched MatMul; "te,etd->td" is MatMul([T, 1, E], [T, E, D]). Applies
//    to every such einsum (a GEMM instead of the generic einsum loop).
// 2. SoftmaxOfTopKPattern: Softmax(TopK(logits).values) over the TopK's
//    axis (Mixtral's softmax over the k chosen logits), when the indices
//    index a gather or scatter -> TopK(Softmax(logits)).values divided by
//    their sum, the new TopK's indices for the old (softmax keeps the
//    order of the logits): the renormalized form, normalize = true.
// 3. StackExpertChainsPattern: torch.stack of E values, each the same chain
//    of ops (MatMul by a constant [K, N], elementwise ops with constants,
//    one shared input [T, D]) with its own constants (a Python list of
//    nn.Linear experts): Concat of Reshapes inserting the stacked dim 0 or
//    1 -> one chain over the constants stacked along a new dim 0 (biases
//    [E, 1, N]), transposed for dim 1.
// 4. LoopOverExpertsPattern: a sum of E terms Slice(C, e:e+1, axis 1) * y_e
//    (or Gather(C, e, axis 1) reshaped to [T, 1]), one per column of one
//    [T, E] matrix (a Python loop over the experts) ->
//    ReduceSum(stack(y) * Reshape(C, [T, E, 1]), 1), whose stack pattern 3
//    then reads.
// 5. DenseCombinePattern: a sum over the experts of their outputs weighted
//    by C = ScatterElements(zeros [T, E], I, W, axis 1) with I the indices
//    of a TopK (distinct per row): ReduceSum(A * C', axis) with A [T, E, D]
//    and C' [T, E, 1], or A [E, T, D] and C' = C^T as [E, T, 1]; or
//    Reshape(MatMul(C as [T, 1, E], A [T, E, D]), [T, D]) -> the sum over
//    the k choices of GatherElements(A as [T, E, D], I) weighted by W.
// 6. SegmentSumScatterPattern: ScatterElements along axis 0 of U [T k, D]
//    into zeros [T, D] at constant rows (every element of row r at r / k
//    or at r % T: scatter_add or index_add of each token's k slots),
//    reduction add (or none for k = 1, a permutation that is the identity)
//    -> ReduceSum over k of U as [T, k, D] or [k, T, D] (U itself for
//    k = 1), and index_add's Add of zeros after it.
//
//===----------------------------------------------------------------------===//

#include "dialects/sluice/KernelForms.h"
#include "passes/recognize/Match.h"
#include "passes/recognize/Patterns.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallSet.h"

#include <cstring>

using namespace mlir;
using namespace sluice;
using namespace sluice::recognize;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// `axis` of a rank-`rank` tensor in [0, rank), or -1 when out of range.
int64_t normalizedAxis(int64_t axis, int64_t rank) {
  if (axis < 0)
    axis += rank;
  return axis >= 0 && axis < rank ? axis : -1;
}

/// `x` reshaped to `shape` (`x` itself when it has that shape).
Value reshapeTo(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> shape) {
  if (rankedType(x).getShape() == shape)
    return x;
  return ReshapeOp::create(b, loc, x, i64Constant(b, loc, shape));
}

/// `x` transposed by `perm` (`x` itself for the identity).
Value transposeBy(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != (int64_t)i)
      return TransposeOp::create(b, loc, x, perm);
  return x;
}

/// Sum of `x` over `axis`, the axis dropped.
Value sumOver(OpBuilder &b, Location loc, Value x, int64_t axis, bool keepdims = false) {
  return ReduceOp::create(b, loc, x, i64Constant(b, loc, {axis}),
                          ReduceKindAttr::get(b.getContext(), ReduceKind::sum),
                          b.getBoolAttr(keepdims), b.getBoolAttr(false));
}

/// Whether `value` is a constant whose elements are all zero.
bool isZeros(Value value) {
  auto v = splatValue(value);
  return v && *v == 0.0;
}

/// The TopK whose indices `value` is, over the last axis of a [T, E] input.
TopKOp routingTopK(Value value) {
  auto topk = value.getDefiningOp<TopKOp>();
  auto type = topk ? rankedType(topk.getInput()) : RankedTensorType();
  if (!topk || value != topk.getIndices() || !type || type.getRank() != 2 ||
      normalizedAxis(topk.getAxis(), 2) != 1)
    return {};
  return topk;
}

/// Whether `value` is a ranked tensor of shape `shape`.
bool hasShape(Value value, ArrayRef<int64_t> shape) {
  auto type = rankedType(value);
  return type && type.getShape() == shape;
}

/// Whether `shape` is `other` with size-1 dims inserted or removed (the
/// sizes other than 1 in the same order).
bool sameBesideUnitDims(ArrayRef<int64_t> shape, ArrayRef<int64_t> other) {
  auto nonUnit = [](ArrayRef<int64_t> s) {
    SmallVector<int64_t> kept;
    for (int64_t d : s)
      if (d != 1)
        kept.push_back(d);
    return kept;
  };
  return nonUnit(shape) == nonUnit(other);
}

//===----------------------------------------------------------------------===//
// 1. Einsum as MatMul
//===----------------------------------------------------------------------===//

/// How an einsum of two operands runs as one MatMul: each operand's dims
/// permuted to [batch..., M..., K...] / [batch..., K..., N...] and merged to
/// [batch..., M, K] / [batch..., K, N]; the product's M and N split back
/// into their labels and permuted into the output's order.
struct EinsumMatMulPlan {
  SmallVector<int64_t> lhsPerm, rhsPerm, lhsShape, rhsShape, productShape, outPerm, outShape;
};

/// The plan for labels `lhs`, `rhs` -> `out` of operands of shapes
/// `lhsDims`, `rhsDims`; none when a label repeats in one operand, is
/// summed in one operand alone, or has two sizes.
std::optional<EinsumMatMulPlan> planEinsumMatMul(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs,
                                                 ArrayRef<int64_t> out, ArrayRef<int64_t> lhsDims,
                                                 ArrayRef<int64_t> rhsDims) {
  llvm::DenseMap<int64_t, int64_t> size;
  for (auto [labels, dims] : {std::pair(lhs, lhsDims), std::pair(rhs, rhsDims)})
    for (auto [label, dim] : llvm::zip(labels, dims))
      if (!size.try_emplace(label, dim).second && size[label] != dim)
        return std::nullopt;
  auto unique = [](ArrayRef<int64_t> labels) {
    return llvm::SmallSet<int64_t, 8>(labels.begin(), labels.end()).size() == labels.size();
  };
  if (!unique(lhs) || !unique(rhs) || !unique(out))
    return std::nullopt;
  auto in = [](ArrayRef<int64_t> labels, int64_t l) { return llvm::is_contained(labels, l); };
  for (int64_t l : out)
    if (!in(lhs, l) && !in(rhs, l))
      return std::nullopt;
  for (auto [mine, other] : {std::pair(lhs, rhs), std::pair(rhs, lhs)})
    for (int64_t l : mine)
      if (!in(other, l) && !in(out, l))
        return std::nullopt;
  SmallVector<int64_t> bcast, batch, kept, contracted, rhsKept;
  for (int64_t l : rhs) {
    if (in(lhs, l) || !in(out, l))
      break;
    bcast.push_back(l);
  }
  for (int64_t l : out)
    if (in(lhs, l) && in(rhs, l))
      batch.push_back(l);
  for (int64_t l : lhs) {
    if (!in(rhs, l))
      kept.push_back(l);
    else if (!in(out, l))
      contracted.push_back(l);
  }
  for (int64_t l : rhs)
    if (!in(lhs, l) && !in(bcast, l))
      rhsKept.push_back(l);
  auto product = [&](ArrayRef<int64_t> labels) {
    int64_t n = 1;
    for (int64_t l : labels)
      n *= size[l];
    return n;
  };
  auto positions = [](ArrayRef<int64_t> labels, ArrayRef<int64_t> order) {
    SmallVector<int64_t> perm;
    for (int64_t l : order)
      perm.push_back(llvm::find(labels, l) - labels.begin());
    return perm;
  };
  auto sizes = [&](ArrayRef<int64_t> labels) {
    SmallVector<int64_t> s;
    for (int64_t l : labels)
      s.push_back(size[l]);
    return s;
  };
  EinsumMatMulPlan plan;
  plan.lhsPerm = positions(lhs, llvm::to_vector(llvm::concat<int64_t>(batch, kept, contracted)));
  plan.rhsPerm =
      positions(rhs, llvm::to_vector(llvm::concat<int64_t>(bcast, batch, contracted, rhsKept)));
  plan.lhsShape = sizes(batch);
  plan.lhsShape.append({product(kept), product(contracted)});
  plan.rhsShape = sizes(bcast);
  plan.rhsShape.append(sizes(batch));
  plan.rhsShape.append({product(contracted), product(rhsKept)});
  auto productLabels = llvm::to_vector(llvm::concat<int64_t>(bcast, batch, kept, rhsKept));
  plan.productShape = sizes(productLabels);
  plan.outPerm = positions(productLabels, out);
  plan.outShape = sizes(out);
  return plan;
}

/// Whether the first label of `labels` is one only this operand and the
/// output have (a broadcast batch dim, when it is the second operand's).
bool leadsWithOwnLabel(ArrayRef<int64_t> labels, ArrayRef<int64_t> other, ArrayRef<int64_t> out) {
  return !labels.empty() && !llvm::is_contained(other, labels.front()) &&
         llvm::is_contained(out, labels.front());
}

/// Pattern 1: an einsum that is a (batched, broadcast) matmul.
struct EinsumToMatMulPattern : OpRewritePattern<EinsumOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(EinsumOp op, PatternRewriter &rewriter) const override {
    if (op.getInputs().size() != 2)
      return rewriter.notifyMatchFailure(op, "not an einsum of two operands");
    Value lhs = op.getInputs()[0], rhs = op.getInputs()[1];
    auto lt = rankedType(lhs), rt = rankedType(rhs), ot = rankedType(op.getOutput());
    if (!lt || !rt || !ot || !lt.hasStaticShape() || !rt.hasStaticShape() || !ot.hasStaticShape() ||
        lt.getElementType() != rt.getElementType() || !isa<FloatType>(ot.getElementType()))
      return rewriter.notifyMatchFailure(op, "operands are not static floats of one type");
    SmallVector<SmallVector<int64_t>> labels;
    SmallVector<int64_t> out;
    if (!EinsumOp::parseEquation(op.getEquation(), {lt.getRank(), rt.getRank()}, labels, out)
             .empty())
      return rewriter.notifyMatchFailure(op, "the equation does not parse");
    // Broadcast batch dims come from the second operand: swap when only the
    // first leads with its own label, or both do and the first has more dims
    // (the stacked weights, as in "edf,nd->enf").
    if (leadsWithOwnLabel(labels[0], labels[1], out) &&
        (!leadsWithOwnLabel(labels[1], labels[0], out) || lt.getRank() > rt.getRank())) {
      std::swap(lhs, rhs);
      std::swap(lt, rt);
      std::swap(labels[0], labels[1]);
    }
    auto plan = planEinsumMatMul(labels[0], labels[1], out, lt.getShape(), rt.getShape());
    if (!plan || ArrayRef<int64_t>(plan->outShape) != ot.getShape())
      return rewriter.notifyMatchFailure(op, "a repeated label, a label summed in one operand, "
                                             "or sizes that disagree");
    Location loc = op.getLoc();
    Value a =
        reshapeTo(rewriter, loc, transposeBy(rewriter, loc, lhs, plan->lhsPerm), plan->lhsShape);
    Value b =
        reshapeTo(rewriter, loc, transposeBy(rewriter, loc, rhs, plan->rhsPerm), plan->rhsShape);
    Value product =
        reshapeTo(rewriter, loc, MatMulOp::create(rewriter, loc, a, b), plan->productShape);
    rewriter.replaceOp(op, transposeBy(rewriter, loc, product, plan->outPerm));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// 2. Softmax over the top-k logits
//===----------------------------------------------------------------------===//

/// Whether `indices` choose elements of a GatherElements or ScatterElements
/// (through reshapes and expands): experts being routed, not, say, a
/// sampler's top-k of a vocabulary.
bool indexesExperts(Value indices) {
  SmallVector<Value> work{indices};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (isa<ReshapeOp, ExpandOp, UnsqueezeOp>(user) && use.getOperandNumber() == 0)
        work.push_back(user->getResult(0));
      else if (auto gather = dyn_cast<GatherElementsOp>(user))
        return use.get() == gather.getIndices();
      else if (auto scatter = dyn_cast<ScatterElementsOp>(user))
        return use.get() == scatter.getIndices();
    }
  }
  return false;
}

/// Pattern 2: Softmax(TopK(logits).values) -> normalized top-k probabilities.
struct SoftmaxOfTopKPattern : OpRewritePattern<SoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SoftmaxOp softmax, PatternRewriter &rewriter) const override {
    auto topk = softmax.getInput().getDefiningOp<TopKOp>();
    if (!topk || softmax.getLog() || softmax.getInput() != topk.getValues() || !topk.getLargest() ||
        !topk.getValues().hasOneUse())
      return rewriter.notifyMatchFailure(softmax, "not a softmax over a TopK's largest values");
    auto type = rankedType(topk.getInput());
    int64_t axis = type ? normalizedAxis(topk.getAxis(), type.getRank()) : -1;
    if (axis < 0 || normalizedAxis(softmax.getAxis(), type.getRank()) != axis)
      return rewriter.notifyMatchFailure(softmax, "the softmax is over another axis");
    if (!indexesExperts(topk.getIndices()))
      return rewriter.notifyMatchFailure(softmax, "the indices gather or scatter nothing");
    rewriter.setInsertionPoint(topk);
    Location loc = fusedLoc({topk, softmax});
    Value probs = SoftmaxOp::create(rewriter, loc, topk.getInput(),
                                    rewriter.getI64IntegerAttr(axis), rewriter.getBoolAttr(false));
    auto chosen = TopKOp::create(rewriter, loc, probs, topk.getK(), topk.getAxisAttr(),
                                 topk.getLargestAttr(), topk.getSortedAttr());
    Value sum = sumOver(rewriter, loc, chosen.getValues(), axis, /*keepdims=*/true);
    Value weights = DivOp::create(rewriter, loc, chosen.getValues(), sum);
    rewriter.replaceOp(softmax, weights);
    rewriter.replaceAllUsesWith(topk.getIndices(), chosen.getIndices());
    rewriter.eraseOp(topk);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// 3. Per-expert chains stacked
//===----------------------------------------------------------------------===//

/// E copies of one chain of ops over a shared input, one per expert, read
/// in step: each node holds the E values (one per expert) of one position
/// in the chain. Nodes are in post-order (operands before users).
class ExpertChains {
public:
  /// Matches the chains ending at `roots` (expert e's at roots[e]): the
  /// same ops with the same attributes, MatMuls by constants [K, N] and
  /// elementwise ops, every per-expert value 2-D, one shared input.
  LogicalResult match(ArrayRef<Value> roots) {
    int root = visit(roots);
    if (root < 0 || !input || !nodes[root].stacked)
      return failure();
    return success();
  }

  /// Whether every per-expert op's results are used by the chains alone,
  /// or by `rootUsers` (for the roots).
  bool usedOnlyBy(ArrayRef<Operation *> rootUsers) const {
    SmallVector<Operation *> allowed(ops());
    allowed.append(rootUsers.begin(), rootUsers.end());
    return llvm::all_of(ops(),
                        [&](Operation *op) { return onlyUsedBy(op->getResult(0), allowed); });
  }

  /// The ops of every chain.
  SmallVector<Operation *> ops() const {
    SmallVector<Operation *> all;
    for (const Node &node : nodes)
      if (node.kind == Kind::Op)
        for (Value v : node.values)
          all.push_back(v.getDefiningOp());
    return all;
  }

  /// Builds the stacked chain before the current insertion point; its
  /// result is [E, ...] of the roots' type.
  FailureOr<Value> build(PatternRewriter &rewriter, Location loc);

private:
  enum class Kind { Input, Shared, Stacked, Op };
  struct Node {
    Kind kind;
    SmallVector<Value> values; // one per expert
    SmallVector<int> operands;
    std::vector<Tensor> parts; // a Stacked node's constants, one per expert
    bool stacked = false;      // whether the stacked chain's value has the expert dim
  };
  SmallVector<Node> nodes;
  llvm::DenseMap<Value, int> nodeOf; // by expert 0's value
  Value input;

  int add(Node node) {
    nodeOf[node.values.front()] = nodes.size();
    nodes.push_back(std::move(node));
    return nodes.size() - 1;
  }
  int visit(ArrayRef<Value> values);
  Value stackedConstant(PatternRewriter &rewriter, Location loc, const Node &node, int64_t rank);
};

int ExpertChains::visit(ArrayRef<Value> values) {
  if (auto it = nodeOf.find(values.front()); it != nodeOf.end())
    return ArrayRef<Value>(nodes[it->second].values) == values ? it->second : -1;
  Node node{Kind::Op, SmallVector<Value>(values.begin(), values.end()), {}, {}, false};
  auto type = rankedType(values.front());
  if (!type || !type.hasStaticShape() || type.getRank() > 2)
    return -1;
  bool same = llvm::all_equal(values);
  bool constants = llvm::all_of(values, [](Value v) { return v.getDefiningOp<ConstantOp>(); });
  if (same && constants) {
    node.kind = Kind::Shared;
    return add(std::move(node));
  }
  if (same) {
    // The tokens every expert reads.
    if ((input && input != values.front()) || type.getRank() != 2)
      return -1;
    input = values.front();
    node.kind = Kind::Input;
    return add(std::move(node));
  }
  if (constants) {
    // Each expert's own weight or bias: float constants of one type, read
    // now so that building cannot fail half way.
    if (!isa<FloatType>(type.getElementType()) ||
        !llvm::all_of(values, [&](Value v) { return v.getType() == type; }))
      return -1;
    for (Value v : values) {
      auto tensor = tensorFromAttr(v.getDefiningOp<ConstantOp>().getValue());
      if (failed(tensor))
        return -1;
      node.parts.push_back(*tensor);
    }
    node.kind = Kind::Stacked;
    node.stacked = true;
    return add(std::move(node));
  }
  Operation *first = values.front().getDefiningOp();
  if (!first || first->getNumResults() != 1 || first->getNumRegions() != 0 || type.getRank() != 2 ||
      !(isa<MatMulOp>(first) || kernel::isElementwise(first)))
    return -1;
  for (Value v : values) {
    Operation *op = v.getDefiningOp();
    if (!op || !OperationEquivalence::isEquivalentTo(
                   first, op, OperationEquivalence::ignoreValueEquivalence, nullptr,
                   OperationEquivalence::IgnoreLocations))
      return -1;
  }
  for (unsigned i = 0; i < first->getNumOperands(); ++i) {
    SmallVector<Value> operands;
    for (Value v : values)
      operands.push_back(v.getDefiningOp()->getOperand(i));
    int id = visit(operands);
    if (id < 0)
      return -1;
    node.operands.push_back(id);
    node.stacked |= nodes[id].stacked;
  }
  // A MatMul multiplies by a weight: a constant [K, N].
  if (isa<MatMulOp>(first)) {
    const Node &weight = nodes[node.operands[1]];
    if ((weight.kind != Kind::Stacked && weight.kind != Kind::Shared) ||
        rankedType(weight.values.front()).getRank() != 2)
      return -1;
  }
  return add(std::move(node));
}

/// The per-expert constants of `node` stacked along a new dim 0, with unit
/// dims after it up to `rank` dims (so that it broadcasts as each expert's
/// constant did against its rank - 1 dims).
Value ExpertChains::stackedConstant(PatternRewriter &rewriter, Location loc, const Node &node,
                                    int64_t rank) {
  auto type = rankedType(node.values.front());
  SmallVector<int64_t> shape{(int64_t)node.values.size()};
  shape.append(rank - 1 - type.getRank(), 1);
  shape.append(type.getShape().begin(), type.getShape().end());
  const std::vector<Tensor> &parts = node.parts;
  size_t bytes = parts.front().byteSize();
  Tensor stacked(parts.front().dtype(), std::vector<int64_t>(shape.begin(), shape.end()));
  for (size_t e = 0; e < parts.size(); ++e)
    std::memcpy(static_cast<char *>(stacked.mutableData()) + e * bytes, parts[e].rawData(), bytes);
  return ConstantOp::create(rewriter, loc,
                            attrFromTensor(rewriter.getContext(), stacked, type.clone(shape)));
}

FailureOr<Value> ExpertChains::build(PatternRewriter &rewriter, Location loc) {
  SmallVector<Value> built(nodes.size());
  for (auto [id, node] : llvm::enumerate(nodes)) {
    if (node.kind == Kind::Input || node.kind == Kind::Shared) {
      built[id] = node.values.front();
      continue;
    }
    if (node.kind == Kind::Stacked)
      continue; // built at each use, with the rank the use needs
    Operation *first = node.values.front().getDefiningOp();
    SmallVector<Value> operands;
    for (int operand : node.operands) {
      const Node &from = nodes[operand];
      // A MatMul's weight stacks to [E, K, N]; an elementwise operand to
      // the rank of the stacked result.
      int64_t rank = isa<MatMulOp>(first) ? 3 : rankedType(node.values.front()).getRank() + 1;
      operands.push_back(from.kind == Kind::Stacked ? stackedConstant(rewriter, loc, from, rank)
                                                    : built[operand]);
    }
    if (isa<MatMulOp>(first)) {
      built[id] = MatMulOp::create(rewriter, loc, operands[0], operands[1]);
      continue;
    }
    IRMapping mapping;
    mapping.map(first->getOperands(), operands);
    Operation *clone = rewriter.clone(*first, mapping);
    clone->setLoc(loc);
    auto infer = dyn_cast<InferTypeOpInterface>(clone);
    SmallVector<Type> types;
    if (!infer ||
        failed(infer.inferReturnTypes(clone->getContext(), loc, clone->getOperands(),
                                      clone->getRawDictionaryAttrs(), clone->getPropertiesStorage(),
                                      clone->getRegions(), types)))
      return failure();
    rewriter.modifyOpInPlace(clone, [&] { clone->getResult(0).setType(types.front()); });
    built[id] = clone->getResult(0);
  }
  return built.back();
}

/// Pattern 3: torch.stack of per-expert chains -> one stacked chain.
struct StackExpertChainsPattern : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConcatOp concat, PatternRewriter &rewriter) const override {
    auto type = rankedType(concat.getResult());
    if (!type || type.getRank() != 3 || !type.hasStaticShape() || concat.getInputs().size() < 2)
      return rewriter.notifyMatchFailure(concat, "not a stack of two or more values into 3 dims");
    int64_t axis = normalizedAxis(concat.getAxis(), 3);
    if (axis != 0 && axis != 1)
      return rewriter.notifyMatchFailure(concat, "not a stack along dim 0 or 1");
    SmallVector<Value> roots;
    SmallVector<Operation *> views;
    for (Value in : concat.getInputs()) {
      auto reshape = in.getDefiningOp<ReshapeOp>();
      auto from = reshape ? rankedType(reshape.getInput()) : RankedTensorType();
      auto to = rankedType(in);
      if (!reshape || !in.hasOneUse() || !from || !to || from.getRank() != 2 ||
          to.getDimSize(axis) != 1 || !sameBesideUnitDims(to.getShape(), from.getShape()))
        return rewriter.notifyMatchFailure(concat, "not a stack of 2-D values");
      roots.push_back(reshape.getInput());
      views.push_back(reshape);
    }
    ExpertChains chains;
    if (failed(chains.match(roots)))
      return rewriter.notifyMatchFailure(concat, "the values are not one chain per expert");
    if (!chains.usedOnlyBy(views))
      return rewriter.notifyMatchFailure(concat, "a chain's intermediate has other users");
    SmallVector<Operation *> replaced = chains.ops();
    replaced.append(views);
    replaced.push_back(concat);
    rewriter.setInsertionPoint(concat);
    Location loc = fusedLoc(replaced);
    auto stacked = chains.build(rewriter, loc);
    if (failed(stacked))
      return rewriter.notifyMatchFailure(concat, "a stacked op's type does not infer");
    Value result = axis == 1 ? transposeBy(rewriter, loc, *stacked, {1, 0, 2}) : *stacked;
    if (result.getType() != concat.getType())
      return rewriter.notifyMatchFailure(concat, "the stacked chain has another type");
    rewriter.replaceAllUsesWith(concat.getResult(), result);
    eraseDeadOps(rewriter, replaced);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// 4. A loop over the experts
//===----------------------------------------------------------------------===//

/// `value` as column e of a [T, E] matrix kept as [T, 1]: Slice(matrix, e,
/// e + 1, axis 1, step 1), or Reshape(Gather(matrix, e, axis 1), [T, 1]).
/// Sets `matrix` and returns e (-1 otherwise); appends the ops to `ops`.
int64_t weightColumn(Value value, Value &matrix, SmallVectorImpl<Operation *> &ops) {
  auto type = rankedType(value);
  if (!type || type.getRank() != 2 || type.getDimSize(1) != 1 || !value.hasOneUse())
    return -1;
  if (auto slice = value.getDefiningOp<SliceOp>()) {
    auto starts = intConstant(slice.getStarts()), ends = intConstant(slice.getEnds());
    auto axes = intConstant(slice.getAxes()), steps = intConstant(slice.getSteps());
    auto from = rankedType(slice.getInput());
    if (!starts || !ends || !axes || !steps || starts->size() != 1 || !from ||
        from.getRank() != 2 || normalizedAxis((*axes)[0], 2) != 1 || (*steps)[0] != 1 ||
        (*ends)[0] != (*starts)[0] + 1 || (*starts)[0] < 0)
      return -1;
    matrix = slice.getInput();
    ops.push_back(slice);
    return (*starts)[0];
  }
  auto reshape = value.getDefiningOp<ReshapeOp>();
  auto gather = reshape ? reshape.getInput().getDefiningOp<GatherOp>() : GatherOp();
  auto index = gather ? intConstant(gather.getIndices()) : std::nullopt;
  auto from = gather ? rankedType(gather.getInput()) : RankedTensorType();
  if (!gather || !gather->hasOneUse() || !index || index->size() != 1 ||
      !hasShape(gather.getIndices(), {}) || !from || from.getRank() != 2 ||
      normalizedAxis(gather.getAxis(), 2) != 1 || (*index)[0] < 0)
    return -1;
  matrix = gather.getInput();
  ops.append({reshape, gather});
  return (*index)[0];
}

/// Pattern 4: sum over e of column e of C times expert e's output ->
/// ReduceSum(stack(y) * C as [T, E, 1], 1).
struct LoopOverExpertsPattern : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp root, PatternRewriter &rewriter) const override {
    // (An add inside the sum, or one adding something else to it, finds
    // terms that are not one per expert.)
    auto type = rankedType(root.getResult());
    if (!type || type.getRank() != 2 || !type.hasStaticShape())
      return rewriter.notifyMatchFailure(root, "not a [T, D] sum");
    // The terms: the leaves of the tree of single-use adds of this type.
    SmallVector<Operation *> ops{root};
    SmallVector<Value> terms, work{root.getLhs(), root.getRhs()};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      auto add = v.getDefiningOp<AddOp>();
      if (add && v.hasOneUse() && v.getType() == type) {
        ops.push_back(add);
        work.append({add.getLhs(), add.getRhs()});
      } else if (!isZeros(v)) {
        terms.push_back(v);
      }
    }
    Value matrix;
    SmallVector<Value> outputs(terms.size());
    for (Value term : terms) {
      auto mul = term.getDefiningOp<MulOp>();
      if (!mul || !term.hasOneUse() || term.getType() != type)
        return rewriter.notifyMatchFailure(root, "a term is not a weighted expert output");
      ops.push_back(mul);
      for (unsigned side = 0; side < 2; ++side) {
        Value from;
        int64_t e = weightColumn(mul->getOperand(side), from, ops);
        if (e < 0)
          continue;
        Value output = mul->getOperand(1 - side);
        if ((matrix && from != matrix) || e >= (int64_t)terms.size() || outputs[e] ||
            output.getType() != type)
          return rewriter.notifyMatchFailure(root, "the terms do not take one column each");
        matrix = from;
        outputs[e] = output;
        break;
      }
    }
    auto matrixType = matrix ? rankedType(matrix) : RankedTensorType();
    if (!matrixType || matrixType.getDimSize(1) != (int64_t)terms.size() ||
        matrixType.getDimSize(0) != type.getDimSize(0) || llvm::is_contained(outputs, Value()))
      return rewriter.notifyMatchFailure(root, "not one term per column of a [T, E] matrix");
    rewriter.setInsertionPoint(root);
    Location loc = fusedLoc(ops);
    int64_t t = type.getDimSize(0), d = type.getDimSize(1), experts = terms.size();
    SmallVector<Value> parts;
    for (Value y : outputs)
      parts.push_back(reshapeTo(rewriter, loc, y, {t, 1, d}));
    Value stacked = ConcatOp::create(rewriter, loc, parts, rewriter.getI64IntegerAttr(1));
    Value weights = reshapeTo(rewriter, loc, matrix, {t, experts, 1});
    Value sum = sumOver(rewriter, loc, MulOp::create(rewriter, loc, stacked, weights), 1);
    rewriter.replaceAllUsesWith(root.getResult(), sum);
    eraseDeadOps(rewriter, ops);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// 5. The dense combine as a gather of the chosen experts
//===----------------------------------------------------------------------===//

/// Routing weights scattered into a dense [T, E] matrix:
/// ScatterElements(zeros [T, E], I, W, axis 1) with I a routing TopK's
/// indices, seen through single-use reshapes that add or drop unit dims and
/// a transpose. Sets `transposed` when the view holds the matrix as [E, T].
ScatterElementsOp denseRoutingWeights(Value view, bool &transposed,
                                      SmallVectorImpl<Operation *> &ops) {
  transposed = false;
  Value v = view;
  while (v.hasOneUse()) {
    Operation *def = v.getDefiningOp();
    auto reshape = dyn_cast_or_null<ReshapeOp>(def);
    auto transpose = dyn_cast_or_null<TransposeOp>(def);
    auto from = reshape ? rankedType(reshape.getInput()) : RankedTensorType();
    if (reshape && from && rankedType(v) &&
        sameBesideUnitDims(rankedType(v).getShape(), from.getShape())) {
      v = reshape.getInput();
    } else if (transpose && transpose.getPerm() == ArrayRef<int64_t>{1, 0}) {
      transposed = !transposed;
      v = transpose.getInput();
    } else {
      break;
    }
    ops.push_back(def);
  }
  auto scatter = v.getDefiningOp<ScatterElementsOp>();
  auto type = rankedType(v);
  if (!scatter || !v.hasOneUse() || !type || type.getRank() != 2 || !type.hasStaticShape() ||
      type.getDimSize(0) < 2 || type.getDimSize(1) < 2 || scatter.getReduction() ||
      normalizedAxis(scatter.getAxis(), 2) != 1 || !isZeros(scatter.getInput()) ||
      !routingTopK(scatter.getIndices()))
    return {};
  ops.push_back(scatter);
  return scatter;
}

/// A sum over the experts of their outputs weighted by dense routing
/// weights (see DenseCombinePattern).
struct DenseCombine {
  Value outputs; // [T, E, D], or [E, T, D] when expertsFirst
  bool expertsFirst = false;
  ScatterElementsOp weights;
  SmallVector<Operation *> ops;
};

/// `root` as a dense combine: ReduceSum(A * C', axis) or
/// Reshape(MatMul(C', A), [T, D]).
std::optional<DenseCombine> matchDenseCombine(Operation *root) {
  DenseCombine combine;
  combine.ops.push_back(root);
  auto outType = rankedType(root->getResult(0));
  if (!outType || outType.getRank() != 2)
    return std::nullopt;
  bool transposed;
  if (auto reduce = dyn_cast<ReduceOp>(root)) {
    auto axes = reduce.getAxes() ? intConstant(reduce.getAxes()) : std::nullopt;
    auto mul = reduce.getInput().getDefiningOp<MulOp>();
    if (reduce.getKind() != ReduceKind::sum || reduce.getKeepdims() || !axes || axes->size() != 1 ||
        !mul || !mul->hasOneUse())
      return std::nullopt;
    int64_t axis = normalizedAxis(axes->front(), 3);
    combine.ops.push_back(mul);
    for (unsigned side = 0; side < 2; ++side) {
      Value outputs = mul->getOperand(1 - side), view = mul->getOperand(side);
      auto type = rankedType(outputs);
      if (!type || type.getRank() != 3 || (axis != 0 && axis != 1))
        continue;
      SmallVector<int64_t> viewShape(type.getShape());
      viewShape[2] = 1;
      SmallVector<Operation *> viewOps;
      auto scatter = denseRoutingWeights(view, transposed, viewOps);
      if (!scatter || !hasShape(view, viewShape) || transposed != (axis == 0))
        continue;
      combine.ops.append(viewOps);
      combine.outputs = outputs;
      combine.expertsFirst = axis == 0;
      combine.weights = scatter;
      return combine;
    }
    return std::nullopt;
  }
  auto reshape = dyn_cast<ReshapeOp>(root);
  auto matmul = reshape ? reshape.getInput().getDefiningOp<MatMulOp>() : MatMulOp();
  auto type = matmul ? rankedType(matmul.getRhs()) : RankedTensorType();
  if (!matmul || !matmul->hasOneUse() || !type || type.getRank() != 3)
    return std::nullopt;
  combine.ops.push_back(matmul);
  auto scatter = denseRoutingWeights(matmul.getLhs(), transposed, combine.ops);
  if (!scatter || transposed ||
      !hasShape(matmul.getLhs(), {type.getDimSize(0), 1, type.getDimSize(1)}))
    return std::nullopt;
  combine.outputs = matmul.getRhs();
  combine.expertsFirst = false;
  combine.weights = scatter;
  return combine;
}

/// Pattern 5: the dense combine -> the chosen experts' outputs gathered by
/// the top-k indices, weighted and summed over the k choices. `OpTy` is
/// the combine's last op (ReduceOp, or the ReshapeOp after a MatMul).
template <typename OpTy> struct DenseCombinePattern : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy root, PatternRewriter &rewriter) const override {
    auto combine = matchDenseCombine(root);
    if (!combine)
      return rewriter.notifyMatchFailure(root, "not a sum over experts weighted by scattered "
                                               "top-k weights");
    auto type = rankedType(combine->outputs);
    int64_t t = type.getDimSize(combine->expertsFirst ? 1 : 0), d = type.getDimSize(2);
    Value indices = combine->weights.getIndices(), weights = combine->weights.getUpdates();
    int64_t k = rankedType(indices).getDimSize(1);
    if (!hasShape(root->getResult(0), {t, d}) || !hasShape(weights, {t, k}))
      return rewriter.notifyMatchFailure(root, "the weights and outputs disagree on T or k");
    rewriter.setInsertionPoint(root);
    Location loc = fusedLoc(combine->ops);
    Value outputs = combine->outputs;
    if (combine->expertsFirst)
      outputs = transposeBy(rewriter, loc, outputs, {1, 0, 2});
    Value index = ExpandOp::create(rewriter, loc, reshapeTo(rewriter, loc, indices, {t, k, 1}),
                                   i64Constant(rewriter, loc, {t, k, d}));
    Value chosen =
        GatherElementsOp::create(rewriter, loc, outputs, index, rewriter.getI64IntegerAttr(1));
    Value weighted =
        MulOp::create(rewriter, loc, chosen, reshapeTo(rewriter, loc, weights, {t, k, 1}));
    rewriter.replaceAllUsesWith(root->getResult(0), sumOver(rewriter, loc, weighted, 1));
    eraseDeadOps(rewriter, combine->ops);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// 6. Slots scattered back to their tokens
//===----------------------------------------------------------------------===//

/// Pattern 6: scatter_add / index_add of each token's k slots -> a sum over
/// the slots.
struct SegmentSumScatterPattern : OpRewritePattern<ScatterElementsOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ScatterElementsOp scatter,
                                PatternRewriter &rewriter) const override {
    auto type = rankedType(scatter.getResult());
    auto updates = rankedType(scatter.getUpdates());
    if (!type || type.getRank() != 2 || !type.hasStaticShape() || !updates ||
        normalizedAxis(scatter.getAxis(), 2) != 0 || !isZeros(scatter.getInput()) ||
        !hasShape(scatter.getIndices(), updates.getShape()) ||
        updates.getDimSize(1) != type.getDimSize(1))
      return rewriter.notifyMatchFailure(scatter, "not rows scattered into zeros");
    int64_t t = type.getDimSize(0), d = type.getDimSize(1), n = updates.getDimSize(0);
    int64_t k = t ? n / t : 0;
    auto rows = intConstant(scatter.getIndices());
    if (!rows || k < 1 || n != k * t)
      return rewriter.notifyMatchFailure(scatter, "not k constant rows per token");
    bool tokenMajor = true, slotMajor = true;
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < d; ++c) {
        int64_t row = (*rows)[r * d + c];
        tokenMajor &= row == r / k;
        slotMajor &= row == r % t;
      }
    auto reduction = scatter.getReduction();
    if ((!tokenMajor && !slotMajor) || (reduction ? *reduction != ReduceKind::sum : k != 1))
      return rewriter.notifyMatchFailure(scatter, "not each token's slots added to it");
    // index_add writes self + scatter(zeros, ...): that add goes too.
    Operation *root = scatter;
    if (scatter->hasOneUse())
      if (auto add = dyn_cast<AddOp>(*scatter->user_begin()))
        if (add.getType() == scatter.getType() && isZeros(otherOperand(add, scatter.getResult())))
          root = add;
    rewriter.setInsertionPoint(root);
    Location loc = fusedLoc({scatter, root});
    Value slots = scatter.getUpdates();
    if (k > 1) {
      SmallVector<int64_t> shape =
          tokenMajor ? SmallVector<int64_t>{t, k, d} : SmallVector<int64_t>{k, t, d};
      auto reshape = slots.getDefiningOp<ReshapeOp>();
      if (reshape && hasShape(reshape.getInput(), shape))
        slots = reshape.getInput();
      slots = sumOver(rewriter, loc, reshapeTo(rewriter, loc, slots, shape), tokenMajor ? 1 : 0);
    }
    rewriter.replaceAllUsesWith(root->getResult(0), slots);
    eraseDeadOps(rewriter, {root, scatter});
    return success();
  }
};

} // namespace

void sluice::populateMoeFormPatterns(RewritePatternSet &patterns) {
  patterns.add<EinsumToMatMulPattern, SoftmaxOfTopKPattern, StackExpertChainsPattern,
               LoopOverExpertsPattern, DenseCombinePattern<ReduceOp>,
               DenseCombinePattern<ReshapeOp>, SegmentSumScatterPattern>(patterns.getContext());
}
