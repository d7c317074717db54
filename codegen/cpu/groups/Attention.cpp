//===- Attention.cpp - cpu form F4: fused attention ------------------------===//
//
// One sluice.attention with view ops on its operands (the split, head
// reshape and transposes of a QKV GEMM output, a broadcast mask) and on its
// result (the transpose and reshape back to [B, S, H*D]). Every operand is
// read in place through its strided view and the result written through its
// output view: the group is one call of sluice_attention
// (sluice_gen/cpu_attention.h) with a descriptor of compile-time sizes and
// strides. A lone attention is the same code with contiguous strides.
//
//===----------------------------------------------------------------------===//

#include "codegen/common/AttentionDescriptor.h"
#include "codegen/cpu/CpuEmitter.h"
#include "codegen/cpu/Groups.h"

#include "codegen/common/CodeWriter.h"
#include "codegen/common/ScalarEmitter.h"

using namespace mlir;

namespace sluice::codegen {

LogicalResult emitAttentionGroup(GroupContext &ctx) {
  auto planned = kernel::planAttentionGroup(
      ctx.kernel, [&](const StridedView &view) { return ctx.leafPointer(view); }, "cpu");
  if (failed(planned))
    return failure();
  const kernel::AttentionPlan &plan = *planned;
  std::string maskType = storageType(plan.maskType);
  std::string rotaryType = storageType(plan.rotaryType);

  // The descriptor: built once (a function-local static).
  CodeWriter w(1);
  {
    auto desc = w.blockClosedBy("}();", "static const sluice_attn_desc desc = []");
    w.line("sluice_attn_desc d{{};");
    writeAttentionDescriptorFields(w, plan);
    w.line("return d;");
  }
  std::string t = storageType(plan.elementType);
  auto typed = [](const std::string &type, const std::string &ptr) {
    return ptr == "nullptr" ? "(const " + type + " *)nullptr" : ptr;
  };
  w.line("if (sluice_attention<{0}, {1}, {2}>(args->num_threads, desc, {3}, {4}, {5}, {6}, {7}, "
         "{8}, {9}))",
         t, maskType, rotaryType, plan.q.pointer, plan.k.pointer, plan.v.pointer,
         typed(maskType, plan.mask.pointer), typed(rotaryType, plan.cosQ.pointer),
         typed(rotaryType, plan.sinQ.pointer), plan.out.pointer);
  {
    auto then = w.indented();
    w.line("{0}", ctx.fail("\"out of memory for attention scratch\""));
  }
  ctx.include("sluice_gen/cpu_attention.h");
  *ctx.body += w.str();
  return success();
}

} // namespace sluice::codegen
