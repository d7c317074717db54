//===- RecognizeAttention.cpp - scaled dot-product attention chains -------===//
//
// torch.onnx writes attention (BERT, GPT-2, LLaMA) as
//   MatMul(Q, Transpose(K)) -> scale (Div/Mul by a constant, after the
//   MatMul or on Q and K before it) -> mask (Add of a float mask, or Where
//   with a -inf/very negative fill as masked_fill writes it) ->
//   Softmax(last axis) -> MatMul(., V)
// and LLaMA applies rotary embeddings (x * cos + rotate_half(x) * sin) to Q
// and K first. The chain becomes one `sluice.attention` with Q, K, V in
// [B..., S, D] layout: the key is a transpose of K^T's source with the last
// two perm entries swapped. A constant mask that is exactly causal becomes
// `causal = true`, an additive constant of zeros is dropped; other masks
// stay operands (an i1 keep-mask for Where).
// Every intermediate must feed the chain alone; anything else is refused.
// One pattern (AttentionPattern, rooted at the final MatMul) in named steps:
// the probabilities, the score chain (scales and masks), Q and K^T, rotary
// absorption, the mask plan, the op's preconditions, the rewrite.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/recognize/Match.h"
#include "passes/recognize/Patterns.h"

using namespace mlir;
using namespace sluice;
using namespace sluice::recognize;

namespace {

/// Fill values at or below this count as "masked out": exp underflows to 0
/// in fp32 for any realistic score, as it does for -inf.
constexpr double kMaskedFill = -1e4;
/// Additive mask values at or below this count as -inf when deciding that a
/// constant mask is causal (HF writes finfo.min, older code -1e9).
constexpr double kMaskedAdditive = -1e9;

/// Peels Mul/Div-by-a-positive-constant ops off `value` (each feeding the
/// chain alone, same type), folding their factors into `scale`.
Value peelScale(Value value, double &scale, SmallVectorImpl<Operation *> &chain) {
  while (singleUse(value)) {
    Operation *op = value.getDefiningOp();
    if (!op || !isa<MulOp, DivOp>(op))
      break;
    Value lhs = op->getOperand(0), rhs = op->getOperand(1);
    std::optional<double> c;
    Value rest;
    if ((c = splatValue(rhs)) && lhs.getType() == value.getType())
      rest = lhs;
    else if (isa<MulOp>(op) && (c = splatValue(lhs)) && rhs.getType() == value.getType())
      rest = rhs;
    if (!rest || !c || !(*c > 0) || !std::isfinite(*c))
      break;
    scale = isa<DivOp>(op) ? scale / *c : scale * *c;
    chain.push_back(op);
    value = rest;
  }
  return value;
}

/// Whether `value` leads back to a MatMul through scale/mask ops.
bool reachesMatMul(Value value, int depth = 0) {
  Operation *op = value.getDefiningOp();
  if (!op || depth > 6)
    return false;
  if (isa<MatMulOp>(op))
    return true;
  if (isa<MulOp, DivOp, AddOp>(op))
    return reachesMatMul(op->getOperand(0), depth + 1) ||
           (!isa<DivOp>(op) && reachesMatMul(op->getOperand(1), depth + 1));
  if (auto select = dyn_cast<SelectOp>(op))
    return reachesMatMul(select.getOnTrue(), depth + 1) ||
           reachesMatMul(select.getOnFalse(), depth + 1);
  return false;
}

/// x of `x * cos + rotate_half(x) * sin` (operand orders vary), with
/// rotate_half(x) = concat(-x[..., D/2:], x[..., :D/2]) on the last axis.
struct Rotary {
  Value x, cos, sin;
};

bool isHalfSlice(Value value, Value x, bool upper) {
  auto slice = value.getDefiningOp<SliceOp>();
  auto type = rankedType(x);
  if (!slice || slice.getInput() != x || !singleUse(value) || !type ||
      type.isDynamicDim(type.getRank() - 1))
    return false;
  int64_t rank = type.getRank(), d = type.getDimSize(rank - 1);
  auto starts = intConstant(slice.getStarts()), ends = intConstant(slice.getEnds()),
       axes = intConstant(slice.getAxes()), steps = intConstant(slice.getSteps());
  if (!starts || !ends || !axes || !steps || axes->size() != 1 || d % 2 ||
      ((*axes)[0] != -1 && (*axes)[0] != rank - 1) || (*steps)[0] != 1)
    return false;
  auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + d : v, int64_t(0), d); };
  int64_t start = clamp((*starts)[0]), end = clamp((*ends)[0]);
  return upper ? (start == d / 2 && end == d) : (start == 0 && end == d / 2);
}

