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
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/recognize/Match.h"

#include "mlir/IR/Verifier.h"

namespace sluice {
#define GEN_PASS_DEF_RECOGNIZEATTENTIONPASS
#include "passes/Passes.h.inc"
} // namespace sluice

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

bool isCausal(const std::vector<bool> &keep, int64_t sq, int64_t sk) {
  for (int64_t i = 0; i < sq; ++i)
    for (int64_t j = 0; j < sk; ++j)
      if (keep[i * sk + j] != (j <= i + sk - sq))
        return false;
  return true;
}

bool rewriteAttention(MatMulOp root) {
  SmallVector<Operation *> chain = {root};
  Value probs = root.getLhs(), value = root.getRhs();
  auto softmax = probs.getDefiningOp<SoftmaxOp>();
  auto probsType = rankedType(probs);
  if (!softmax || !singleUse(probs) || softmax.getLog() || !probsType ||
      ((int64_t)softmax.getAxis() != -1 && (int64_t)softmax.getAxis() != probsType.getRank() - 1))
    return false;
  chain.push_back(softmax);
  int64_t rank = probsType.getRank();
  if (rank < 2 || !rankedType(value) || rankedType(value).getRank() != rank)
    return false;
  int64_t sq = probsType.getDimSize(rank - 2), sk = probsType.getDimSize(rank - 1);

  // Back from the softmax: scale and mask ops (at most two masks, e.g. a
  // causal Where and an additive padding mask), then the QK^T MatMul.
  struct Mask {
    Value value;
    bool isBool = false, keepsTrue = true;
    double fill = 0;
  };
  SmallVector<Mask, 2> masks;
  double scale = 1.0;
  bool sawScale = false;
  Value scores = softmax.getInput();
  MatMulOp qk;
  while (!qk) {
    if (!singleUse(scores) || scores.getType() != probs.getType())
      return false;
    Operation *op = scores.getDefiningOp();
    if (!op)
      return false;
    if (auto mm = dyn_cast<MatMulOp>(op)) {
      qk = mm;
      chain.push_back(mm);
      break;
    }
    if (isa<MulOp, DivOp>(op)) {
      Value rest = peelScale(scores, scale, chain);
      if (rest == scores)
        return false;
      sawScale = true;
      scores = rest;
      continue;
    }
    if (masks.size() == 2)
      return false;
    if (auto add = dyn_cast<AddOp>(op)) {
      Value side;
      if (add.getLhs().getType() == scores.getType() && reachesMatMul(add.getLhs()))
        side = add.getLhs();
      else if (add.getRhs().getType() == scores.getType() && reachesMatMul(add.getRhs()))
        side = add.getRhs();
      Value mask = side ? otherOperand(add, side) : Value();
      // A scale after an additive mask would scale the mask too.
      if (!mask || sawScale || !isa<FloatType>(rankedType(mask).getElementType()))
        return false;
      masks.push_back(Mask{mask});
      chain.push_back(add);
      scores = side;
      continue;
    }
    if (auto select = dyn_cast<SelectOp>(op)) {
      Mask mask;
      mask.isBool = true;
      std::optional<double> f;
      if ((f = splatValue(select.getOnTrue())) &&
          select.getOnFalse().getType() == scores.getType()) {
        mask.keepsTrue = false;
        scores = select.getOnFalse();
      } else if ((f = splatValue(select.getOnFalse())) &&
                 select.getOnTrue().getType() == scores.getType()) {
        scores = select.getOnTrue();
      } else {
        return false;
      }
      if (!(*f <= kMaskedFill))
        return false;
      mask.fill = *f;
      mask.value = select.getCondition();
      masks.push_back(mask);
      chain.push_back(select);
      continue;
    }
    return false;
  }

  // Q (scaled on its own, possibly) and K^T = Transpose(K).
  Value q = peelScale(qk.getLhs(), scale, chain);
  Value kT = peelScale(qk.getRhs(), scale, chain);
  auto transpose = kT.getDefiningOp<TransposeOp>();
  if (!transpose || !rankedType(q) || rankedType(q).getRank() != rank)
    return false;
  SmallVector<int64_t> perm(transpose.getPerm());
  if ((int64_t)perm.size() != rank)
    return false;
  std::swap(perm[rank - 1], perm[rank - 2]);
  bool identity = true;
  for (int64_t i = 0; i < rank; ++i)
    identity &= perm[i] == i;
  Value kSource = transpose.getInput();
  if (singleUse(kT)) {
    chain.push_back(transpose);
    kSource = peelScale(kSource, scale, chain);
  }
  if (!std::isfinite(scale) || !(scale > 0))
    return false;

  // Rotary on both Q and K with the same tables (K must already be in
  // [B..., Sk, D] layout for the tables to mean the same thing).
  std::optional<Rotary> rq, rk;
  SmallVector<Operation *> rotaryChain;
  if (identity && singleUse(kSource)) {
    rq = matchRotary(q, rotaryChain);
    rk = rq ? matchRotary(kSource, rotaryChain) : std::nullopt;
    if (!rk || rk->cos != rq->cos || rk->sin != rq->sin) {
      rq.reset();
      rk.reset();
      rotaryChain.clear();
    }
  }

  // Masks: a constant, exactly causal one becomes `causal`; at most one
  // other stays an operand.
  bool causal = false;
  Value maskOperand;
  bool dynamicSeq = ShapedType::isDynamic(sq) || ShapedType::isDynamic(sk);
  OpBuilder b(root);
  SmallVector<Operation *> matched(chain.begin(), chain.end());
  matched.append(rotaryChain.begin(), rotaryChain.end());
  matched.push_back(root);
  Location loc = fusedLoc(matched);
  SmallVector<Operation *> made;
  auto refuse = [&] {
    eraseDeadOps(made);
    return false;
  };
  for (const Mask &mask : masks) {
    // The Add kept the scores' type: dropping a zero mask changes nothing.
    if (!mask.isBool && isZeroConstant(mask.value))
      continue;
    bool exactInf = true;
    std::optional<std::vector<bool>> keep =
        dynamicSeq ? std::nullopt
                   : keepPattern(mask.value, mask.keepsTrue, !mask.isBool, sq, sk, exactInf);
    if (mask.isBool)
      exactInf = std::isinf(mask.fill);
    if (keep && !causal && isCausal(*keep, sq, sk)) {
      // Causal rows always keep their diagonal; with a second mask that may
      // drop it, only a -inf fill gives the op's numbers.
      if (masks.size() > 1 && !exactInf)
        return refuse();
      causal = true;
      continue;
    }
    if (maskOperand)
      return refuse();
    if (!mask.isBool) {
      maskOperand = mask.value;
      continue;
    }
    // A finite fill only matches the op's -inf when no row is all masked.
    if (std::isfinite(mask.fill)) {
      if (!keep || masks.size() > 1)
        return refuse();
      for (int64_t i = 0; i < sq; ++i) {
        bool any = false;
        for (int64_t j = 0; j < sk; ++j)
          any |= (*keep)[i * sk + j];
        if (!any)
          return refuse();
      }
    }
    if (mask.keepsTrue) {
      maskOperand = mask.value;
    } else if (auto notOp = mask.value.getDefiningOp<NotOp>()) {
      maskOperand = notOp.getInput(); // masked_fill(~keep, ...)
    } else {
      maskOperand = build<NotOp>(b, loc, mask.value);
      made.push_back(maskOperand.getDefiningOp());
    }
  }

  Value key = rk ? rk->x : kSource;
  if (!identity) {
    key = build<TransposeOp>(b, loc, key, b.getDenseI64ArrayAttr(perm));
    made.push_back(key.getDefiningOp());
  }
  Value query = rq ? rq->x : q;
  Operation *attention = buildOp<AttentionOp>(
      b, loc, query, key, value, maskOperand, rq ? rq->cos : Value(),
      rq ? rq->sin : Value(), b.getF32FloatAttr((float)scale), b.getBoolAttr(causal));
  // The verifier checks head sizes and rotary tables; a refusal is a missed
  // match, not an error.
  auto verified = [&] {
    ScopedDiagnosticHandler quiet(root.getContext(), [](Diagnostic &) { return success(); });
    return succeeded(mlir::verify(attention));
  };
  if (!attention || attention->getResult(0).getType() != root.getType() || !verified()) {
    if (attention)
      attention->erase();
    return refuse();
  }
  root.getResult().replaceAllUsesWith(attention->getResult(0));
  chain.append(rotaryChain.begin(), rotaryChain.end());
  for (const Mask &mask : masks)
    if (mask.value != maskOperand && mask.value.getDefiningOp())
      chain.push_back(mask.value.getDefiningOp());
  eraseDeadOps(chain);
  return true;
}

struct RecognizeAttentionPass
    : public ::sluice::impl::RecognizeAttentionPassBase<RecognizeAttentionPass> {
  using RecognizeAttentionPassBase::RecognizeAttentionPassBase;

  void runOnOperation() override {
    // Roots are the final MatMul; a match erases only ops before it.
    getOperation().walk([&](Block *block) {
      for (Operation &op : llvm::make_early_inc_range(*block))
        if (auto matmul = dyn_cast<MatMulOp>(op))
          rewriteAttention(matmul);
    });
  }
};

} // namespace
