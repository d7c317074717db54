//===- WeightOnlyGemm.cpp - cpu form F2 with a Form W prologue ------------===//
//
// A GEMM group whose B is the dequantization of a quantized constant weight
// (docs/quantization.md, Form W: dequantize_linear of an i8 [K, N] per column or
// an i4 [K, N] in blocks along K, then at most a cast; from ONNX QDQ models
// also unsigned weights with zero points) calls the weight-only
// GEMM of sluice_gen/cpu_wonly.h: the weight stays int8 / packed int4 in the
// bundle (codegen/common/ModelFacts.cpp packs i4 two per byte), the scales
// stay as they are, and the kernel dequantizes a few rows or one panel at a
// time. The epilogue is form F2's (codegen/common/Epilogue.h), run on each
// finished block of C as in groups/Gemm.cpp. A's batch dims stack into M
// when its batches are evenly spaced (B is one 2-D weight), else one call
// per batch.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/groups/WeightOnlyGemm.h"

#include "codegen/common/CodeWriter.h"
#include "codegen/common/Epilogue.h"
#include "codegen/common/Format.h"
#include "lib/reference/Evaluator.h"

using namespace mlir;

namespace sluice::codegen {
namespace {

/// The plan of one weight-only GEMM group, decided before any source.
struct WonlyPlan {
  GroupOps parts;
  MatMulOp matmul;
  kernel::WeightDequant weight;
  Value result;
  ArrayRef<int64_t> space;
  Type et;
  int64_t m = 0, n = 0, k = 0, lda = 0, batches = 1, gemmM = 0, gemmBatches = 1;
  std::string aPtr, qPtr, scalePtr, scaleType;
  /// Zero points (empty: none) and unsigned weights (ONNX QDQ models).
  std::string zeroPtr;
  bool isUnsigned = false;
  std::vector<int64_t> aOff;
  SmallVector<Value> roots;
  std::vector<StridedView> outViews;
  std::optional<unsigned> cSlot;
  std::string c;
  std::optional<epilogue::Body> body;
  unsigned cAccess = 0;
  std::vector<unsigned> outAccess;
};

/// A static array in the kernel's prologue holding `attr` as the bundle
/// would store it (i4 packed two per byte); its name.
FailureOr<std::string> constantArray(GroupContext &ctx, Operation *where, Attribute attr,
                                     const std::string &name) {
  auto tensor = tensorFromAttr(attr);
  if (failed(tensor))
    return where->emitOpError("cpu target: cannot read a weight-only GEMM constant");
  std::string text;
  if (isNibbleDType(tensor->dtype())) {
    std::vector<uint8_t> packed = packNibbles(tensor->rawData(), tensor->numElements());
    text = "static const uint8_t " + name + "[] = {";
    for (size_t i = 0; i < packed.size(); ++i)
      text += (i ? ", " : "") + std::to_string(packed[i]);
  } else {
    auto elements = cast<ElementsAttr>(attr);
    Type et = elements.getElementType();
    text = "static const " + storageType(et) + " " + name + "[] = {";
    auto dense = dyn_cast<DenseElementsAttr>(attr);
    for (int64_t i = 0; i < tensor->numElements(); ++i) {
      std::string value = dense ? literal(dense, i)
                          : et.isF16() || et.isBF16() || et.isF32()
                              ? doubleDigits(tensor->getDouble(i))
                              : std::to_string(tensor->getInt(i));
      text += (i ? ", " : "") + storeExpr(et, value);
    }
  }
  *ctx.prologue += text + "};\n";
  return name;
}

/// The pointer to a Form W operand: the leaf's ("inN": the bundle's bytes),
/// or a prologue array of an in-group constant.
FailureOr<std::string> wonlyOperand(GroupContext &ctx, Value value, const std::string &name) {
  if (auto constant = value.getDefiningOp<ConstantOp>())
    return constantArray(ctx, constant, constant.getValue(), ctx.name + "_" + name);
  if (!ctx.pointers.count(value))
    return ctx.kernel.emitOpError("cpu target: the weight-only GEMM's ")
           << name << " is not an input of its group";
  return ctx.pointers.lookup(value);
}

LogicalResult planWonlyOperands(GroupContext &ctx, WonlyPlan &p) {
  KernelOp kernel = ctx.kernel;
  p.parts = splitGroupOps(kernel, [](Operation *op) { return isa<MatMulOp>(op); });
  MatMulOp matmul = p.matmul = dyn_cast_or_null<MatMulOp>(p.parts.anchor);
  if (!matmul)
    return kernel.emitOpError("cpu target: no matmul in a GEMM group");
  auto weight = kernel::weightDequantOf(matmul);
  if (!weight)
    return matmul.emitOpError("cpu target: B is not a weight-only dequantization");
  p.weight = *weight;
  for (Operation *op : p.parts.before)
    if (op != weight->dequant.getOperation() && op != weight->cast.getOperation())
      return op->emitOpError("cpu target: a weight-only GEMM group holds only the weight's "
                             "dequantization before the matmul");
  for (Operation *op : p.parts.after)
    if (!isElementwise(op))
      return op->emitOpError("cpu target: a GEMM group holds only elementwise ops after "
                             "the matmul");
  Value aValue = matmul.getLhs();
  p.result = matmul.getResult();
  ArrayRef<int64_t> aShape = shapeOf(aValue);
  p.space = shapeOf(p.result);
  Type et = p.et = elementOf(p.result);
  if (aShape.size() < 2 || (!et.isF32() && !et.isF16() && !et.isBF16()))
    return matmul.emitOpError("cpu target: weight-only GEMMs take an f32, f16 or bf16 A of "
                              "rank >= 2");
  p.m = aShape[aShape.size() - 2];
  p.k = aShape.back();
  p.n = shapeOf(weight->dequant.getInput())[1];
  p.batches = product(p.space.drop_back(2));
  auto a = resolveView(aValue);
  if (failed(a))
    return failure();
  auto aPtr = ctx.leafPointer(StridedView{a->base, 0, {}});
  if (failed(aPtr))
    return failure();
  p.aPtr = *aPtr;
  int64_t ar = aShape.size();
  if (p.k > 1 && a->strides[ar - 1] != 1)
    return matmul.emitOpError("cpu target: the weight-only GEMM's A is a view without unit "
                              "stride along K");
  p.lda = p.m > 1 ? a->strides[ar - 2] : p.k;
  if (p.lda < p.k)
    return matmul.emitOpError("cpu target: the weight-only GEMM's A rows overlap");
  // Per-batch offsets of A over the result's batch dims (A's right-aligned,
  // broadcast where 1).
  ArrayRef<int64_t> batchDims = p.space.drop_back(2);
  for (int64_t i = 0; i < p.batches; ++i) {
    int64_t offset = a->offset, rest = i;
    int64_t opBatch = ar - 2;
    for (int64_t d = (int64_t)batchDims.size() - 1; d >= 0; --d) {
      int64_t coord = rest % batchDims[d];
      rest /= batchDims[d];
      int64_t od = d - ((int64_t)batchDims.size() - opBatch);
      if (od >= 0 && aShape[od] != 1)
        offset += coord * a->strides[od];
    }
    p.aOff.push_back(offset);
  }
  // Evenly spaced batches of A: one GEMM with them stacked along M.
  bool stack = true;
  for (int64_t i = 0; i < p.batches && stack; ++i)
    stack = p.aOff[i] == p.aOff[0] + i * p.m * p.lda;
  p.gemmBatches = stack ? 1 : p.batches;
  p.gemmM = stack ? p.m * p.batches : p.m;
  if (stack)
    p.aOff.resize(1);

  DequantizeLinearOp dq = weight->dequant;
  auto q = wonlyOperand(ctx, dq.getInput(), "q");
  auto scales = wonlyOperand(ctx, dq.getScale(), "scales");
  if (failed(q) || failed(scales))
    return failure();
  p.qPtr = *q;
  p.scalePtr = *scales;
  p.isUnsigned = elementOf(dq.getInput()).isUnsignedInteger();
  if (Value zeroPoint = dq.getZeroPoint()) {
    auto zero = wonlyOperand(ctx, zeroPoint, "zero");
    if (failed(zero))
      return failure();
    p.zeroPtr = *zero;
  }
  p.scaleType = storageType(elementOf(dq.getScale()));
  return success();
}

/// Yields and where C lives (as groups/Gemm.cpp: the output holding the
/// matmul result when it is f32 and contiguous, else f32 scratch).
LogicalResult planWonlyResults(GroupContext &ctx, WonlyPlan &p) {
  KernelOp kernel = ctx.kernel;
  for (Operation *op : p.parts.after)
    if (failed(broadcastStridesTo(shapeOf(op->getResult(0)),
                                  contiguousStrides(shapeOf(op->getResult(0))), p.space)))
      return op->emitOpError("cpu target: an epilogue op of a GEMM group does not have the "
                             "matmul result's shape");
  auto yielded = p.parts.yield.getValues();
  for (Value v : yielded) {
    Value root = stripOutputViews(v);
    if (shapeOf(root) != p.space ||
        (root != p.result && !llvm::is_contained(p.parts.after, root.getDefiningOp())))
      return kernel.emitOpError("cpu target: a GEMM group yields a value that is not computed "
                                "from the matmul result in its shape");
    p.roots.push_back(root);
  }
  for (auto [i, v] : llvm::enumerate(yielded)) {
    auto view = resolveOutputView(p.roots[i], v);
    if (failed(view))
      return kernel.emitOpError("cpu target: result ")
             << i << " is not a view of the GEMM's result";
    p.outViews.push_back(*view);
  }
  if (p.et.isF32())
    for (auto [i, v] : llvm::enumerate(yielded))
      if (!p.cSlot && p.roots[i] == p.result && elementOf(v).isF32() &&
          p.outViews[i].isContiguous(p.space))
        p.cSlot = i;
  p.c = p.cSlot ? ctx.output(*p.cSlot) : "gemm_c";
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
  for (auto &[value, idx] : body.leafAccess)
    if (resolveView(value)->base == p.result)
      return kernel.emitOpError("cpu target: an epilogue reads the matmul result through a view");
  return success();
}

/// The epilogue lambda `(r0, rows, c0, cols)` of batch `wonly_batch`; false
/// when nothing needs storing (C is the only result, in its own slot).
FailureOr<bool> writeWonlyEpilogue(CodeWriter &w, GroupContext &ctx, WonlyPlan &p) {
  epilogue::Body &body = *p.body;
  auto yielded = p.parts.yield.getValues();
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
  auto lambda = w.blockClosedBy(
      "};", "const auto epilogue = [&](int64_t r0, int64_t rows, int64_t c0, int64_t cols)");
  auto rows = w.block("for (int64_t r = r0; r < r0 + rows; ++r)");
  w.line("const int64_t row = wonly_batch * {0} + r;", p.gemmM);
  body.rowBases(w, "row");
  w.line("#pragma omp simd");
  auto cols = w.block("for (int64_t j = c0; j < c0 + cols; ++j)");
  w.line("const float acc_ = {0}[{1}];", p.c, body.index(p.cAccess));
  w.raw(ops.str());
  for (unsigned i : stored)
    w.line("{0}[{1}] = {2};", ctx.output(i), body.index(p.outAccess[i]),
           storeExpr(elementOf(yielded[i]), body.lookup(p.roots[i])));
  return true;
}

} // namespace

bool isWeightOnlyGemmGroup(KernelOp kernel) {
  for (Operation &op : kernel.getBody().front().without_terminator())
    if (kernel::isWeightPrologue(&op))
      return true;
  return false;
}

LogicalResult emitWeightOnlyGemmGroup(GroupContext &ctx) {
  WonlyPlan plan;
  if (failed(planWonlyOperands(ctx, plan)) || failed(planWonlyResults(ctx, plan)))
    return failure();
  CodeWriter w(1);
  if (!plan.cSlot) {
    w.line("std::unique_ptr<float[]> gemm_c_buf(new float[{0}]);",
           std::max<int64_t>(product(plan.space), 1));
    w.line("float *gemm_c = gemm_c_buf.get();");
  }
  ctx.include("sluice_gen/cpu_wonly.h");
  w.line("sluice_wonly_b<{0}> wonly_b;", plan.scaleType);
  w.line("wonly_b.q = {0};", plan.qPtr);
  w.line("wonly_b.scales = (const {0} *){1};", plan.scaleType, plan.scalePtr);
  w.line("wonly_b.bits = {0};", plan.weight.bits);
  w.line("wonly_b.group = {0};", cInt64(plan.weight.group));
  w.line("wonly_b.is_unsigned = {0};", plan.isUnsigned ? 1 : 0);
  if (!plan.zeroPtr.empty())
    w.line("wonly_b.zero = {0};", plan.zeroPtr);
  w.line("{0}", cInt64ArrayDecl("a_off", plan.aOff));
  {
    auto batches = w.block("for (int64_t wonly_batch = 0; wonly_batch < {0}; ++wonly_batch)",
                           cInt64(plan.gemmBatches));
    FailureOr<bool> anyStore = writeWonlyEpilogue(w, ctx, plan);
    if (failed(anyStore))
      return failure();
    w.line("sluice_wonly_gemm(args->num_threads, {0}, {1}, {2}, {3} + a_off[wonly_batch], {4}, "
           "wonly_b, {5} + wonly_batch * {6}, {1}, {7});",
           cInt64(plan.gemmM), cInt64(plan.n), cInt64(plan.k), plan.aPtr, cInt64(plan.lda), plan.c,
           cInt64(plan.gemmM * plan.n),
           *anyStore ? "epilogue" : "[](int64_t, int64_t, int64_t, int64_t) {}");
  }
  *ctx.body += w.str();
  return success();
}

} // namespace sluice::codegen
