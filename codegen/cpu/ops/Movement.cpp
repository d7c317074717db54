//===- Movement.cpp - cpu emitters: shape and indexing ops ----------------===//
//
// Data movement for the cpu target: reshapes are byte copies; transpose,
// slice, expand and tile become one strided view of the input, collapsed to
// as few dims as possible at compile time and copied by
// sluice_strided_copy (or its tiled form when the output's innermost dim is
// not the input's contiguous one); pad goes through per-dim offset tables;
// gathers and scatters read their indices at run time and fail the run on
// one out of range. The templates live in sluice_gen/cpu_movement.h.
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

constexpr const char *kHeader = "sluice_gen/cpu_movement.h";


std::vector<int64_t> rowMajorStrides(ArrayRef<int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t d = (int64_t)shape.size() - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// `if (int32_t status = call) return status;`: a call that fails the run.
void checked(CpuOpContext &ctx, const std::string &call) {
  ctx.code.line("if (int32_t status = {0}) return status;", call);
}

/// Constant integer operand `i`, or an error naming what it is.
FailureOr<SmallVector<int64_t>> constantInts(Operation *op, unsigned i, StringRef what) {
  auto values = getConstantIntValues(op->getOperand(i));
  if (!values)
    return op->emitOpError("cpu target: ") << what << " must be a constant";
  return *values;
}

/// A copy of the whole input to the output (reshape and friends).
void emitByteCopy(CpuOpContext &ctx) {
  int64_t bytes = product(shapeOf(ctx.op->getResult(0))) *
                  storageBytes(elementOf(ctx.op->getResult(0)));
  if (bytes)
    ctx.code.line("if ((const void *){0} != (const void *){1}) memcpy({0}, {1}, {2});", ctx.out[0],
                  ctx.in[0], cInt64(bytes));
}

/// Copies the view (shape, strides, offset) of `src` into the contiguous
/// `dst`. Unit dims are dropped and neighbours that are contiguous in the
/// source merged, so the innermost loop is as long as it can be.
void emitStridedCopy(CpuOpContext &ctx, ArrayRef<int64_t> shape, ArrayRef<int64_t> strides,
                     int64_t offset, const std::string &src, const std::string &dst,
                     const std::string &type) {
  if (product(shape) == 0)
    return;
  std::vector<int64_t> dims, st;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1)
      continue;
    if (!dims.empty() && st.back() == strides[d] * shape[d]) {
      dims.back() *= shape[d];
      st.back() = strides[d];
      continue;
    }
    dims.push_back(shape[d]);
    st.push_back(strides[d]);
  }
  CodeWriter &w = ctx.code;
  if (dims.empty()) {
    w.line("{0}[0] = {1}[{2}];", dst, src, cInt64(offset));
    return;
  }
  if (dims.size() == 1 && st[0] == 1) {
    w.line("memcpy({0}, {1} + {2}, {3} * sizeof({4}));", dst, src, cInt64(offset), cInt64(dims[0]),
           type);
    return;
  }
  ctx.include(kHeader);
  int64_t rank = dims.size();
  // A transpose: the source's unit-stride dim is not innermost. Tile the
  // plane of that dim and the innermost one.
  int64_t unitDim = -1;
  for (int64_t d = 0; d + 1 < rank; ++d)
    if (st[d] == 1)
      unitDim = d;
  auto copy = w.block("");
  w.line("{0}", cInt64ArrayDecl("view_shape", dims));
  w.line("{0}", cInt64ArrayDecl("view_strides", st));
  if (unitDim >= 0 && st.back() != 1 && dims.back() >= 2 && dims[unitDim] >= 4)
    w.line("{0};", cCall("sluice_tiled_copy<" + type + ">",
                         {CpuOpContext::threads, cInt64(rank), "view_shape", "view_strides",
                          cInt64(offset), cInt64(unitDim), src, dst}));
  else
    w.line("{0};", cCall("sluice_strided_copy<" + type + ">",
                         {CpuOpContext::threads, cInt64(rank), "view_shape", "view_strides",
                          cInt64(offset), src, dst}));
}

