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
//===----------------------------------------------------------------------===//

#include "codegen/cpu/groups/Epilogue.h"

using namespace mlir;

namespace sluice::codegen {
namespace {

/// Offset of batch `flat` (row-major over `batch`) in an operand of shape
/// `shape` (its last two dims are the matrix) with `strides`; the operand's
/// batch dims are right-aligned and broadcast.
int64_t batchOffset(ArrayRef<int64_t> batch, int64_t flat, ArrayRef<int64_t> shape,
                    ArrayRef<int64_t> strides) {
  int64_t offset = 0, rest = flat;
  int64_t opBatch = (int64_t)shape.size() - 2;
  for (int64_t d = (int64_t)batch.size() - 1; d >= 0; --d) {
    int64_t c = rest % batch[d];
    rest /= batch[d];
    int64_t od = d - ((int64_t)batch.size() - opBatch);
    if (od >= 0 && shape[od] != 1)
      offset += c * strides[od];
  }
  return offset;
}

} // namespace

LogicalResult emitGemmGroup(GroupContext &ctx) {
  KernelOp kernel = ctx.kernel;
  GroupOps parts = splitGroupOps(kernel, [](Operation *op) { return isa<MatMulOp>(op); });
  KernelYieldOp yield = parts.yield;
  auto misplaced = [](Operation *op) {
    return op->emitOpError("cpu target: a GEMM group holds only views, one matmul and "
                           "elementwise ops after it");
  };
  if (!parts.before.empty())
    return misplaced(parts.before.front());
  for (Operation *op : parts.after)
    if (!isElementwise(op))
      return misplaced(op);
  auto matmul = dyn_cast_or_null<MatMulOp>(parts.anchor);
  if (!matmul)
    return kernel.emitOpError("cpu target: no matmul in a GEMM group");
  SmallVector<Operation *> &epilogueOps = parts.after;
  Value aValue = matmul->getOperand(0), bValue = matmul->getOperand(1);
  Value result = matmul->getResult(0);
  ArrayRef<int64_t> aShape = shapeOf(aValue), bShape = shapeOf(bValue),
                    space = shapeOf(result);
  if (aShape.size() < 2 || bShape.size() < 2)
    return matmul.emitOpError("cpu target: GEMM groups with an epilogue need matrix operands "
                              "(rank >= 2), not vectors");
  Type et = elementOf(result);
  if (!et.isF32() && !et.isF64() && !et.isF16() && !et.isBF16())
    return matmul.emitOpError("cpu target: GEMM groups are f32, f64, f16 or bf16");
  // Half storage: the GEMM widens A and B and accumulates into f32 scratch
  // (cpu_blas.h, sluice_gemm_batched_half_ep); the epilogue narrows.
  bool half = et.isF16() || et.isBF16();
  Type cElement = half ? Type(Float32Type::get(et.getContext())) : et;
  int64_t rank = space.size();
  int64_t m = aShape[aShape.size() - 2], k = aShape.back(), n = bShape.back();
  ArrayRef<int64_t> batchDims = space.drop_back(2);
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
  int64_t ar = aShape.size(), br = bShape.size();
  if (k > 1 && a->strides[ar - 1] != 1)
    return matmul.emitOpError("cpu target: the GEMM's A operand is a view without unit stride "
                              "along K (a transposed A); not supported in GEMM groups");
  if (n > 1 && b->strides[br - 1] != 1)
    return matmul.emitOpError("cpu target: the GEMM's B operand is a view without unit stride "
                              "along N (a transposed B); not supported in GEMM groups");
  int64_t lda = m > 1 ? a->strides[ar - 2] : k;
  int64_t ldb = k > 1 ? b->strides[br - 2] : n;
  if (lda < k || ldb < n)
    return matmul.emitOpError("cpu target: the GEMM's operand rows overlap (row stride below "
                              "the row length); not supported in GEMM groups");
  std::vector<int64_t> aOff, bOff;
  for (int64_t i = 0; i < batches; ++i) {
    aOff.push_back(a->offset + batchOffset(batchDims, i, aShape, a->strides));
    bOff.push_back(b->offset + batchOffset(batchDims, i, bShape, b->strides));
  }
  // A shared B and evenly spaced A batches: one GEMM with the batches
  // stacked in M (rows of the epilogue still map to [batch.., M]).
  int64_t gemmBatches = batches, gemmM = m;
  bool stack = batches > 1 && llvm::all_of(bOff, [&](int64_t o) { return o == bOff[0]; });
  for (int64_t i = 0; i < batches && stack; ++i)
    stack = aOff[i] == aOff[0] + i * m * lda;
  if (stack) {
    gemmBatches = 1;
    gemmM = m * batches;
    aOff.resize(1);
    bOff.resize(1);
  }

  // Epilogue values have the result's shape, or one that broadcasts to it
  // (a cast of the bias): those are recomputed per element.
  for (Operation *op : epilogueOps)
    if (failed(broadcastStridesTo(shapeOf(op->getResult(0)),
                                  contiguousStrides(shapeOf(op->getResult(0))), space)))
      return op->emitOpError("cpu target: an epilogue op of a GEMM group does not have the "
                             "matmul result's shape");
  // Yields: each is the matmul result or an epilogue value, through views.
  SmallVector<Value> roots;
  for (Value v : yield.getValues()) {
    Value root = stripOutputViews(v);
    if (shapeOf(root) != space)
      return kernel.emitOpError("cpu target: a GEMM group yields a value of another shape than "
                                "the matmul result");
    if (root != result && !llvm::is_contained(epilogueOps, root.getDefiningOp()))
      return kernel.emitOpError("cpu target: a GEMM group yields a value that is not computed "
                                "from the matmul result");
    roots.push_back(root);
  }
  std::vector<StridedView> outViews;
  for (auto [i, v] : llvm::enumerate(yield.getValues())) {
    auto view = resolveOutputView(roots[i], v);
    if (failed(view))
      return kernel.emitOpError("cpu target: result ") << i << " is not a view of the GEMM's result";
    outViews.push_back(*view);
  }
  // Where the GEMM writes C: an output holding the matmul result itself in
  // order, else one holding an epilogue value of the same type (the
  // epilogue then updates it in place), else scratch.
  std::optional<unsigned> cSlot;
  for (int pass = 0; pass < 2 && !cSlot && !half; ++pass)
    for (auto [i, v] : llvm::enumerate(yield.getValues()))
      if (!cSlot && (pass == 1 || roots[i] == result) && elementOf(v) == et &&
          outViews[i].isContiguous(space))
        cSlot = i;
  std::string T = storageType(cElement);
  std::string &s = *ctx.body;
  std::string c;
  if (cSlot) {
    c = ctx.output(*cSlot);
  } else {
    c = "gemm_c";
    s += "  std::unique_ptr<" + T + "[]> gemm_c_buf(new " + T + "[" +
         std::to_string(std::max<int64_t>(product(space), 1)) + "]);\n  " + T +
         " *gemm_c = gemm_c_buf.get();\n";
  }

  // The epilogue over [batch.., M | N]: rows are the flat index over
  // batch.. x M, the inner loop runs along N.
  epilogue::Body body(ctx, space, rank - 1);
  for (Operation *op : epilogueOps)
    for (Value operand : op->getOperands())
      if (operand != result && failed(body.addLeaf(operand)))
        return failure();
  unsigned cAccess = body.accesses.size();
  if (failed(body.addAccess({c, 0, contiguousStrides(space)}, "the GEMM result")))
    return failure();
  std::vector<unsigned> outAccess;
  for (auto [i, v] : llvm::enumerate(yield.getValues())) {
    outAccess.push_back(body.accesses.size());
    if (failed(body.addAccess({ctx.output(i), 0, outViews[i].strides}, "a result")))
      return failure();
  }
  // Leaves read through views of the matmul result are not elementwise.
  for (auto &[value, idx] : body.leafAccess)
    if (resolveView(value)->base == result)
      return kernel.emitOpError("cpu target: an epilogue reads the matmul result through a view");
  body.bindLeaves();
  std::string cType = computeType(et);
  body.expr[result] = "acc_";
  int locals = 0;
  CodeWriter opsWriter(4);
  if (failed(body.emitOps(opsWriter, epilogueOps, locals)))
    return failure();
  const std::string *ops = &opsWriter.str();
  // Stores: skip the matmul result into C's own slot (the GEMM wrote it).
  std::string stores;
  bool anyStore = false;
  for (auto [i, v] : llvm::enumerate(yield.getValues())) {
    if (cSlot && i == *cSlot && roots[i] == result)
      continue;
    anyStore = true;
    stores += "        " + ctx.output(i) + "[" + body.index(outAccess[i]) + "] = " +
              storeExpr(elementOf(v), body.lookup(roots[i])) + ";\n";
  }

  ctx.include("sluice_gen/cpu_blas.h");
  s += "  " + cStaticArray("a_off", aOff) + "  " + cStaticArray("b_off", bOff);
  std::string epi = "[](int64_t, int64_t, int64_t, int64_t, int64_t) {}";
  if (anyStore) {
    s += "  const auto epilogue = [&](int64_t batch, int64_t r0, int64_t rows, int64_t c0, "
         "int64_t cols) {\n";
    s += "    for (int64_t r = r0; r < r0 + rows; ++r) {\n";
    s += "      const int64_t row = batch * " + std::to_string(gemmM) + " + r;\n";
    CodeWriter bases(3);
    body.rowBases(bases, "row");
    s += bases.str();
    s += "      #pragma omp simd\n";
    s += "      for (int64_t j = c0; j < c0 + cols; ++j) {\n";
    s += "        const " + cType + " acc_ = " +
         loadExpr(cElement, c + "[" + body.index(cAccess) + "]") + ";\n";
    s += *ops + stores;
    s += "      }\n    }\n  };\n";
    epi = "epilogue";
  }
  s += "  sluice_gemm_batched_ep(args->num_threads, " + cInt(gemmBatches) + ", " + cInt(gemmM) +
       ", " + cInt(n) + ", " + cInt(k) + ", " + *aPtr + ", a_off, " + cInt(lda) + ", " + *bPtr +
       ", b_off, " + cInt(ldb) + ", " + c + ", " + epi + ");\n";
  return success();
}

} // namespace sluice::codegen
