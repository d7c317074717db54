//===- Moe.cpp - cuda emitter: sluice.moe as the device MoE kernels -------===//
//
// A `sluice.moe` the MoE kernel applies to (lib/kernel/Moe.h) becomes the
// launches of sluice_cuda_moe (sluice_gen/cuda_moe.h): routing, grouping
// with the expert-load count, the expert MLP as a grouped GEMM over only
// each expert's tokens, and the weighted combine. Its scratch lives in the
// state's workspace, whose size the op declares here.
//
//===----------------------------------------------------------------------===//

#include "lib/kernel/Moe.h"
#include "codegen/common/Format.h"
#include "codegen/common/ModelFacts.h"
#include "codegen/common/MoeShape.h"
#include "codegen/cuda/CudaGroups.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace sluice::codegen {

namespace {
/// Mirrors sluice_moe_workspace (cuda_moe.h): slot arrays, expert starts,
/// the hidden and output rows of every slot, each rounded to 256 bytes.
int64_t moeWorkspaceBytes(int64_t slots, int64_t local, int64_t f, int64_t dOut) {
  auto round = [](int64_t b) { return (b + 255) / 256 * 256; };
  return round(slots * 4) * 3 + round((local + 1) * 4) + round(slots * f * 4) +
         round(slots * dOut * 4);
}
} // namespace

CudaEmit emitCudaMoe(CudaGroupContext &ctx, MoeOp op) {
  if (const char *why = kernel::moeKernelRefusal(op))
    return ctx.unsupported(std::string("no cuda MoE kernel: ") + why);
  ArrayRef<int64_t> w1 = shapeOf(op.getW1()), w2 = shapeOf(op.getW2());
  int64_t d = w1[1], tokens = product(shapeOf(op.getTokens())) / std::max<int64_t>(d, 1);
  // Operand pointers by value: absent optional operands take no index.
  auto pointer = [&](Value operand) -> FailureOr<std::string> {
    if (!operand)
      return std::string("nullptr");
    for (OpOperand &use : op->getOpOperands())
      if (use.get() == operand)
        return singleOperand(ctx, op, use.getOperandNumber());
    return std::string("nullptr");
  };
  std::vector<std::string> operands;
  for (Value v : {op.getTokens(), op.getRouter(), op.getW1(), op.getB1(), op.getW2(), op.getB2(),
                  op.getW3(), op.getB3(), op.getExpertOffset()}) {
    auto p = pointer(v);
    if (failed(p))
      return CudaEmit::Error;
    operands.push_back(*p);
  }
  auto out = singleResult(ctx, op, 0);
  if (failed(out))
    return CudaEmit::Error;
  *ctx.workspaceBytes =
      std::max(*ctx.workspaceBytes, moeWorkspaceBytes(tokens * op.getTopK(), w1[0], w1[2], w2[2]));
  ctx.include("sluice_gen/cuda_moe.h");
  CodeWriter h(1);
  h.line("{0}", moeShapeDecl(op));
  std::vector<std::string> callArgs = {"args",   ctx.kernelName(),         "state",
                                       "stream", std::to_string(ctx.step), "shape"};
  callArgs.insert(callArgs.end(), operands.begin(), operands.end());
  callArgs.push_back(*out);
  callArgs.push_back("args->expert_load ? args->expert_load + " +
                     cInt64(kernel::moeLoadOffset(op)) + " : nullptr");
  h.line("if (int32_t status = {0})",
         cCall("sluice_cuda_moe<" + typeOf(op.getRouter()) + ">", callArgs));
  {
    auto fail = h.indented();
    h.line("return status;");
  }
  *ctx.host += h.str();
  return CudaEmit::Done;
}

} // namespace sluice::codegen