std::optional<Rotary> matchRotary(Value y, SmallVectorImpl<Operation *> &chain) {
  auto add = y.getDefiningOp<AddOp>();
  if (!add || !singleUse(y))
    return std::nullopt;
  for (auto [direct, rotated] : {std::pair(add.getLhs(), add.getRhs()),
                                 std::pair(add.getRhs(), add.getLhs())}) {
    auto mulDirect = direct.getDefiningOp<MulOp>();
    auto mulRotated = rotated.getDefiningOp<MulOp>();
    if (!mulDirect || !mulRotated || !singleUse(direct) || !singleUse(rotated))
      continue;
    for (auto [half, sin] : {std::pair(mulRotated.getLhs(), mulRotated.getRhs()),
                             std::pair(mulRotated.getRhs(), mulRotated.getLhs())}) {
      auto concat = half.getDefiningOp<ConcatOp>();
      if (!concat || !singleUse(half) || concat.getInputs().size() != 2)
        continue;
      auto neg = concat.getInputs()[0].getDefiningOp<NegOp>();
      if (!neg || !singleUse(neg.getResult()))
        continue;
      auto upper = neg.getInput().getDefiningOp<SliceOp>();
      if (!upper)
        continue;
      Value x = upper.getInput();
      auto type = rankedType(x);
      if (!type || y.getType() != type || half.getType() != type ||
          ((int64_t)concat.getAxis() != -1 && (int64_t)concat.getAxis() != type.getRank() - 1) ||
          !isHalfSlice(neg.getInput(), x, true) ||
          !isHalfSlice(concat.getInputs()[1], x, false))
        continue;
      Value cos = otherOperand(mulDirect, x);
      if (!cos || direct.getType() != type || rotated.getType() != type)
        continue;
      chain.append({add, mulDirect, mulRotated, concat, neg, upper,
                    concat.getInputs()[1].getDefiningOp()});
      return Rotary{x, cos, sin};
    }
  }
  return std::nullopt;
}

/// A constant keep-pattern over the trailing [Sq, Sk] dims, the same for
/// every leading index; or nullopt when the mask is not constant or not
/// the same for all leading indices.
std::optional<std::vector<bool>> keepPattern(Value mask, bool boolKeeps, bool additive,
                                             int64_t sq, int64_t sk, bool &exactInf) {
  exactInf = true;
  auto constant = mask.getDefiningOp<ConstantOp>();
  auto type = rankedType(mask);
  if (!constant || !type || type.getRank() < 2 || type.getDimSize(type.getRank() - 2) != sq ||
      type.getDimSize(type.getRank() - 1) != sk)
    return std::nullopt;
  auto tensor = tensorFromAttr(constant.getValue());
  if (failed(tensor))
    return std::nullopt;
  std::vector<bool> keep(sq * sk);
  int64_t slices = tensor->numElements() / (sq * sk);
  for (int64_t s = 0; s < slices; ++s)
    for (int64_t i = 0; i < sq * sk; ++i) {
      bool k;
      if (additive) {
        double v = tensor->getDouble(s * sq * sk + i);
        if (v == 0)
          k = true;
        else if (v <= kMaskedAdditive) {
          k = false;
          exactInf &= std::isinf(v);
        }
        else
          return std::nullopt;
      } else {
        k = (tensor->getInt(s * sq * sk + i) != 0) == boolKeeps;
      }
      if (s == 0)
        keep[i] = k;
      else if (keep[i] != k)
        return std::nullopt;
    }
  return keep;
}

/// Whether `mask` is a float constant of zeros only (HF's extended mask
/// `(1 - attention_mask) * finfo.min` when the model was exported without an
/// attention_mask: the ones it makes fold to -0), which adds nothing.
bool isZeroConstant(Value mask) {
  auto constant = mask.getDefiningOp<ConstantOp>();
  if (!constant)
    return false;
  auto tensor = tensorFromAttr(constant.getValue());
  if (failed(tensor) || tensor->numElements() < 1)
    return false;
  for (int64_t i = 0; i < tensor->numElements(); ++i)
    if (tensor->getDouble(i) != 0)
      return false;
  return true;
}

