//===- Attention.cpp - cpu form F4: fused attention ------------------------===//

#include "codegen/cpu/CpuEmitter.h"
#include "codegen/cpu/Groups.h"

using namespace mlir;

namespace sluice::codegen {

LogicalResult emitAttentionGroup(GroupContext &ctx) {
  return ctx.kernel.emitOpError("cpu target: attention is not emitted yet");
}

} // namespace sluice::codegen
