//===- Gemm.cpp - cpu form F2: GEMM with an epilogue ----------------------===//

#include "codegen/cpu/CpuEmitter.h"
#include "codegen/cpu/Groups.h"

using namespace mlir;

namespace sluice::codegen {

LogicalResult emitGemmGroup(GroupContext &ctx) {
  return ctx.kernel.emitOpError("cpu target: GEMM groups with epilogues are not emitted yet");
}

} // namespace sluice::codegen