/// Whether `keep` (row-major [Sq, Sk]) keeps exactly the keys j <= i + Sk - Sq
/// (bottom-right aligned, as the op's `causal`), or those of a sliding
/// window, i + Sk - Sq - W < j <= i + Sk - Sq (Mistral's): 0 for causal, W
/// for a window that drops keys, none for anything else.
std::optional<int64_t> causalWindow(const std::vector<bool> &keep, int64_t sq, int64_t sk) {
  // The window is the most keys a row keeps.
  int64_t window = 0;
  for (int64_t i = 0; i < sq; ++i) {
    int64_t kept = 0;
    for (int64_t j = 0; j < sk; ++j)
      kept += keep[i * sk + j];
    window = std::max(window, kept);
  }
  int64_t off = sk - sq;
  // Causal's last row keeps all sk keys: then no key is dropped by a window.
  bool dropsKeys = false;
  for (int64_t i = 0; i < sq; ++i)
    dropsKeys |= i + off + 1 > window && i + off >= 0;
  if (window == 0)
    return std::nullopt;
  for (int64_t i = 0; i < sq; ++i)
    for (int64_t j = 0; j < sk; ++j)
      if (keep[i * sk + j] != (j <= i + off && (!dropsKeys || j > i + off - window)))
        return std::nullopt;
  return dropsKeys ? window : 0;
}

/// One mask met on the way back from the softmax: an additive float mask,
/// or a Where condition with its fill (`keepsTrue`: the condition marks the
/// kept positions).
struct Mask {
  Value value;
  bool isBool = false, keepsTrue = true;
  double fill = 0;
};

/// What the chain from the final MatMul back to the QK^T MatMul holds.
struct ScoreChain {
  int64_t rank = 0, sq = 0, sk = 0;
  MatMulOp qk;
  SmallVector<Mask, 2> masks;
  double scale = 1.0;
  /// The matched ops (the root, the softmax, scale and mask ops, QK^T and,
  /// once matched, Q's and K's scales and the transpose).
  SmallVector<Operation *> chain;
};

/// `MatMul(Softmax(scores, last axis), V)` at `root`, V of the scores' rank.
LogicalResult matchProbabilities(MatMulOp root, ScoreChain &c, PatternRewriter &rewriter) {
  c.chain = {root};
  Value probs = root.getLhs(), value = root.getRhs();
  auto softmax = probs.getDefiningOp<SoftmaxOp>();
  auto probsType = rankedType(probs);
  if (!softmax || !singleUse(probs) || softmax.getLog() || !probsType ||
      ((int64_t)softmax.getAxis() != -1 && (int64_t)softmax.getAxis() != probsType.getRank() - 1))
    return rewriter.notifyMatchFailure(root, "the LHS is not a single-use softmax on the last axis");
  c.chain.push_back(softmax);
  c.rank = probsType.getRank();
  if (c.rank < 2 || !rankedType(value) || rankedType(value).getRank() != c.rank)
    return rewriter.notifyMatchFailure(root, "V does not have the scores' rank (>= 2)");
  c.sq = probsType.getDimSize(c.rank - 2);
  c.sk = probsType.getDimSize(c.rank - 1);
  return success();
}

/// An Add of a float mask to `scores` (the side that leads back to a MatMul);
/// returns the scores before it.
FailureOr<Value> matchAdditiveMask(AddOp add, Value scores, bool sawScale, ScoreChain &c,
                                   MatMulOp root, PatternRewriter &rewriter) {
  Value side;
  if (add.getLhs().getType() == scores.getType() && reachesMatMul(add.getLhs()))
    side = add.getLhs();
  else if (add.getRhs().getType() == scores.getType() && reachesMatMul(add.getRhs()))
    side = add.getRhs();
  Value mask = side ? otherOperand(add, side) : Value();
  if (!mask)
    return rewriter.notifyMatchFailure(root, "no side of a mask Add leads back to QK^T");
  // A scale after an additive mask would scale the mask too.
  if (sawScale)
    return rewriter.notifyMatchFailure(root, "a scale follows an additive mask");
  if (!rankedType(mask) || !isa<FloatType>(rankedType(mask).getElementType()))
    return rewriter.notifyMatchFailure(root, "an additive mask that is not a ranked float tensor");
  c.masks.push_back(Mask{mask});
  c.chain.push_back(add);
  return side;
}

