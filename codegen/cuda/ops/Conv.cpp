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

#include "codegen/common/ScalarEmitter.h"
#include "codegen/cpu/CpuEmitter.h"

using namespace mlir;

namespace sluice::codegen {
namespace {

/// Workspace bytes a convolution's algorithm may use.
constexpr int64_t kConvWorkspace = 64ll << 20;

std::string str(int64_t v) { return std::to_string(v); }

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
    s += std::string(d ? ", " : "") + cInt(d < values.size() ? values[d] : 0);
  return s + "}";
}

} // namespace

CudaEmit emitCudaConv(CudaGroupContext &ctx, Operation *op) {
  bool transpose = isa<ConvTransposeOp>(op);
  if (!isa<ConvOp>(op) && !transpose)
    return ctx.unsupported("not a convolution");
  Value input = op->getOperand(0), weight = op->getOperand(1);
  Value bias = op->getNumOperands() > 2 ? op->getOperand(2) : Value();
  Value result = op->getResult(0);
  ArrayRef<int64_t> strides, dilations, pads, outputPadding;
  int64_t group;
  if (auto conv = dyn_cast<ConvOp>(op)) {
    strides = conv.getStrides();
    dilations = conv.getDilations();
    pads = conv.getPads();
    group = conv.getGroup();
  } else {
    auto convT = cast<ConvTransposeOp>(op);
    strides = convT.getStrides();
    dilations = convT.getDilations();
    pads = convT.getPads();
    outputPadding = convT.getOutputPadding();
    group = convT.getGroup();
  }
  Type et = elementOf(input);
  if (!et.isF32() && !et.isF64() && !et.isF16() && !et.isBF16())
    return ctx.unsupported("cuDNN convolutions are f32, f64, f16 or bf16");
  ArrayRef<int64_t> x = shapeOf(input), w = shapeOf(weight), y = shapeOf(result);
  int64_t spatial = (int64_t)x.size() - 2;
  if (spatial < 1 || spatial > 3 || w.size() != x.size() || y.size() != x.size())
    return ctx.unsupported("cuDNN convolutions have 1 to 3 spatial dims");
  if ((int64_t)strides.size() != spatial || (int64_t)dilations.size() != spatial ||
      (int64_t)pads.size() != 2 * spatial ||
      (transpose && (int64_t)outputPadding.size() != spatial))
    return ctx.unsupported("convolution attributes do not match its spatial dims");
  for (int64_t d = 0; d < spatial; ++d) {
    if (!transpose && (pads[d] < 0 || pads[spatial + d] < 0))
      return ctx.unsupported("negative convolution pads");
    if (strides[d] < 1 || dilations[d] < 1)
      return ctx.unsupported("convolution strides and dilations must be positive");
  }
  if (group < 1 || product(y) == 0 || product(x) == 0)
    return ctx.unsupported("empty convolution");
  for (ArrayRef<int64_t> shape : {x, w, y})
    if (product(shape) > INT32_MAX)
      return ctx.unsupported("a convolution tensor beyond cuDNN's 32-bit sizes");
  int64_t n = x[0], c = x[1], k = y[1];
  if (c % group || k % group)
    return ctx.unsupported("channels not divisible by the group count");
  if (!transpose && (w[0] != k || w[1] * group != c))
    return ctx.unsupported("conv weight shape does not match its channels");
  // The output extents cuda_conv.h assumes (the importer's, for a
  // well-formed graph).
  for (int64_t d = 0; d < spatial; ++d) {
    int64_t span = (w[2 + d] - 1) * dilations[d] + 1;
    int64_t expect = transpose ? strides[d] * (x[2 + d] - 1) + outputPadding[d] + span - pads[d] -
                                     pads[spatial + d]
                               : (x[2 + d] + pads[d] + pads[spatial + d] - span) / strides[d] + 1;
    if (y[2 + d] != expect || (transpose && outputPadding[d] < 0))
      return ctx.unsupported("convolution output extent differs from its attributes");
  }
  if (transpose && (w[0] != c || w[1] * group != k))
    return ctx.unsupported("conv_transpose weight shape does not match its channels");
  // Packed operands (views with offsets only).
  auto pointerOf = [&](Value v, std::string &ptr) -> bool {
    auto view = resolveView(v, /*emitErrors=*/false);
    if (failed(view) || !ctx.pointers.count(view->base))
      return false;
    StridedView dense = *view;
    dense.offset = 0;
    if (!dense.isContiguous(shapeOf(v)))
      return false;
    ptr = "(" + ctx.pointers.lookup(view->base) + " + " + cInt(view->offset) + ")";
    return true;
  };
  std::string xPtr, wPtr, bPtr = "(const " + storageType(et) + " *)nullptr";
  if (!pointerOf(input, xPtr) || !pointerOf(weight, wPtr))
    return ctx.unsupported("a convolution operand is a strided view or not a leaf");
  if (bias) {
    if (shapeOf(bias).size() != 1 || shapeOf(bias)[0] != k || elementOf(bias) != et ||
        !pointerOf(bias, bPtr))
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

  // cuDNN's workspace, then (sluice_conv_scratch_bytes) the padded input or
  // the uncropped transposed output when cuDNN cannot take the pads as
  // they are.
  int64_t workspace = kConvWorkspace;
  bool direct = true;
  for (int64_t d = 0; d < spatial; ++d)
    direct &= pads[d] == pads[spatial + d] && pads[d] >= 0 &&
              (!transpose || outputPadding[d] < strides[d]);
  if (!direct) {
    int64_t count = n * (transpose ? k : c);
    for (int64_t d = 0; d < spatial; ++d)
      count *= transpose ? strides[d] * (x[2 + d] - 1) + (w[2 + d] - 1) * dilations[d] + 1
                         : x[2 + d] + pads[d] + pads[spatial + d];
    if (count > INT32_MAX)
      return ctx.unsupported("a padded convolution tensor beyond cuDNN's 32-bit sizes");
    workspace += (count * storageBytes(et) + 255) / 256 * 256;
  }
  std::vector<int64_t> in(x.begin() + 2, x.end()), ker(w.begin() + 2, w.end()),
      out(y.begin() + 2, y.end());
  std::string T = storageType(et);
  ctx.include("sluice_gen/cuda_conv.h");
  ctx.kind = "library";
  std::string &h = *ctx.host;
  h += "  {\n";
  h += "    static const SluiceConvShape conv = {" + convType(et) + ", " + str(transpose) + ", " +
       str(spatial) + ", " + cInt(n) + ", " + cInt(c) + ", " + cInt(k) + ", " + cInt(group) + ", " +
       triple(in) + ", " + triple(ker) + ", " + triple(out) + ", " +
       triple(pads.take_front(spatial)) + ", " + triple(strides) + ", " + triple(dilations) + ", " +
       triple(pads.drop_front(spatial)) + ", " +
       triple(transpose ? outputPadding : ArrayRef<int64_t>()) + "};\n";
  h += "    if (int32_t status = sluice_conv<" + T + ">(args, state, " + ctx.kernelName() +
       ", conv, (const " + T + " *)" + xPtr + ", (const " + T + " *)" + wPtr + ", (const " + T +
       " *)" + bPtr + ", (" + T + " *)" + ctx.output(*slot) + ", (size_t)" + cInt(kConvWorkspace) +
       ", stream))\n      return status;\n";
  h += "  }\n";
  if (ctx.workspaceBytes)
    *ctx.workspaceBytes = std::max(*ctx.workspaceBytes, workspace);
  return CudaEmit::Done;
}

} // namespace sluice::codegen
