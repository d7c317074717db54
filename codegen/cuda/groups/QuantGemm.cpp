//===- QuantGemm.cpp - cuda form F2 with an int8 anchor (Form I8) ----------===//
//
// A GEMM group whose anchor is an int8 matmul_integer
// (kernel::isInt8Contraction: A u8/s8 with a constant per-tensor zero
// point, B s8 with zero point 0) is one sluice_int8_gemm call
// (sluice_gen/cuda_quant.cuh): cuBLASLt's IMMA kernels, or the CUDA-core
// tile kernel where IMMA's rules do not hold, compute the exact int32 sums
// acc = sum_k (A - zA) B, and a generated functor runs the rest of the
// group on each of them: the cast to f32, the scale mul, the bias add, a
// ReLU, the quantize_linear of the next quantized op, any further
// elementwise ops, through the scalar emitter in the IR's order (each op
// rounds as the evaluator's does; a fused multiply-add of scale and bias
// would not), then the stores through the yields' output views.
//
// B, when it is a weight (a kernel input fed by a top-level constant, no
// batch of its own) read by device steps only, is stored packed for IMMA
// (cudaWeightTransform: int32 column sums, then B^T as [N, K]), so the
// IMMA path needs neither a transpose nor a column-sum kernel. An activation
// B (QDQ attention matmuls) is read where it is: a transposed view is
// already [N, K] (IMMA), plain rows [K, N] take the CUDA-core path.
// Batches: one strided-batch call when the batches' offsets are uniform,
// else a loop of calls. A conv_integer group (2-D NCHW) is one
// sluice_int8_conv: per group, a device im2col of every image, then the same
// GEMM with the group's weight rows as B (already [N, K]; stored raw), the
// functor mapping (group, image * OH * OW + pixel, channel) into the NCHW
// result. A group this file refuses is a host step (the reason in the
// report's remarks), its weights in the cpu layout.
//
// A GEMM group with a Form W prologue (the dequantize_linear, and cast, of
// an int8 / int4 constant weight: kernel::weightDequantOf) is one
// sluice_wonly_gemm: the GEMV kernel for up to 16 rows, dequantize +
// cuBLASLt above; the functor gets (row, column, f32 sum) and rounds a
// half-precision matmul result to its type first, as the evaluator. The
// bundle keeps the int8 / packed int4 weight and its scales as they are.
//
//===----------------------------------------------------------------------===//

#include "codegen/common/GemmBatches.h"
#include "codegen/include/sluice_gen/layout/cuda_quant_layout.h"

#include "codegen/common/CodeWriter.h"
#include "codegen/common/Format.h"
#include "codegen/common/KernelModel.h"
#include "codegen/common/ModelFacts.h"
#include "codegen/common/ScalarEmitter.h"
#include "codegen/common/WeightTransform.h"
#include "codegen/cpu/CpuKernel.h"
#include "codegen/cuda/CudaGroups.h"

#include "llvm/ADT/MapVector.h"

using namespace mlir;

