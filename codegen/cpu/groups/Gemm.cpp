//===- Gemm.cpp - cpu form F2: GEMM with an epilogue ----------------------===//
//
// One float matmul whose operands are views of the group's inputs (each
// must have unit stride along its contiguous GEMM dim and a uniform row
// stride: lda / ldb; batch dims become per-batch offsets), followed by
// elementwise epilogue ops on its result. The GEMM is
// sluice_gemm_batched_ep (sluice_gen/cpu_blas.h): a generated lambda runs
// the epilogue on each block of C as soon as the GEMM has finished it (on
// AVX-512 an MC x 32 block still in L1), so bias, activation and residual
// cost no second pass over the output. C lives in the output that yields
// the matmul result (or one epilogue value of its type, updated in place),
// else in a scratch buffer.
//
// With packed weights in the module's cpu config (sluice-compile
// --cpu-packed-weights; off by default: not yet shown faster end to end,
// docs/benchmarks.md), for an isa with sluice_sgemm (avx512, or avx2), a B that is a
// weight (a top-level f32 constant read whole, no batch of its own) is
// stored in weights.bin already packed into the micro-kernel's column
// panels (cpuBundleWeightTransform), and the GEMM is
// sluice_sgemm_packed_batched_ep, which skips the packing pass a GEMM
// otherwise makes on every run (the report's "cpu_gemm_packed_weights"
// counts the GEMMs that read packed weights).
//
//===----------------------------------------------------------------------===//

#include "codegen/common/GemmBatches.h"
#include "codegen/common/Epilogue.h"

#include "codegen/common/CodeWriter.h"
#include "codegen/common/Format.h"
#include "codegen/common/WeightTransform.h"
#include "codegen/cpu/CpuEmitter.h"
#include "codegen/cpu/CpuKernel.h"
#include "codegen/cpu/Groups.h"
#include "codegen/cpu/groups/WeightOnlyGemm.h"
#include "codegen/include/sluice_gen/layout/cpu_gemm_pack.h"

#include <cstdlib>

using namespace mlir;

