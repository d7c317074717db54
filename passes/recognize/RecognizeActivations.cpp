//===- RecognizeActivations.cpp - GELU and SiLU from elementwise chains ----===//
//
// Exporters before ONNX Gelu (opset 20) write GELU as elementwise math:
//   erf form:  0.5 * x * (1 + erf(x / sqrt(2)))        (x * 0.7071 too)
//   tanh form: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
// with the three products associated and ordered in any way, and x^3 as
// Pow(x, 3) or x * x * x. SiLU is x * sigmoid(x). Each becomes one op,
// which fuses as a single elementwise op and maps to one intrinsic. Both are
// patterns rooted at the outermost product (GeluPattern, tried first, and
// SiluPattern), which the pass applies with the greedy driver.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/recognize/Match.h"
#include "passes/recognize/Patterns.h"

using namespace mlir;
using namespace sluice;
using namespace sluice::recognize;

namespace {

/// The factors of a product tree rooted at `value`: Mul ops whose result
/// feeds only the tree (the root excepted) and has the root's type are
/// expanded, everything else is a leaf. Gives up past `maxLeaves`.
bool flattenProduct(Value value, Type type, bool isRoot, SmallVectorImpl<Value> &leaves,
                    SmallVectorImpl<Operation *> &inner, size_t maxLeaves) {
  auto mul = value.getDefiningOp<MulOp>();
  if (mul && value.getType() == type && (isRoot || singleUse(value))) {
    inner.push_back(mul);
    return flattenProduct(mul.getLhs(), type, false, leaves, inner, maxLeaves) &&
           flattenProduct(mul.getRhs(), type, false, leaves, inner, maxLeaves);
  }
  leaves.push_back(value);
  return leaves.size() <= maxLeaves;
}

/// Removes the first leaf satisfying `pred` from `leaves`; returns it.
template <typename Pred>
Value takeLeaf(SmallVectorImpl<Value> &leaves, Pred pred) {
  for (auto *it = leaves.begin(); it != leaves.end(); ++it)
    if (pred(*it)) {
      Value v = *it;
      leaves.erase(it);
      return v;
    }
  return {};
}

/// x of `x / sqrt(2)` or `x * (1 / sqrt(2))`.
Value matchErfArgument(Value t, SmallVectorImpl<Operation *> &chain) {
  if (!singleUse(t))
    return {};
  if (auto div = t.getDefiningOp<DivOp>()) {
    if (!isSplatNear(div.getRhs(), std::sqrt(2.0)))
      return {};
    chain.push_back(div);
    return div.getLhs();
  }
  if (auto mul = t.getDefiningOp<MulOp>()) {
    for (auto [x, c] : {std::pair(mul.getLhs(), mul.getRhs()),
                        std::pair(mul.getRhs(), mul.getLhs())})
      if (isSplatNear(c, std::sqrt(0.5))) {
        chain.push_back(mul);
        return x;
      }
  }
  return {};
}

/// x of `sqrt(2/pi) * (x + 0.044715 * x^3)`, operands in any order, x^3 as
/// Pow(x, 3) or a product of three x.
Value matchTanhArgument(Value t, SmallVectorImpl<Operation *> &chain) {
  auto mul = t.getDefiningOp<MulOp>();
  if (!mul || !singleUse(t))
    return {};
  const double kSqrt2OverPi = std::sqrt(2.0 / M_PI);
  Value sum;
  if (isSplatNear(mul.getRhs(), kSqrt2OverPi))
    sum = mul.getLhs();
  else if (isSplatNear(mul.getLhs(), kSqrt2OverPi))
    sum = mul.getRhs();
  auto add = sum ? sum.getDefiningOp<AddOp>() : AddOp();
  if (!add || !singleUse(sum))
    return {};
  for (auto [x, cubic] : {std::pair(add.getLhs(), add.getRhs()),
                          std::pair(add.getRhs(), add.getLhs())}) {
    SmallVector<Value> leaves;
    SmallVector<Operation *> inner;
    if (cubic.getType() != t.getType() || !singleUse(cubic) ||
        !flattenProduct(cubic, t.getType(), false, leaves, inner, 5))
      continue;
    if (!takeLeaf(leaves, [](Value v) { return isSplatNear(v, 0.044715); }))
      continue;
    // Pow(x, 3) counts as three factors of x.
    int64_t xs = 0;
    SmallVector<Operation *> pows;
    bool ok = true;
    for (Value leaf : leaves) {
      if (leaf == x) {
        ++xs;
      } else if (auto pow = leaf.getDefiningOp<PowOp>();
                 pow && pow.getLhs() == x && singleUse(leaf) &&
                 isSplatNear(pow.getRhs(), 3.0, 0)) {
        xs += 3;
        pows.push_back(pow);
      } else {
        ok = false;
      }
    }
    if (!ok || xs != 3)
      continue;
    chain.push_back(mul);
    chain.push_back(add);
    chain.append(inner.begin(), inner.end());
    chain.append(pows.begin(), pows.end());
    return x;
  }
  return {};
}

/// A GELU chain found from its root product: x, the form, and the ops the
/// GeluOp replaces.
struct GeluMatch {
  Value x;
  StringRef approximate;
  SmallVector<Operation *> chain;
};

/// `0.5 * x * (1 + erf(..))` / `(1 + tanh(..))` rooted at the product `root`.
FailureOr<GeluMatch> matchGelu(MulOp root, PatternRewriter &rewriter) {
  Type type = root.getType();
  GeluMatch m;
  SmallVector<Value> leaves;
  if (!flattenProduct(root, type, true, leaves, m.chain, 3) || leaves.size() != 3)
    return rewriter.notifyMatchFailure(root, "not a product of three factors");
  if (!takeLeaf(leaves, [](Value v) { return isSplatNear(v, 0.5); }))
    return rewriter.notifyMatchFailure(root, "no factor 0.5");
  // The (1 + erf/tanh(..)) factor; the remaining leaf must be x.
  for (int which = 0; which < 2; ++which) {
    Value onePlus = leaves[which], x = leaves[1 - which];
    auto add = onePlus.getDefiningOp<AddOp>();
    if (!add || !singleUse(onePlus) || onePlus.getType() != type || x.getType() != type)
      continue;
    Value fn = isSplatNear(add.getRhs(), 1.0)   ? add.getLhs()
               : isSplatNear(add.getLhs(), 1.0) ? add.getRhs()
                                                 : Value();
    if (!fn || !singleUse(fn))
      continue;
    SmallVector<Operation *> inner = {add, fn.getDefiningOp()};
    Value arg;
    if (auto erf = fn.getDefiningOp<ErfOp>()) {
      arg = matchErfArgument(erf.getInput(), inner);
      m.approximate = "none";
    } else if (auto tanh = fn.getDefiningOp<TanhOp>()) {
      arg = matchTanhArgument(tanh.getInput(), inner);
      m.approximate = "tanh";
    }
    if (!arg || arg != x)
      continue;
    m.x = x;
    m.chain.append(inner.begin(), inner.end());
    return m;
  }
  return rewriter.notifyMatchFailure(root, "no factor (1 + erf(x / sqrt(2))) or "
                                           "(1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) "
                                           "of the other factor x");
}

/// GELU in the erf form `0.5 * x * (1 + erf(x / sqrt(2)))` (or `x * 0.7071`)
/// or the tanh form `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))`
/// (x^3 as Pow(x, 3) or x * x * x), rooted at the outermost product of the
/// three factors, associated and ordered in any way. Every intermediate has
/// x's type and feeds the chain alone; constants within a relative 1e-4.
struct GeluPattern : OpRewritePattern<MulOp> {
  // Tried before SiluPattern on the same product.
  GeluPattern(MLIRContext *context) : OpRewritePattern(context, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(MulOp root, PatternRewriter &rewriter) const override {
    FailureOr<GeluMatch> m = matchGelu(root, rewriter);
    if (failed(m))
      return failure();
    rewriter.setInsertionPoint(root);
    auto gelu = GeluOp::create(rewriter, chainLoc(root, {m->x}), root.getType(), m->x,
                               rewriter.getStringAttr(m->approximate));
    rewriter.replaceAllUsesWith(root.getResult(), gelu.getResult());
    eraseDeadOps(rewriter, m->chain);
    return success();
  }
};

/// SiLU: `x * sigmoid(x)`, either order, where the sigmoid feeds the product
/// alone and the product keeps x's type.
struct SiluPattern : OpRewritePattern<MulOp> {
  SiluPattern(MLIRContext *context) : OpRewritePattern(context, /*benefit=*/1) {}

  LogicalResult matchAndRewrite(MulOp root, PatternRewriter &rewriter) const override {
    for (auto [x, s] : {std::pair(root.getLhs(), root.getRhs()),
                        std::pair(root.getRhs(), root.getLhs())}) {
      auto sigmoid = s.getDefiningOp<SigmoidOp>();
      if (!sigmoid || sigmoid.getInput() != x || !singleUse(s) ||
          root.getType() != x.getType())
        continue;
      rewriter.setInsertionPoint(root);
      auto silu = SiluOp::create(rewriter, chainLoc(root, {x}), root.getType(), x);
      rewriter.replaceAllUsesWith(root.getResult(), silu.getResult());
      eraseDeadOps(rewriter, {root.getOperation(), sigmoid.getOperation()});
      return success();
    }
    return rewriter.notifyMatchFailure(
        root, "not x * sigmoid(x) with a single-use sigmoid and x's type");
  }
};

} // namespace

void sluice::populateRecognizeActivationsPatterns(RewritePatternSet &patterns) {
  patterns.add<GeluPattern, SiluPattern>(patterns.getContext());
}