namespace sluice::codegen {
namespace {

/// Whether `v` is a leaf the step can address: a block argument of the
/// kernel's body or a constant in it.
bool isLeaf(KernelOp kernel, Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() == &kernel.getBody().front();
  return v.getDefiningOp<ConstantOp>() != nullptr;
}

/// What a functor evaluates: the ops after the anchor over the anchor's
/// result `result` of shape `space` ([batch.., M, N]), storing `roots`
/// through `outViews`.
struct EpilogueOps {
  GroupOps parts;
  Value result;
  ArrayRef<int64_t> space;
  SmallVector<Value> roots;
  std::vector<StridedView> outViews;
};

/// Form I8 on the device, from the IR alone (the weight-transform query
/// asks before any emitter runs, so nothing here depends on the emitter's
/// context).
struct Int8Gemm : EpilogueOps {
  Operation *anchor = nullptr;
  /// A conv_integer: im2col + GEMM per group (sluice_int8_conv).
  bool conv = false;
  SluiceInt8ConvShape convShape = {};
  std::vector<int64_t> batchDims;
  bool aUnsigned = false;
  int64_t zeroA = 0;
  int64_t m = 0, n = 0, k = 0, lda = 0;
  StridedView a, b;
  /// B(p, j) at b.offset + p * strideK + j * strideN (per batch: bOff).
  int64_t strideK = 0, strideN = 0;
  /// B has no batch of its own (one matrix for every batch).
  bool sharedB = false;
  std::vector<int64_t> aOff, bOff;
};

/// Hands a quantized GEMM step to the emitter: the header its code
/// includes, its kind, the functor (device code), the call (host code) and
/// the workspace it needs.
CudaEmit finishStep(CudaGroupContext &ctx, const char *header, const char *kind,
                    const CodeWriter &device, const CodeWriter &host, int64_t workspace) {
  ctx.include(header);
  ctx.kind = kind;
  *ctx.device += device.str();
  *ctx.host += host.str();
  if (ctx.workspaceBytes)
    *ctx.workspaceBytes = std::max(*ctx.workspaceBytes, workspace);
  return CudaEmit::Done;
}

/// B's layout when it is [N, K] (K contiguous) or [K, N] (N contiguous),
/// or none.
std::optional<std::pair<int32_t, int64_t>> bLayoutOf(const Int8Gemm &g) {
  // Size-1 dims have any stride: a degenerate K or N fits either layout.
  if ((g.k == 1 || g.strideK == 1) && (g.n == 1 || g.strideN >= g.k))
    return std::make_pair((int32_t)SLUICE_INT8_B_NK, g.n == 1 ? g.k : g.strideN);
  if ((g.n == 1 || g.strideN == 1) && (g.k == 1 || g.strideK >= g.n))
    return std::make_pair((int32_t)SLUICE_INT8_B_KN, g.k == 1 ? g.n : g.strideK);
  return std::nullopt;
}

/// The yields (the anchor's result or later epilogue values, through
/// output views) and the epilogue's operands (computed in the group with
/// the result's shape, or leaves that broadcast to it); why not, or none.
std::optional<std::string> analyzeEpilogue(KernelOp kernel, EpilogueOps &g) {
  // Yields: the sums or later epilogue values, through output views.
  for (Value v : KernelYieldOp(g.parts.yield).getValues()) {
    Value root = stripOutputViews(v);
    if (shapeOf(root) != g.space ||
        (root != g.result && !llvm::is_contained(g.parts.after, root.getDefiningOp())))
      return std::string("a GEMM group yields a value not computed from the GEMM result");
    auto view = resolveOutputView(root, v);
    if (failed(view))
      return std::string("a GEMM group's result is not a view of its value");
    g.roots.push_back(root);
    g.outViews.push_back(*view);
  }
  // Epilogue operands: computed in the group with the result's shape, or
  // leaves that broadcast to it.
  for (Operation *op : g.parts.after) {
    if (shapeOf(op->getResult(0)) != g.space)
      return std::string("an epilogue op of a GEMM group has another shape");
    for (Value operand : op->getOperands()) {
      auto view = resolveView(operand, /*emitErrors=*/false);
      if (failed(view))
        return std::string("an epilogue operand is a view without strides");
      if (isLeaf(kernel, view->base)) {
        if (failed(broadcastStridesTo(shapeOf(operand), view->strides, g.space)))
          return std::string("an epilogue operand does not broadcast to the GEMM result");
        continue;
      }
      if (view->base != operand && !(shapeOf(view->base) == g.space && view->isContiguous(g.space)))
        return std::string("an epilogue reads a value of the group through a view");
    }
  }
  return std::nullopt;
}

/// Analyzes `kernel` as a device int8 GEMM group; the reason when the
/// device cannot run it (the group is then a host step).
std::optional<std::string> analyze(KernelOp kernel, Int8Gemm &g) {
  if (kernel.getForm() != KernelForm::gemm)
    return std::string("not a GEMM group");
  g.parts = splitGroupOps(kernel, [](Operation *op) { return kernel::isInt8Contraction(op); });
  if (!g.parts.anchor)
    return std::string("no int8 contraction in the GEMM group");
  g.anchor = g.parts.anchor;
  if (!g.parts.before.empty())
    return std::string("ops before the int8 contraction of a GEMM group");
  for (Operation *op : g.parts.after)
    if (!kernel::isElementwise(op))
      return "an int8 GEMM group's epilogue holds " + op->getName().getStringRef().str() +
             ", not elementwise";
  g.result = g.anchor->getResult(0);
  g.space = shapeOf(g.result);
  Value aValue = g.anchor->getOperand(0), bValue = g.anchor->getOperand(1);
  ArrayRef<int64_t> aShape = shapeOf(aValue), bShape = shapeOf(bValue);
  if (aShape.size() < 2 || bShape.size() < 2 || g.space.size() < 2)
    return std::string("int8 GEMMs of vectors (rank 1) run on the host");
  if (product(g.space) == 0)
    return std::string("an empty int8 GEMM");
  g.aUnsigned = elementOf(aValue).isUnsignedInteger();
  auto zeros = getConstantIntValues(g.anchor->getOperand(2));
  if (!zeros || zeros->size() != 1)
    return std::string("the activation's zero point is not a constant");
  g.zeroA = (*zeros)[0];

  auto a = resolveView(aValue, /*emitErrors=*/false);
  auto b = resolveView(bValue, /*emitErrors=*/false);
  if (failed(a) || failed(b))
    return std::string("an int8 GEMM operand is a view without strides");
  if (!isLeaf(kernel, a->base) || !isLeaf(kernel, b->base))
    return std::string("an int8 GEMM operand is computed in the group");
  g.a = *a;
  g.b = *b;
  if (auto conv = dyn_cast<ConvIntegerOp>(g.anchor)) {
    // 2-D NCHW (kernel::isInt8Contraction): x [N, C, H, W], w [M, C/g, kh, kw].
    if (!kernel::readsContiguously(*a, aValue) || !kernel::readsContiguously(*b, bValue))
      return std::string("an int8 convolution operand is not contiguous");
    ArrayRef<int64_t> strides = conv.getStrides(), dilations = conv.getDilations(),
                      pads = conv.getPads();
    if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4)
      return std::string("an int8 convolution without 2-D strides, dilations and pads");
    g.conv = true;
    g.convShape = {
        aShape[0],  aShape[1],           aShape[2],       aShape[3],    g.space[1],
        bShape[2],  bShape[3],           g.space[2],      g.space[3],   (int64_t)conv.getGroup(),
        strides[0], strides[1],          dilations[0],    dilations[1], pads[0],
        pads[1],    g.aUnsigned ? 1 : 0, (int32_t)g.zeroA};
    return analyzeEpilogue(kernel, g);
  }
  int64_t ar = aShape.size(), br = bShape.size();
  g.m = aShape[ar - 2];
  g.k = aShape[ar - 1];
  g.n = bShape[br - 1];
  if (g.k > 1 && a->strides[ar - 1] != 1)
    return std::string("the int8 GEMM's A is not contiguous along K (a transposed view)");
  g.lda = g.m > 1 ? a->strides[ar - 2] : g.k;
  if (g.lda < g.k)
    return std::string("the int8 GEMM's A rows overlap");
  g.strideK = b->strides[br - 2];
  g.strideN = b->strides[br - 1];
  if (!bLayoutOf(g))
    return std::string("the int8 GEMM's B is contiguous neither along K nor along N");
  g.batchDims.assign(g.space.begin(), g.space.end() - 2);
  int64_t batches = product(g.batchDims);
  for (int64_t i = 0; i < batches; ++i) {
    g.aOff.push_back(a->offset + batchOffset(g.batchDims, i, aShape, a->strides));
    g.bOff.push_back(b->offset + batchOffset(g.batchDims, i, bShape, b->strides));
  }
  g.sharedB = product(bShape.drop_back(2)) == 1;