//===----------------------------------------------------------------------===//
// Views: transpose, slice, expand, tile
//===----------------------------------------------------------------------===//

LogicalResult emitTranspose(CpuOpContext &ctx) {
  auto op = cast<TransposeOp>(ctx.op);
  std::vector<int64_t> inStrides = rowMajorStrides(shapeOf(op.getInput())), strides;
  for (int64_t p : op.getPerm())
    strides.push_back(inStrides[p]);
  emitStridedCopy(ctx, shapeOf(op.getOutput()), strides, 0, ctx.in[0], ctx.out[0],
                  typeOf(op.getOutput()));
  return success();
}

LogicalResult emitSlice(CpuOpContext &ctx) {
  Operation *op = ctx.op;
  ArrayRef<int64_t> inShape = shapeOf(op->getOperand(0)), outShape = shapeOf(op->getResult(0));
  auto starts = constantInts(op, 1, "slice starts");
  auto ends = constantInts(op, 2, "slice ends");
  auto axes = constantInts(op, 3, "slice axes");
  auto steps = constantInts(op, 4, "slice steps");
  if (failed(starts) || failed(ends) || failed(axes) || failed(steps))
    return failure();
  int64_t rank = inShape.size();
  std::vector<int64_t> inStrides = rowMajorStrides(inShape), strides = inStrides;
  int64_t offset = 0;
  for (size_t i = 0; i < axes->size(); ++i) {
    auto a = axisOf(op, (*axes)[i], rank);
    if (failed(a))
      return failure();
    if ((*steps)[i] == 0)
      return op->emitOpError("cpu target: slice step 0");
    auto [first, count] = sliceRange(inShape[*a], (*starts)[i], (*ends)[i], (*steps)[i]);
    if (count != outShape[*a])
      return op->emitOpError("cpu target: slice length disagrees with the result type");
    if (count > 0)
      offset += first * inStrides[*a];
    strides[*a] = inStrides[*a] * (*steps)[i];
  }
  emitStridedCopy(ctx, outShape, strides, offset, ctx.in[0], ctx.out[0],
                  typeOf(op->getResult(0)));
  return success();
}

LogicalResult emitExpand(CpuOpContext &ctx) {
  ArrayRef<int64_t> inShape = shapeOf(ctx.op->getOperand(0)),
                    outShape = shapeOf(ctx.op->getResult(0));
  int64_t rank = outShape.size(), lead = rank - (int64_t)inShape.size();
  if (lead < 0)
    return ctx.op->emitOpError("cpu target: expand to a lower rank");
  std::vector<int64_t> inStrides = rowMajorStrides(inShape), strides(rank, 0);
  for (int64_t d = 0; d < (int64_t)inShape.size(); ++d)
    strides[d + lead] = inShape[d] == 1 ? 0 : inStrides[d];
  emitStridedCopy(ctx, outShape, strides, 0, ctx.in[0], ctx.out[0],
                  typeOf(ctx.op->getResult(0)));
  return success();
}

/// Tile as a view of twice the rank: output dim d is (repeat, input dim d),
/// the repeat with stride 0.
LogicalResult emitTile(CpuOpContext &ctx) {
  ArrayRef<int64_t> inShape = shapeOf(ctx.op->getOperand(0)),
                    outShape = shapeOf(ctx.op->getResult(0));
  std::vector<int64_t> inStrides = rowMajorStrides(inShape), shape, strides;
  for (size_t d = 0; d < inShape.size(); ++d) {
    if (inShape[d] == 0)
      return success(); // empty result
    shape.push_back(outShape[d] / inShape[d]);
    strides.push_back(0);
    shape.push_back(inShape[d]);
    strides.push_back(inStrides[d]);
  }
  emitStridedCopy(ctx, shape, strides, 0, ctx.in[0], ctx.out[0],
                  typeOf(ctx.op->getResult(0)));
  return success();
}

