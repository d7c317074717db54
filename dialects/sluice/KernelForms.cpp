//===- KernelForms.cpp - op categories and the kernel form judge ----------===//

#include "dialects/sluice/KernelForms.h"

#include "lib/support/Locations.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;

namespace sluice::kernel {

namespace {

bool isStaticTensor(Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  return ranked && ranked.hasStaticShape();
}

} // namespace

//===-- Op categories ------------------------------------------------------===//

bool hasStaticShapes(Operation *op) {
  return llvm::all_of(op->getResultTypes(), isStaticTensor) &&
         llvm::all_of(op->getOperandTypes(), isStaticTensor);
}

/// Whether a quantization parameter (scale or zero point) is one value for
/// the whole tensor: a static shape of one element ([] or [1]).
static bool isPerTensorParameter(Value parameter) {
  auto type = dyn_cast<RankedTensorType>(parameter.getType());
  return type && type.hasStaticShape() && type.getNumElements() == 1;
}

bool isElementwise(Operation *op) {
  if (op->hasTrait<OpCategory::Elementwise>())
    return true;
  // Per-tensor quantize / dequantize are one scalar expression each (their
  // scale and zero point broadcast like any scalar operand); per-axis and
  // blocked ones index their parameters by position and stay ops of their own.
  if (isa<QuantizeLinearOp, DequantizeLinearOp>(op)) {
    Value zeroPoint = isa<QuantizeLinearOp>(op) ? cast<QuantizeLinearOp>(op).getZeroPoint()
                                                : cast<DequantizeLinearOp>(op).getZeroPoint();
    auto blockSize = op->getAttrOfType<IntegerAttr>("block_size");
    // The integer side is a byte, short or word type the generated code
    // stores natively (not i4 / i64), or fp8 (Form F8: sluice_f8e4m3).
    Value integer = isa<QuantizeLinearOp>(op) ? op->getResult(0) : op->getOperand(0);
    Type quantized = cast<ShapedType>(integer.getType()).getElementType();
    auto element = dyn_cast<IntegerType>(quantized);
    unsigned width = element ? element.getWidth() : isa<Float8E4M3FNType>(quantized) ? 8 : 0;
    return (width == 8 || width == 16 || width == 32) && isPerTensorParameter(op->getOperand(1)) &&
           (!zeroPoint || isPerTensorParameter(zeroPoint)) &&
           (!blockSize || blockSize.getInt() == 0);
  }
  return false;
}

bool isTranscendental(Operation *op) { return op->hasTrait<OpCategory::Transcendental>(); }

bool isViewOp(Operation *op) {
  if (!op || !op->hasTrait<OpCategory::View>() || op->getNumResults() == 0 ||
      op->getNumOperands() == 0 || !isStaticTensor(op->getOperand(0).getType()) ||
      !llvm::all_of(op->getResultTypes(), isStaticTensor))
    return false;
  // A slice's strides depend on its starts, axes and steps (its ends only
  // bound the result shape, which the type already gives).
  if (auto slice = dyn_cast<SliceOp>(op))
    return getConstantIntValues(slice.getStarts()) && getConstantIntValues(slice.getAxes()) &&
           getConstantIntValues(slice.getSteps());
  return true;
}

bool isLayoutPreserving(Operation *op) {
  return op->hasTrait<OpCategory::LayoutPreservingView>() && isViewOp(op);
}

bool isRowOp(Operation *op) { return op->hasTrait<OpCategory::RowOp>(); }

bool isTrailingRowOp(Operation *op) {
  if (!isRowOp(op))
    return false;
  auto rankOf = [](Value v) { return cast<RankedTensorType>(v.getType()).getRank(); };
  if (auto softmax = dyn_cast<SoftmaxOp>(op)) {
    int64_t rank = rankOf(softmax.getInput());
    int64_t axis = softmax.getAxis();
    return rank > 0 && (axis < 0 ? axis + rank : axis) == rank - 1;
  }
  auto reduce = dyn_cast<ReduceOp>(op);
  if (!reduce)
    return true; // layer_norm, rms_norm: normalize dims [axis, rank)
  int64_t rank = rankOf(reduce.getInput());
  if (!reduce.getAxes())
    return true; // all dims
  auto axes = getConstantIntValues(reduce.getAxes());
  if (!axes)
    return false;
  if (axes->empty())
    return !reduce.getNoopWithEmptyAxes();
  SmallVector<int64_t> sorted;
  for (int64_t a : *axes)
    sorted.push_back(a < 0 ? a + rank : a);
  llvm::sort(sorted);
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != rank - (int64_t)sorted.size() + (int64_t)i)
      return false;
  return true;
}