  return analyzeEpilogue(kernel, g);
}

/// The layout a device int8 GEMM wants for its constant B, keyed by its
/// parameters (kernels sharing a weight must agree).
std::string nkKey(const Int8Gemm &g) {
  return "cuda_int8_nk k=" + decimal(g.k) + " n=" + decimal(g.n) +
         " offset=" + decimal(g.b.offset) + " strides=" + decimal(g.strideK) + "," +
         decimal(g.strideN);
}

/// The kernel input B's leaf is, when B is a weight one packing serves.
std::optional<unsigned> packableInput(KernelOp kernel, const Int8Gemm &g) {
  auto arg = dyn_cast<BlockArgument>(g.b.base);
  // A convolution's weight rows are already IMMA's [N, K]: stored raw.
  if (g.conv || !g.sharedB || !arg || arg.getOwner() != &kernel.getBody().front())
    return std::nullopt;
  return arg.getArgNumber();
}

/// Where each access of the functor reads or writes: the pointer member,
/// its element type and strides over the GEMM result's space.
struct FunctorAccess {
  std::string source; ///< the step's pointer expression
  Type type;
  int64_t offset = 0;
  std::vector<int64_t> strides;
  bool written = false;
};

/// The epilogue functor `epilogue_functor` (in the step's device namespace,
/// so steps alike but for their names share it): members p<i> (one per access) and
/// batch0; operator() maps its element to each access's element, evaluates
/// the ops after the anchor from the anchor's value and stores every
/// yield. Int8: operator()(b, i, j, int32_t acc), b the batch of the call
/// (batch0 added); for a convolution (`conv`) b is the group, i = image *
/// OH * OW + output pixel and j the channel in the group, over the NCHW
/// result. Weight-only (`weightOnly`): operator()(r, j, float y), r a row
/// of the call's rows (the batches stacked along M, `rowsPerCall` rows per
/// call, batch0 the call).
struct Functor {
  CudaGroupContext &ctx;
  const SluiceInt8ConvShape *conv = nullptr;
  bool weightOnly = false;
  int64_t rowsPerCall = 0;
  const EpilogueOps &g;
  std::vector<FunctorAccess> accesses;
  llvm::MapVector<Value, unsigned> leafAccess;
  std::vector<std::pair<unsigned, Value>> stores;
  llvm::DenseMap<Value, std::string> expr;

  Functor(CudaGroupContext &ctx, const EpilogueOps &g) : ctx(ctx), g(g) {}

  LogicalResult plan() {
    for (Operation *op : g.parts.after)
      for (Value operand : op->getOperands()) {
        if (leafAccess.count(operand) || ctx.literals.count(operand))
          continue;
        auto view = resolveView(operand, /*emitErrors=*/false);
        if (failed(view))
          return failure();
        if (ctx.literals.count(view->base) || !isLeaf(ctx.kernel, view->base))
          continue; // a literal, or computed in the group
        auto strides = broadcastStridesTo(shapeOf(operand), view->strides, g.space);
        if (failed(strides) || !ctx.pointers.count(view->base))
          return failure();
        leafAccess[operand] = accesses.size();
        accesses.push_back(
            {ctx.pointers.lookup(view->base), elementOf(operand), view->offset, *strides, false});
      }
    auto yielded = KernelYieldOp(g.parts.yield).getValues();
    for (auto [i, v] : llvm::enumerate(yielded)) {
      stores.push_back({(unsigned)accesses.size(), g.roots[i]});
      accesses.push_back(
          {ctx.output(i), elementOf(v), g.outViews[i].offset, g.outViews[i].strides, true});
    }
    return success();
  }

  std::string lookup(Value v) const {
    if (expr.count(v))
      return expr.lookup(v);
    if (ctx.literals.count(v))
      return ctx.literals.lookup(v);
    auto view = resolveView(v, /*emitErrors=*/false);
    if (succeeded(view) && ctx.literals.count(view->base))
      return ctx.literals.lookup(view->base);
    if (succeeded(view) && expr.count(view->base))
      return expr.lookup(view->base);
    return "";
  }

  /// The struct (device code).
  LogicalResult print(CodeWriter &w) {
    auto type = w.blockClosedBy("};", "struct epilogue_functor");
    for (auto [i, a] : llvm::enumerate(accesses))
      w.line("{0}{1} *p{2};", a.written ? "" : "const ", storageType(a.type), i);
    w.line("int64_t batch0;");
    if (weightOnly) {
      auto call = w.block(
          "__device__ __forceinline__ void operator()(int64_t r, int64_t j, float y_) const");
      w.line("const int64_t row = batch0 * {0} + r;", cInt64(rowsPerCall));
      w.line("const int64_t b = row / {0}, i = row % {0};", cInt64(g.space[g.space.size() - 2]));
      return printBody(w, "y_");
    }
    auto call = w.block("__device__ __forceinline__ void operator()(int64_t b, int64_t i, "
                        "int64_t j, int32_t acc_) const");
    w.line("b += batch0;");
    return printBody(w, "(int64_t)acc_");
  }