/// A Where that fills masked scores with a constant at or below kMaskedFill,
/// on either side; returns the scores before it.
FailureOr<Value> matchWhereMask(SelectOp select, Value scores, ScoreChain &c, MatMulOp root,
                                PatternRewriter &rewriter) {
  Mask mask;
  mask.isBool = true;
  std::optional<double> f;
  Value before;
  if ((f = splatValue(select.getOnTrue())) &&
      select.getOnFalse().getType() == scores.getType()) {
    mask.keepsTrue = false;
    before = select.getOnFalse();
  } else if ((f = splatValue(select.getOnFalse())) &&
             select.getOnTrue().getType() == scores.getType()) {
    before = select.getOnTrue();
  } else {
    return rewriter.notifyMatchFailure(root, "a Where without a constant fill");
  }
  if (!(*f <= kMaskedFill))
    return rewriter.notifyMatchFailure(root, "a Where fill above -1e4");
  mask.fill = *f;
  mask.value = select.getCondition();
  c.masks.push_back(mask);
  c.chain.push_back(select);
  return before;
}

/// Back from the softmax: scale and mask ops (at most two masks, e.g. a
/// causal Where and an additive padding mask), then the QK^T MatMul.
LogicalResult matchScoreChain(MatMulOp root, ScoreChain &c, PatternRewriter &rewriter) {
  auto softmax = root.getLhs().getDefiningOp<SoftmaxOp>();
  Type scoresType = softmax.getType();
  bool sawScale = false;
  Value scores = softmax.getInput();
  while (true) {
    if (!singleUse(scores) || scores.getType() != scoresType)
      return rewriter.notifyMatchFailure(root, "the scores have other users or change type");
    Operation *op = scores.getDefiningOp();
    if (!op)
      return rewriter.notifyMatchFailure(root, "the scores do not come from a MatMul");
    if (auto mm = dyn_cast<MatMulOp>(op)) {
      c.qk = mm;
      c.chain.push_back(mm);
      return success();
    }
    if (isa<MulOp, DivOp>(op)) {
      Value rest = peelScale(scores, c.scale, c.chain);
      if (rest == scores)
        return rewriter.notifyMatchFailure(root, "a Mul or Div that is not a positive scale");
      sawScale = true;
      scores = rest;
      continue;
    }
    if (c.masks.size() == 2)
      return rewriter.notifyMatchFailure(root, "more than two masks");
    FailureOr<Value> before = failure();
    if (auto add = dyn_cast<AddOp>(op))
      before = matchAdditiveMask(add, scores, sawScale, c, root, rewriter);
    else if (auto select = dyn_cast<SelectOp>(op))
      before = matchWhereMask(select, scores, c, root, rewriter);
    else
      return rewriter.notifyMatchFailure(root, "the scores come from an op other than "
                                               "MatMul, a scale or a mask");
    if (failed(before))
      return failure();
    scores = *before;
  }
}

/// Q (possibly scaled on its own) and K^T = Transpose(K) of the QK^T MatMul.
struct QueryKey {
  Value q, kSource;
  /// The transpose's perm with the last two entries swapped: the key is
  /// kSource transposed by it (no transpose when it is the identity).
  SmallVector<int64_t> perm;
  bool identity = true;
};

/// Peels Q's and K^T's own scales off the QK^T MatMul and finds the K^T
/// transpose (with K's scale before it, when K^T feeds only this chain).
FailureOr<QueryKey> matchQueryKey(MatMulOp root, ScoreChain &c, PatternRewriter &rewriter) {
  QueryKey qk;
  qk.q = peelScale(c.qk.getLhs(), c.scale, c.chain);
  Value kT = peelScale(c.qk.getRhs(), c.scale, c.chain);
  auto transpose = kT.getDefiningOp<TransposeOp>();
  if (!transpose)
    return rewriter.notifyMatchFailure(root, "K^T is not a transpose");
  if (!rankedType(qk.q) || rankedType(qk.q).getRank() != c.rank)
    return rewriter.notifyMatchFailure(root, "Q does not have the scores' rank");
  qk.perm.assign(transpose.getPerm().begin(), transpose.getPerm().end());
  if ((int64_t)qk.perm.size() != c.rank)
    return rewriter.notifyMatchFailure(root, "K^T's perm does not have the scores' rank");
  std::swap(qk.perm[c.rank - 1], qk.perm[c.rank - 2]);
  for (int64_t i = 0; i < c.rank; ++i)
    qk.identity &= qk.perm[i] == i;
  qk.kSource = transpose.getInput();
  if (singleUse(kT)) {
    c.chain.push_back(transpose);
    qk.kSource = peelScale(qk.kSource, c.scale, c.chain);
  }
  if (!std::isfinite(c.scale) || !(c.scale > 0))
    return rewriter.notifyMatchFailure(root, "the scale is not finite and positive");
  return qk;
}