namespace sluice::codegen {
namespace {

/// An f32 GEMM's B stored packed at compile time: the weight's elements
/// from `offset`, rows `ldb` apart, as sluice_sgemm_pack_panels lays them
/// out for panels `nr` wide.
struct PackedB {
  unsigned input = 0; ///< the kernel input B reads
  int64_t k = 0, n = 0, offset = 0, ldb = 0, nr = 0;
  std::string key() const {
    return "f32_pack_panels nr=" + decimal(nr) + " k=" + decimal(k) + " n=" + decimal(n) +
           " offset=" + decimal(offset) + " ldb=" + decimal(ldb);
  }
};

/// B of an f32 GEMM group emitted by emitGemmGroup when it could be stored
/// packed: a view of a kernel input with unit stride along N, and no batch
/// of its own (every GEMM batch reads the same B). None for an isa without
/// sluice_sgemm, without packed weights in the cpu config, or for other groups.
/// Whether a cpu bundle is being emitted on this thread (CpuBundleEmissionScope).
thread_local bool emittingCpuBundle = false;

std::optional<PackedB> packableB(KernelOp kernel) {
  CpuTargetConfig config = cpuTargetConfig(kernel);
  int64_t nr = cpuSgemmPanelWidth(config);
  if (!emittingCpuBundle || !nr || !config.packedWeights || kernel.getForm() != KernelForm::gemm ||
      kernel::isLoneOp(kernel) || isInt8GemmGroup(kernel) || isConvGroup(kernel) ||
      isWeightOnlyGemmGroup(kernel))
    return std::nullopt;
  auto matmul = dyn_cast_or_null<MatMulOp>(kernel::anchorOf(kernel));
  if (!matmul || !elementOf(matmul.getResult()).isF32() ||
      !elementOf(matmul->getOperand(1)).isF32())
    return std::nullopt;
  Value bValue = matmul->getOperand(1);
  ArrayRef<int64_t> shape = shapeOf(bValue);
  size_t r = shape.size();
  if (r < 2 || product(shape.drop_back(2)) != 1)
    return std::nullopt;
  auto view = resolveView(bValue, /*emitErrors=*/false);
  if (failed(view))
    return std::nullopt;
  auto arg = dyn_cast<BlockArgument>(view->base);
  if (!arg || arg.getOwner() != &kernel.getBody().front())
    return std::nullopt;
  PackedB b;
  b.input = arg.getArgNumber();
  b.k = shape[r - 2];
  b.n = shape[r - 1];
  b.nr = nr;
  b.offset = view->offset;
  if (b.k <= 0 || b.n <= 0 || (b.n > 1 && view->strides[r - 1] != 1))
    return std::nullopt;
  b.ldb = b.k > 1 ? view->strides[r - 2] : b.n;
  if (b.ldb < b.n)
    return std::nullopt;
  return b;
}

/// The packed B the kernel reads: its B input is a weight stored packed
/// (every kernel reading that weight asked for this same layout).
std::optional<PackedB> packedWeightB(KernelOp kernel) {
  std::optional<PackedB> b = packableB(kernel);
  if (!b)
    return std::nullopt;
  auto stored = storedTransform(kernel.getInputs()[b->input], cpuBundleWeightTransform);
  if (!stored || stored->key != b->key())
    return std::nullopt;
  return b;
}

/// Form F2 on the cpu, decided before any source is written: the GEMM
/// (operands, leading dims, per-batch offsets), where C lives and the
/// epilogue's accesses over [batch.., M | N]. Filled in place (the body
/// points at the group).
struct CpuGemmPlan {
  GroupOps parts;
  MatMulOp matmul;
  Value result;
  ArrayRef<int64_t> space;
  /// Half storage: the GEMM widens A and B and accumulates into f32 scratch
  /// (cpu_blas.h, sluice_gemm_batched_half_ep); the epilogue narrows.
  bool half = false;
  Type et, cElement;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0;
  /// GEMMs of gemmM rows (batches stacked along M where they can be).
  int64_t gemmBatches = 1, gemmM = 0;
  std::string aPtr, bPtr;
  std::vector<int64_t> aOff, bOff;
  SmallVector<Value> roots;
  std::vector<StridedView> outViews;
  /// The output the GEMM writes C into; none: a scratch buffer.
  std::optional<unsigned> cSlot;
  std::string c; ///< C's pointer: the output, or the scratch `gemm_c`
  std::optional<epilogue::Body> body;
  unsigned cAccess = 0;
  std::vector<unsigned> outAccess;
};

/// The matmul, its operands as strided views of leaves and the GEMM's
/// batches.
LogicalResult planGemmOperands(GroupContext &ctx, CpuGemmPlan &p) {
  KernelOp kernel = ctx.kernel;
  p.parts = splitGroupOps(kernel, [](Operation *op) { return isa<MatMulOp>(op); });
  auto misplaced = [](Operation *op) {
    return op->emitOpError("cpu target: a GEMM group holds only views, one matmul and "
                           "elementwise ops after it");
  };
  if (!p.parts.before.empty())
    return misplaced(p.parts.before.front());
  for (Operation *op : p.parts.after)
    if (!isElementwise(op))
      return misplaced(op);
  MatMulOp matmul = p.matmul = dyn_cast_or_null<MatMulOp>(p.parts.anchor);
  if (!matmul)
    return kernel.emitOpError("cpu target: no matmul in a GEMM group");
  Value aValue = matmul->getOperand(0), bValue = matmul->getOperand(1);
  p.result = matmul->getResult(0);
  ArrayRef<int64_t> aShape = shapeOf(aValue), bShape = shapeOf(bValue);
  p.space = shapeOf(p.result);
  if (aShape.size() < 2 || bShape.size() < 2)
    return matmul.emitOpError("cpu target: GEMM groups with an epilogue need matrix operands "
                              "(rank >= 2), not vectors");
  Type et = p.et = elementOf(p.result);
  if (!et.isF32() && !et.isF64() && !et.isF16() && !et.isBF16())
    return matmul.emitOpError("cpu target: GEMM groups are f32, f64, f16 or bf16");
  p.half = et.isF16() || et.isBF16();
  p.cElement = p.half ? Type(Float32Type::get(et.getContext())) : et;
  int64_t m = p.m = aShape[aShape.size() - 2], k = p.k = aShape.back();
  int64_t n = p.n = bShape.back();
  ArrayRef<int64_t> batchDims = p.space.drop_back(2);
  int64_t batches = product(batchDims);
  if (batches > (1 << 20))
    return matmul.emitOpError("cpu target: too many matmul batches");

  // A and B as strided views of leaves.
  auto a = resolveView(aValue), b = resolveView(bValue);
  if (failed(a) || failed(b))
    return failure();
  auto aPtr = ctx.leafPointer(StridedView{a->base, 0, {}});
  auto bPtr = ctx.leafPointer(StridedView{b->base, 0, {}});
  if (failed(aPtr) || failed(bPtr))
    return failure();
  p.aPtr = *aPtr;
  p.bPtr = *bPtr;
  int64_t ar = aShape.size(), br = bShape.size();
  if (k > 1 && a->strides[ar - 1] != 1)
    return matmul.emitOpError("cpu target: the GEMM's A operand is a view without unit stride "
                              "along K (a transposed A); not supported in GEMM groups");
  if (n > 1 && b->strides[br - 1] != 1)
    return matmul.emitOpError("cpu target: the GEMM's B operand is a view without unit stride "
                              "along N (a transposed B); not supported in GEMM groups");
  p.lda = m > 1 ? a->strides[ar - 2] : k;
  p.ldb = k > 1 ? b->strides[br - 2] : n;
  if (p.lda < k || p.ldb < n)
    return matmul.emitOpError("cpu target: the GEMM's operand rows overlap (row stride below "
                              "the row length); not supported in GEMM groups");
  for (int64_t i = 0; i < batches; ++i) {
    p.aOff.push_back(a->offset + batchOffset(batchDims, i, aShape, a->strides));
    p.bOff.push_back(b->offset + batchOffset(batchDims, i, bShape, b->strides));
  }
  // A shared B and evenly spaced A batches: one GEMM with the batches
  // stacked in M (rows of the epilogue still map to [batch.., M]).
  p.gemmBatches = batches;
  p.gemmM = m;
  bool stack = batches > 1 && llvm::all_of(p.bOff, [&](int64_t o) { return o == p.bOff[0]; });
  for (int64_t i = 0; i < batches && stack; ++i)
    stack = p.aOff[i] == p.aOff[0] + i * m * p.lda;
  if (stack) {
    p.gemmBatches = 1;
    p.gemmM = m * batches;
    p.aOff.resize(1);
    p.bOff.resize(1);
  }
  return success();
}

/// The yields (the matmul result or epilogue values, through views) and
/// where the GEMM writes C: an output holding the matmul result itself in
/// order, else one holding an epilogue value of the same type (the
/// epilogue then updates it in place), else scratch.
LogicalResult planGemmResults(GroupContext &ctx, CpuGemmPlan &p) {
  KernelOp kernel = ctx.kernel;
  // Epilogue values have the result's shape, or one that broadcasts to it
  // (a cast of the bias): those are recomputed per element.
  for (Operation *op : p.parts.after)
    if (failed(broadcastStridesTo(shapeOf(op->getResult(0)),
                                  contiguousStrides(shapeOf(op->getResult(0))), p.space)))
      return op->emitOpError("cpu target: an epilogue op of a GEMM group does not have the "
                             "matmul result's shape");
  auto yielded = KernelYieldOp(p.parts.yield).getValues();
  for (Value v : yielded) {
    Value root = stripOutputViews(v);
    if (shapeOf(root) != p.space)
      return kernel.emitOpError("cpu target: a GEMM group yields a value of another shape than "
                                "the matmul result");
    if (root != p.result && !llvm::is_contained(p.parts.after, root.getDefiningOp()))
      return kernel.emitOpError("cpu target: a GEMM group yields a value that is not computed "
                                "from the matmul result");
    p.roots.push_back(root);
  }
  for (auto [i, v] : llvm::enumerate(yielded)) {
    auto view = resolveOutputView(p.roots[i], v);
    if (failed(view))
      return kernel.emitOpError("cpu target: result ") << i << " is not a view of the GEMM's result";
    p.outViews.push_back(*view);
  }
  for (int pass = 0; pass < 2 && !p.cSlot && !p.half; ++pass)
    for (auto [i, v] : llvm::enumerate(yielded))
      if (!p.cSlot && (pass == 1 || p.roots[i] == p.result) && elementOf(v) == p.et &&
          p.outViews[i].isContiguous(p.space))
        p.cSlot = i;
  p.c = p.cSlot ? ctx.output(*p.cSlot) : "gemm_c";
  return success();
}

/// The epilogue over [batch.., M | N]: rows are the flat index over
/// batch.. x M, the inner loop runs along N. Its accesses: the epilogue
/// ops' leaves, C, then every output.
LogicalResult planGemmEpilogue(GroupContext &ctx, CpuGemmPlan &p) {
  epilogue::Body &body = p.body.emplace(ctx, p.space, (int64_t)p.space.size() - 1);
  for (Operation *op : p.parts.after)
    for (Value operand : op->getOperands())
      if (operand != p.result && failed(body.addLeaf(operand)))
        return failure();
  p.cAccess = body.accesses.size();
  if (failed(body.addAccess({p.c, 0, contiguousStrides(p.space)}, "the GEMM result")))
    return failure();
  for (auto [i, view] : llvm::enumerate(p.outViews)) {
    p.outAccess.push_back(body.accesses.size());
    if (failed(body.addAccess({ctx.output(i), 0, view.strides}, "a result")))
      return failure();
  }
  // Leaves read through views of the matmul result are not elementwise.
  for (auto &[value, idx] : body.leafAccess)
    if (resolveView(value)->base == p.result)
      return ctx.kernel.emitOpError(
          "cpu target: an epilogue reads the matmul result through a view");
  return success();
}

/// The epilogue lambda run on each finished block of C; false when no
/// output needs it (C is the only result, in its own slot).
FailureOr<bool> writeGemmEpilogue(CodeWriter &w, GroupContext &ctx, CpuGemmPlan &p) {
  epilogue::Body &body = *p.body;
  auto yielded = KernelYieldOp(p.parts.yield).getValues();
  // Stores: skip the matmul result into C's own slot (the GEMM wrote it).
  std::vector<unsigned> stored;
  for (unsigned i = 0; i < yielded.size(); ++i)
    if (!(p.cSlot && i == *p.cSlot && p.roots[i] == p.result))
      stored.push_back(i);
  body.bindLeaves();
  body.expr[p.result] = "acc_";
  CodeWriter ops(4);
  int locals = 0;
  if (failed(body.emitOps(ops, p.parts.after, locals)))
    return failure();
  if (stored.empty())
    return false;
  auto lambda = w.blockClosedBy("};", "const auto epilogue = [&](int64_t batch, int64_t r0, "
                                      "int64_t rows, int64_t col0, int64_t cols)");
  auto rows = w.block("for (int64_t r = r0; r < r0 + rows; ++r)");
  w.line("const int64_t row = batch * {0} + r;", p.gemmM);
  body.rowBases(w, "row");
  w.line("#pragma omp simd");
  auto cols = w.block("for (int64_t j = col0; j < col0 + cols; ++j)");
  w.line("const {0} acc_ = {1};", computeType(p.et),
         loadExpr(p.cElement, p.c + "[" + body.index(p.cAccess) + "]"));
  w.raw(ops.str());
  for (unsigned i : stored)
    w.line("{0}[{1}] = {2};", ctx.output(i), body.index(p.outAccess[i]),
           storeExpr(elementOf(yielded[i]), body.lookup(p.roots[i])));
  return true;
}

} // namespace

LogicalResult emitGemmGroup(GroupContext &ctx) {
  // Form W: B is a quantized weight the GEMM dequantizes inside.
  if (isWeightOnlyGemmGroup(ctx.kernel))
    return emitWeightOnlyGemmGroup(ctx);
  CpuGemmPlan plan;
  if (failed(planGemmOperands(ctx, plan)) || failed(planGemmResults(ctx, plan)))
    return failure();
  CodeWriter w(1);
  std::string T = storageType(plan.cElement);
  if (!plan.cSlot) {
    w.line("std::unique_ptr<{0}[]> gemm_c_buf(new {0}[{1}]);", T,
           std::max<int64_t>(product(plan.space), 1));
    w.line("{0} *gemm_c = gemm_c_buf.get();", T);
  }
  if (failed(planGemmEpilogue(ctx, plan)))
    return failure();
  CodeWriter epilogue(1);
  FailureOr<bool> anyStore = writeGemmEpilogue(epilogue, ctx, plan);
  if (failed(anyStore))
    return failure();

  ctx.include("sluice_gen/cpu_blas.h");
  w.line("{0}", cInt64ArrayDecl("a_off", plan.aOff));
  const char *noEpilogue = "[](int64_t, int64_t, int64_t, int64_t, int64_t) {}";
  if (std::optional<PackedB> packed = packedWeightB(ctx.kernel)) {
    // B is in weights.bin in sluice_sgemm's panels (PackedB::key): the
    // bundle must be built for the panel width it was packed for.
    w.line("#if !defined(SLUICE_SGEMM_ISA) || SLUICE_SGEMM_ISA != {0}",
           packed->nr == 32 ? 512 : 256);
    w.line("#error \"this bundle's weights are packed for {0} (the compiling host's ISA): build "
           "it with -march=native on such a host\"",
           packed->nr == 32 ? "AVX-512" : "AVX2 + FMA");
    w.line("#endif");
    w.raw(epilogue.str());
    w.line("sluice_sgemm_packed_batched_ep(args->num_threads, {0}, {1}, {2}, {3}, {4}, a_off, "
           "{5}, in{6}, {7}, {8});",
           cInt64(plan.gemmBatches), cInt64(plan.gemmM), cInt64(plan.n), cInt64(plan.k),
           plan.aPtr, cInt64(plan.lda), packed->input, plan.c,
           *anyStore ? "epilogue" : noEpilogue);
    *ctx.body += w.str();
    return success();
  }
  w.line("{0}", cInt64ArrayDecl("b_off", plan.bOff));
  w.raw(epilogue.str());
  w.line("sluice_gemm_batched_ep(args->num_threads, {0}, {1}, {2}, {3}, {4}, a_off, {5}, {6}, "
         "b_off, {7}, {8}, {9});",
         cInt64(plan.gemmBatches), cInt64(plan.gemmM), cInt64(plan.n), cInt64(plan.k), plan.aPtr,
         cInt64(plan.lda), plan.bPtr, cInt64(plan.ldb), plan.c, *anyStore ? "epilogue" : noEpilogue);
  *ctx.body += w.str();
  return success();
}

std::optional<WeightTransform> cpuBundleWeightTransform(KernelOp kernel, unsigned input) {
  if (std::optional<WeightTransform> t = cpuWeightTransform(kernel, input))
    return t;
  std::optional<PackedB> b = packableB(kernel);
  if (!b || b->input != input)
    return std::nullopt;
  WeightTransform t;
  t.key = b->key();
  PackedB l = *b;
  t.apply = [l](const Tensor &weight) {
    std::vector<unsigned char> bytes(sluice_sgemm_packed_floats(l.nr, l.k, l.n) * sizeof(float));
    sluice_sgemm_pack_panels(l.nr, l.k, l.n, static_cast<const float *>(weight.rawData()) + l.offset,
                             l.ldb, reinterpret_cast<float *>(bytes.data()));
    return bytes;
  };
  return t;
}

bool readsPackedWeight(KernelOp kernel) { return packedWeightB(kernel).has_value(); }

CpuBundleEmissionScope::CpuBundleEmissionScope() : previous(emittingCpuBundle) {
  emittingCpuBundle = true;
}
CpuBundleEmissionScope::~CpuBundleEmissionScope() { emittingCpuBundle = previous; }

} // namespace sluice::codegen