bool runsInHalf(Operation *op) {
  // Max/min select an element; a mean divides an fp32 sum (the row kernels
  // accumulate in fp32). Sums and products may leave f16's range.
  if (auto reduce = dyn_cast<ReduceOp>(op))
    return reduce.getKind() == ReduceKind::max || reduce.getKind() == ReduceKind::min ||
           reduce.getKind() == ReduceKind::mean;
  return op->hasTrait<OpCategory::RunsInHalf>();
}

bool isLibraryFloat(Type element) {
  return element.isF32() || element.isF64() || element.isF16() || element.isBF16();
}

bool isCollective(Operation *op) { return op->hasTrait<OpCategory::Collective>(); }

bool isInt8Contraction(Operation *op) {
  if (!isa<MatMulIntegerOp, ConvIntegerOp>(op))
    return false;
  auto elementOf = [](Value v) -> Type {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    return type ? type.getElementType() : Type();
  };
  Type lhs = elementOf(op->getOperand(0)), rhs = elementOf(op->getOperand(1));
  bool lhs8 = lhs && lhs.isInteger(8) && !lhs.isSignedInteger(); // ui8 or signless i8
  bool rhs8 = rhs && rhs.isSignlessInteger(8);
  if (!lhs8 || !rhs8 || !isPerTensorParameter(op->getOperand(2)) || !hasStaticShapes(op))
    return false;
  // GEMMs of matrices (a vector operand stays the generic single op); the
  // cpu im2col covers 2-D convolutions (NCHW), others stay single ops too.
  if (isa<MatMulIntegerOp>(op) &&
      (cast<RankedTensorType>(op->getOperand(0).getType()).getRank() < 2 ||
       cast<RankedTensorType>(op->getOperand(1).getType()).getRank() < 2))
    return false;
  if (isa<ConvIntegerOp>(op) && cast<RankedTensorType>(op->getOperand(0).getType()).getRank() != 4)
    return false;
  // The kernels take B's zero point as 0: a constant of zeros, scalar or per
  // column / output channel.
  auto rhsZero = getConstantIntValues(op->getOperand(3));
  return rhsZero && llvm::all_of(*rhsZero, [](int64_t z) { return z == 0; });
}

bool isEpilogueConv(Operation *op) {
  auto conv = dyn_cast<ConvOp>(op);
  if (!conv || !hasStaticShapes(op))
    return false;
  auto input = cast<RankedTensorType>(conv.getInput().getType());
  return input.getRank() == 4 && input.getElementType().isF32();
}

std::optional<StringRef> libraryFor(Operation *op) {
  if (isCollective(op))
    return StringRef("collective");
  if (isInt8Contraction(op))
    return StringRef("gemm");
  auto isFloat = [](Value v) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    return type && isLibraryFloat(type.getElementType());
  };
  if (isa<MatMulOp>(op) && isFloat(op->getOperand(0)))
    return StringRef("gemm");
  if (isa<ConvOp, ConvTransposeOp>(op) && isFloat(op->getOperand(0)))
    return StringRef("conv");
  return std::nullopt;
}

//===-- Form W --------------------------------------------------------------===//