//===----------------------------------------------------------------------===//
// Reshapes, joins, splits
//===----------------------------------------------------------------------===//

LogicalResult emitReshape(CpuOpContext &ctx) {
  emitByteCopy(ctx);
  return success();
}

LogicalResult emitConcat(CpuOpContext &ctx) {
  auto op = cast<ConcatOp>(ctx.op);
  ArrayRef<int64_t> outShape = shapeOf(op.getOutput());
  auto axis = axisOf(op, op.getAxis(), outShape.size());
  if (failed(axis))
    return failure();
  int64_t outer = product(outShape, 0, *axis), inner = product(outShape, *axis + 1);
  int64_t outRow = outShape[*axis] * inner, offset = 0;
  std::string type = typeOf(op.getOutput());
  ctx.include(kHeader);
  for (auto [i, input] : llvm::enumerate(op.getInputs())) {
    int64_t length = shapeOf(input)[*axis];
    if (length * inner * outer > 0)
      ctx.code.line("{0};", cCall("sluice_copy_rows<" + type + ">",
                                  {CpuOpContext::threads, cInt64(outer), cInt64(length * inner),
                                   ctx.in[i], cInt64(length * inner),
                                   ctx.out[0] + " + " + cInt64(offset * inner), cInt64(outRow)}));
    offset += length;
  }
  return success();
}

LogicalResult emitSplit(CpuOpContext &ctx) {
  auto op = cast<SplitOp>(ctx.op);
  ArrayRef<int64_t> inShape = shapeOf(op.getInput());
  auto axis = axisOf(op, op.getAxis(), inShape.size());
  if (failed(axis))
    return failure();
  int64_t outer = product(inShape, 0, *axis), inner = product(inShape, *axis + 1);
  int64_t inRow = inShape[*axis] * inner, offset = 0;
  std::string type = typeOf(op.getInput());
  ctx.include(kHeader);
  for (auto [i, result] : llvm::enumerate(op.getOutputs())) {
    int64_t length = shapeOf(result)[*axis];
    if (length * inner * outer > 0)
      ctx.code.line("{0};", cCall("sluice_copy_rows<" + type + ">",
                                  {CpuOpContext::threads, cInt64(outer), cInt64(length * inner),
                                   ctx.in[0] + " + " + cInt64(offset * inner), cInt64(inRow),
                                   ctx.out[i], cInt64(length * inner)}));
    offset += length;
  }
  if (offset != inShape[*axis])
    return op.emitOpError("cpu target: split pieces do not cover the dim");
  return success();
}

//===----------------------------------------------------------------------===//
// Pad and creation ops
//===----------------------------------------------------------------------===//