  /// operator()'s statements after b, i, j: indices, the ops, the stores;
  /// the anchor's value is `anchorValue`.
  LogicalResult printBody(CodeWriter &w, const std::string &anchorValue) {
    int64_t rank = g.space.size();
    if (conv) {
      const int64_t pixels = conv->outH * conv->outW;
      w.line("const int64_t n_ = i / {0}, oh_ = (i % {0}) / {1}, ow_ = i % {1};", cInt64(pixels),
             cInt64(conv->outW));
      w.line("const int64_t c_ = b * {0} + j;", cInt64(conv->outChannels / conv->groups));
      w.line("(void)n_; (void)oh_; (void)ow_; (void)c_;");
      const char *coords[4] = {"n_", "c_", "oh_", "ow_"};
      for (auto [i, a] : llvm::enumerate(accesses)) {
        std::string index = decimal(a.offset);
        for (int64_t d = 0; d < 4; ++d)
          if (g.space[d] != 1 && a.strides[d] != 0)
            index += " + " + std::string(coords[d]) + " * " + cInt64(a.strides[d]);
        w.line("const int64_t x{0} = {1};", i, index);
      }
      return printOps(w, anchorValue);
    }
    // Batch coordinates (only those some access moves along).
    std::string rest = "b";
    for (int64_t d = rank - 3; d >= 0; --d) {
      bool used = llvm::any_of(accesses, [&](const FunctorAccess &a) { return a.strides[d] != 0; });
      if (used && g.space[d] != 1)
        w.line("const int64_t q{0} = ({1}) % {2};", d, rest, g.space[d]);
      rest = "(" + rest + ") / " + decimal(g.space[d]);
    }
    w.line("(void)b; (void)i; (void)j;");
    for (auto [i, a] : llvm::enumerate(accesses)) {
      std::string index = decimal(a.offset);
      for (int64_t d = 0; d < rank - 2; ++d)
        if (g.space[d] != 1 && a.strides[d] != 0)
          index += " + q" + decimal(d) + " * " + cInt64(a.strides[d]);
      if (a.strides[rank - 2] != 0)
        index += " + i * " + cInt64(a.strides[rank - 2]);
      if (a.strides[rank - 1] != 0)
        index += " + j * " + cInt64(a.strides[rank - 1]);
      w.line("const int64_t x{0} = {1};", i, index);
    }
    return printOps(w, anchorValue);
  }

  /// The ops from the anchor's value and the stores.
  LogicalResult printOps(CodeWriter &w, const std::string &anchorValue) {
    for (auto &[value, a] : leafAccess)
      expr[value] = loadExpr(elementOf(value), "p" + decimal(a) + "[x" + decimal(a) + "]");
    // A half-precision matmul result is rounded to its type first, as the
    // evaluator's matmul does.
    Type et = elementOf(g.result);
    expr[g.result] =
        et.isF16() || et.isBF16() ? loadExpr(et, storeExpr(et, anchorValue)) : anchorValue;
    int locals = 0;
    for (Operation *op : g.parts.after) {
      std::vector<std::string> operands;
      for (Value operand : op->getOperands()) {
        operands.push_back(lookup(operand));
        if (operands.back().empty())
          return op->emitOpError("cuda target: an operand of this epilogue op has no value");
      }
      auto e = emitScalar(op, operands);
      if (failed(e))
        return failure();
      std::string local = "v" + decimal(locals++);
      w.line("const {0} {1} = {2};", computeType(elementOf(op->getResult(0))), local, *e);
      expr[op->getResult(0)] = local;
    }
    for (auto &[a, value] : stores) {
      std::string v = lookup(value);
      if (v.empty())
        return ctx.kernel.emitOpError("cuda target: a result of the int8 GEMM group has no value");
      w.line("p{0}[x{0}] = {1};", a, storeExpr(accesses[a].type, v));
    }
    return success();
  }

