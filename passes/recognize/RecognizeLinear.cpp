//===- RecognizeLinear.cpp - batched Linear from flatten/Gemm/unflatten ----===//
//
// HF's Conv1D (GPT-2's c_attn, c_proj, c_fc) computes a Linear layer as
//   x.view(-1, K) -> addmm(bias, ., W) -> view(B..., N)
// which torch.onnx exports as Reshape -> Gemm (MatMul + Add here) ->
// Reshape. The trailing reshape sits between the GEMM and its consumers
// (GELU, the residual add), so none of them can join the GEMM's epilogue.
// The same Linear on x as it is, `MatMul(x[B..., K], W[K, N]) + bias[N]`,
// computes the same numbers with the same shape as the trailing reshape's
// result: the chain becomes that, and the reshapes go away.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/recognize/Match.h"

namespace sluice {
#define GEN_PASS_DEF_RECOGNIZELINEARPASS
#include "passes/Passes.h.inc"
} // namespace sluice

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
/// shape [B..., K], W [K, N]: becomes `MatMul(x, W) [+ bias]`.
bool matchLinear(ReshapeOp out) {
  auto outType = rankedType(out.getOutput());
  if (!outType || !outType.hasStaticShape() || outType.getRank() < 3)
    return false;
  Value y = out.getInput();
  if (!singleUse(y))
    return false;
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
      return false;
  } else {
    matmul = y.getDefiningOp<MatMulOp>();
    if (!matmul)
      return false;
  }
  auto mmType = rankedType(matmul.getOutput());
  auto lhsType = rankedType(matmul.getLhs());
  auto wType = rankedType(matmul.getRhs());
  if (!mmType || !lhsType || !wType || mmType.getRank() != 2 || lhsType.getRank() != 2 ||
      wType.getRank() != 2 || !mmType.hasStaticShape() || !lhsType.hasStaticShape() ||
      !wType.hasStaticShape())
    return false;
  int64_t k = lhsType.getShape()[1], n = mmType.getShape()[1];
  if (bias && !isRowBias(bias, n))
    return false;
  auto flatten = matmul.getLhs().getDefiningOp<ReshapeOp>();
  if (!flatten)
    return false;
  Value x = flatten.getInput();
  auto xType = rankedType(x);
  if (!xType || !xType.hasStaticShape() || xType.getRank() != outType.getRank() ||
      xType.getShape().back() != k || outType.getShape().back() != n ||
      xType.getShape().drop_back() != outType.getShape().drop_back() ||
      outType.getElementType() != mmType.getElementType())
    return false;

  OpBuilder b(out);
  SmallVector<Operation *> front{matmul};
  if (singleUse(flatten.getOutput()))
    front.push_back(flatten);
  Value result = MatMulOp::create(b, fusedLoc(front), outType, x, matmul.getRhs()).getResult();
  if (add)
    result = AddOp::create(b, fusedLoc({add.getOperation(), out.getOperation()}), outType, result,
                           bias)
                 .getResult();
  out.getOutput().replaceAllUsesWith(result);
  SmallVector<Operation *> chain{out, matmul, flatten};
  if (add)
    chain.push_back(add);
  eraseDeadOps(chain);
  return true;
}

struct RecognizeLinearPass : public ::sluice::impl::RecognizeLinearPassBase<RecognizeLinearPass> {
  using RecognizeLinearPassBase::RecognizeLinearPassBase;

  void runOnOperation() override {
    // Roots are the trailing reshapes; a match erases the root and ops
    // before it only, so the walk goes on from the op after it.
    getOperation().walk([&](Block *block) {
      for (Operation &op : llvm::make_early_inc_range(*block))
        if (auto reshape = dyn_cast<ReshapeOp>(op))
          matchLinear(reshape);
    });
  }
};

} // namespace