/// Rotary on both Q and K with the same tables (K must already be in
/// [B..., Sk, D] layout for the tables to mean the same thing); nullopt, and
/// the rotary ops stay outside the op, otherwise.
std::optional<std::pair<Rotary, Rotary>> matchRotaryPair(const QueryKey &qk,
                                                         SmallVectorImpl<Operation *> &chain) {
  if (!qk.identity || !singleUse(qk.kSource))
    return std::nullopt;
  SmallVector<Operation *> rotaryChain;
  std::optional<Rotary> rq = matchRotary(qk.q, rotaryChain);
  std::optional<Rotary> rk = rq ? matchRotary(qk.kSource, rotaryChain) : std::nullopt;
  if (!rk || rk->cos != rq->cos || rk->sin != rq->sin)
    return std::nullopt;
  chain.append(rotaryChain.begin(), rotaryChain.end());
  return std::pair(*rq, *rk);
}

/// The mask operands of the op: `causal` for a constant, exactly causal
/// mask; at most one other mask as `operand` (an i1 keep-mask for a Where,
/// `negate`d when its condition marks the dropped positions).
struct MaskPlan {
  bool causal = false;
  int64_t window = 0;
  Value operand;
  bool negate = false;
};

/// Whether a Where mask with a finite fill gives the op's -inf numbers: it
/// must be constant, alone, and keep a key in every row.
LogicalResult checkFiniteFill(const std::optional<std::vector<bool>> &keep, size_t numMasks,
                              const ScoreChain &c, MatMulOp root, PatternRewriter &rewriter) {
  if (!keep || numMasks > 1)
    return rewriter.notifyMatchFailure(root, "a finite Where fill on a mask that is not "
                                             "constant or not alone");
  for (int64_t i = 0; i < c.sq; ++i) {
    bool any = false;
    for (int64_t j = 0; j < c.sk; ++j)
      any |= (*keep)[i * c.sk + j];
    if (!any)
      return rewriter.notifyMatchFailure(root, "a finite Where fill on a mask that drops "
                                               "every key of a row");
  }
  return success();
}

/// Decides what becomes of each mask met on the score chain, refusing mask
/// combinations whose numbers the op would not reproduce.
FailureOr<MaskPlan> planMasks(const ScoreChain &c, MatMulOp root, PatternRewriter &rewriter) {
  MaskPlan plan;
  bool dynamicSeq = ShapedType::isDynamic(c.sq) || ShapedType::isDynamic(c.sk);
  for (const Mask &mask : c.masks) {
    // The Add kept the scores' type: dropping a zero mask changes nothing.
    if (!mask.isBool && isZeroConstant(mask.value))
      continue;
    bool exactInf = true;
    std::optional<std::vector<bool>> keep =
        dynamicSeq ? std::nullopt
                   : keepPattern(mask.value, mask.keepsTrue, !mask.isBool, c.sq, c.sk, exactInf);
    if (mask.isBool)
      exactInf = std::isinf(mask.fill);
    std::optional<int64_t> window =
        keep && !plan.causal ? causalWindow(*keep, c.sq, c.sk) : std::nullopt;
    if (window) {
      // Causal rows always keep their diagonal; with a second mask that may
      // drop it, only a -inf fill gives the op's numbers.
      if (c.masks.size() > 1 && !exactInf)
        return rewriter.notifyMatchFailure(root, "a causal mask with a finite fill beside "
                                                 "another mask");
      plan.causal = true;
      plan.window = *window;
      continue;
    }
    if (plan.operand)
      return rewriter.notifyMatchFailure(root, "two masks, neither of them causal");
    if (!mask.isBool) {
      plan.operand = mask.value;
      continue;
    }
    if (std::isfinite(mask.fill) &&
        failed(checkFiniteFill(keep, c.masks.size(), c, root, rewriter)))
      return failure();
    if (mask.keepsTrue) {
      plan.operand = mask.value;
    } else if (auto notOp = mask.value.getDefiningOp<NotOp>()) {
      plan.operand = notOp.getInput(); // masked_fill(~keep, ...)
    } else {
      plan.operand = mask.value;
      plan.negate = true;
    }
  }
  return plan;
}

/// The operands of the op to build.
struct AttentionOperands {
  Value query, key, value, mask, cos, sin;
};

/// The type of the op's key: `kSource` (or what rotary applies to) with its
/// dims permuted by `perm`, [B..., Sk, D]; null when not ranked.
RankedTensorType keyType(Value key, const QueryKey &qk) {
  auto type = rankedType(key);
  if (!type || qk.identity || type.getRank() != (int64_t)qk.perm.size())
    return type;
  SmallVector<int64_t> shape;
  for (int64_t i : qk.perm)
    shape.push_back(type.getDimSize(i));
  return RankedTensorType::get(shape, type.getElementType());
}

