//===- Int8Gemm.cpp - cpu form F2 with an int8 anchor (Form I8) ------------===//
//
// A GEMM group whose anchor is an int8 matmul_integer or conv_integer
// (kernel::isInt8Contraction: A u8/s8 with a per-tensor zero point, B s8
// with zero point 0) is ONE call of sluice_int8_gemm_ep
// (sluice_gen/cpu_int8.h) per GEMM, with what the kernel can do of the
// epilogue done inside it:
//
//   acc -> cast f32 -> mul s[n] (or scalar s)            TC = float: the
//       kernel writes fma(acc, 1 * s[n], 0) = the IR's rounded product;
//   ... -> [relu ->] quantize_linear (per tensor, u8/i8)  TC = uint8_t /
//       int8_t: the kernel requantizes that product (a ReLU narrows qmin to
//       the zero point), exactly the IR's float division and rounding;
//   anything else                                         TC = int32_t.
// The rest of the epilogue (a bias add, GELU, a residual, a quantize after
// a bias...) is a generated lambda on each finished block of C. A bias is
// never handed to the kernel: the kernel adds it in the same fused
// multiply-add as the scale (one rounding), while the IR (and the
// evaluator) round the product and then the sum; adding it in the lambda
// keeps the bundle bit-identical to the evaluator.
//
// B: a weight (a top-level constant read through views, no batch) is packed
// at compile time (cpuWeightTransform: WeightTransform.h stores the packed
// bytes in weights.bin instead of the raw ones); an activation B (the QDQ
// attention matmuls, possibly a transposed view) is packed per run into
// scratch, per batch when the batches have their own B. Batched A with a
// shared B stacks its batches into M, as the float path does; other
// batches run in parallel, one single-threaded GEMM each.
//
// conv_integer (2-D, NCHW): per image and group, im2col of the input
// (padding taps hold the input zero point, so they contribute 0, as in the
// evaluator) into u8/s8 scratch [OH*OW, C/g*kh*kw], times the weight packed
// as B = W_g^T (K = C/g*kh*kw, N = M/g): C is [pixels, channels], so the
// per-channel scale of Form I8 is the kernel's per-column scale; the
// epilogue lambda transposes each block into the NCHW output.
//
//===----------------------------------------------------------------------===//

#include "codegen/common/GemmBatches.h"
#include "codegen/include/sluice_gen/layout/cpu_int8_pack.h"

#include "codegen/common/CodeWriter.h"
#include "codegen/common/Epilogue.h"
#include "codegen/common/Format.h"
#include "codegen/common/WeightTransform.h"
#include "codegen/cpu/CpuKernel.h"
#include "codegen/cpu/Groups.h"

using namespace mlir;