/// Pad through per-dim tables: entry o of dim d's table is the source offset
/// (index times stride) that output position o reads, -1 in the padding of
/// constant mode.
LogicalResult emitPad(CpuOpContext &ctx) {
  auto op = cast<PadOp>(ctx.op);
  ArrayRef<int64_t> inShape = shapeOf(op.getInput()), outShape = shapeOf(op.getOutput());
  auto pads = constantInts(op, 1, "pads");
  if (failed(pads))
    return failure();
  int64_t rank = inShape.size();
  if ((int64_t)pads->size() != 2 * rank)
    return op.emitOpError("cpu target: pads do not match the rank");
  std::string type = typeOf(op.getOutput());
  std::string fill = storeExpr(elementOf(op.getOutput()), "0");
  if (op.getConstantValue()) {
    if (product(shapeOf(op.getConstantValue())) > 1)
      return op.emitOpError("cpu target: constant_value must hold one element");
    if (product(shapeOf(op.getConstantValue())) == 1) {
      if (elementOf(op.getConstantValue()) != elementOf(op.getOutput()))
        return op.emitOpError("cpu target: constant_value type differs from the input's");
      fill = ctx.in[2] + "[0]";
    }
  }
  if (product(outShape) == 0)
    return success();
  if (rank == 0) {
    ctx.code.line("{0}[0] = {1}[0];", ctx.out[0], ctx.in[0]);
    return success();
  }
  std::vector<int64_t> inStrides = rowMajorStrides(inShape), starts, table;
  PadMode mode = op.getMode();
  for (int64_t d = 0; d < rank; ++d) {
    starts.push_back(table.size());
    int64_t dim = inShape[d], before = (*pads)[d];
    for (int64_t o = 0; o < outShape[d]; ++o) {
      int64_t i = o - before;
      if (i < 0 || i >= dim) {
        if (mode == PadMode::constant || dim == 0) {
          table.push_back(-1);
          continue;
        }
        if (mode == PadMode::edge)
          i = std::clamp<int64_t>(i, 0, dim - 1);
        else if (mode == PadMode::wrap)
          i = ((i % dim) + dim) % dim;
        else if (dim == 1)
          i = 0;
        else {
          i = std::abs(i) % (2 * (dim - 1));
          if (i >= dim)
            i = 2 * (dim - 1) - i;
        }
      }
      table.push_back(i * inStrides[d]);
    }
  }
  // The longest run of the innermost dim's table reading consecutive
  // elements: the interior that is copied as a block.
  int64_t inner = outShape.back(), base = starts.back(), runBegin = 0, runEnd = 0;
  for (int64_t i = 0; i < inner;) {
    int64_t j = i + 1;
    if (table[base + i] >= 0)
      while (j < inner && table[base + j] == table[base + j - 1] + 1)
        ++j;
    if (table[base + i] >= 0 && j - i > runEnd - runBegin) {
      runBegin = i;
      runEnd = j;
    }
    i = j;
  }
  ctx.include(kHeader);
  ctx.code.line("{0}", cInt64ArrayDecl("pad_shape", outShape));
  ctx.code.line("{0}", cInt64ArrayDecl("pad_table_start", starts));
  ctx.code.line("{0}", cInt64ArrayDecl("pad_table", table));
  ctx.code.line(
      "{0};", cCall("sluice_table_gather<" + type + ">",
                    {CpuOpContext::threads, cInt64(rank), "pad_shape", "pad_table_start",
                     "pad_table", cInt64(runBegin), cInt64(runEnd), fill, ctx.in[0], ctx.out[0]}));
  return success();
}

LogicalResult emitConstantOfShape(CpuOpContext &ctx) {
  auto op = cast<ConstantOfShapeOp>(ctx.op);
  auto value = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!value || value.getNumElements() != 1)
    return op.emitOpError("cpu target: value must be a dense one-element constant");
  Type et = elementOf(op.getOutput());
  if (value.getElementType() != et)
    return op.emitOpError("cpu target: value type differs from the result's");
  int64_t n = product(shapeOf(op.getOutput()));
  if (n == 0)
    return success();
  ctx.include(kHeader);
  std::string type = typeOf(op.getOutput());
  ctx.code.line("{0};",
                cCall("sluice_fill<" + type + ">", {CpuOpContext::threads, cInt64(n),
                                                    storeExpr(et, literal(value, 0)), ctx.out[0]}));
  return success();
}

LogicalResult emitRange(CpuOpContext &ctx) {
  Type et = elementOf(ctx.op->getResult(0));
  int64_t n = product(shapeOf(ctx.op->getResult(0)));
  std::string math = isa<FloatType>(et) ? "double" : "int64_t";
  std::string load0 = "(" + math + ")sluice_load(" + ctx.in[0] + "[0])",
              load2 = "(" + math + ")sluice_load(" + ctx.in[2] + "[0])";
  CodeWriter &w = ctx.code;
  auto range = w.block("");
  w.line("const {0} start = {1}, delta = {2};", math, load0, load2);
  w.line("for (int64_t i = 0; i < {0}; ++i)", cInt64(n));
  auto loop = w.indented();
  w.line("{0}[i] = {1};", ctx.out[0],
         storeExpr(et, math == "double"
                           ? "start + (double)i * delta"
                           : "(int64_t)((uint64_t)start + (uint64_t)i * (uint64_t)delta)"));
  return success();
}