/// Why an attention op on these operands, its key of type `k`, would not
/// verify or would not have `resultType` (AttentionOp::verify, its type
/// inference and its ODS operand constraints); nullptr when it would. The
/// checks the rewrite needs instead of building the op and verifying it.
const char *attentionRefusal(const AttentionOperands &o, RankedTensorType k, Type resultType) {
  auto isFloat = [](Type t) { return t.isF16() || t.isBF16() || t.isF32() || t.isF64(); };
  auto q = rankedType(o.query), v = rankedType(o.value);
  if (!q || !k || !v)
    return "query, key or value is not ranked";
  if (!isFloat(q.getElementType()) || k.getElementType() != q.getElementType() ||
      v.getElementType() != q.getElementType())
    return "query, key and value do not have one float element type";
  int64_t r = q.getRank();
  if (k.getRank() != r || v.getRank() != r)
    return "query, key and value do not have one rank";
  auto known = [](int64_t a, int64_t b) {
    return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
  };
  if (!known(q.getDimSize(r - 1), k.getDimSize(r - 1)))
    return "query and key head sizes differ";
  if (!known(k.getDimSize(r - 2), v.getDimSize(r - 2)))
    return "key and value sequence lengths differ";
  for (int64_t d = 0; d < r - 2; ++d)
    for (RankedTensorType t : {k, v})
      if (!known(q.getDimSize(d), t.getDimSize(d)) && t.getDimSize(d) != 1)
        return "key/value batch dims do not broadcast to the query's";
  if (o.cos) {
    for (Value table : {o.cos, o.sin})
      if (!isFloat(cast<TensorType>(table.getType()).getElementType()))
        return "rotary tables that are not float";
    if (q.isDynamicDim(r - 1) || q.getDimSize(r - 1) % 2)
      return "rotary embeddings on a head size that is not static and even";
  }
  if (o.mask) {
    auto m = cast<TensorType>(o.mask.getType());
    if (m.hasRank() && m.getRank() > r)
      return "the mask has more dims than the scores";
    if (!m.getElementType().isInteger(1) && m.getElementType() != q.getElementType())
      return "a float mask without the query's element type";
  }
  SmallVector<int64_t> shape(q.getShape());
  shape.back() = v.getShape().back();
  if (RankedTensorType::get(shape, q.getElementType()) != resultType)
    return "the op's type ([B..., Sq, Dv] of the query) differs from the chain's";
  return nullptr;
}

/// `MatMul(Softmax(mask(scale * MatMul(Q, Transpose(K)))), V)` as matched
/// by the steps above: the scale (Div/Mul by a positive constant after the
/// QK^T MatMul or on Q and K before it), up to two masks (an Add of a float
/// mask after any scale; a Where with a fill at or below -1e4 on either
/// side), at most one of them not causal, Softmax on the last axis; rotary
/// in rotate-half form on Q and K with the same tables is absorbed when K
/// is already [B..., Sk, D]. Rooted at the final MatMul; every intermediate
/// feeds the chain alone.
struct AttentionPattern : OpRewritePattern<MatMulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatMulOp root, PatternRewriter &rewriter) const override {
    ScoreChain c;
    if (failed(matchProbabilities(root, c, rewriter)) ||
        failed(matchScoreChain(root, c, rewriter)))
      return failure();
    FailureOr<QueryKey> qk = matchQueryKey(root, c, rewriter);
    if (failed(qk))
      return failure();
    SmallVector<Operation *> rotaryChain;
    auto rotary = matchRotaryPair(*qk, rotaryChain);
    FailureOr<MaskPlan> masks = planMasks(c, root, rewriter);
    if (failed(masks))
      return failure();

