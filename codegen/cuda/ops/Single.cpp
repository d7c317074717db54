//===- Single.cpp - cuda form F5: single ops with a cuda implementation ---===//
//
// Convolutions go to cuDNN (ops/Conv.cpp); gather and concat are byte
// movers (sluice_gen/cuda_movement.h); pooling and batch norm are in
// ops/NN.cpp. Every other single op is left to the
// host (CudaEmit::Unsupported), where the cpu emitter's kernel runs it.
//
//===----------------------------------------------------------------------===//

#include "codegen/common/CodeWriter.h"
#include "codegen/common/Collective.h"
#include "codegen/common/Format.h"
#include "codegen/common/ScalarEmitter.h"
#include "codegen/common/ModelFacts.h"
#include "codegen/cuda/CudaGroups.h"

using namespace mlir;

namespace sluice::codegen {

FailureOr<std::string> singleOperand(CudaGroupContext &ctx, Operation *op, unsigned index) {
  Value operand = op->getOperand(index);
  auto view = resolveView(operand);
  if (failed(view))
    return failure();
  if (!kernel::readsContiguously(*view, operand))
    return op->emitOpError("cuda target: operand ")
           << index << " is a strided view; this op reads contiguous buffers";
  return ctx.leafPointer(*view);
}

FailureOr<std::string> singleResult(CudaGroupContext &ctx, Operation *op, unsigned index) {
  if (std::optional<unsigned> slot = kernel::yieldSlotOf(ctx.kernel, op->getResult(index)))
    return ctx.output(*slot);
  return op->emitOpError("cuda target: result ") << index << " is not an output of its group";
}

namespace {

/// The widest chunk (bytes) dividing every byte count in `sizes`.
int64_t chunkBytes(std::initializer_list<int64_t> sizes) {
  for (int64_t c : {16, 8, 4, 2})
    if (llvm::all_of(sizes, [&](int64_t s) { return s % c == 0; }))
      return c;
  return 1;
}

std::string chunkType(int64_t bytes) {
  switch (bytes) {
  case 16: return "uint4";
  case 8: return "uint2";
  case 4: return "unsigned";
  case 2: return "unsigned short";
  default: return "unsigned char";
  }
}

CudaEmit emitGather(CudaGroupContext &ctx, GatherOp op) {
  ArrayRef<int64_t> inShape = shapeOf(op.getInput());
  auto axis = axisOf(op, op.getAxis(), inShape.size());
  if (failed(axis))
    return CudaEmit::Error;
  int64_t count = product(shapeOf(op.getIndices()));
  int64_t outer = product(inShape, 0, *axis), inner = product(inShape, *axis + 1);
  int64_t extent = inShape[*axis];
  if (outer * count * inner == 0)
    return CudaEmit::Done;
  auto in = singleOperand(ctx, op, 0), idx = singleOperand(ctx, op, 1);
  auto out = singleResult(ctx, op, 0);
  if (failed(in) || failed(idx) || failed(out))
    return CudaEmit::Error;
  int64_t elem = storageBytes(elementOf(op.getInput()));
  int64_t chunk = chunkBytes({inner * elem});
  std::string c = chunkType(chunk);
  int64_t chunks = inner * elem / chunk;
  ctx.include("sluice_gen/cuda_movement.h");
  CodeWriter h(1);
  h.line("sluice_gather_kernel<{0}><<<sluice_grid({1}, 256), 256, 0, stream>>>((const {0} *){2}, "
         "{3}, ({0} *){4}, {5}, {6}, {7}, {8}, state->deviceError, {9});",
         c, outer * count * chunks, *in, *idx, *out, cInt64(outer), cInt64(extent), cInt64(chunks),
         cInt64(count), ctx.step);
  h.line("SLUICE_LAUNCHED({0});", ctx.kernelName());
  *ctx.host += h.str();
  return CudaEmit::Done;
}

CudaEmit emitConcat(CudaGroupContext &ctx, ConcatOp op) {
  ArrayRef<int64_t> outShape = shapeOf(op.getOutput());
  auto axis = axisOf(op, op.getAxis(), outShape.size());
  if (failed(axis))
    return CudaEmit::Error;
  auto out = singleResult(ctx, op, 0);
  if (failed(out))
    return CudaEmit::Error;
  int64_t elem = storageBytes(elementOf(op.getOutput()));
  int64_t outer = product(outShape, 0, *axis), inner = product(outShape, *axis + 1);
  int64_t outRow = outShape[*axis] * inner, offset = 0;
  CodeWriter h(1);
  for (auto [i, input] : llvm::enumerate(op.getInputs())) {
    int64_t length = shapeOf(input)[*axis];
    if (length * inner * outer > 0) {
      auto in = singleOperand(ctx, op, i);
      if (failed(in))
        return CudaEmit::Error;
      int64_t chunk = chunkBytes({length * inner * elem, outRow * elem, offset * inner * elem});
      std::string c = chunkType(chunk);
      int64_t len = length * inner * elem / chunk;
      ctx.include("sluice_gen/cuda_movement.h");
      h.line("sluice_copy_rows_kernel<{0}><<<sluice_grid({1}, 256), 256, 0, stream>>>((const {0} "
             "*){2}, {3}, ({0} *)((unsigned char *){4} + {5}), {6}, {7}, {3});",
             c, outer * len, *in, cInt64(len), *out, cInt64(offset * inner * elem),
             cInt64(outRow * elem / chunk), cInt64(outer));
      h.line("SLUICE_LAUNCHED({0});", ctx.kernelName());
    }
    offset += length;
  }
  *ctx.host += h.str();
  return CudaEmit::Done;
}

/// The unsigned type of an element of `bytes` bytes for the move kernel.
std::optional<std::string> moveType(int64_t bytes) {
  switch (bytes) {
  case 1: return std::string("unsigned char");
  case 2: return std::string("unsigned short");
  case 4: return std::string("unsigned");
  case 8: return std::string("unsigned long long");
  default: return std::nullopt;
  }
}

/// One sluice_strided_move_kernel launch: `out` (row-major `shape`) from
/// the leaf of `src` with per-dim `strides` (elements), pads `begin`, input
/// `extent`, and the fill at `fill` (or "nullptr").
CudaEmit emitMove(CudaGroupContext &ctx, Operation *op, const StridedView &src,
                  ArrayRef<int64_t> shape, ArrayRef<int64_t> strides, ArrayRef<int64_t> begin,
                  ArrayRef<int64_t> extent, Type element, const std::string &out,
                  const std::string &fill) {
  int64_t total = product(shape);
  if (total == 0)
    return CudaEmit::Done;
  if (shape.size() > 8)
    return ctx.unsupported("a data move of rank above 8");
  auto type = moveType(storageBytes(element));
  if (!type)
    return ctx.unsupported("a data move of elements of another size than 1, 2, 4 or 8 bytes");
  auto in = ctx.leafPointer(StridedView{src.base, 0, {}});
  if (failed(in))
    return CudaEmit::Error;
  auto list = [&](ArrayRef<int64_t> v) {
    std::string s = "{";
    for (int64_t i = 0; i < 8; ++i)
      s += (i ? ", " : "") + cInt64(i < (int64_t)v.size() ? v[i] : 1);
    return s + "}";
  };
  ctx.include("sluice_gen/cuda_movement.h");
  CodeWriter h(1);
  {
    auto block = h.block("");
    h.line("static const SluiceMoveShape move = {{{0}, {1}, {2}, {3}, {4}, {5}};",
           cInt64((int64_t)shape.size()), list(shape), list(strides), list(begin), list(extent),
           cInt64(src.offset));
    h.line("sluice_strided_move_kernel<{0}><<<sluice_grid({1}, 256), 256, 0, stream>>>((const "
           "{0} *){2}, ({0} *){3}, {1}, move, (const {0} *){4});",
           *type, cInt64(total), *in, out, fill);
    h.line("SLUICE_LAUNCHED({0});", ctx.kernelName());
  }
  *ctx.host += h.str();
  return CudaEmit::Done;
}

/// A view group the elementwise kernel cannot plan (ShuffleNet's channel
/// shuffle: reshape -> transpose -> reshape, whose last reshape merges a
/// transposed pair of dims): the data-moving view's result copied from its
/// strided source, the views after it being layout-preserving aliases of
/// the group's one output.
CudaEmit emitViewCopy(CudaGroupContext &ctx, Operation *view) {
  auto yields = KernelYieldOp(ctx.kernel.getBody().front().getTerminator()).getValues();
  if (yields.size() != 1)
    return ctx.unsupported("a view group with several outputs");
  Value copied = yields[0];
  auto whole = resolveView(copied, /*emitErrors=*/false);
  if (failed(whole)) {
    // The output as the anchor's result through layout-preserving views.
    while (copied != view->getResult(0)) {
      Operation *def = copied.getDefiningOp();
      if (!def || def->getParentOp() != ctx.kernel.getOperation() ||
          !kernel::isLayoutPreserving(def))
        return ctx.unsupported("a view group whose output is not its moving view's result");
      copied = def->getOperand(0);
    }
    whole = resolveView(copied, /*emitErrors=*/false);
  }
  if (failed(whole) || !isa<BlockArgument>(whole->base))
    return ctx.unsupported("a view group whose source is not a group input");
  ArrayRef<int64_t> shape = shapeOf(copied);
  std::vector<int64_t> zeros(shape.size(), 0);
  return emitMove(ctx, view, *whole, shape, whole->strides, zeros, shape, elementOf(copied),
                  ctx.output(0), "nullptr");
}

/// Pad in constant mode (negative pads crop): one move with a fill.
CudaEmit emitPad(CudaGroupContext &ctx, PadOp op) {
  if (op.getMode() != PadMode::constant)
    return ctx.unsupported("no cuda kernel for sluice.pad in " +
                           stringifyPadMode(op.getMode()).str() + " mode");
  auto pads = getConstantIntValues(op.getPads());
  ArrayRef<int64_t> inShape = shapeOf(op.getInput()), outShape = shapeOf(op.getOutput());
  if (!pads || pads->size() != 2 * inShape.size())
    return ctx.unsupported("sluice.pad with pads that are not constants");
  auto src = resolveView(op.getInput(), /*emitErrors=*/false);
  if (failed(src) || !isa<BlockArgument>(src->base))
    return ctx.unsupported("sluice.pad of a value that is not a view of a group input");
  auto out = singleResult(ctx, op, 0);
  if (failed(out))
    return CudaEmit::Error;
  std::string fill = "nullptr";
  if (Value value = op.getConstantValue()) {
    auto view = resolveView(value, /*emitErrors=*/false);
    if (failed(view))
      return ctx.unsupported("sluice.pad's constant value is a view without strides");
    auto p = ctx.leafPointer(StridedView{view->base, 0, {}});
    if (failed(p))
      return CudaEmit::Error;
    fill = "((const unsigned char *)" + *p + " + " +
           cInt64(view->offset * storageBytes(elementOf(value))) + ")";
  }
  std::vector<int64_t> begin(pads->begin(), pads->begin() + inShape.size());
  return emitMove(ctx, op, *src, outShape, src->strides, begin, inShape,
                  elementOf(op.getOutput()), *out, fill);
}

/// CumSum: one thread per line along the axis (RoBERTa's position ids).
CudaEmit emitCumSum(CudaGroupContext &ctx, CumSumOp op) {
  ArrayRef<int64_t> shape = shapeOf(op.getInput());
  auto axes = getConstantIntValues(op.getAxis());
  if (!axes || axes->size() != 1)
    return ctx.unsupported("sluice.cumsum with an axis that is not a constant");
  int64_t rank = (int64_t)shape.size(), axis = (*axes)[0];
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return ctx.unsupported("sluice.cumsum's axis is out of range");
  Type et = elementOf(op.getInput());
  if (et.isInteger(1) || !(et.isIntOrFloat()))
    return ctx.unsupported("sluice.cumsum of booleans or non-numbers");
  int64_t outer = product(shape, 0, axis), len = shape[axis], inner = product(shape, axis + 1);
  if (outer * len * inner == 0)
    return CudaEmit::Done;
  auto in = singleOperand(ctx, op, 0);
  auto out = singleResult(ctx, op, 0);
  if (failed(in) || failed(out))
    return CudaEmit::Error;
  std::string t = storageType(et);
  ctx.include("sluice_gen/cuda_movement.h");
  CodeWriter h(1);
  h.line("sluice_cumsum_kernel<{0}><<<sluice_grid({1}, 256), 256, 0, stream>>>((const {0} *){2}, "
         "({0} *){3}, {4}, {5}, {6}, {7}, {8});",
         t, cInt64(outer * inner), *in, *out, cInt64(outer), cInt64(len), cInt64(inner),
         op.getExclusive() ? "true" : "false", op.getReverse() ? "true" : "false");
  h.line("SLUICE_LAUNCHED({0});", ctx.kernelName());
  *ctx.host += h.str();
  return CudaEmit::Done;
}

} // namespace

CudaEmit emitCudaSingleOp(CudaGroupContext &ctx, Operation *op) {
  if (auto cumsum = dyn_cast<CumSumOp>(op))
    return emitCumSum(ctx, cumsum);
  if (auto pad = dyn_cast<PadOp>(op))
    return emitPad(ctx, pad);
  if (kernel::isViewOp(op))
    return emitViewCopy(ctx, op);
  if (isa<ConvOp, ConvTransposeOp>(op) && ctx.kernel.getLibrary() == "conv")
    return emitCudaConv(ctx, op);
  if (auto gather = dyn_cast<GatherOp>(op))
    return emitGather(ctx, gather);
  if (auto concat = dyn_cast<ConcatOp>(op))
    return emitConcat(ctx, concat);
  if (isa<PoolOp, BatchNormOp>(op))
    return emitCudaNNOp(ctx, op);
  if (auto moe = dyn_cast<MoeOp>(op))
    return emitCudaMoe(ctx, moe);
  if (kernel::isCollective(op)) {
    // NCCL (or host-staged MPI) through the run's communicator, enqueued on
    // the step's stream like a library call.
    auto in = singleOperand(ctx, op, 0);
    auto out = singleResult(ctx, op, 0);
    if (failed(in) || failed(out))
      return CudaEmit::Error;
    auto call = collectiveCall(op, ctx.name, *in, *out, "stream");
    if (failed(call))
      return CudaEmit::Error;
    ctx.include("sluice_gen/comm.h");
    ctx.kind = "library";
    CodeWriter h(1);
    h.line("{0}", *call);
    *ctx.host += h.str();
    return CudaEmit::Done;
  }
  return ctx.unsupported("no cuda kernel for " + op->getName().getStringRef().str());
}

} // namespace sluice::codegen
