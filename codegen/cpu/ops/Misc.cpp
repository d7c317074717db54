//===- Misc.cpp - cpu emitters: ops with data-dependent result sizes ------===//
//
// NonZero, Compress, Unique and NonMaxSuppression: their result extents depend
// on input values. Their buffers are sized by upperBoundShape; the emitted
// code stores the actual extents into the graph output's dims
// (CpuOpContext::outDims), so these results must be graph outputs.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/CpuEmitter.h"

#include "codegen/common/CodeWriter.h"
#include "codegen/common/Format.h"
#include "codegen/common/ScalarEmitter.h"
#include "dialects/sluice/SluiceOps.h"
#include "dialects/sluice/SluiceTypes.h"

using namespace mlir;

namespace sluice::codegen {

namespace {

constexpr const char *kHeader = "sluice_gen/cpu_dynamic.h";

/// Hands dim `dim` of result `index` to the runtime as `extent` when that
/// dim is data-dependent; writes nothing (and returns false) when the
/// result's type already fixes it (a constant condition, a static
/// inverse_indices).
bool storeDim(CpuOpContext &ctx, unsigned index, int64_t dim, const std::string &extent) {
  auto type = cast<RankedTensorType>(ctx.op->getResult(index).getType());
  if (ctx.outDims[index].empty() || !type.isDynamicDim(dim))
    return false;
  ctx.code.line("{0}[{1}] = {2};", ctx.outDims[index], dim, extent);
  return true;
}

/// The name of `operand`'s pointer: ctx.in follows op->getOperands(), in
/// which absent optional operands take no place.
std::string inputOf(const CpuOpContext &ctx, Value operand) {
  for (OpOperand &use : ctx.op->getOpOperands())
    if (use.get() == operand)
      return ctx.in[use.getOperandNumber()];
  return "";
}

/// The kernels take their input extents at compile time.
LogicalResult checkInputStatic(Operation *op, Value input) {
  auto type = dyn_cast<RankedTensorType>(input.getType());
  if (!type || !type.hasStaticShape())
    return op->emitOpError("cpu target: input shapes must be static");
  return success();
}

LogicalResult emitNonZero(CpuOpContext &ctx) {
  auto op = cast<NonZeroOp>(ctx.op);
  if (failed(checkInputStatic(op, op.getInput())))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(op.getInput());
  ctx.include(kHeader);
  ctx.code.line("{0}", cInt64ArrayDecl("nz_shape", shape));
  ctx.code.line("int64_t count = {0};", cCall("sluice_nonzero<" + typeOf(op.getInput()) + ">",
                                              {cInt64(shape.size()), "nz_shape",
                                               cInt64(product(shape)), ctx.in[0], ctx.out[0]}));
  if (!storeDim(ctx, 0, 1, "count"))
    ctx.code.line("(void)count;");
  return success();
}

/// Compress and Unique work on slices along an optional axis: outer x
/// extent x inner around it (`dim` set to it), or the flattened input as one
/// extent when the axis is absent.
FailureOr<AxisSplit> splitAtOptionalAxis(Operation *op, ArrayRef<int64_t> shape,
                                         std::optional<int64_t> axisAttr, int64_t &dim) {
  dim = 0;
  if (!axisAttr)
    return AxisSplit{1, product(shape), 1};
  auto axis = axisOf(op, *axisAttr, shape.size());
  if (failed(axis))
    return failure();
  dim = *axis;
  return splitAt(shape, dim);
}

LogicalResult emitCompress(CpuOpContext &ctx) {
  auto op = cast<CompressOp>(ctx.op);
  if (failed(checkInputStatic(op, op.getInput())) ||
      failed(checkInputStatic(op, op.getCondition())))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(op.getInput());
  int64_t dim = 0;
  auto split = splitAtOptionalAxis(op, shape, op.getAxis(), dim);
  if (failed(split))
    return failure();
  int64_t outer = split->outer, extent = split->extent, inner = split->inner;
  int64_t conditions = product(shapeOf(op.getCondition()));
  if (conditions > extent)
    return op.emitOpError("cpu target: condition has ")
           << conditions << " entries for a dim of " << extent;
  ctx.include(kHeader);
  ctx.code.line("int64_t kept = {0};",
                cCall("sluice_compress<" + typeOf(op.getInput()) + ">",
                      {cInt64(outer), cInt64(extent), cInt64(inner), cInt64(conditions), ctx.in[1],
                       ctx.in[0], ctx.out[0]}));
  if (!storeDim(ctx, 0, dim, "kept"))
    ctx.code.line("(void)kept;");
  return success();
}

LogicalResult emitUnique(CpuOpContext &ctx) {
  auto op = cast<UniqueOp>(ctx.op);
  if (failed(checkInputStatic(op, op.getInput())))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(op.getInput());
  int64_t dim = 0;
  auto split = splitAtOptionalAxis(op, shape, op.getAxis(), dim);
  if (failed(split))
    return failure();
  int64_t outer = split->outer, n = split->extent, inner = split->inner;
  ctx.include(kHeader);
  ctx.code.line("int64_t unique = 0;");
  ctx.code.line("if (int32_t status = {0})",
                cCall("sluice_unique<" + typeOf(op.getInput()) + ">",
                      {"args", cStringLiteral(ctx.kernelName), cInt64(outer), cInt64(n),
                       cInt64(inner), op.getSorted() ? "true" : "false", ctx.in[0], ctx.out[0],
                       ctx.out[1], ctx.out[2], ctx.out[3], "&unique"}));
  {
    auto fail = ctx.code.indented();
    ctx.code.line("return status;");
  }
  storeDim(ctx, 0, dim, "unique");
  storeDim(ctx, 1, 0, "unique");
  storeDim(ctx, 2, 0, cInt64(n));
  storeDim(ctx, 3, 0, "unique");
  return success();
}

LogicalResult emitNonMaxSuppression(CpuOpContext &ctx) {
  auto op = cast<NonMaxSuppressionOp>(ctx.op);
  for (Value operand : op->getOperands())
    if (failed(checkInputStatic(op, operand)))
      return failure();
  ArrayRef<int64_t> boxes = shapeOf(op.getBoxes()), scores = shapeOf(op.getScores());
  if (boxes.size() != 3 || boxes[2] != 4 || scores.size() != 3 || scores[0] != boxes[0] ||
      scores[2] != boxes[1])
    return op.emitOpError("cpu target: boxes and scores must be [B, N, 4] and [B, C, N]");
  // Absent (or empty) max_output_boxes_per_class keeps nothing, absent
  // thresholds keep everything; present ones are read at run time (they may
  // be graph inputs).
  auto firstOf = [&](Value operand, bool isFloat, const std::string &absent) {
    if (!operand || product(shapeOf(operand)) == 0)
      return absent;
    std::string element = inputOf(ctx, operand) + "[0]";
    return isFloat ? "(double)sluice_load(" + element + ")" : "(int64_t)" + element;
  };
  Value scoreThreshold = op.getScoreThreshold();
  bool hasScoreThreshold = scoreThreshold && product(shapeOf(scoreThreshold)) > 0;
  ctx.include(kHeader);
  ctx.code.line("int64_t rows = 0;");
  ctx.code.line(
      "if (int32_t status = {0})",
      cCall("sluice_non_max_suppression<" + typeOf(op.getBoxes()) + ", " + typeOf(op.getScores()) +
                ">",
            {"args", cStringLiteral(ctx.kernelName), cInt64(boxes[0]), cInt64(boxes[1]),
             cInt64(scores[1]), op.getCenterPointBox() ? "true" : "false",
             inputOf(ctx, op.getBoxes()), inputOf(ctx, op.getScores()),
             firstOf(op.getMaxOutputBoxesPerClass(), false, "0"),
             firstOf(op.getIouThreshold(), true, "0.0"), hasScoreThreshold ? "true" : "false",
             firstOf(scoreThreshold, true, "0.0"), ctx.out[0], "&rows"}));
  {
    auto fail = ctx.code.indented();
    ctx.code.line("return status;");
  }
  storeDim(ctx, 0, 0, "rows");
  return success();
}

} // namespace

void registerCpuMiscEmitters(CpuOpRegistry &registry) {
  registry.add(NonZeroOp::getOperationName(), emitNonZero);
  registry.add(CompressOp::getOperationName(), emitCompress);
  registry.add(UniqueOp::getOperationName(), emitUnique);
  registry.add(NonMaxSuppressionOp::getOperationName(), emitNonMaxSuppression);
}

} // namespace sluice::codegen