    AttentionOperands o;
    o.query = rotary ? rotary->first.x : qk->q;
    o.key = rotary ? rotary->second.x : qk->kSource;
    o.value = root.getRhs();
    o.mask = masks->operand;
    if (rotary) {
      o.cos = rotary->first.cos;
      o.sin = rotary->first.sin;
    }
    if (const char *why = attentionRefusal(o, keyType(o.key, *qk), root.getType()))
      return rewriter.notifyMatchFailure(root, why);
    rewriteAttention(root, c, *qk, o, *masks, rotaryChain, rewriter);
    return success();
  }

  /// Builds the op (after the Not of a drop-mask and the key transpose) and
  /// erases the chain.
  static void rewriteAttention(MatMulOp root, const ScoreChain &c, const QueryKey &qk,
                               AttentionOperands o, const MaskPlan &masks,
                               ArrayRef<Operation *> rotaryChain, PatternRewriter &rewriter) {
    SmallVector<Operation *> matched(c.chain.begin(), c.chain.end());
    matched.append(rotaryChain.begin(), rotaryChain.end());
    Location loc = fusedLoc(matched);
    rewriter.setInsertionPoint(root);
    if (masks.negate)
      o.mask = NotOp::create(rewriter, loc, o.mask);
    if (!qk.identity)
      o.key = TransposeOp::create(rewriter, loc, o.key, qk.perm);
    auto attention = AttentionOp::create(
        rewriter, loc, root.getType(), o.query, o.key, o.value, o.mask, o.cos, o.sin,
        rewriter.getF32FloatAttr((float)c.scale), rewriter.getBoolAttr(masks.causal),
        rewriter.getI64IntegerAttr(masks.window));
    rewriter.replaceAllUsesWith(root.getResult(), attention.getResult());
    matched.push_back(root);
    for (const Mask &mask : c.masks)
      if (mask.value != o.mask && mask.value.getDefiningOp())
        matched.push_back(mask.value.getDefiningOp());
    eraseDeadOps(rewriter, matched);
  }
};

/// A key or value that repeat_kv made from [..., Hkv, S, D]: the heads
/// unsqueezed to [..., Hkv, 1, S, D], expanded over the G query heads of a
/// group and merged to [..., Hkv * G, S, D] (transformers' GQA). `shared`
/// is the expand's input, `groups` G.
struct RepeatedHeads {
  Value shared;
  int64_t groups = 0;
  SmallVector<Operation *> ops;
};

std::optional<RepeatedHeads> matchRepeatedHeads(Value merged) {
  auto reshape = merged.getDefiningOp<ReshapeOp>();
  if (!reshape)
    return std::nullopt;
  auto expand = reshape.getInput().getDefiningOp<ExpandOp>();
  if (!expand)
    return std::nullopt;
  auto in = rankedType(expand.getInput()), out = rankedType(expand.getOutput()),
       result = rankedType(merged);
  if (!in || !out || !result || !in.hasStaticShape() || !out.hasStaticShape() ||
      !result.hasStaticShape() || in.getRank() != out.getRank() ||
      result.getRank() + 1 != out.getRank() || out.getRank() < 4)
    return std::nullopt;
  int64_t r = out.getRank();
  // [..., Hkv, 1, S, D] -> [..., Hkv, G, S, D] -> [..., Hkv * G, S, D]: only
  // the group dim broadcasts, and the merge is of the heads with it.
  for (int64_t i = 0; i < r; ++i)
    if (i != r - 3 && in.getDimSize(i) != out.getDimSize(i))
      return std::nullopt;
  if (in.getDimSize(r - 3) != 1 || out.getDimSize(r - 3) < 2)
    return std::nullopt;
  SmallVector<int64_t> want(out.getShape().take_front(r - 4));
  want.push_back(out.getDimSize(r - 4) * out.getDimSize(r - 3));
  want.append({out.getDimSize(r - 2), out.getDimSize(r - 1)});
  if (llvm::ArrayRef<int64_t>(want) != result.getShape())
    return std::nullopt;
  return RepeatedHeads{expand.getInput(), out.getDimSize(r - 3), {reshape, expand}};
}

/// `value` [..., H, A, B] with its head dim split as [..., Hkv, G, A, B]
/// (H = Hkv x G; not for rotary tables, which also meet the key's Hkv
/// heads), or with a broadcast head dim (1, or absent) made to broadcast
/// over both; null when its head dim is neither.
Value splitHeads(PatternRewriter &rewriter, Location loc, Value value, int64_t kvHeads,
                 int64_t groups, bool perHeadAllowed = true) {
  auto type = rankedType(value);
  if (!type || !type.hasStaticShape())
    return {};
  int64_t r = type.getRank();
  // Aligned from the right against the query's [..., H, Sq, D].
  if (r < 3)
    return value;
  int64_t heads = type.getDimSize(r - 3);
  SmallVector<int64_t> shape(type.getShape().take_front(r - 3));
  if (heads == kvHeads * groups && perHeadAllowed)
    shape.append({kvHeads, groups});
  else if (heads == 1)
    shape.append({1, 1});
  else
    return {};
  shape.append({type.getDimSize(r - 2), type.getDimSize(r - 1)});
  return ReshapeOp::create(rewriter, loc, type.clone(shape), value,
                           i64Constant(rewriter, loc, shape));
}