LogicalResult emitTrilu(CpuOpContext &ctx) {
  auto op = cast<TriluOp>(ctx.op);
  ArrayRef<int64_t> shape = shapeOf(op.getInput());
  int64_t rank = shape.size();
  if (rank < 2)
    return op.emitOpError("cpu target: trilu needs rank >= 2");
  if (product(shape) == 0)
    return success();
  std::string k = "0";
  if (op.getK()) {
    if (product(shapeOf(op.getK())) != 1)
      return op.emitOpError("cpu target: k must be a scalar");
    k = "(int64_t)" + ctx.in[1] + "[0]";
  }
  ctx.include(kHeader);
  ctx.code.line("{0};", cCall("sluice_trilu<" + typeOf(op.getOutput()) + ">",
                              {CpuOpContext::threads, cInt64(product(shape, 0, rank - 2)),
                               cInt64(shape[rank - 2]), cInt64(shape[rank - 1]), k,
                               op.getUpper() ? "true" : "false", ctx.in[0], ctx.out[0]}));
  return success();
}

LogicalResult emitReverseSequence(CpuOpContext &ctx) {
  auto op = cast<ReverseSequenceOp>(ctx.op);
  ArrayRef<int64_t> shape = shapeOf(op.getInput());
  int64_t rank = shape.size();
  if (rank < 2)
    return op.emitOpError("cpu target: reverse_sequence needs rank >= 2");
  auto batch = axisOf(op, op.getBatchAxis(), rank), time = axisOf(op, op.getTimeAxis(), rank);
  if (failed(batch) || failed(time))
    return failure();
  if (product(shape) == 0)
    return success();
  ctx.include(kHeader);
  ctx.code.line("{0}", cInt64ArrayDecl("rs_shape", shape));
  checked(ctx, cCall("sluice_reverse_sequence<" + typeOf(op.getOutput()) + ">",
                     {"args", cStringLiteral(ctx.kernelName), cInt64(rank), "rs_shape",
                      cInt64(*batch), cInt64(*time), ctx.in[1], ctx.in[0], ctx.out[0]}));
  return success();
}

LogicalResult emitShape(CpuOpContext &ctx) {
  auto op = cast<ShapeOp>(ctx.op);
  ArrayRef<int64_t> shape = shapeOf(op.getInput());
  auto [start, end] = shapeRange(shape.size(), op.getStart(),
                                 op.getEnd() ? std::optional<int64_t>((int64_t)*op.getEnd())
                                             : std::nullopt);
  for (int64_t i = start; i < end; ++i)
    ctx.code.line("{0}[{1}] = {2};", ctx.out[0], i - start, cInt64(shape[i]));
  return success();
}

//===----------------------------------------------------------------------===//
// Gathers, scatters, one-hot
//===----------------------------------------------------------------------===//

LogicalResult emitGather(CpuOpContext &ctx) {
  auto op = cast<GatherOp>(ctx.op);
  ArrayRef<int64_t> inShape = shapeOf(op.getInput());
  auto axis = axisOf(op, op.getAxis(), inShape.size());
  if (failed(axis))
    return failure();
  int64_t count = product(shapeOf(op.getIndices()));
  int64_t outer = product(inShape, 0, *axis), inner = product(inShape, *axis + 1);
  if (product(shapeOf(op.getOutput())) == 0 && count == 0)
    return success();
  ctx.include(kHeader);
  checked(ctx, cCall("sluice_gather<" + typeOf(op.getOutput()) + ">",
                     {"args", cStringLiteral(ctx.kernelName), cInt64(outer), cInt64(inShape[*axis]),
                      cInt64(inner), cInt64(count), ctx.in[1], ctx.in[0], ctx.out[0]}));
  return success();
}

