//===- Conv.cpp - cuda single ops: conv and conv_transpose through cuDNN --===//
//
// sluice.conv and sluice.conv_transpose (NCX..., 1 to 3 spatial dims,
// grouped, strided, dilated) as sluice_conv calls (sluice_gen/cuda_conv.h):
// cuDNN forward and backward-data convolutions with the geometry fixed at
// compile time. The importer has resolved auto_pad into explicit pads and a
// ConvTranspose's output_shape into pads; pads cuDNN's legacy API cannot
// take (one per dim) go through a padded copy or a crop (cuda_conv.h).
// Views with strides leave the op to the host (cuDNN reads packed tensors
// here).
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/CudaGroups.h"

#include "codegen/common/CodeWriter.h"
#include "codegen/common/Format.h"
#include "codegen/common/ScalarEmitter.h"
#include "codegen/common/ModelFacts.h"

using namespace mlir;

namespace sluice::codegen {
namespace {

/// Workspace bytes a convolution's algorithm may use.
constexpr int64_t kConvWorkspace = 64ll << 20;

std::string convType(Type et) {
  if (et.isF64())
    return "SLUICE_CONV_F64";
  if (et.isF16())
    return "SLUICE_CONV_F16";
  if (et.isBF16())
    return "SLUICE_CONV_BF16";
  return "SLUICE_CONV_F32";
}

/// `{a, b, c}` of the first `count` values, zero-filled to three.
std::string triple(ArrayRef<int64_t> values) {
  std::string s = "{";
  for (size_t d = 0; d < 3; ++d)
    s += std::string(d ? ", " : "") + cInt64(d < values.size() ? values[d] : 0);
  return s + "}";
}

/// A convolution as cuda_conv.h's sluice_conv takes it: the geometry, the
/// packed operands, the output slot and the workspace it needs.
struct ConvPlan {
  bool transpose = false;
  Type et;
  ArrayRef<int64_t> x, w, y, strides, dilations, pads, outputPadding;
  int64_t spatial = 0, n = 0, c = 0, k = 0, group = 0;
  std::string xPtr, wPtr, bPtr;
  unsigned slot = 0;
  int64_t workspace = kConvWorkspace;
};

/// The op's attributes and shapes, checked against what cuDNN takes.
CudaEmit checkConvGeometry(CudaGroupContext &ctx, Operation *op, ConvPlan &p) {
  if (auto conv = dyn_cast<ConvOp>(op)) {
    p.strides = conv.getStrides();
    p.dilations = conv.getDilations();
    p.pads = conv.getPads();
    p.group = conv.getGroup();
  } else {
    auto convT = cast<ConvTransposeOp>(op);
    p.strides = convT.getStrides();
    p.dilations = convT.getDilations();
    p.pads = convT.getPads();
    p.outputPadding = convT.getOutputPadding();
    p.group = convT.getGroup();
  }
  p.et = elementOf(op->getOperand(0));
  if (!p.et.isF32() && !p.et.isF64() && !p.et.isF16() && !p.et.isBF16())
    return ctx.unsupported("cuDNN convolutions are f32, f64, f16 or bf16");
  p.x = shapeOf(op->getOperand(0));
  p.w = shapeOf(op->getOperand(1));
  p.y = shapeOf(op->getResult(0));
  ArrayRef<int64_t> x = p.x, w = p.w, y = p.y, pads = p.pads;
  int64_t spatial = p.spatial = (int64_t)x.size() - 2;
  bool transpose = p.transpose;
  if (spatial < 1 || spatial > 3 || w.size() != x.size() || y.size() != x.size())
    return ctx.unsupported("cuDNN convolutions have 1 to 3 spatial dims");
  if ((int64_t)p.strides.size() != spatial || (int64_t)p.dilations.size() != spatial ||
      (int64_t)pads.size() != 2 * spatial ||
      (transpose && (int64_t)p.outputPadding.size() != spatial))
    return ctx.unsupported("convolution attributes do not match its spatial dims");
  for (int64_t d = 0; d < spatial; ++d) {
    if (!transpose && (pads[d] < 0 || pads[spatial + d] < 0))
      return ctx.unsupported("negative convolution pads");
    if (p.strides[d] < 1 || p.dilations[d] < 1)
      return ctx.unsupported("convolution strides and dilations must be positive");
  }
  if (p.group < 1 || product(y) == 0 || product(x) == 0)
    return ctx.unsupported("empty convolution");
  for (ArrayRef<int64_t> shape : {x, w, y})
    if (product(shape) > INT32_MAX)
      return ctx.unsupported("a convolution tensor beyond cuDNN's 32-bit sizes");
  p.n = x[0];
  p.c = x[1];
  p.k = y[1];
  if (p.c % p.group || p.k % p.group)
    return ctx.unsupported("channels not divisible by the group count");
  if (!transpose && (w[0] != p.k || w[1] * p.group != p.c))
    return ctx.unsupported("conv weight shape does not match its channels");
  // The output extents cuda_conv.h assumes (the importer's, for a
  // well-formed graph).
  for (int64_t d = 0; d < spatial; ++d) {
    int64_t span = (w[2 + d] - 1) * p.dilations[d] + 1;
    int64_t expect = transpose ? p.strides[d] * (x[2 + d] - 1) + p.outputPadding[d] + span -
                                     pads[d] - pads[spatial + d]
                               : (x[2 + d] + pads[d] + pads[spatial + d] - span) / p.strides[d] + 1;
    if (y[2 + d] != expect || (transpose && p.outputPadding[d] < 0))
      return ctx.unsupported("convolution output extent differs from its attributes");
  }
  if (transpose && (w[0] != p.c || w[1] * p.group != p.k))
    return ctx.unsupported("conv_transpose weight shape does not match its channels");
  return CudaEmit::Done;
}

/// The packed operands (views with offsets only), the output slot, and the
/// workspace: cuDNN's, then (sluice_conv_scratch_bytes) the padded input or
/// the uncropped transposed output when cuDNN cannot take the pads as they
/// are.
CudaEmit planConvBuffers(CudaGroupContext &ctx, Operation *op, ConvPlan &p) {
  Value input = op->getOperand(0), weight = op->getOperand(1);
  Value bias = op->getNumOperands() > 2 ? op->getOperand(2) : Value();
  Value result = op->getResult(0);
  auto pointerOf = [&](Value v, std::string &ptr) -> bool {
    auto view = resolveView(v, /*emitErrors=*/false);
    if (failed(view) || !ctx.pointers.count(view->base))
      return false;
    StridedView dense = *view;
    dense.offset = 0;
    if (!dense.isContiguous(shapeOf(v)))
      return false;
    ptr = "(" + ctx.pointers.lookup(view->base) + " + " + cInt64(view->offset) + ")";
    return true;
  };
  p.bPtr = "(const " + storageType(p.et) + " *)nullptr";
  if (!pointerOf(input, p.xPtr) || !pointerOf(weight, p.wPtr))
    return ctx.unsupported("a convolution operand is a strided view or not a leaf");
  if (bias) {
    if (shapeOf(bias).size() != 1 || shapeOf(bias)[0] != p.k || elementOf(bias) != p.et ||
        !pointerOf(bias, p.bPtr))
      return ctx.unsupported("a convolution bias that is not a packed [M] vector");
  }
  // The output: a yield of the result through layout-preserving views.
  Operation *yield = ctx.kernel.getBody().front().getTerminator();
  if (yield->getNumOperands() != 1)
    return ctx.unsupported("a convolution group with more than one result");
  std::optional<unsigned> slot;
  for (auto [i, v] : llvm::enumerate(yield->getOperands())) {
    Value root = v;
    while (root != result && root.getDefiningOp() && isLayoutPreserving(root.getDefiningOp()))
      root = root.getDefiningOp()->getOperand(0);
    if (!slot && root == result)
      slot = i;
  }
  if (!slot)
    return ctx.unsupported("the convolution's result is not an output of its group");
  p.slot = *slot;

  int64_t spatial = p.spatial;
  ArrayRef<int64_t> pads = p.pads, x = p.x, w = p.w;
  bool direct = true;
  for (int64_t d = 0; d < spatial; ++d)
    direct &= pads[d] == pads[spatial + d] && pads[d] >= 0 &&
              (!p.transpose || p.outputPadding[d] < p.strides[d]);
  if (!direct) {
    int64_t count = p.n * (p.transpose ? p.k : p.c);
    for (int64_t d = 0; d < spatial; ++d)
      count *= p.transpose ? p.strides[d] * (x[2 + d] - 1) + (w[2 + d] - 1) * p.dilations[d] + 1
                           : x[2 + d] + pads[d] + pads[spatial + d];
    if (count > INT32_MAX)
      return ctx.unsupported("a padded convolution tensor beyond cuDNN's 32-bit sizes");
    p.workspace += (count * storageBytes(p.et) + 255) / 256 * 256;
  }
  return CudaEmit::Done;
}

/// The sluice_conv call with its compile-time shape.
void printConv(CodeWriter &h, CudaGroupContext &ctx, const ConvPlan &p) {
  std::string T = storageType(p.et);
  auto call = h.block("");
  h.line("static const SluiceConvShape conv = {{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, "
         "{10}, {11}, {12}, {13}, {14}};",
         convType(p.et), decimal(p.transpose), p.spatial, cInt64(p.n), cInt64(p.c), cInt64(p.k),
         cInt64(p.group), triple(p.x.drop_front(2)), triple(p.w.drop_front(2)),
         triple(p.y.drop_front(2)), triple(p.pads.take_front(p.spatial)), triple(p.strides),
         triple(p.dilations), triple(p.pads.drop_front(p.spatial)),
         triple(p.transpose ? p.outputPadding : ArrayRef<int64_t>()));
  h.line("if (int32_t status = sluice_conv<{0}>(args, state, {1}, conv, (const {0} *){2}, "
         "(const {0} *){3}, (const {0} *){4}, ({0} *){5}, (size_t){6}, stream))",
         T, ctx.kernelName(), p.xPtr, p.wPtr, p.bPtr, ctx.output(p.slot), cInt64(kConvWorkspace));
  auto then = h.indented();
  h.line("return status;");
}

} // namespace

CudaEmit emitCudaConv(CudaGroupContext &ctx, Operation *op) {
  ConvPlan plan;
  plan.transpose = isa<ConvTransposeOp>(op);
  if (!isa<ConvOp>(op) && !plan.transpose)
    return ctx.unsupported("not a convolution");
  if (CudaEmit r = checkConvGeometry(ctx, op, plan); r != CudaEmit::Done)
    return r;
  if (CudaEmit r = planConvBuffers(ctx, op, plan); r != CudaEmit::Done)
    return r;
  ctx.include("sluice_gen/cuda_conv.h");
  ctx.kind = "library";
  CodeWriter h(1);
  printConv(h, ctx, plan);
  *ctx.host += h.str();
  if (ctx.workspaceBytes)
    *ctx.workspaceBytes = std::max(*ctx.workspaceBytes, plan.workspace);
  return CudaEmit::Done;
}

} // namespace sluice::codegen