/// Grouped- and multi-query attention: an attention whose key and value
/// went through repeat_kv becomes one over [..., Hkv, G, S, D] whose key and
/// value are the shared [..., Hkv, 1, S, D] heads (a broadcast batch dim),
/// so that no kernel copies them G times: the query's heads split as
/// [Hkv, G] (a view), the result merged back (a view).
struct GroupedQueryPattern : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op, PatternRewriter &rewriter) const override {
    auto key = matchRepeatedHeads(op.getKey());
    auto value = matchRepeatedHeads(op.getValue());
    if (!key || !value)
      return rewriter.notifyMatchFailure(op, "key and value are not repeat_kv's");
    auto q = rankedType(op.getQuery()), k = rankedType(key->shared),
         v = rankedType(value->shared);
    auto result = rankedType(op.getResult());
    if (!q || !q.hasStaticShape() || !result || q.getRank() + 1 != k.getRank() ||
        key->groups != value->groups)
      return rewriter.notifyMatchFailure(op, "the query is not [..., Hkv * G, Sq, D]");
    int64_t r = q.getRank(), groups = key->groups, kvHeads = k.getDimSize(r - 3);
    if (q.getDimSize(r - 3) != kvHeads * groups || v.getDimSize(r - 3) != kvHeads ||
        q.getShape().take_front(r - 3) != k.getShape().take_front(r - 3))
      return rewriter.notifyMatchFailure(op, "the query's heads are not Hkv x G");
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);
    // Rotary embeddings applied before repeat_kv (as transformers does) were
    // out of the attention matcher's reach: take them in now, the query's
    // and the shared key's with the same tables.
    Value queryIn = op.getQuery(), keyIn = key->shared;
    Value mask = op.getMask(), cos = op.getRotaryCos(), sin = op.getRotarySin();
    SmallVector<Operation *> rotaryChain;
    if (!cos) {
      Operation *unsqueeze = key->shared.getDefiningOp();
      std::optional<Rotary> rq = matchRotary(op.getQuery(), rotaryChain);
      std::optional<Rotary> rk =
          rq && unsqueeze && isa<ReshapeOp, UnsqueezeOp>(unsqueeze) &&
                  singleUse(key->shared)
              ? matchRotary(unsqueeze->getOperand(0), rotaryChain)
              : std::nullopt;
      if (rk && rk->cos == rq->cos && rk->sin == rq->sin) {
        queryIn = rq->x;
        keyIn = ReshapeOp::create(rewriter, loc, k, rk->x, i64Constant(rewriter, loc, k.getShape()));
        cos = rq->cos;
        sin = rq->sin;
        rotaryChain.push_back(unsqueeze);
      } else {
        rotaryChain.clear();
      }
    }
    Value query = splitHeads(rewriter, loc, queryIn, kvHeads, groups);
    if (mask && !(mask = splitHeads(rewriter, loc, mask, kvHeads, groups)))
      return rewriter.notifyMatchFailure(op, "the mask's head dim is neither 1 nor H");
    if (cos && (!(cos = splitHeads(rewriter, loc, cos, kvHeads, groups, false)) ||
                !(sin = splitHeads(rewriter, loc, sin, kvHeads, groups, false))))
      return rewriter.notifyMatchFailure(op, "the rotary tables' head dim is neither 1 nor H");
    SmallVector<int64_t> grouped(result.getShape().take_front(r - 3));
    grouped.append({kvHeads, groups, result.getDimSize(r - 2), result.getDimSize(r - 1)});
    auto attention = AttentionOp::create(rewriter, loc, result.clone(grouped), query,
                                         keyIn, value->shared, mask, cos, sin,
                                         op.getScaleAttr(), op.getCausalAttr(),
                                         op.getWindowAttr());
    Value merged = ReshapeOp::create(rewriter, loc, result, attention.getResult(),
                                     i64Constant(rewriter, loc, result.getShape()));
    rewriter.replaceOp(op, merged);
    SmallVector<Operation *> dead(key->ops);
    dead.append(value->ops);
    dead.append(rotaryChain.begin(), rotaryChain.end());
    eraseDeadOps(rewriter, dead);
    return success();
  }
};

} // namespace

void sluice::populateRecognizeAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<AttentionPattern, GroupedQueryPattern>(patterns.getContext());
}