LogicalResult emitGatherElements(CpuOpContext &ctx) {
  auto op = cast<GatherElementsOp>(ctx.op);
  ArrayRef<int64_t> inShape = shapeOf(op.getInput()), shape = shapeOf(op.getIndices());
  int64_t rank = inShape.size();
  auto axis = axisOf(op, op.getAxis(), rank);
  if (failed(axis))
    return failure();
  if ((int64_t)shape.size() != rank)
    return op.emitOpError("cpu target: indices rank differs from the input's");
  if (product(shape) == 0)
    return success();
  ctx.include(kHeader);
  ctx.code.line("{0}", cInt64ArrayDecl("ge_shape", shape));
  ctx.code.line("{0}", cInt64ArrayDecl("ge_strides", rowMajorStrides(inShape)));
  checked(ctx,
          cCall("sluice_gather_elements<" + typeOf(op.getOutput()) + ">",
                {"args", cStringLiteral(ctx.kernelName), cInt64(rank), "ge_shape", "ge_strides",
                 cInt64(*axis), cInt64(inShape[*axis]), ctx.in[1], ctx.in[0], ctx.out[0]}));
  return success();
}

LogicalResult emitGatherND(CpuOpContext &ctx) {
  auto op = cast<GatherNDOp>(ctx.op);
  ArrayRef<int64_t> x = shapeOf(op.getInput()), ind = shapeOf(op.getIndices());
  int64_t batch = op.getBatchDims(), r = x.size(), q = ind.size();
  if (q < 1 || batch >= std::min(q, r))
    return op.emitOpError("cpu target: batch_dims does not fit the operand ranks");
  int64_t k = ind[q - 1];
  if (k < 1 || batch + k > r)
    return op.emitOpError("cpu target: index tuples do not fit the input rank");
  if (product(shapeOf(op.getOutput())) == 0)
    return success();
  ctx.include(kHeader);
  ctx.code.line("{0}", cInt64ArrayDecl("nd_dims", x.slice(batch, k)));
  checked(ctx, cCall("sluice_gather_nd<" + typeOf(op.getOutput()) + ">",
                     {"args", cStringLiteral(ctx.kernelName), cInt64(product(x, 0, batch)),
                      cInt64(product(ind, batch, q - 1)), cInt64(k), "nd_dims",
                      cInt64(product(x, batch + k)), cInt64(product(x, batch)), ctx.in[1],
                      ctx.in[0], ctx.out[0]}));
  return success();
}

std::string reductionCode(std::optional<ReduceKind> kind) {
  if (!kind)
    return "SLUICE_SCATTER_NONE";
  switch (*kind) {
  case ReduceKind::sum: return "SLUICE_SCATTER_ADD";
  case ReduceKind::prod: return "SLUICE_SCATTER_MUL";
  case ReduceKind::max: return "SLUICE_SCATTER_MAX";
  case ReduceKind::min: return "SLUICE_SCATTER_MIN";
  default: return "";
  }
}

LogicalResult emitScatterElements(CpuOpContext &ctx) {
  auto op = cast<ScatterElementsOp>(ctx.op);
  ArrayRef<int64_t> inShape = shapeOf(op.getInput()), shape = shapeOf(op.getIndices());
  int64_t rank = inShape.size();
  auto axis = axisOf(op, op.getAxis(), rank);
  if (failed(axis))
    return failure();
  std::string reduction = reductionCode(op.getReduction());
  if (reduction.empty())
    return op.emitOpError("cpu target: unsupported scatter reduction");
  if ((int64_t)shape.size() != rank || shape != shapeOf(op.getUpdates()))
    return op.emitOpError("cpu target: indices and updates must share a shape of the input's rank");
  ctx.include(kHeader);
  ctx.code.line("{0}", cInt64ArrayDecl("se_shape", shape));
  ctx.code.line("{0}", cInt64ArrayDecl("se_strides", rowMajorStrides(inShape)));
  checked(ctx, cCall("sluice_scatter_elements<" + typeOf(op.getOutput()) + ">",
                     {"args", cStringLiteral(ctx.kernelName), cInt64(product(inShape)),
                      cInt64(rank), "se_shape", "se_strides", cInt64(*axis), cInt64(inShape[*axis]),
                      reduction, ctx.in[0], ctx.in[1], ctx.in[2], ctx.out[0]}));
  return success();
}