  /// The braced initializer of the struct from the step's pointers.
  std::string initializer(const std::string &batch0) const {
    std::string s = "{";
    for (auto [i, a] : llvm::enumerate(accesses))
      s += std::string(i ? ", " : "") + "(" + (a.written ? "" : "const ") + storageType(a.type) +
           " *)(" + a.source + ")";
    return s + (accesses.empty() ? "" : ", ") + batch0 + "}";
  }
};

/// A conv_integer group: one sluice_int8_conv (im2col + the int8 GEMM per
/// group) with the functor over the NCHW result.
CudaEmit emitInt8Conv(CudaGroupContext &ctx, const Int8Gemm &g) {
  Functor functor(ctx, g);
  functor.conv = &g.convShape;
  if (failed(functor.plan())) {
    ctx.kernel.emitOpError("cuda target: an epilogue operand of the int8 convolution is not "
                           "addressable");
    return CudaEmit::Error;
  }
  CodeWriter device, host(1);
  if (failed(functor.print(device)))
    return CudaEmit::Error;
  auto x = ctx.leafPointer(g.a);
  auto w = ctx.leafPointer(g.b);
  if (failed(x) || failed(w))
    return CudaEmit::Error;
  const SluiceInt8ConvShape &c = g.convShape;
  int64_t workspace = sluice_int8_conv_workspace(c);
  {
    auto call = host.block("");
    host.line("static const SluiceInt8ConvShape conv = {{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, "
              "{8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}, {16}, {17}};",
              cInt64(c.images), cInt64(c.channels), cInt64(c.height), cInt64(c.width),
              cInt64(c.outChannels), cInt64(c.kh), cInt64(c.kw), cInt64(c.outH), cInt64(c.outW),
              cInt64(c.groups), cInt64(c.strideH), cInt64(c.strideW), cInt64(c.dilH),
              cInt64(c.dilW), cInt64(c.padT), cInt64(c.padL), c.aUnsigned, c.aZeroPoint);
    host.line("const epilogue_functor epi = {0};", functor.initializer("0"));
    host.line("if (int32_t status = sluice_int8_conv(args, state, {0}, conv, (const void *){1}, "
              "(const int8_t *){2}, epi, (size_t){3}, stream))",
              ctx.kernelName(), *x, *w, cInt64(workspace));
    auto then = host.indented();
    host.line("return status;");
  }
  return finishStep(ctx, "sluice_gen/cuda_quant.cuh", "library", device, host, workspace);
}

/// The A operand of a GEMM whose batches may stack along M (Forms W and
/// F8): rows of K contiguous elements, lda apart; one call's A offset per
/// call (one call with batches * M rows when the batches are evenly
/// spaced, else one per batch).
struct StackedA {
  StridedView a;
  int64_t m = 0, k = 0, lda = 0, rowsPerCall = 0;
  std::vector<int64_t> aOff;
};

/// Fills `s` for A = `aValue` of the GEMM result shaped `space`; why not,
/// with `what` naming the GEMM ("weight-only", "fp8").
std::optional<std::string> analyzeStackedA(KernelOp kernel, Value aValue,
                                           ArrayRef<int64_t> space, const std::string &what,
                                           StackedA &s) {
  ArrayRef<int64_t> aShape = shapeOf(aValue);
  int64_t ar = aShape.size();
  s.m = aShape[ar - 2];
  s.k = aShape[ar - 1];
  auto a = resolveView(aValue, /*emitErrors=*/false);
  if (failed(a) || !isLeaf(kernel, a->base))
    return "the " + what + " GEMM's A is not a view of a group input";
  s.a = *a;
  if (s.k > 1 && a->strides[ar - 1] != 1)
    return "the " + what + " GEMM's A is not contiguous along K";
  s.lda = s.m > 1 ? a->strides[ar - 2] : s.k;
  if (s.lda < s.k)
    return "the " + what + " GEMM's A rows overlap";
  std::vector<int64_t> batchDims(space.begin(), space.end() - 2);
  int64_t batches = product(batchDims);
  for (int64_t i = 0; i < batches; ++i)
    s.aOff.push_back(a->offset + batchOffset(batchDims, i, aShape, a->strides));
  bool stack = true;
  for (int64_t i = 0; i < batches && stack; ++i)
    stack = s.aOff[i] == s.aOff[0] + i * s.m * s.lda;
  s.rowsPerCall = stack ? s.m * batches : s.m;
  if (stack)
    s.aOff.resize(1);
  return std::nullopt;
}

/// Form W on the device, from the IR alone.
struct WonlyGemm : EpilogueOps {
  MatMulOp matmul;
  kernel::WeightDequant weight;
  int64_t m = 0, n = 0, k = 0, lda = 0;
  StridedView a;
  /// Per-call offsets of A: one call with the batches stacked along M when
  /// they are evenly spaced (B is one 2-D weight), else one per batch.
  std::vector<int64_t> aOff;
  int64_t rowsPerCall = 0;
  /// The weight's signedness and its zero point (one for the whole weight).
  bool isSigned = true;
  int64_t zeroPoint = 0;
};

/// Analyzes `kernel` as a device weight-only GEMM group; the reason when
/// the device cannot run it.
std::optional<std::string> analyzeWonly(KernelOp kernel, WonlyGemm &g) {
  g.parts = splitGroupOps(kernel, [](Operation *op) { return isa<MatMulOp>(op); });
  g.matmul = dyn_cast_or_null<MatMulOp>(g.parts.anchor);
  if (!g.matmul)
    return std::string("no matmul in the GEMM group");
  auto weight = kernel::weightDequantOf(g.matmul);
  if (!weight)
    return std::string("the matmul's B is not a weight-only dequantization");
  g.weight = *weight;
  for (Operation *op : g.parts.before)
    if (op != weight->dequant.getOperation() && op != weight->cast.getOperation())
      return std::string("ops before the matmul besides the weight's dequantization");
  for (Operation *op : g.parts.after)
    if (!kernel::isElementwise(op))
      return "a GEMM group's epilogue holds " + op->getName().getStringRef().str() +
             ", not elementwise";
  g.result = g.matmul.getResult();
  g.space = shapeOf(g.result);
  Type et = elementOf(g.result);
  if (!et.isF32() && !et.isF16() && !et.isBF16())
    return std::string("weight-only GEMMs take f32, f16 or bf16 activations");
  DequantizeLinearOp dq = weight->dequant;
  Type scaleType = elementOf(dq.getScale());
  if (!scaleType.isF16() && !scaleType.isF32())
    return std::string("weight-only scales are f16 or f32 on the device");
  Value q = dq.getInput();
  if (!isLeaf(kernel, q) || !isLeaf(kernel, dq.getScale()))
    return std::string("the weight or its scales are computed in the group");
  g.isSigned = !elementOf(q).isUnsignedInteger();
  if (Value zero = dq.getZeroPoint()) {
    // One zero point for the whole weight is the kernel's; per column or
    // per block (ONNX Runtime's asymmetric weight-only models) it has none.
    auto zeros = getConstantIntValues(zero);
    if (!zeros || llvm::any_of(*zeros, [&](int64_t z) { return z != (*zeros)[0]; }))
      return std::string("weight zero points per column or block run on the host");
    g.zeroPoint = (*zeros)[0];
  }
  // In-group constants keep one byte per element on the device; the kernel
  // reads int4 packed two per byte, as the bundle stores weights.
  if (weight->bits == 4 && q.getDefiningOp<ConstantOp>())
    return std::string("an int4 weight inside the group (not a bundle weight)");
  Value aValue = g.matmul.getLhs();
  ArrayRef<int64_t> aShape = shapeOf(aValue);
  if (aShape.size() < 2 || g.space.size() < 2)
    return std::string("weight-only GEMMs of a vector (rank 1) run on the host");
  if (product(g.space) == 0)
    return std::string("an empty weight-only GEMM");
  g.n = shapeOf(q)[1];
  StackedA s;
  if (auto why = analyzeStackedA(kernel, aValue, g.space, "weight-only", s))
    return why;
  g.m = s.m;
  g.k = s.k;
  g.lda = s.lda;
  g.a = s.a;
  g.aOff = std::move(s.aOff);
  g.rowsPerCall = s.rowsPerCall;
  return analyzeEpilogue(kernel, g);
}

/// Form F8 on the device, from the IR alone.
struct Fp8Gemm : EpilogueOps {
  MatMulOp matmul;
  kernel::Fp8Operands ops;
  int64_t m = 0, n = 0, k = 0, lda = 0;
  StridedView a, w;
  std::vector<int64_t> aOff;
  int64_t rowsPerCall = 0;
};

/// Analyzes `kernel` as a device fp8 GEMM group; the reason when the
/// device cannot run it.
std::optional<std::string> analyzeFp8(KernelOp kernel, Fp8Gemm &g) {
  if (kernel.getForm() != KernelForm::gemm)
    return std::string("not a GEMM group");
  g.parts = splitGroupOps(kernel, [](Operation *op) { return isa<MatMulOp>(op); });
  g.matmul = dyn_cast_or_null<MatMulOp>(g.parts.anchor);
  if (!g.matmul)
    return std::string("no matmul in the GEMM group");
  auto ops = kernel::fp8OperandsOf(g.matmul);
  if (!ops)
    return std::string("the matmul does not read two fp8 dequantizations");
  g.ops = *ops;
  for (Operation *op : g.parts.before)
    if (op != ops->a.getOperation() && op != ops->b.getOperation() && !kernel::isViewOp(op))
      return std::string("ops before the fp8 GEMM besides its operands' dequantization");
  for (Operation *op : g.parts.after)
    if (!kernel::isElementwise(op))
      return "a GEMM group's epilogue holds " + op->getName().getStringRef().str() +
             ", not elementwise";
  g.result = g.matmul.getResult();
  g.space = shapeOf(g.result);
  if (product(g.space) == 0)
    return std::string("an empty fp8 GEMM");
  for (Value scale : {ops->a.getScale(), ops->b.getScale()})
    if (!isLeaf(kernel, scale))
      return std::string("an fp8 scale is computed in the group");
  Value xq = ops->a.getInput(), w8 = ops->b.getInput();
  g.n = shapeOf(w8)[1];
  StackedA s;
  if (auto why = analyzeStackedA(kernel, xq, g.space, "fp8", s))
    return why;
  g.m = s.m;
  g.k = s.k;
  g.lda = s.lda;
  g.a = s.a;
  g.aOff = std::move(s.aOff);
  g.rowsPerCall = s.rowsPerCall;
  auto w = resolveView(w8, /*emitErrors=*/false);
  if (failed(w) || !isLeaf(kernel, w->base))
    return std::string("the fp8 GEMM's weight is not a group input");
  g.w = *w;
  if ((g.n > 1 && w->strides[1] != 1) || (g.k > 1 && w->strides[0] < g.n))
    return std::string("the fp8 GEMM's weight is not a [K, N] matrix with rows of N");
  return analyzeEpilogue(kernel, g);
}

/// The stored layout of an fp8 GEMM's weight: [N, K], K contiguous
/// (cuBLASLt's fp8 GEMMs are "TN" only).
std::string fp8Key(const Fp8Gemm &g) {
  return "cuda_fp8_nk k=" + decimal(g.k) + " n=" + decimal(g.n) + " offset=" +
         decimal(g.w.offset) + " ldk=" + decimal(g.w.strides[0]);
}

} // namespace

