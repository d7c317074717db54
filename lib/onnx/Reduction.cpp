//===- Reduction.cpp - ONNX reductions, softmax, top-k, scans -------------===//

#include "lib/onnx/Binder.h"

#include "dialects/sluice/SluiceOps.h"

using namespace mlir;
using namespace sluice;

namespace sluice::onnx_import {
namespace {

/// Axes come from the attribute before `inputSince`, from input 1 after.
Value reduceAxes(Binder &b, int inputSince) {
  if (b.opset() >= inputSince)
    return b.input(1);
  if (!b.hasAttr("axes"))
    return Value();
  return b.constI64(b.attrInts("axes"));
}

template <ReduceKind kind, int axesInputSince>
LogicalResult reduceHandler(Binder &b) {
  Value axes = reduceAxes(b, axesInputSince);
  return b.output(b.create<ReduceOp>(b.input(0), axes, kind,
                                     b.attrInt("keepdims", 1) != 0,
                                     b.attrInt("noop_with_empty_axes", 0) != 0));
}

/// Softmax before opset 13 flattens to 2-D at `axis` (default 1); from 13 on
/// it normalizes along `axis` (default -1).
template <bool log>
LogicalResult softmaxHandler(Binder &b) {
  Value x = b.input(0);
  if (b.opset() >= 13)
    return b.output(b.create<SoftmaxOp>(x, b.attrInt("axis", -1), log));
  auto type = b.rankedType(0);
  if (!type || !type.hasStaticShape())
    return b.fail("Softmax before opset 13 needs a static input shape");
  int64_t axis = b.attrInt("axis", 1);
  if (axis < 0)
    axis += type.getRank();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < type.getRank(); ++i)
    (i < axis ? outer : inner) *= type.getDimSize(i);
  Value flat = b.create<ReshapeOp>(x, b.constI64({outer, inner}), false);
  Value y = b.create<SoftmaxOp>(flat, int64_t(1), log);
  return b.output(b.create<ReshapeOp>(y, b.constI64(type.getShape()), false));
}

} // namespace

void registerReductionHandlers(OpRegistry &r) {
  r.on("ReduceSum", 1, reduceHandler<ReduceKind::sum, 13>);
  r.on("ReduceMean", 1, reduceHandler<ReduceKind::mean, 18>);
  r.on("ReduceMax", 1, reduceHandler<ReduceKind::max, 18>);
  r.on("ReduceMin", 1, reduceHandler<ReduceKind::min, 18>);
  r.on("ReduceProd", 1, reduceHandler<ReduceKind::prod, 18>);
  r.on("Softmax", 1, softmaxHandler<false>);
  r.on("LogSoftmax", 1, softmaxHandler<true>);
}

} // namespace sluice::onnx_import