LogicalResult emitScatterND(CpuOpContext &ctx) {
  auto op = cast<ScatterNDOp>(ctx.op);
  ArrayRef<int64_t> x = shapeOf(op.getInput()), ind = shapeOf(op.getIndices());
  int64_t r = x.size(), q = ind.size();
  if (q < 1 || ind[q - 1] > r)
    return op.emitOpError("cpu target: index tuples do not fit the input rank");
  int64_t k = ind[q - 1];
  std::string reduction = reductionCode(op.getReduction());
  if (reduction.empty())
    return op.emitOpError("cpu target: unsupported scatter reduction");
  ctx.include(kHeader);
  ctx.code.line("{0}", cInt64ArrayDecl("nd_dims", x.take_front(k)));
  checked(ctx, cCall("sluice_scatter_nd<" + typeOf(op.getOutput()) + ">",
                     {"args", cStringLiteral(ctx.kernelName), cInt64(product(x)),
                      cInt64(product(ind, 0, q - 1)), cInt64(k), "nd_dims", cInt64(product(x, k)),
                      reduction, ctx.in[0], ctx.in[1], ctx.in[2], ctx.out[0]}));
  return success();
}

LogicalResult emitOneHot(CpuOpContext &ctx) {
  auto op = cast<OneHotOp>(ctx.op);
  ArrayRef<int64_t> ind = shapeOf(op.getIndices()), outShape = shapeOf(op.getOutput());
  int64_t rank = ind.size() + 1;
  auto axis = axisOf(op, op.getAxis(), rank);
  if (failed(axis))
    return failure();
  if (product(shapeOf(op.getValues())) != 2)
    return op.emitOpError("cpu target: values must hold [off, on]");
  if (product(outShape) == 0)
    return success();
  ctx.include(kHeader);
  ctx.code.line(
      "{0};", cCall("sluice_one_hot<" + typeOf(op.getOutput()) + ">",
                    {CpuOpContext::threads, cInt64(product(ind, 0, *axis)), cInt64(outShape[*axis]),
                     cInt64(product(ind, *axis)), ctx.in[0], ctx.in[2], ctx.out[0]}));
  return success();
}

} // namespace

void registerCpuMovementEmitters(CpuOpRegistry &registry) {
  registry.add(ReshapeOp::getOperationName(), emitReshape);
  registry.add(SqueezeOp::getOperationName(), emitReshape);
  registry.add(UnsqueezeOp::getOperationName(), emitReshape);
  registry.add(TransposeOp::getOperationName(), emitTranspose);
  registry.add(SliceOp::getOperationName(), emitSlice);
  registry.add(ConcatOp::getOperationName(), emitConcat);
  registry.add(SplitOp::getOperationName(), emitSplit);
  registry.add(ExpandOp::getOperationName(), emitExpand);
  registry.add(TileOp::getOperationName(), emitTile);
  registry.add(PadOp::getOperationName(), emitPad);
  registry.add(ConstantOfShapeOp::getOperationName(), emitConstantOfShape);
  registry.add(RangeOp::getOperationName(), emitRange);
  registry.add(TriluOp::getOperationName(), emitTrilu);
  registry.add(ReverseSequenceOp::getOperationName(), emitReverseSequence);
  registry.add(ShapeOp::getOperationName(), emitShape);
  registry.add(GatherOp::getOperationName(), emitGather);
  registry.add(GatherElementsOp::getOperationName(), emitGatherElements);
  registry.add(GatherNDOp::getOperationName(), emitGatherND);
  registry.add(ScatterElementsOp::getOperationName(), emitScatterElements);
  registry.add(ScatterNDOp::getOperationName(), emitScatterND);
  registry.add(OneHotOp::getOperationName(), emitOneHot);
}

} // namespace sluice::codegen