std::optional<WeightTransform> cudaWeightTransform(KernelOp kernel, unsigned input) {
  // An fp8 GEMM's weight: transposed to [N, K] at compile time.
  if (Fp8Gemm f; !analyzeFp8(kernel, f)) {
    auto arg = dyn_cast<BlockArgument>(f.w.base);
    if (!arg || arg.getArgNumber() != input)
      return cpuWeightTransform(kernel, input);
    WeightTransform t;
    t.key = fp8Key(f);
    int64_t k = f.k, n = f.n, offset = f.w.offset, ldk = f.w.strides[0];
    t.apply = [=](const Tensor &weight) {
      std::vector<unsigned char> nk(k * n);
      const auto *src = static_cast<const unsigned char *>(weight.rawData()) + offset;
      for (int64_t p = 0; p < k; ++p)
        for (int64_t j = 0; j < n; ++j)
          nk[j * k + p] = src[p * ldk + j];
      return nk;
    };
    return t;
  }
  // Every group but a device int8 GEMM keeps the cpu target's layouts: its
  // host step (if it is one) reads them.
  Int8Gemm g;
  if (analyze(kernel, g))
    return cpuWeightTransform(kernel, input);
  std::optional<unsigned> packable = packableInput(kernel, g);
  if (!packable || *packable != input)
    return std::nullopt;
  WeightTransform t;
  t.key = nkKey(g);
  int64_t k = g.k, n = g.n, offset = g.b.offset, strideK = g.strideK, strideN = g.strideN;
  t.apply = [=](const Tensor &weight) {
    std::vector<unsigned char> packed(sluice_int8_nk_bytes(k, n));
    sluice_int8_pack_nk(k, n, static_cast<const int8_t *>(weight.rawData()) + offset, strideK,
                        strideN, packed.data());
    return packed;
  };
  return t;
}

