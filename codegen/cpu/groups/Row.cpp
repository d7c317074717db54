//===- Row.cpp - cpu form F3: row ops with a prologue and an epilogue -----===//

#include "codegen/cpu/CpuEmitter.h"
#include "codegen/cpu/Groups.h"

using namespace mlir;

namespace sluice::codegen {

bool isRowOp(Operation *op) { return isa<SoftmaxOp, LayerNormOp, RmsNormOp, ReduceOp>(op); }

LogicalResult emitRowGroup(GroupContext &ctx) {
  return ctx.kernel.emitOpError("cpu target: row groups with a prologue or an epilogue are not emitted yet");
}

} // namespace sluice::codegen
