//===- Moe.cpp - cpu emitter: sluice.moe as the MoE kernel ----------------===//
//
// A `sluice.moe` the kernel applies to (lib/kernel/Moe.h; the fuse phase
// decomposed the others) becomes one call of sluice_moe (sluice_gen/
// cpu_moe.h) with its shapes at compile time and its slice of the
// context's expert-load counters.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/CpuEmitter.h"

#include "codegen/common/Format.h"
#include "codegen/common/MoeShape.h"
#include "dialects/sluice/SluiceOps.h"
#include "lib/kernel/Moe.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace sluice::codegen {

namespace {

/// The pointer of `operand` (ctx.in follows the op's operands, in which an
/// absent optional operand takes no place); "nullptr" when absent.
std::string pointerOf(const CpuOpContext &ctx, Value operand) {
  if (!operand)
    return "nullptr";
  for (OpOperand &use : ctx.op->getOpOperands())
    if (use.get() == operand)
      return ctx.in[use.getOperandNumber()];
  return "nullptr";
}

LogicalResult emitMoe(CpuOpContext &ctx) {
  auto op = cast<MoeOp>(ctx.op);
  if (const char *why = kernel::moeKernelRefusal(op))
    return op.emitOpError("cpu target: no MoE kernel: ") << why;
  ctx.include("sluice_gen/cpu_moe.h");
  ctx.code.line("{0}", moeShapeDecl(op));
  ctx.code.line(
      "return {0};",
      cCall("sluice_moe<" + typeOf(op.getRouter()) + ">",
            {"args", cStringLiteral(ctx.kernelName), "shape", pointerOf(ctx, op.getTokens()),
             pointerOf(ctx, op.getRouter()), pointerOf(ctx, op.getW1()), pointerOf(ctx, op.getB1()),
             pointerOf(ctx, op.getW2()), pointerOf(ctx, op.getB2()), pointerOf(ctx, op.getW3()),
             pointerOf(ctx, op.getB3()), pointerOf(ctx, op.getExpertOffset()), ctx.out[0],
             "args->expert_load ? args->expert_load + " + cInt64(kernel::moeLoadOffset(op)) +
                 " : nullptr"}));
  return success();
}

} // namespace

void registerCpuMoeEmitters(CpuOpRegistry &registry) {
  registry.add(MoeOp::getOperationName(), emitMoe);
}

} // namespace sluice::codegen
