//===- Linalg.cpp - cpu emitters: matmul and friends ----------------------===//
//
// MatMul (NumPy semantics: 1-D operands, broadcast batch dims) as OpenBLAS
// GEMMs for f32/f64 (a library call) and as a generated loop nest with int64
// or float accumulation for the other element types.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/CpuEmitter.h"

#include "codegen/common/CodeWriter.h"
#include "codegen/common/Format.h"
#include "codegen/common/ScalarEmitter.h"
#include "dialects/sluice/SluiceOps.h"

using namespace mlir;

namespace sluice::codegen {
namespace {

/// Problem sizes and per-batch offsets of a NumPy matmul.
struct MatMulPlan {
  int64_t m, n, k, batches;
  std::vector<int64_t> aOffsets, bOffsets;
};

FailureOr<MatMulPlan> planMatMul(Operation *op) {
  ArrayRef<int64_t> a = shapeOf(op->getOperand(0)), b = shapeOf(op->getOperand(1));
  ArrayRef<int64_t> r = shapeOf(op->getResult(0));
  std::vector<int64_t> as(a.begin(), a.end()), bs(b.begin(), b.end());
  if (as.size() == 1)
    as.insert(as.begin(), 1);
  if (bs.size() == 1)
    bs.push_back(1);
  MatMulPlan plan;
  plan.m = as[as.size() - 2];
  plan.k = as.back();
  plan.n = bs.back();
  if (bs[bs.size() - 2] != plan.k)
    return op->emitOpError("cpu target: matmul contraction sizes differ");
  size_t batchRank = std::max(as.size(), bs.size()) - 2;
  std::vector<int64_t> batch(batchRank, 1);
  auto batchDim = [&](const std::vector<int64_t> &s, size_t d) -> int64_t {
    int64_t idx = (int64_t)d - (int64_t)(batchRank - (s.size() - 2));
    return idx < 0 ? 1 : s[idx];
  };
  plan.batches = 1;
  for (size_t d = 0; d < batchRank; ++d) {
    batch[d] = std::max(batchDim(as, d), batchDim(bs, d));
    plan.batches *= batch[d];
  }
  (void)r;
  if (plan.batches > (1 << 20))
    return op->emitOpError("cpu target: too many matmul batches");
  for (int64_t i = 0; i < plan.batches; ++i) {
    int64_t rest = i, aOff = 0, bOff = 0, aStride = plan.m * plan.k, bStride = plan.k * plan.n;
    for (int64_t d = (int64_t)batchRank - 1; d >= 0; --d) {
      int64_t c = rest % batch[d];
      rest /= batch[d];
      int64_t ad = batchDim(as, d), bd = batchDim(bs, d);
      aOff += (ad == 1 ? 0 : c) * aStride;
      bOff += (bd == 1 ? 0 : c) * bStride;
      aStride *= ad;
      bStride *= bd;
    }
    plan.aOffsets.push_back(aOff);
    plan.bOffsets.push_back(bOff);
  }
  // A shared B and contiguous A batches: one GEMM with the batches stacked in M.
  bool sharedB = llvm::all_of(plan.bOffsets, [](int64_t o) { return o == 0; });
  bool contiguousA = true;
  for (int64_t i = 0; i < plan.batches; ++i)
    contiguousA &= plan.aOffsets[i] == i * plan.m * plan.k;
  if (sharedB && contiguousA && plan.batches > 1) {
    plan.m *= plan.batches;
    plan.batches = 1;
    plan.aOffsets = {0};
    plan.bOffsets = {0};
  }
  return plan;
}

LogicalResult emitMatMul(CpuOpContext &ctx) {
  auto plan = planMatMul(ctx.op);
  if (failed(plan))
    return failure();
  Type et = elementOf(ctx.op->getOperand(0));
  CodeWriter &w = ctx.code;
  w.line("{0}", cInt64ArrayDecl("a_off", plan->aOffsets));
  w.line("{0}", cInt64ArrayDecl("b_off", plan->bOffsets));
  // f16/bf16: widened into f32 GEMMs with fp32 accumulation (cpu_blas.h).
  if (et.isF32() || et.isF64() || et.isF16() || et.isBF16()) {
    ctx.include("sluice_gen/cpu_blas.h");
    w.line("sluice_gemm_batched({0}, {1}, {2}, {3}, {4}, {5}, a_off, {6}, b_off, {7});",
           CpuOpContext::threads, plan->batches, plan->m, plan->n, plan->k, ctx.in[0], ctx.in[1],
           ctx.out[0]);
    return success();
  }
  // Other element types: a loop nest accumulating in the compute type.
  Type rt = elementOf(ctx.op->getResult(0));
  std::string acc = computeType(rt);
  w.line("#pragma omp parallel for collapse(2) num_threads(args->num_threads) if({0} > 65536)",
         cInt64(plan->batches * plan->m * plan->n * plan->k));
  w.line("for (int64_t bi = 0; bi < {0}; ++bi)", plan->batches);
  auto batches = w.indented();
  w.line("for (int64_t i = 0; i < {0}; ++i)", plan->m);
  auto rows = w.indented();
  auto cols = w.block("for (int64_t j = 0; j < {0}; ++j)", plan->n);
  w.line("{0} sum = 0;", acc);
  w.line("for (int64_t p = 0; p < {0}; ++p)", plan->k);
  {
    auto dot = w.indented();
    std::string k = decimal(plan->k), n = decimal(plan->n);
    w.line("sum += ({0}){1} * ({0}){2};", acc,
           loadExpr(et, ctx.in[0] + "[a_off[bi] + i * " + k + " + p]"),
           loadExpr(et, ctx.in[1] + "[b_off[bi] + p * " + n + " + j]"));
  }
  w.line("{0}[(bi * {1} + i) * {2} + j] = {3};", ctx.out[0], plan->m, plan->n,
         storeExpr(rt, "sum"));
  return success();
}

} // namespace

void registerCpuLinalgEmitters(CpuOpRegistry &registry) {
  registry.add(MatMulOp::getOperationName(), emitMatMul);
}

} // namespace sluice::codegen