CudaEmit emitCudaInt8GemmGroup(CudaGroupContext &ctx) {
  KernelOp kernel = ctx.kernel;
  Int8Gemm g;
  if (auto why = analyze(kernel, g))
    return ctx.unsupported(*why);
  if (g.conv)
    return emitInt8Conv(ctx, g);

  // B: packed at compile time (column sums, then [N, K]), or where it is.
  bool packed = false;
  if (auto input = packableInput(kernel, g)) {
    auto stored = storedTransform(kernel.getInputs()[*input], cudaWeightTransform);
    packed = stored && stored->key == nkKey(g);
  }
  int32_t layout = SLUICE_INT8_B_NK;
  int64_t ldb = g.k;
  if (!packed)
    std::tie(layout, ldb) = *bLayoutOf(g);

  // Batches: one strided batch when the offsets step uniformly (B's stride
  // 0 when shared), else one call per batch.
  int64_t batches = g.aOff.size();
  auto uniformStride = [&](const std::vector<int64_t> &off) -> std::optional<int64_t> {
    int64_t stride = batches > 1 ? off[1] - off[0] : 0;
    for (int64_t i = 1; i < batches; ++i)
      if (off[i] - off[i - 1] != stride)
        return std::nullopt;
    return stride;
  };
  std::optional<int64_t> strideA = uniformStride(g.aOff), strideB = uniformStride(g.bOff);
  bool oneCall = strideA && strideB && (!packed || *strideB == 0);
  SluiceInt8GemmShape shape{g.m,
                            g.n,
                            g.k,
                            g.lda,
                            ldb,
                            layout,
                            g.aUnsigned ? 1 : 0,
                            (int32_t)g.zeroA,
                            oneCall ? batches : 1,
                            oneCall ? *strideA : 0,
                            oneCall ? *strideB : 0};
  // A batched B with its own offsets in the packed layout cannot happen
  // (packing needs a shared B); a packed B has offset 0.

  Functor functor(ctx, g);
  if (failed(functor.plan())) {
    // analyze() accepted the group, so its weight may be stored for the
    // device: a host step would misread it.
    kernel.emitOpError("cuda target: an epilogue operand of the int8 GEMM is not addressable");
    return CudaEmit::Error;
  }
  CodeWriter device, host(1);
  if (failed(functor.print(device)))
    return CudaEmit::Error;

  auto aPtr = ctx.leafPointer(StridedView{g.a.base, 0, {}});
  auto bPtr = ctx.leafPointer(StridedView{g.b.base, 0, {}});
  if (failed(aPtr) || failed(bPtr))
    return CudaEmit::Error;
  std::string a = "(const void *)(" + *aPtr + " + a_off[o])";
  std::string b, colsum = "nullptr";
  if (packed) {
    b = "((const int8_t *)" + *bPtr + " + " + cInt64(sluice_int8_nk_colsum_bytes(g.n)) + ")";
    colsum = "(const int32_t *)" + *bPtr;
  } else {
    b = "((const int8_t *)" + *bPtr + " + b_off[o])";
  }
  int64_t workspace = sluice_int8_gemm_workspace(shape);
  {
    auto call = host.block("");
    host.line("static const SluiceInt8GemmShape gemm = {{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, "
              "{8}, {9}, {10}};",
              cInt64(shape.m), cInt64(shape.n), cInt64(shape.k), cInt64(shape.lda),
              cInt64(shape.ldb), shape.bLayout, shape.aUnsigned, shape.aZeroPoint,
              cInt64(shape.batch), cInt64(shape.strideA), cInt64(shape.strideB));
    int64_t calls = oneCall ? 1 : batches;
    std::vector<int64_t> aOff = g.aOff, bOff = g.bOff;
    if (oneCall) {
      aOff.resize(1);
      bOff.resize(1);
    }
    host.line("{0}", cInt64ArrayDecl("a_off", aOff));
    if (!packed)
      host.line("{0}", cInt64ArrayDecl("b_off", bOff));
    host.line("for (int64_t o = 0; o < {0}; ++o)", cInt64(calls));
    auto loop = host.block("");
    host.line("const epilogue_functor epi = {0};", functor.initializer(oneCall ? "0" : "o"));
    host.line("if (int32_t status = sluice_int8_gemm(args, state, {0}, gemm, {1}, {2}, {3}, epi, "
              "(size_t){4}, stream))",
              ctx.kernelName(), a, b, colsum, cInt64(workspace));
    auto then = host.indented();
    host.line("return status;");
  }
  return finishStep(ctx, "sluice_gen/cuda_quant.cuh", "library", device, host, workspace);
}

bool isCudaWonlyGemmGroup(KernelOp kernel) {
  for (Operation &op : kernel.getBody().front().without_terminator())
    if (kernel::isWeightPrologue(&op))
      return true;
  return false;
}

