//===- Attention.cpp - cuda form F4: fused attention ----------------------===//
//
// The plan both targets share (lib/kernel/AttentionPlan.h: every operand read in
// place through its strided view, the result written through its output
// view) launched as one kernel of sluice_gen/cuda_attention.h:
//   - f16/bf16 with head dim 64 or 128 (= Dv) and no rotary: the
//     FlashAttention-2 tensor-core kernel (sluice_attn_mma, mma.sync);
//   - every other f32/f16/bf16 case with head dims up to 256 (rotary, odd
//     head dims, D != Dv): the tiled FMA kernel (sluice_attn_fma);
//   - f64 and wider heads: a host step (the cpu kernel), with the reason.
// The descriptor is built once per process (a function-local static) and
// passed by value, so a captured CUDA graph replays it unchanged.
//
//===----------------------------------------------------------------------===//

#include "codegen/common/CodeWriter.h"
#include "codegen/common/Format.h"
#include "codegen/common/ScalarEmitter.h"
#include "codegen/common/AttentionDescriptor.h"
#include "codegen/common/ModelFacts.h"
#include "codegen/cuda/CudaGroups.h"

using namespace mlir;

namespace sluice::codegen {

namespace {

/// Widest head dim (D and Dv) the FMA kernel's shared tiles hold.
constexpr int64_t kMaxHeadDim = 256;

int64_t roundUp32(int64_t v) { return std::max<int64_t>(32, (v + 31) / 32 * 32); }

} // namespace

CudaEmit emitCudaAttentionGroup(CudaGroupContext &ctx) {
  auto planned = kernel::planAttentionGroup(
      ctx.kernel, [&](const StridedView &view) { return ctx.leafPointer(view); }, "cuda");
  if (failed(planned))
    return CudaEmit::Error;
  const kernel::AttentionPlan &plan = *planned;
  Type et = plan.elementType;
  bool half = et.isF16() || et.isBF16();
  if (!half && !et.isF32()) {
    std::string name;
    llvm::raw_string_ostream os(name);
    et.print(os);
    return ctx.unsupported("attention in " + name + " has no cuda kernel (f32, f16, bf16 only)");
  }
  if (plan.d > kMaxHeadDim || plan.dv > kMaxHeadDim)
    return ctx.unsupported("attention head dim " + std::to_string(std::max(plan.d, plan.dv)) +
                           " exceeds the cuda kernels' " + std::to_string(kMaxHeadDim));
  int64_t batches = 1;
  for (int64_t b : plan.batch)
    batches *= b;
  if (batches == 0 || plan.sq == 0 || plan.dv == 0)
    return CudaEmit::Done; // an empty output: nothing to compute

  std::string t = storageType(et), mt = storageType(plan.maskType),
              rt = storageType(plan.rotaryType);
  auto typed = [](const std::string &type, const std::string &ptr) {
    return ptr == "nullptr" ? "(const " + type + " *)nullptr" : ptr;
  };
  bool tensorCores = half && !plan.rotary && plan.d == plan.dv && (plan.d == 64 || plan.d == 128);
  std::string kernel;
  int64_t rows;
  if (tensorCores) {
    // Keys per tile: three [rows x D+8] 16-bit tiles stay under 48 KB.
    int64_t bk = plan.d == 64 ? 64 : 32;
    rows = 64;
    kernel = "sluice_attn_mma<" + t + ", " + mt + ", " + decimal(plan.d) + ", " + decimal(bk) + ">";
  } else {
    int64_t dp = roundUp32(plan.d), dvp = roundUp32(plan.dv);
    // Wide heads: half the query rows and keys per tile (41 KB of floats).
    bool wide = std::max(dp, dvp) > 128;
    int64_t r = wide ? 2 : 4, bk = wide ? 16 : 32;
    rows = 4 * r;
    kernel = "sluice_attn_fma<" + t + ", " + mt + ", " + rt + ", " + decimal(dp) + ", " +
             decimal(dvp) + ", " + decimal(r) + ", " + decimal(bk) + ">";
  }
  if (batches * ((plan.sq + rows - 1) / rows) > (int64_t(1) << 31) - 1)
    return ctx.unsupported("attention needs more than 2^31 - 1 thread blocks");

  CodeWriter h(1);
  {
    auto desc = h.blockClosedBy("}();", "static const sluice_cuda_attn_desc desc = []");
    h.line("sluice_cuda_attn_desc d{{};");
    writeAttentionDescriptorFields(h, plan);
    h.line("return d;");
  }
  std::string rotary =
      tensorCores ? "" : ", " + typed(rt, plan.cosQ.pointer) + ", " + typed(rt, plan.sinQ.pointer);
  h.line("{0}<<<sluice_attn_blocks(desc, {1}), 128, 0, stream>>>(desc, {2}, {3}, {4}, {5}{6}, "
         "{7});",
         kernel, rows, plan.q.pointer, plan.k.pointer, plan.v.pointer, typed(mt, plan.mask.pointer),
         rotary, plan.out.pointer);
  h.line("SLUICE_LAUNCHED({0});", ctx.kernelName());
  ctx.include("sluice_gen/cuda_attention.h");
  *ctx.host += h.str();
  return CudaEmit::Done;
}

} // namespace sluice::codegen