namespace sluice::codegen {
namespace {

/// The int8 anchor of a GEMM group, or null.
Operation *int8Anchor(KernelOp kernel) {
  if (kernel.getForm() != KernelForm::gemm)
    return nullptr;
  Operation *anchor = kernel::anchorOf(kernel);
  return anchor && kernel::isInt8Contraction(anchor) ? anchor : nullptr;
}

/// B of an int8 group as the kernel packs it: `groups` blocks of a k x n
/// matrix, element (kk, nn) of block g at base + offset + g * groupStride
/// + kk * strideK + nn * strideN.
struct BLayout {
  int64_t k = 0, n = 0, offset = 0, strideK = 0, strideN = 0, groups = 1, groupStride = 0;
  std::string key() const {
    return "int8_pack_b k=" + decimal(k) + " n=" + decimal(n) + " offset=" + decimal(offset) +
           " strides=" + decimal(strideK) + "," + decimal(strideN) + " groups=" + decimal(groups) +
           "," + decimal(groupStride);
  }
  int64_t bytesPerGroup() const { return sluice_int8_packed_b_bytes(k, n); }
};

/// B's layout when one packing serves every batch (no batch dims, or all
/// of size 1), with the leaf it views (a block argument or a constant of
/// the body); none when B has batches of its own or its view has no
/// strides.
std::optional<std::pair<Value, BLayout>> sharedB(Operation *anchor) {
  BLayout l;
  Value b = anchor->getOperand(1);
  auto view = resolveView(b, /*emitErrors=*/false);
  if (failed(view))
    return std::nullopt;
  ArrayRef<int64_t> shape = shapeOf(b);
  if (auto conv = dyn_cast<ConvIntegerOp>(anchor)) {
    if (!kernel::readsContiguously(*view, b))
      return std::nullopt;
    // W [M, C/g, kh, kw]: B_g = W_g^T, K = C/g*kh*kw along a row of W.
    l.groups = conv.getGroup();
    l.k = product(shape, 1);
    l.n = shape[0] / l.groups;
    l.offset = view->offset;
    l.strideK = 1;
    l.strideN = l.k;
    l.groupStride = l.n * l.k;
  } else {
    if (shape.size() < 2 || product(shape, 0, shape.size() - 2) != 1)
      return std::nullopt;
    size_t r = shape.size();
    l.k = shape[r - 2];
    l.n = shape[r - 1];
    l.offset = view->offset;
    l.strideK = view->strides[r - 2];
    l.strideN = view->strides[r - 1];
  }
  return std::make_pair(view->base, l);
}

/// Whether the kernel's B is stored packed at compile time (its input is a
/// weight every reader wants packed the same way).
std::optional<BLayout> packedWeight(KernelOp kernel, Operation *anchor) {
  auto shared = sharedB(anchor);
  auto arg = shared ? dyn_cast<BlockArgument>(shared->first) : BlockArgument();
  if (!arg || arg.getOwner() != &kernel.getBody().front())
    return std::nullopt;
  Value input = kernel.getInputs()[arg.getArgNumber()];
  auto stored = storedTransform(input, cpuWeightTransform);
  if (!stored || stored->key != shared->second.key())
    return std::nullopt;
  return shared->second;
}

/// The kernel's output type of a GEMM (what sluice_int8_gemm_ep's TC is).
enum class Output { Int32, Float, Requant };

/// Form I8 on the cpu, decided before any source is written.
struct Int8Plan {
  GroupOps parts;
  Operation *anchor = nullptr;
  bool conv = false;
  Value result;
  ArrayRef<int64_t> space;
  std::string ta; ///< uint8_t or int8_t
  std::string zeroA;
  // GEMM geometry (matmul: per batch; conv: per image and group).
  int64_t m = 0, n = 0, k = 0, lda = 0;
  int64_t gemmBatches = 1, gemmM = 0;
  std::vector<int64_t> aOff, bOff;
  std::string aPtr, bPtr;
  BLayout b;
  bool bPacked = false; ///< at compile time
  bool bPerBatch = false;
  // conv
  int64_t images = 0, channels = 0, height = 0, width = 0, outH = 0, outW = 0, kh = 0, kw = 0;
  int64_t groups = 1, strideH = 1, strideW = 1, dilH = 1, dilW = 1, padT = 0, padL = 0;
  // epilogue
  Output output = Output::Int32;
  Value cValue;       ///< the IR value C holds
  std::string scaleB; ///< per-column scale pointer, or a scalar literal
  bool scalarScale = false;
  float rqScale = 1.0f;
  int64_t rqZero = 0, rqMin = 0, rqMax = 0;
  std::string tc; ///< C++ type of C
  Type cElement;
  SmallVector<Operation *> folded, rest; ///< in the kernel / in the lambda
  SmallVector<Value> roots;
  std::vector<StridedView> outViews;
  std::optional<unsigned> cSlot;
  std::string c;
  std::optional<epilogue::Body> body;
  unsigned cAccess = 0;
  std::vector<unsigned> outAccess;
};

/// The only user of `v`, when it has exactly one use.
Operation *soleUser(Value v) { return v.hasOneUse() ? *v.getUsers().begin() : nullptr; }

/// The pointer (or, for a scalar, the value) of an f32 leaf that is one
/// value per GEMM column (dim `colDim` of the space) or one for all.
std::optional<std::pair<std::string, bool>> perColumnLeaf(GroupContext &ctx, Value v,
                                                          ArrayRef<int64_t> space, int64_t colDim) {
  if (!elementOf(v).isF32())
    return std::nullopt;
  auto view = resolveView(v, /*emitErrors=*/false);
  if (failed(view) || !ctx.pointers.count(view->base))
    return std::nullopt;
  auto strides = broadcastStridesTo(shapeOf(v), view->strides, space);
  if (failed(strides))
    return std::nullopt;
  for (int64_t d = 0; d < (int64_t)space.size(); ++d)
    if (d != colDim && space[d] != 1 && (*strides)[d] != 0)
      return std::nullopt;
  int64_t col = space[colDim] == 1 ? 0 : (*strides)[colDim];
  std::string ptr = ctx.pointers.lookup(view->base);
  if (col == 0)
    return std::make_pair(ptr + "[" + decimal(view->offset) + "]", true);
  if (col != 1)
    return std::nullopt;
  return std::make_pair(*ctx.leafPointer(*view), false);
}

/// What of the epilogue the kernel does (Output) and what the lambda does.
void planOutput(GroupContext &ctx, Int8Plan &p) {
  p.output = Output::Int32;
  p.cValue = p.result;
  p.rest.assign(p.parts.after.begin(), p.parts.after.end());
  int64_t colDim = p.conv ? 1 : (int64_t)p.space.size() - 1;
  auto castOp = dyn_cast_or_null<CastOp>(soleUser(p.result));
  if (!castOp || !elementOf(castOp.getOutput()).isF32())
    return;
  auto mul = dyn_cast_or_null<MulOp>(soleUser(castOp.getOutput()));
  if (!mul || shapeOf(mul.getResult()) != p.space)
    return;
  Value scale = mul.getLhs() == castOp.getOutput() ? mul.getRhs() : mul.getLhs();
  if (scale == castOp.getOutput())
    return;
  auto leaf = perColumnLeaf(ctx, scale, p.space, colDim);
  if (!leaf)
    return;
  p.output = Output::Float;
  p.cValue = mul.getResult();
  p.scaleB = leaf->first;
  p.scalarScale = leaf->second;
  p.folded = {castOp, mul};
  p.rest.clear();
  for (Operation *op : p.parts.after)
    if (op != castOp && op != mul)
      p.rest.push_back(op);

  // [relu ->] quantize_linear per tensor, constant parameters, every yield
  // the quantized value: the kernel requantizes.
  Value tail = mul.getResult();
  SmallVector<Operation *> chain;
  auto relu = dyn_cast_or_null<ReluOp>(soleUser(tail));
  if (relu) {
    chain.push_back(relu);
    tail = relu.getResult();
  }
  auto quantize = dyn_cast_or_null<QuantizeLinearOp>(soleUser(tail));
  if (!quantize || !kernel::isElementwise(quantize) || p.rest.size() != chain.size() + 1)
    return;
  auto to = dyn_cast<IntegerType>(elementOf(quantize.getOutput()));
  auto scales = getConstantFloatValues(quantize.getScale());
  std::optional<SmallVector<int64_t>> zeros;
  if (quantize.getZeroPoint())
    zeros = getConstantIntValues(quantize.getZeroPoint());
  if (!to || to.getWidth() != 8 || !scales || scales->size() != 1 ||
      (quantize.getZeroPoint() && (!zeros || zeros->size() != 1)) ||
      !isa<Float32Type>(elementOf(quantize.getScale())))
    return;
  for (Value v : KernelYieldOp(p.parts.yield).getValues())
    if (stripOutputViews(v) != quantize.getOutput())
      return;
  p.output = Output::Requant;
  p.cValue = quantize.getOutput();
  p.rqScale = (float)(*scales)[0];
  p.rqZero = zeros ? (*zeros)[0] : 0;
  p.rqMin = to.isUnsigned() ? 0 : -128;
  p.rqMax = to.isUnsigned() ? 255 : 127;
  if (relu)
    p.rqMin = std::max(p.rqMin, p.rqZero);
  p.folded.append(chain.begin(), chain.end());
  p.folded.push_back(quantize);
  p.rest.clear();
}

/// The anchor, its operands and the GEMM geometry.
LogicalResult planOperands(GroupContext &ctx, Int8Plan &p) {
  KernelOp kernel = ctx.kernel;
  p.parts = splitGroupOps(kernel, [](Operation *op) { return kernel::isInt8Contraction(op); });
  p.anchor = p.parts.anchor;
  if (!p.anchor)
    return kernel.emitOpError("cpu target: no int8 contraction in an int8 GEMM group");
  auto misplaced = [](Operation *op) {
    return op->emitOpError("cpu target: an int8 GEMM group holds only views, one int8 "
                           "contraction and elementwise ops after it");
  };
  if (!p.parts.before.empty())
    return misplaced(p.parts.before.front());
  for (Operation *op : p.parts.after)
    if (!isElementwise(op))
      return misplaced(op);
  p.conv = isa<ConvIntegerOp>(p.anchor);
  p.result = p.anchor->getResult(0);
  p.space = shapeOf(p.result);
  Value aValue = p.anchor->getOperand(0);
  p.ta = storageType(elementOf(aValue));

  // A's zero point: a literal, or read at run time.
  Value zero = p.anchor->getOperand(2);
  if (auto zeros = getConstantIntValues(zero)) {
    p.zeroA = decimal((*zeros)[0]);
  } else {
    auto view = resolveView(zero);
    if (failed(view))
      return failure();
    auto ptr = ctx.leafPointer(*view);
    if (failed(ptr))
      return failure();
    p.zeroA = "(int32_t)(" + *ptr + ")[0]";
  }

  auto a = resolveView(aValue);
  if (failed(a))
    return failure();
  auto aPtr = ctx.leafPointer(StridedView{a->base, 0, {}});
  if (failed(aPtr))
    return failure();
  p.aPtr = *aPtr;
  Value bValue = p.anchor->getOperand(1);
  auto bView = resolveView(bValue);
  if (failed(bView))
    return failure();
  auto bPtr = ctx.leafPointer(StridedView{bView->base, 0, {}});
  if (failed(bPtr))
    return failure();
  p.bPtr = *bPtr;
  std::optional<BLayout> packed = packedWeight(kernel, p.anchor);
  p.bPacked = packed.has_value();

  if (p.conv) {
    auto conv = cast<ConvIntegerOp>(p.anchor);
    if (!kernel::readsContiguously(*a, aValue) || !kernel::readsContiguously(*bView, bValue))
      return conv.emitOpError("cpu target: int8 convolution operands must be contiguous");
    ArrayRef<int64_t> x = shapeOf(aValue), w = shapeOf(bValue);
    p.images = x[0];
    p.channels = x[1];
    p.height = x[2];
    p.width = x[3];
    p.outH = p.space[2];
    p.outW = p.space[3];
    p.kh = w[2];
    p.kw = w[3];
    p.groups = conv.getGroup();
    ArrayRef<int64_t> strides = conv.getStrides(), dilations = conv.getDilations(),
                      pads = conv.getPads();
    if (strides.size() != 2 || dilations.size() != 2 || pads.size() != 4)
      return conv.emitOpError("cpu target: int8 convolution needs 2-D strides, dilations, pads");
    p.strideH = strides[0];
    p.strideW = strides[1];
    p.dilH = dilations[0];
    p.dilW = dilations[1];
    p.padT = pads[0];
    p.padL = pads[1];
    p.aOff = {a->offset};
    auto shared = sharedB(p.anchor);
    if (!shared)
      return conv.emitOpError("cpu target: int8 convolution weight is not a plain buffer");
    p.b = shared->second;
    p.m = p.outH * p.outW;
    p.n = p.b.n;
    p.k = p.b.k;
    p.lda = p.k;
    return success();
  }

  ArrayRef<int64_t> aShape = shapeOf(aValue), bShape = shapeOf(bValue);
  if (aShape.size() < 2 || bShape.size() < 2)
    return p.anchor->emitOpError("cpu target: int8 GEMM groups need matrix operands (rank >= 2)");
  int64_t m = p.m = aShape[aShape.size() - 2], k = p.k = aShape.back();
  int64_t n = p.n = bShape.back();
  ArrayRef<int64_t> batchDims = p.space.drop_back(2);
  int64_t batches = product(batchDims);
  int64_t ar = aShape.size(), br = bShape.size();
  if (k > 1 && a->strides[ar - 1] != 1)
    return p.anchor->emitOpError("cpu target: the int8 GEMM's A operand is a view without unit "
                                 "stride along K (a transposed A)");
  p.lda = m > 1 ? a->strides[ar - 2] : k;
  if (p.lda < k)
    return p.anchor->emitOpError("cpu target: the int8 GEMM's A rows overlap");
  p.b = BLayout{k, n, 0, k > 1 ? bView->strides[br - 2] : n, n > 1 ? bView->strides[br - 1] : 1,
                1, 0};
  for (int64_t i = 0; i < batches; ++i) {
    p.aOff.push_back(a->offset + batchOffset(batchDims, i, aShape, a->strides));
    p.bOff.push_back(bView->offset + batchOffset(batchDims, i, bShape, bView->strides));
  }
  if (p.bPacked)
    p.b = *packed;
  bool sharedAcrossBatches = llvm::all_of(p.bOff, [&](int64_t o) { return o == p.bOff[0]; });
  p.bPerBatch = !sharedAcrossBatches;
  p.gemmBatches = batches;
  p.gemmM = m;
  bool stack = batches > 1 && sharedAcrossBatches;
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

/// The yields and where the kernel writes C.
LogicalResult planResults(GroupContext &ctx, Int8Plan &p) {
  KernelOp kernel = ctx.kernel;
  for (Operation *op : p.parts.after)
    if (failed(broadcastStridesTo(shapeOf(op->getResult(0)),
                                  contiguousStrides(shapeOf(op->getResult(0))), p.space)))
      return op->emitOpError("cpu target: an epilogue op of an int8 GEMM group does not have "
                             "the contraction result's shape");
  auto yielded = KernelYieldOp(p.parts.yield).getValues();
  for (Value v : yielded) {
    Value root = stripOutputViews(v);
    if (shapeOf(root) != p.space)
      return kernel.emitOpError("cpu target: an int8 GEMM group yields a value of another "
                                "shape than the contraction result");
    if (root != p.result && !llvm::is_contained(p.parts.after, root.getDefiningOp()))
      return kernel.emitOpError("cpu target: an int8 GEMM group yields a value that is not "
                                "computed from the contraction result");
    if (llvm::is_contained(p.folded, root.getDefiningOp()) && root != p.cValue)
      return kernel.emitOpError("cpu target: an int8 GEMM group yields a value the kernel "
                                "folds away");
    p.roots.push_back(root);
  }
  for (auto [i, v] : llvm::enumerate(yielded)) {
    auto view = resolveOutputView(p.roots[i], v);
    if (failed(view))
      return kernel.emitOpError("cpu target: result ")
             << i << " is not a view of the GEMM's result";
    p.outViews.push_back(*view);
  }
  p.cElement = p.output == Output::Int32   ? elementOf(p.result)
               : p.output == Output::Float ? elementOf(p.cValue)
                                           : elementOf(p.cValue);
  p.tc = storageType(p.cElement);
  // C in an output: the value C holds, else (float C) an epilogue value of
  // its type, updated in place. A convolution's C is [pixels, channels]:
  // always scratch.
  for (int pass = 0; pass < 2 && !p.cSlot && !p.conv; ++pass)
    for (auto [i, v] : llvm::enumerate(yielded))
      if (!p.cSlot && (pass == 1 ? p.output == Output::Float : p.roots[i] == p.cValue) &&
          elementOf(v) == p.cElement && p.outViews[i].isContiguous(p.space))
        p.cSlot = i;
  p.c = p.cSlot ? ctx.output(*p.cSlot) : "gemm_c";
  return success();
}

/// The lambda's accesses over the space: leaves of the ops it runs, C, the
/// outputs. Rows: [batch.., M] | N for a matmul, [images, channels] |
/// pixels for a convolution.
LogicalResult planEpilogue(GroupContext &ctx, Int8Plan &p) {
  int64_t split = p.conv ? 2 : (int64_t)p.space.size() - 1;
  epilogue::Body &body = p.body.emplace(ctx, p.space, split);
  for (Operation *op : p.rest)
    for (Value operand : op->getOperands())
      if (operand != p.cValue && failed(body.addLeaf(operand)))
        return failure();
  p.cAccess = body.accesses.size();
  std::vector<int64_t> cStrides = contiguousStrides(p.space);
  if (p.conv) {
    // C scratch is [images, pixels, channels].
    int64_t pixels = p.outH * p.outW, ch = p.space[1];
    cStrides = {pixels * ch, 1, p.outW * ch, ch};
  }
  if (failed(body.addAccess({p.c, 0, cStrides}, "the GEMM result")))
    return failure();
  for (auto [i, view] : llvm::enumerate(p.outViews)) {
    p.outAccess.push_back(body.accesses.size());
    if (failed(body.addAccess({ctx.output(i), 0, view.strides}, "a result")))
      return failure();
  }
  for (auto &[value, idx] : body.leafAccess)
    if (resolveView(value)->base == p.result)
      return ctx.kernel.emitOpError(
          "cpu target: an epilogue reads the contraction result through a view");
  return success();
}

/// The epilogue lambda over one finished block; false when no output needs
/// it (C is the only result, in its own slot).
FailureOr<bool> writeEpilogue(CodeWriter &w, GroupContext &ctx, Int8Plan &p) {
  epilogue::Body &body = *p.body;
  auto yielded = KernelYieldOp(p.parts.yield).getValues();
  std::vector<unsigned> stored;
  for (unsigned i = 0; i < yielded.size(); ++i)
    if (!(p.cSlot && i == *p.cSlot && p.roots[i] == p.cValue))
      stored.push_back(i);
  body.bindLeaves();
  body.expr[p.cValue] = "acc_";
  CodeWriter ops(4);
  int locals = 0;
  if (failed(body.emitOps(ops, p.rest, locals)))
    return failure();
  if (stored.empty())
    return false;
  auto inner = [&]() {
    w.line("const {0} acc_ = {1};", computeType(p.cElement),
           loadExpr(p.cElement, p.c + "[" + body.index(p.cAccess) + "]"));
    w.raw(ops.str());
    for (unsigned i : stored)
      w.line("{0}[{1}] = {2};", ctx.output(i), body.index(p.outAccess[i]),
             storeExpr(elementOf(yielded[i]), body.lookup(p.roots[i])));
  };
  if (p.conv) {
    // Block: pixels [r0, r0 + rows) x channels [col0, col0 + cols) of group
    // channel `ch0` on; rows of the space are (image, channel).
    auto lambda = w.blockClosedBy("};", "const auto epilogue = [&](int64_t image, int64_t ch0, "
                                        "int64_t r0, int64_t rows, int64_t col0, int64_t cols)");
    auto chans = w.block("for (int64_t c = col0; c < col0 + cols; ++c)");
    w.line("const int64_t row = image * {0} + ch0 + c;", p.space[1]);
    body.rowBases(w, "row");
    w.line("#pragma omp simd");
    auto pixels = w.block("for (int64_t j = r0; j < r0 + rows; ++j)");
    inner();
    return true;
  }
  auto lambda = w.blockClosedBy("};", "const auto epilogue = [&](int64_t batch, int64_t r0, "
                                      "int64_t rows, int64_t col0, int64_t cols)");
  auto rows = w.block("for (int64_t r = r0; r < r0 + rows; ++r)");
  w.line("const int64_t row = batch * {0} + r;", p.gemmM);
  body.rowBases(w, "row");
  w.line("#pragma omp simd");
  auto cols = w.block("for (int64_t j = col0; j < col0 + cols; ++j)");
  inner();
  return true;
}

/// Statements before the GEMM calls: scratch, the scalar scale's column
/// vector, the requantization, B packed per run.
void writeSetup(CodeWriter &w, const Int8Plan &p) {
  if (!p.cSlot) {
    int64_t elements = p.conv ? p.images * p.m * p.space[1] : product(p.space);
    w.line("std::unique_ptr<{0}[]> gemm_c_buf(new {0}[{1}]);", p.tc,
           std::max<int64_t>(elements, 1));
    w.line("{0} *gemm_c = gemm_c_buf.get();", p.tc);
  }
  if (p.output != Output::Int32 && p.scalarScale) {
    int64_t columns = p.conv ? p.space[1] : p.n;
    w.line("std::unique_ptr<float[]> gemm_scale_buf(new float[{0}]);", columns);
    w.line("for (int64_t c = 0; c < {0}; ++c) gemm_scale_buf[c] = (float)({1});", columns,
           p.scaleB);
    w.line("const float *gemm_scale = gemm_scale_buf.get();");
  }
  if (p.output == Output::Requant)
    w.line("const sluice_int8_requant gemm_rq = {{{0}, {1}, {2}, {3}};",
           cFloatLiteral(APFloat(p.rqScale)), p.rqZero, p.rqMin, p.rqMax);
}

/// The GEMM calls of a matmul_integer group.
void writeMatMul(CodeWriter &w, Int8Plan &p, bool anyStore) {
  const BLayout &b = p.b;
  int64_t packedBytes = b.bytesPerGroup();
  std::string epi = anyStore ? "[&](int64_t r0, int64_t rows, int64_t col0, int64_t cols) { "
                               "epilogue(batch, r0, rows, col0, cols); }"
                             : "sluice_int8_no_epilogue()";
  std::string a = "(const " + p.ta + " *)" + p.aPtr;
  w.line("{0}", cInt64ArrayDecl("a_off", p.aOff));
  w.line("{0}", cInt64ArrayDecl("b_off", p.bOff));
  std::string packedB;
  if (p.bPacked) {
    packedB = "(const void *)" + p.bPtr;
  } else if (!p.bPerBatch) {
    // An activation B shared by every batch: packed once per run.
    w.line("std::unique_ptr<unsigned char[]> gemm_b(new unsigned char[{0}]);", packedBytes);
    w.line("sluice_int8_pack_b({0}, {1}, (const int8_t *){2} + b_off[0], {3}, {4}, gemm_b.get());",
           b.k, b.n, p.bPtr, b.strideK, b.strideN);
    packedB = "(const void *)gemm_b.get()";
  } else {
    w.line("std::unique_ptr<unsigned char[]> gemm_b(new unsigned char[{0}]);",
           packedBytes * p.gemmBatches);
    packedB = "(const void *)(gemm_b.get() + batch * " + cInt64(packedBytes) + ")";
  }
  auto call = [&](const std::string &threads) {
    std::string call = "sluice_int8_gemm_ep<" + p.ta + ", " + p.tc + ">(" + threads + ", " +
                       cInt64(p.gemmM) + ", " + cInt64(p.n) + ", " + cInt64(p.k) + ", " + a +
                       " + a_off[batch], " + cInt64(p.lda) + ", " + p.zeroA + ", 1.0f, " + packedB +
                       ", ";
    if (p.output == Output::Int32)
      call += "nullptr, nullptr, nullptr, ";
    else
      call += std::string(p.scalarScale ? "gemm_scale" : p.scaleB) + ", nullptr, " +
              (p.output == Output::Requant ? "&gemm_rq, " : "nullptr, ");
    call += p.c + " + batch * " + cInt64(p.gemmM * p.n) + ", " + cInt64(p.n) + ", " + epi + ");";
    return call;
  };
  if (p.gemmBatches == 1) {
    auto one = w.block("");
    w.line("const int64_t batch = 0;");
    w.line("{0}", call("args->num_threads"));
    return;
  }
  // Batches in parallel, one single-threaded GEMM each (attention-sized
  // GEMMs are too small to split further).
  w.line("#pragma omp parallel for schedule(static) num_threads(args->num_threads)");
  auto loop = w.block("for (int64_t batch = 0; batch < {0}; ++batch)", p.gemmBatches);
  if (p.bPerBatch)
    w.line("sluice_int8_pack_b({0}, {1}, (const int8_t *){2} + b_off[batch], {3}, {4}, "
           "gemm_b.get() + batch * {5});",
           b.k, b.n, p.bPtr, b.strideK, b.strideN, cInt64(packedBytes));
  w.line("{0}", call("1"));
}

/// The im2col and GEMM calls of a conv_integer group.
void writeConv(CodeWriter &w, Int8Plan &p) {
  const BLayout &b = p.b;
  int64_t packedBytes = b.bytesPerGroup();
  int64_t pixels = p.m, kg = p.k, cg = p.channels / p.groups, mg = b.n;
  int64_t allChannels = p.space[1];
  std::string packed;
  if (p.bPacked) {
    packed = "(const unsigned char *)" + p.bPtr;
  } else {
    w.line("std::unique_ptr<unsigned char[]> gemm_b(new unsigned char[{0}]);",
           packedBytes * p.groups);
    auto pack = w.block("for (int64_t g = 0; g < {0}; ++g)", p.groups);
    w.line("sluice_int8_pack_b({0}, {1}, (const int8_t *){2} + {3} + g * {4}, 1, {0}, "
           "gemm_b.get() + g * {5});",
           kg, mg, p.bPtr, b.offset, cInt64(b.groupStride), cInt64(packedBytes));
    packed = "(const unsigned char *)gemm_b.get()";
  }
  w.line("std::unique_ptr<{0}[]> im2col(new {0}[{1}]);", p.ta, std::max<int64_t>(pixels * kg, 1));
  std::string x = "(const " + p.ta + " *)" + p.aPtr + " + " + cInt64(p.aOff[0]);
  auto images = w.block("for (int64_t image = 0; image < {0}; ++image)", p.images);
  auto groups = w.block("for (int64_t g = 0; g < {0}; ++g)", p.groups);
  // im2col: row = output pixel, column = (channel, kh, kw) of the group;
  // taps in the padding hold the zero point (they contribute 0).
  w.line("const {0} *x = {1} + (image * {2} + g * {3}) * {4};", p.ta, x, p.channels, cg,
         p.height * p.width);
  w.line("#pragma omp parallel for schedule(static) num_threads(args->num_threads) if ({0} > 4096)",
         pixels * kg);
  {
    auto rows = w.block("for (int64_t px = 0; px < {0}; ++px)", pixels);
    w.line("const int64_t oh = px / {0}, ow = px % {0};", p.outW);
    w.line("{0} *row = im2col.get() + px * {1};", p.ta, kg);
    auto chans = w.block("for (int64_t c = 0; c < {0}; ++c)", cg);
    auto taps = w.block("for (int64_t i = 0; i < {0}; ++i)", p.kh);
    w.line("const int64_t ih = oh * {0} - {1} + i * {2};", p.strideH, p.padT, p.dilH);
    auto cols = w.block("for (int64_t j = 0; j < {0}; ++j)", p.kw);
    w.line("const int64_t iw = ow * {0} - {1} + j * {2};", p.strideW, p.padL, p.dilW);
    w.line("row[(c * {0} + i) * {1} + j] = (ih >= 0 && ih < {2} && iw >= 0 && iw < {3}) ? "
           "x[(c * {2} + ih) * {3} + iw] : ({4})({5});",
           p.kh, p.kw, p.height, p.width, p.ta, p.zeroA);
  }
  std::string scale = p.scalarScale ? "gemm_scale" : p.scaleB;
  std::string call = "sluice_int8_gemm_ep<" + p.ta + ", " + p.tc + ">(args->num_threads, " +
                     cInt64(pixels) + ", " + cInt64(mg) + ", " + cInt64(kg) + ", (const " + p.ta +
                     " *)im2col.get(), " + cInt64(kg) + ", " + p.zeroA + ", 1.0f, (const void *)(" +
                     packed + " + g * " + cInt64(packedBytes) + "), ";
  if (p.output == Output::Int32)
    call += "nullptr, nullptr, nullptr, ";
  else
    call += "(" + scale + ") + g * " + cInt64(mg) + ", nullptr, " +
            (p.output == Output::Requant ? "&gemm_rq, " : "nullptr, ");
  call += p.c + " + image * " + cInt64(pixels * allChannels) + " + g * " + cInt64(mg) + ", " +
          cInt64(allChannels) +
          ", [&](int64_t r0, int64_t rows, int64_t col0, int64_t cols) { "
          "epilogue(image, g * " +
          cInt64(mg) + ", r0, rows, col0, cols); });";
  w.line("{0}", call);
}

} // namespace

std::optional<WeightTransform> cpuWeightTransform(KernelOp kernel, unsigned input) {
  Operation *anchor = int8Anchor(kernel);
  if (!anchor)
    return std::nullopt;
  auto shared = sharedB(anchor);
  auto arg = shared ? dyn_cast<BlockArgument>(shared->first) : BlockArgument();
  if (!arg || arg.getOwner() != &kernel.getBody().front() || arg.getArgNumber() != input)
    return std::nullopt;
  BLayout l = shared->second;
  WeightTransform t;
  t.key = l.key();
  t.apply = [l](const Tensor &weight) {
    int64_t bytes = l.bytesPerGroup();
    std::vector<unsigned char> packed(bytes * l.groups);
    const int8_t *data = static_cast<const int8_t *>(weight.rawData());
    for (int64_t g = 0; g < l.groups; ++g)
      sluice_int8_pack_b(l.k, l.n, data + l.offset + g * l.groupStride, l.strideK, l.strideN,
                         packed.data() + g * bytes);
    return packed;
  };
  return t;
}

bool isInt8GemmGroup(KernelOp kernel) { return int8Anchor(kernel) != nullptr; }

LogicalResult emitInt8GemmGroup(GroupContext &ctx) {
  Int8Plan plan;
  if (failed(planOperands(ctx, plan)))
    return failure();
  planOutput(ctx, plan);
  if (failed(planResults(ctx, plan)) || failed(planEpilogue(ctx, plan)))
    return failure();
  CodeWriter epilogue(1);
  FailureOr<bool> anyStore = writeEpilogue(epilogue, ctx, plan);
  if (failed(anyStore))
    return failure();
  ctx.include("sluice_gen/cpu_int8.h");
  CodeWriter w(1);
  writeSetup(w, plan);
  w.raw(epilogue.str());
  if (plan.conv)
    writeConv(w, plan);
  else
    writeMatMul(w, plan, *anyStore);
  *ctx.body += w.str();
  return success();
}

} // namespace sluice::codegen