std::optional<WeightDequant> matchWeightDequant(DequantizeLinearOp op) {
  auto input = dyn_cast<RankedTensorType>(op.getInput().getType());
  auto scale = dyn_cast<RankedTensorType>(op.getScale().getType());
  if (!input || !scale || input.getRank() != 2 || !input.hasStaticShape() ||
      !scale.hasStaticShape() || !isLibraryFloat(scale.getElementType()) ||
      scale.getElementType().isF64())
    return std::nullopt;
  // Zero points (ONNX QDQ models' asymmetric UINT4/UINT8 weights) are laid
  // out like the scales; the verifier checks shape and element type.
  if (Value zeroPoint = op.getZeroPoint())
    if (cast<RankedTensorType>(zeroPoint.getType()).getShape() != scale.getShape())
      return std::nullopt;
  Type element = input.getElementType();
  bool i8 = element.isInteger(8);
  bool i4 = element.isInteger(4);
  if (!i8 && !i4)
    return std::nullopt;
  int64_t k = input.getDimSize(0), n = input.getDimSize(1);
  int64_t axis = (int64_t)op.getAxis();
  axis = axis < 0 ? axis + 2 : axis;
  int64_t blockSize = (int64_t)op.getBlockSize();
  WeightDequant match{op, CastOp(), i8 ? 8 : 4, 0};
  if (blockSize == 0 && i8 && axis == 1 && scale.getRank() == 1 && scale.getDimSize(0) == n)
    match.group = k;
  else if (blockSize > 0 && axis == 0 && scale.getRank() == 2 &&
           scale.getDimSize(0) == (k + blockSize - 1) / blockSize && scale.getDimSize(1) == n)
    match.group = blockSize;
  else
    return std::nullopt;
  return match;
}

std::optional<WeightDequant> weightDequantOf(MatMulOp matmul) {
  Value b = matmul.getRhs();
  CastOp cast = b.getDefiningOp<CastOp>();
  if (cast) {
    if (!cast->hasOneUse() || !isLibraryFloat(getElementTypeOrSelf(cast.getOutput().getType())))
      return std::nullopt;
    b = cast.getInput();
  }
  auto dequant = b.getDefiningOp<DequantizeLinearOp>();
  if (!dequant || !dequant->hasOneUse())
    return std::nullopt;
  auto match = matchWeightDequant(dequant);
  if (match)
    match->cast = cast;
  return match;
}

bool isWeightPrologue(Operation *op) {
  auto dequant = dyn_cast<DequantizeLinearOp>(op);
  if (!dequant || !dequant->hasOneUse())
    return false;
  Operation *user = *dequant->getUsers().begin();
  if (isa<CastOp>(user) && user->hasOneUse())
    user = *user->getUsers().begin();
  auto matmul = dyn_cast<MatMulOp>(user);
  if (!matmul)
    return false;
  auto w = weightDequantOf(matmul);
  return w && w->dequant == dequant;
}

//===-- Form F8 -------------------------------------------------------------===//

bool isFp8TensorDequant(DequantizeLinearOp dq) {
  if (!dq)
    return false;
  auto input = dyn_cast<RankedTensorType>(dq.getInput().getType());
  auto scale = dyn_cast<RankedTensorType>(dq.getScale().getType());
  auto output = dyn_cast<RankedTensorType>(dq.getOutput().getType());
  if (!input || !scale || !output || !input.hasStaticShape() || !scale.hasStaticShape() ||
      !isa<Float8E4M3FNType>(input.getElementType()) || !scale.getElementType().isF32() ||
      scale.getNumElements() != 1 || !output.getElementType().isF32())
    return false;
  if (Value zero = dq.getZeroPoint()) {
    auto constant = zero.getDefiningOp<ConstantOp>();
    auto values = constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
    if (!values || !values.isSplat() || !values.getSplatValue<APFloat>().isZero())
      return false;
  }
  return true;
}

namespace {
/// isFp8TensorDequant, read by `user` alone.
bool isPerTensorFp8Dequant(DequantizeLinearOp dq, Operation *user) {
  return dq && dq->hasOneUse() && *dq->getUsers().begin() == user && isFp8TensorDequant(dq);
}
} // namespace

std::optional<Fp8Operands> fp8OperandsOf(MatMulOp matmul) {
  auto a = matmul.getLhs().getDefiningOp<DequantizeLinearOp>();
  auto b = matmul.getRhs().getDefiningOp<DequantizeLinearOp>();
  auto result = dyn_cast<RankedTensorType>(matmul.getOutput().getType());
  if (!a || !b || !result || !result.hasStaticShape() || !result.getElementType().isF32() ||
      !isPerTensorFp8Dequant(a, matmul) || !isPerTensorFp8Dequant(b, matmul))
    return std::nullopt;
  if (cast<RankedTensorType>(a.getInput().getType()).getRank() < 2 ||
      cast<RankedTensorType>(b.getInput().getType()).getRank() != 2)
    return std::nullopt;
  return Fp8Operands{a, b};
}

