//===- RecognizeLinear.cpp - batched Linear from flatten/Gemm/unflatten ----===//
//
// HF's Conv1D (GPT-2's c_attn, c_proj, c_fc) computes a Linear layer as
//   x.view(-1, K) -> addmm(bias, ., W) -> view(B..., N)
// which torch.onnx exports as Reshape -> Gemm (MatMul + Add here) ->
// Reshape. The trailing reshape sits between the GEMM and its consumers
// (GELU, the residual add), so none of them can join the GEMM's epilogue.
// The same Linear on x as it is, `MatMul(x[B..., K], W[K, N]) + bias[N]`,
// computes the same numbers with the same shape as the trailing reshape's
// result: the chain becomes that, and the reshapes go away (LinearPattern,
// rooted at the trailing reshape).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/recognize/Match.h"
#include "passes/recognize/Patterns.h"

using namespace mlir;
using namespace sluice;
using namespace sluice::recognize;

namespace {

/// A bias that broadcasts along the last axis only: [N] or [1, N].
bool isRowBias(Value bias, int64_t n) {
  auto type = rankedType(bias);
  if (!type || !type.hasStaticShape() || type.getRank() < 1 || type.getRank() > 2)
    return false;
  return type.getShape().back() == n && (type.getRank() == 1 || type.getShape()[0] == 1);
}

/// `Reshape(MatMul(Reshape(x, [M, K]), W) [+ bias], [B..., N])` with x of
/// static shape [B..., K] (rank >= 3), W [K, N] and a bias [N] or [1, N],
/// where the matmul (and the add) feed the chain alone: becomes
/// `MatMul(x, W) [+ bias]` of the trailing reshape's type. The flatten stays
/// when something else reads it.
struct LinearPattern : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReshapeOp out, PatternRewriter &rewriter) const override {
    auto outType = rankedType(out.getOutput());
    if (!outType || !outType.hasStaticShape() || outType.getRank() < 3)
      return rewriter.notifyMatchFailure(out, "not an unflatten to a static rank >= 3 shape");
    Value y = out.getInput();
    if (!singleUse(y))
      return rewriter.notifyMatchFailure(out, "the reshaped value has other users");
    AddOp add = y.getDefiningOp<AddOp>();
    MatMulOp matmul;
    Value bias;
    if (add) {
      for (auto [m, b] : {std::pair(add.getLhs(), add.getRhs()),
                          std::pair(add.getRhs(), add.getLhs())})
        if (auto def = m.getDefiningOp<MatMulOp>(); def && singleUse(m)) {
          matmul = def;
          bias = b;
          break;
        }
      if (!matmul || add.getType() != matmul.getType())
        return rewriter.notifyMatchFailure(out, "not a single-use matmul plus a bias");
    } else {
      matmul = y.getDefiningOp<MatMulOp>();
      if (!matmul)
        return rewriter.notifyMatchFailure(out, "the reshaped value is not a matmul (+ bias)");
    }
    auto mmType = rankedType(matmul.getOutput());
    auto lhsType = rankedType(matmul.getLhs());
    auto wType = rankedType(matmul.getRhs());
    if (!mmType || !lhsType || !wType || mmType.getRank() != 2 || lhsType.getRank() != 2 ||
        wType.getRank() != 2 || !mmType.hasStaticShape() || !lhsType.hasStaticShape() ||
        !wType.hasStaticShape())
      return rewriter.notifyMatchFailure(out, "the matmul is not a static 2-D GEMM");
    int64_t k = lhsType.getShape()[1], n = mmType.getShape()[1];
    if (bias && !isRowBias(bias, n))
      return rewriter.notifyMatchFailure(out, "the bias is not [N] or [1, N]");
    auto flatten = matmul.getLhs().getDefiningOp<ReshapeOp>();
    if (!flatten)
      return rewriter.notifyMatchFailure(out, "the matmul's LHS is not a reshape");
    Value x = flatten.getInput();
    auto xType = rankedType(x);
    if (!xType || !xType.hasStaticShape() || xType.getRank() != outType.getRank() ||
        xType.getShape().back() != k || outType.getShape().back() != n ||
        xType.getShape().drop_back() != outType.getShape().drop_back() ||
        outType.getElementType() != mmType.getElementType())
      return rewriter.notifyMatchFailure(
          out, "the flatten's input is not [B..., K] with the unflatten's leading dims");

    rewriter.setInsertionPoint(out);
    SmallVector<Operation *> front{matmul};
    if (singleUse(flatten.getOutput()))
      front.push_back(flatten);
    Value result =
        MatMulOp::create(rewriter, fusedLoc(front), outType, x, matmul.getRhs()).getResult();
    if (add)
      result = AddOp::create(rewriter, fusedLoc({add.getOperation(), out.getOperation()}),
                             outType, result, bias)
                   .getResult();
    rewriter.replaceAllUsesWith(out.getOutput(), result);
    SmallVector<Operation *> chain{out, matmul, flatten};
    if (add)
      chain.push_back(add);
    eraseDeadOps(rewriter, chain);
    return success();
  }
};

} // namespace

void sluice::populateRecognizeLinearPatterns(RewritePatternSet &patterns) {
  patterns.add<LinearPattern>(patterns.getContext());
}