CudaEmit emitCudaWonlyGemmGroup(CudaGroupContext &ctx) {
  WonlyGemm g;
  if (auto why = analyzeWonly(ctx.kernel, g))
    return ctx.unsupported(*why);
  DequantizeLinearOp dq = g.weight.dequant;
  Type et = elementOf(g.result);
  Functor functor(ctx, g);
  functor.weightOnly = true;
  functor.rowsPerCall = g.rowsPerCall;
  if (failed(functor.plan()))
    return ctx.unsupported("an epilogue operand of the weight-only GEMM is not addressable");
  CodeWriter device, host(1);
  if (failed(functor.print(device)))
    return CudaEmit::Error;
  auto aPtr = ctx.leafPointer(StridedView{g.a.base, 0, {}});
  auto qPtr = ctx.leafPointer(StridedView{dq.getInput(), 0, {}});
  auto sPtr = ctx.leafPointer(StridedView{dq.getScale(), 0, {}});
  if (failed(aPtr) || failed(qPtr) || failed(sPtr))
    return CudaEmit::Error;
  SluiceWonlyShape shape{
      g.rowsPerCall,        g.n,           g.k, g.lda, g.n, g.weight.bits, g.isSigned ? 1 : 0,
      (int32_t)g.zeroPoint, g.weight.group};
  int64_t workspace = sluice_wonly_workspace(shape, storageBytes(et));
  std::string ta = storageType(et), ts = storageType(elementOf(dq.getScale()));
  {
    auto call = host.block("");
    host.line("static const SluiceWonlyShape gemm = {{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, "
              "{8}};",
              cInt64(shape.m), cInt64(shape.n), cInt64(shape.k), cInt64(shape.lda),
              cInt64(shape.ldb), shape.bits, shape.isSigned, shape.zeroPoint, cInt64(shape.group));
    host.line("{0}", cInt64ArrayDecl("a_off", g.aOff));
    host.line("for (int64_t o = 0; o < {0}; ++o)", cInt64((int64_t)g.aOff.size()));
    auto loop = host.block("");
    host.line("const epilogue_functor epi = {0};", functor.initializer("o"));
    host.line("if (int32_t status = sluice_wonly_gemm(args, state, {0}, gemm, (const {1} *){2} + "
              "a_off[o], (const void *){3}, (const {4} *){5}, epi, (size_t){6}, stream))",
              ctx.kernelName(), ta, *aPtr, *qPtr, ts, *sPtr, cInt64(workspace));
    auto then = host.indented();
    host.line("return status;");
  }
  return finishStep(ctx, "sluice_gen/cuda_quant.cuh", "kernel", device, host, workspace);
}

bool isCudaFp8GemmGroup(KernelOp kernel) {
  Operation *anchor = kernel::anchorOf(kernel);
  auto matmul = dyn_cast_or_null<MatMulOp>(anchor);
  if (!matmul)
    return false;
  auto ops = kernel::fp8OperandsOf(matmul);
  return ops && ops->a->getParentOp() == kernel.getOperation() &&
         ops->b->getParentOp() == kernel.getOperation();
}

CudaEmit emitCudaFp8GemmGroup(CudaGroupContext &ctx) {
  KernelOp kernel = ctx.kernel;
  Fp8Gemm g;
  if (auto why = analyzeFp8(kernel, g)) {
    // The cpu emitter has no Form F8 group (the cpu target keeps the
    // dequantizations in the producers): no host step can run it.
    kernel.emitOpError("cuda target: an fp8 GEMM group the device cannot run: ") << *why;
    return CudaEmit::Error;
  }
  // B: [N, K] as stored (the weight transform), else [K, N] where it is
  // (the runtime then dequantizes and multiplies in f32).
  bool nk = false;
  if (auto arg = dyn_cast<BlockArgument>(g.w.base)) {
    auto stored = storedTransform(kernel.getInputs()[arg.getArgNumber()], cudaWeightTransform);
    nk = stored && stored->key == fp8Key(g);
  }
  Functor functor(ctx, g);
  functor.weightOnly = true;
  functor.rowsPerCall = g.rowsPerCall;
  if (failed(functor.plan())) {
    kernel.emitOpError("cuda target: an epilogue operand of the fp8 GEMM is not addressable");
    return CudaEmit::Error;
  }
  CodeWriter device, host(1);
  if (failed(functor.print(device)))
    return CudaEmit::Error;
  auto aPtr = ctx.leafPointer(StridedView{g.a.base, 0, {}});
  auto wPtr = ctx.leafPointer(StridedView{g.w.base, 0, {}});
  auto saPtr = ctx.leafPointer(StridedView{g.ops.a.getScale(), 0, {}});
  auto sbPtr = ctx.leafPointer(StridedView{g.ops.b.getScale(), 0, {}});
  if (failed(aPtr) || failed(wPtr) || failed(saPtr) || failed(sbPtr))
    return CudaEmit::Error;
  SluiceFp8GemmShape shape{g.rowsPerCall, g.n, g.k, g.lda, nk ? g.k : g.w.strides[0], g.n,
                           SLUICE_FP8_OUT_F32, 0};
  int64_t workspace = sluice_fp8_gemm_epi_workspace(shape);
  std::string w = nk ? "(const uint8_t *)" + *wPtr
                     : "((const uint8_t *)" + *wPtr + " + " + cInt64(g.w.offset) + ")";
  {
    auto call = host.block("");
    host.line("static const SluiceFp8GemmShape gemm = {{{0}, {1}, {2}, {3}, {4}, {5}, "
              "SLUICE_FP8_OUT_F32, 0};",
              cInt64(shape.m), cInt64(shape.n), cInt64(shape.k), cInt64(shape.lda),
              cInt64(shape.ldb), cInt64(shape.ldd));
    host.line("{0}", cInt64ArrayDecl("a_off", g.aOff));
    host.line("for (int64_t o = 0; o < {0}; ++o)", cInt64((int64_t)g.aOff.size()));
    auto loop = host.block("");
    host.line("const epilogue_functor epi = {0};", functor.initializer("o"));
    host.line("if (int32_t status = sluice_fp8_gemm_epi(args, state, {0}, gemm, {1}, (const "
              "uint8_t *){2} + a_off[o], {3}, (const float *){4}, (const float *){5}, epi, "
              "(size_t){6}, stream))",
              ctx.kernelName(), nk ? 1 : 0, *aPtr, w, *saPtr, *sbPtr, cInt64(workspace));
    auto then = host.indented();
    host.line("return status;");
  }
  return finishStep(ctx, "sluice_gen/cuda_quant_fp8.cuh", "library", device, host, workspace);
}

} // namespace sluice::codegen