//===-- Kernel forms --------------------------------------------------------===//

FailureOr<KernelForm> judgeForm(ArrayRef<Operation *> ops, std::string &why) {
  // The Form W dequantization of a GEMM's B in the same group is that
  // GEMM's prologue (dequantized inside the GEMM), not an anchor.
  llvm::SmallPtrSet<Operation *, 4> weightPrologue;
  for (Operation *op : ops)
    if (auto matmul = dyn_cast<MatMulOp>(op))
      if (auto w = weightDequantOf(matmul); w && llvm::is_contained(ops, w->dequant.getOperation()))
        weightPrologue.insert(w->dequant);
  SmallVector<Operation *> compute, views, anchors;
  for (Operation *op : ops) {
    if (isa<ConstantOp>(op))
      continue;
    if (isViewOp(op)) {
      views.push_back(op);
      continue;
    }
    compute.push_back(op);
    if (!isElementwise(op) && !weightPrologue.contains(op))
      anchors.push_back(op);
  }
  auto layoutOnly = [&](Operation *except) {
    return llvm::all_of(views, [&](Operation *v) { return v == except || isLayoutPreserving(v); });
  };
  // Views alone move data as a strided copy; one data-moving view with
  // layout-preserving aliases around it (DepthToSpace's reshape ->
  // transpose -> reshape) is that view's own kernel.
  if (compute.empty()) {
    auto moving = llvm::count_if(views, [](Operation *v) { return !isLayoutPreserving(v); });
    return moving == 1 ? KernelForm::view : KernelForm::elementwise;
  }
  if (anchors.empty())
    return KernelForm::elementwise;
  if (anchors.size() > 1) {
    why = "the group holds " + std::to_string(anchors.size()) + " ops that are neither "
          "elementwise nor views (" + describeOp(anchors[0]) + " and " +
          describeOp(anchors[1]) + "); a kernel has at most one";
    return failure();
  }
  Operation *anchor = anchors.front();
  bool alone = compute.size() == 1 && layoutOnly(nullptr);
  if (isa<AttentionOp>(anchor))
    return KernelForm::attention;
  std::optional<StringRef> library = libraryFor(anchor);
  // A collective is one library call on whole buffers: nothing fuses into it.
  if (library == "collective") {
    if (compute.size() == 1 && views.empty())
      return KernelForm::collective;
    why = describeOp(anchor) + " is a collective, which takes no other op into its group";
    return failure();
  }
  if (library == "gemm")
    return KernelForm::gemm;
  // A float convolution with an elementwise epilogue (isEpilogueConv).
  if (library == "conv" && !alone && isEpilogueConv(anchor))
    return KernelForm::gemm;
  if (isRowOp(anchor))
    return KernelForm::row;
  if (alone)
    return library ? KernelForm::library : KernelForm::single;
  why = "no kernel form holds " + describeOp(anchor) + " with " +
        std::to_string(compute.size() - 1) + " more compute ops" +
        (layoutOnly(nullptr) ? "" : " or data-moving views");
  return failure();
}

FailureOr<KernelForm> judgeForm(Block &body, std::string &why) {
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  return judgeForm(ops, why);
}

bool isLoneOp(KernelOp kernel) {
  int compute = 0, moving = 0;
  for (Operation &op : kernel.getBody().front().without_terminator()) {
    if (isa<ConstantOp>(op))
      continue;
    if (!isViewOp(&op))
      ++compute;
    else if (!isLayoutPreserving(&op))
      ++moving;
  }
  return compute + moving == 1;
}

Operation *anchorOf(KernelOp kernel) {
  Operation *moving = nullptr;
  for (Operation &op : kernel.getBody().front().without_terminator()) {
    if (isa<ConstantOp>(op))
      continue;
    if (isViewOp(&op)) {
      if (!isLayoutPreserving(&op) && !moving)
        moving = &op;
      continue;
    }
    if (!isElementwise(&op) && !isWeightPrologue(&op))
      return &op;
  }
  return kernel.getForm() == KernelForm::view ? moving : nullptr;
}

} // namespace sluice::kernel
