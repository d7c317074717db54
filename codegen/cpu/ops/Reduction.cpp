//===- Reduction.cpp - cpu emitters: reductions and normalizations -------===//
//
// Reduce, softmax, argmax/argmin, topk and cumsum, plus the normalizations of
// the linalg family (layer, instance, group and batch norm, LRN): each op
// becomes one call of a template of sluice_gen/cpu_reduce.h with its shape
// folded at compile time into an "outer x extent x inner" view. Reduce over
// axes that are not one contiguous run falls back to a strided walk.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/CpuEmitter.h"

#include "codegen/common/CodeWriter.h"
#include "codegen/common/Format.h"
#include "codegen/common/ScalarEmitter.h"
#include "dialects/sluice/SluiceOps.h"
#include "dialects/sluice/SluiceTypes.h"

#include <cstdio>

using namespace mlir;

namespace sluice::codegen {
namespace {

constexpr const char *kHeader = "sluice_gen/cpu_reduce.h";

/// `outer, extent, inner` as the templates take them (int64_t parameters).
std::string dims3(const AxisSplit &s) {
  return cIntOrInt64(s.outer) + ", " + cIntOrInt64(s.extent) + ", " + cIntOrInt64(s.inner);
}

//===----------------------------------------------------------------------===//
// reduce
//===----------------------------------------------------------------------===//

LogicalResult emitReduce(CpuOpContext &ctx) {
  auto reduce = cast<ReduceOp>(ctx.op);
  Value input = reduce.getInput();
  ArrayRef<int64_t> shape = shapeOf(input);
  int64_t rank = shape.size();
  SmallVector<int64_t> axes;
  if (reduce.getAxes()) {
    auto values = getConstantIntValues(reduce.getAxes());
    if (!values)
      return reduce.emitOpError("cpu target: reduce axes must be constant");
    axes.assign(values->begin(), values->end());
  }
  std::vector<bool> reduced(rank, axes.empty() && !reduce.getNoopWithEmptyAxes());
  for (int64_t axis : axes) {
    auto a = axisOf(reduce, axis, rank);
    if (failed(a))
      return failure();
    reduced[*a] = true;
  }
  // Collapse: drop size-1 dims, merge neighbours of the same kind.
  SmallVector<int64_t> sizes;
  SmallVector<bool> kinds;
  for (int64_t d = 0; d < rank; ++d) {
    if (shape[d] == 1)
      continue;
    if (!sizes.empty() && kinds.back() == reduced[d])
      sizes.back() *= shape[d];
    else {
      sizes.push_back(shape[d]);
      kinds.push_back(reduced[d]);
    }
  }
  int reducedRuns = llvm::count(kinds, true);
  std::string kind = std::to_string((int)reduce.getKind());
  std::string types = kind + ", " + storageType(elementOf(input)) + ", " +
                      storageType(elementOf(reduce.getResult()));
  ctx.include(kHeader);
  CodeWriter &w = ctx.code;
  if (reducedRuns <= 1) {
    AxisSplit split;
    bool seen = false;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (kinds[i])
        (split.extent = sizes[i]), seen = true;
      else
        (seen ? split.inner : split.outer) *= sizes[i];
    }
    w.line("{0};", cCall("sluice_reduce_3d<" + types + ">",
                         {CpuOpContext::threads, ctx.in[0], ctx.out[0], dims3(split)}));
    return success();
  }
  SmallVector<int64_t> strides(sizes.size(), 1);
  for (int64_t i = (int64_t)sizes.size() - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * sizes[i + 1];
  SmallVector<int64_t> keptDims, keptStrides, redDims, redStrides;
  for (size_t i = 0; i < sizes.size(); ++i) {
    (kinds[i] ? redDims : keptDims).push_back(sizes[i]);
    (kinds[i] ? redStrides : keptStrides).push_back(strides[i]);
  }
  w.line("{0}", cInt64ArrayDecl("kept_dims", keptDims));
  w.line("{0}", cInt64ArrayDecl("kept_strides", keptStrides));
  w.line("{0}", cInt64ArrayDecl("red_dims", redDims));
  w.line("{0}", cInt64ArrayDecl("red_strides", redStrides));
  w.line("{0};", cCall("sluice_reduce_strided<" + types + ">",
                       {CpuOpContext::threads, ctx.in[0], ctx.out[0],
                        cIntOrInt64(product(keptDims)), decimal(keptDims.size()), "kept_dims",
                        "kept_strides", decimal(redDims.size()), "red_dims", "red_strides"}));
  return success();
}

//===----------------------------------------------------------------------===//
// softmax, argmax/argmin, topk, cumsum
//===----------------------------------------------------------------------===//

LogicalResult emitSoftmax(CpuOpContext &ctx) {
  auto softmax = cast<SoftmaxOp>(ctx.op);
  ArrayRef<int64_t> shape = shapeOf(softmax.getInput());
  auto axis = axisOf(softmax, softmax.getAxis(), shape.size());
  if (failed(axis))
    return failure();
  ctx.include(kHeader);
  ctx.code.line("{0};", cCall("sluice_softmax<" + storageType(elementOf(softmax.getInput())) + ">",
                              {CpuOpContext::threads, ctx.in[0], ctx.out[0],
                               dims3(splitAt(shape, *axis)), softmax.getLog() ? "true" : "false"}));
  return success();
}

template <typename OpTy, bool isMax> LogicalResult emitArgReduce(CpuOpContext &ctx) {
  auto op = cast<OpTy>(ctx.op);
  ArrayRef<int64_t> shape = shapeOf(op.getInput());
  auto axis = axisOf(op, op.getAxis(), shape.size());
  if (failed(axis))
    return failure();
  AxisSplit split = splitAt(shape, *axis);
  if (split.extent == 0)
    return op.emitOpError("cpu target: cannot reduce an empty dim to an index");
  ctx.include(kHeader);
  ctx.code.line("{0};", cCall(std::string("sluice_arg_reduce<") + (isMax ? "true" : "false") +
                                  ", " + storageType(elementOf(op.getInput())) + ">",
                              {CpuOpContext::threads, ctx.in[0], ctx.out[0], dims3(split),
                               op.getSelectLastIndex() ? "true" : "false"}));
  return success();
}

LogicalResult emitTopK(CpuOpContext &ctx) {
  auto topk = cast<TopKOp>(ctx.op);
  ArrayRef<int64_t> shape = shapeOf(topk.getInput());
  auto axis = axisOf(topk, topk.getAxis(), shape.size());
  if (failed(axis))
    return failure();
  int64_t k = shapeOf(topk.getValues())[*axis];
  AxisSplit split = splitAt(shape, *axis);
  if (k < 0 || k > split.extent)
    return topk.emitOpError("cpu target: k out of range");
  ctx.include(kHeader);
  ctx.code.line("{0};",
                cCall("sluice_topk<" + storageType(elementOf(topk.getInput())) + ">",
                      {CpuOpContext::threads, ctx.in[0], ctx.out[0], ctx.out[1], dims3(split),
                       cIntOrInt64(k), topk.getLargest() ? "true" : "false"}));
  return success();
}

LogicalResult emitCumSum(CpuOpContext &ctx) {
  auto cumsum = cast<CumSumOp>(ctx.op);
  ArrayRef<int64_t> shape = shapeOf(cumsum.getInput());
  std::string flags = std::string(cumsum.getExclusive() ? "true" : "false") + ", " +
                      (cumsum.getReverse() ? "true" : "false");
  auto call = [&](const std::string &dims) {
    ctx.code.line("{0};", cCall("sluice_cumsum<" + storageType(elementOf(cumsum.getInput())) + ">",
                                {CpuOpContext::threads, ctx.in[0], ctx.out[0], dims, flags}));
  };
  ctx.include(kHeader);
  auto axisValues = getConstantIntValues(cumsum.getAxis());
  if (axisValues) {
    if (axisValues->size() != 1)
      return cumsum.emitOpError("cpu target: cumsum axis must hold one value");
    auto axis = axisOf(cumsum, (*axisValues)[0], shape.size());
    if (failed(axis))
      return failure();
    call(dims3(splitAt(shape, *axis)));
    return success();
  }
  // An axis known only at run time (a graph input): split the shape then.
  if (product(shapeOf(cumsum.getAxis())) != 1)
    return cumsum.emitOpError("cpu target: cumsum axis must hold one value");
  int64_t rank = shape.size();
  CodeWriter &w = ctx.code;
  w.line("{0}", cInt64ArrayDecl("shape", shape));
  w.line("int64_t axis = (int64_t){0}[0];", ctx.in[1]);
  w.line("if (axis < 0) axis += {0};", cIntOrInt64(rank));
  w.line("if (axis < 0 || axis >= {0}) {1}", cIntOrInt64(rank),
         ctx.fail("\"cumsum axis out of range\""));
  w.line("int64_t outer = 1, extent = 1, inner = 1;");
  w.line("for (int64_t d = 0; d < {0}; ++d) (d < axis ? outer : d == axis ? extent : inner) *= "
         "shape[d];",
         cIntOrInt64(rank));
  call("outer, extent, inner");
  return success();
}

//===----------------------------------------------------------------------===//
// normalizations
//===----------------------------------------------------------------------===//

/// Whether `param` holds one value per element of `dims` in their order
/// (possibly with leading 1s), so it can be read without broadcasting.
bool coversExactly(Value param, ArrayRef<int64_t> dims) {
  ArrayRef<int64_t> p = shapeOf(param);
  while (!p.empty() && p.front() == 1 && p.size() > dims.size())
    p = p.drop_front();
  SmallVector<int64_t> a, b;
  for (int64_t d : p)
    if (d != 1)
      a.push_back(d);
  for (int64_t d : dims)
    if (d != 1)
      b.push_back(d);
  return a == b && product(shapeOf(param)) == product(dims);
}

/// The index table of a norm's scale or bias `param` over the normalized
/// dims: emits `static const int64_t <name>_index[]` (element i of a row
/// reads param[table[i]]) and returns its name, or "nullptr" when `param`
/// covers the normalized dims exactly. Parameters that broadcast (rare) are
/// read through such compile-time tables; nothing is written at run time,
/// so concurrent runs stay safe.
std::string emitParamIndex(CpuOpContext &ctx, Value param,
                           ArrayRef<int64_t> normalized, const std::string &name) {
  if (coversExactly(param, normalized))
    return "nullptr";
  ArrayRef<int64_t> p = shapeOf(param);
  SmallVector<int64_t> strides(normalized.size(), 0);
  int64_t stride = 1;
  for (int64_t i = (int64_t)p.size() - 1, d = (int64_t)normalized.size() - 1; i >= 0 && d >= 0;
       --i, --d) {
    strides[d] = p[i] == 1 ? 0 : stride;
    stride *= p[i];
  }
  SmallVector<int64_t> table(product(normalized));
  for (int64_t i = 0; i < (int64_t)table.size(); ++i) {
    int64_t rest = i, at = 0;
    for (int64_t d = (int64_t)normalized.size() - 1; d >= 0; --d) {
      at += (rest % normalized[d]) * strides[d];
      rest /= normalized[d];
    }
    table[i] = at;
  }
  ctx.code.line("{0}", cInt64ArrayDecl(name + "_index", table));
  return name + "_index";
}

LogicalResult emitLayerNorm(CpuOpContext &ctx) {
  auto ln = cast<LayerNormOp>(ctx.op);
  ArrayRef<int64_t> shape = shapeOf(ln.getInput());
  auto axis = axisOf(ln, ln.getAxis(), shape.size());
  if (failed(axis))
    return failure();
  ArrayRef<int64_t> normalized = shape.drop_front(*axis);
  int64_t rows = product(shape.take_front(*axis)), count = product(normalized);
  std::string scale = ctx.in[1], bias = ln.getBias() ? ctx.in[2] : "nullptr";
  if (count > (1 << 22) && (!coversExactly(ln.getScale(), normalized) ||
                            (ln.getBias() && !coversExactly(ln.getBias(), normalized))))
    return ln.emitOpError("cpu target: broadcast layer_norm parameters over too many elements");
  std::string scaleIndex = emitParamIndex(ctx, ln.getScale(), normalized, "scale");
  std::string biasIndex =
      ln.getBias() ? emitParamIndex(ctx, ln.getBias(), normalized, "bias") : "nullptr";
  std::string inT = storageType(elementOf(ln.getInput())),
              pT = storageType(elementOf(ln.getScale()));
  if (ln.getBias() && storageType(elementOf(ln.getBias())) != pT)
    return ln.emitOpError("cpu target: layer_norm scale and bias types differ");
  ctx.include(kHeader);
  ctx.code.line("{0};", cCall("sluice_layer_norm<" + inT + ", " + pT + ">",
                              {CpuOpContext::threads, ctx.in[0], scale,
                               ln.getBias() ? bias : "(const " + pT + " *)nullptr", ctx.out[0],
                               ctx.out[1], ctx.out[2], cIntOrInt64(rows), cIntOrInt64(count),
                               cFloatLiteral(ln.getEpsilon()), scaleIndex, biasIndex}));
  return success();
}

/// rms_norm: rows over dims [axis, rank), vectorized like layer_norm; a
/// scale that broadcasts is read through a compile-time index table.
LogicalResult emitRmsNorm(CpuOpContext &ctx) {
  auto rn = cast<RmsNormOp>(ctx.op);
  ArrayRef<int64_t> shape = shapeOf(rn.getInput());
  auto axis = axisOf(rn, rn.getAxis(), shape.size());
  if (failed(axis))
    return failure();
  ArrayRef<int64_t> normalized = shape.drop_front(*axis);
  int64_t rows = product(shape.take_front(*axis)), count = product(normalized);
  if (count > (1 << 22) && !coversExactly(rn.getScale(), normalized))
    return rn.emitOpError("cpu target: broadcast rms_norm scale over too many elements");
  std::string scaleIndex = emitParamIndex(ctx, rn.getScale(), normalized, "scale");
  ctx.include(kHeader);
  ctx.code.line("{0};",
                cCall("sluice_rms_norm<" + storageType(elementOf(rn.getInput())) + ", " +
                          storageType(elementOf(rn.getScale())) + ">",
                      {CpuOpContext::threads, ctx.in[0], ctx.in[1], ctx.out[0], cIntOrInt64(rows),
                       cIntOrInt64(count), cFloatLiteral(rn.getEpsilon()), scaleIndex}));
  return success();
}

/// Batch, channels and plane sizes of an NC... input.
struct ChannelSplit {
  int64_t batch, channels, plane;
};
FailureOr<ChannelSplit> channelSplit(Operation *op, Value input, int64_t minRank) {
  ArrayRef<int64_t> shape = shapeOf(input);
  if ((int64_t)shape.size() < minRank)
    return op->emitOpError("cpu target: expects rank >= ") << minRank;
  return ChannelSplit{shape[0], shape[1], product(shape.drop_front(2))};
}

LogicalResult checkParams(Operation *op, ArrayRef<Value> params, int64_t count) {
  for (Value p : params)
    if (product(shapeOf(p)) != count)
      return op->emitOpError("cpu target: parameter does not hold ") << count << " values";
  std::string t = storageType(elementOf(params.front()));
  for (Value p : params)
    if (storageType(elementOf(p)) != t)
      return op->emitOpError("cpu target: parameters of different element types");
  return success();
}

LogicalResult emitBatchNorm(CpuOpContext &ctx) {
  auto bn = cast<BatchNormOp>(ctx.op);
  auto split = channelSplit(bn, bn.getInput(), 2);
  if (failed(split) ||
      failed(checkParams(bn, {bn.getScale(), bn.getBias(), bn.getMean(), bn.getVariance()},
                         split->channels)))
    return failure();
  ctx.include(kHeader);
  ctx.code.line("{0};",
                cCall("sluice_batch_norm<" + storageType(elementOf(bn.getInput())) + ", " +
                          storageType(elementOf(bn.getScale())) + ">",
                      {CpuOpContext::threads, ctx.in[0], ctx.in[1], ctx.in[2], ctx.in[3], ctx.in[4],
                       ctx.out[0], cIntOrInt64(split->batch), cIntOrInt64(split->channels),
                       cIntOrInt64(split->plane), cFloatLiteral(bn.getEpsilon())}));
  return success();
}

LogicalResult emitGroupNormCall(CpuOpContext &ctx, Value input, Value scale, Value bias,
                                int64_t groups, const llvm::APFloat &eps, int64_t minRank) {
  Operation *op = ctx.op;
  auto split = channelSplit(op, input, minRank);
  if (failed(split))
    return failure();
  if (groups < 1 || split->channels % groups)
    return op->emitOpError("cpu target: channels do not split into ") << groups << " groups";
  int64_t params = product(shapeOf(scale));
  int64_t paramDiv = params == split->channels ? 1 : split->channels / groups;
  if (params != split->channels && params != groups)
    return op->emitOpError("cpu target: scale must hold one value per group or channel");
  if (failed(checkParams(op, {scale, bias}, params)))
    return failure();
  ctx.include(kHeader);
  ctx.code.line("{0};", cCall("sluice_group_norm<" + storageType(elementOf(input)) + ", " +
                                  storageType(elementOf(scale)) + ">",
                              {CpuOpContext::threads, ctx.in[0], ctx.in[1], ctx.in[2], ctx.out[0],
                               cIntOrInt64(split->batch), cIntOrInt64(split->channels),
                               cIntOrInt64(split->plane), cIntOrInt64(groups),
                               cIntOrInt64(paramDiv), cFloatLiteral(eps)}));
  return success();
}

LogicalResult emitInstanceNorm(CpuOpContext &ctx) {
  auto in = cast<InstanceNormOp>(ctx.op);
  ArrayRef<int64_t> shape = shapeOf(in.getInput());
  if (shape.size() < 3)
    return in.emitOpError("cpu target: expects rank >= 3");
  return emitGroupNormCall(ctx, in.getInput(), in.getScale(), in.getBias(), shape[1],
                           in.getEpsilon(), 3);
}

LogicalResult emitGroupNorm(CpuOpContext &ctx) {
  auto gn = cast<GroupNormOp>(ctx.op);
  return emitGroupNormCall(ctx, gn.getInput(), gn.getScale(), gn.getBias(), gn.getNumGroups(),
                           gn.getEpsilon(), 2);
}

LogicalResult emitLrn(CpuOpContext &ctx) {
  auto lrn = cast<LrnOp>(ctx.op);
  auto split = channelSplit(lrn, lrn.getInput(), 2);
  if (failed(split))
    return failure();
  ctx.include(kHeader);
  ctx.code.line("{0};",
                cCall("sluice_lrn<" + storageType(elementOf(lrn.getInput())) + ">",
                      {CpuOpContext::threads, ctx.in[0], ctx.out[0], cIntOrInt64(split->batch),
                       cIntOrInt64(split->channels), cIntOrInt64(split->plane),
                       cIntOrInt64(lrn.getSize()), cFloatLiteral(lrn.getAlpha()),
                       cFloatLiteral(lrn.getBeta()), cFloatLiteral(lrn.getBias())}));
  return success();
}

} // namespace

void registerCpuReductionEmitters(CpuOpRegistry &registry) {
  registry.add(ReduceOp::getOperationName(), emitReduce);
  registry.add(SoftmaxOp::getOperationName(), emitSoftmax);
  registry.add(ArgMaxOp::getOperationName(), emitArgReduce<ArgMaxOp, true>);
  registry.add(ArgMinOp::getOperationName(), emitArgReduce<ArgMinOp, false>);
  registry.add(TopKOp::getOperationName(), emitTopK);
  registry.add(CumSumOp::getOperationName(), emitCumSum);
  registry.add(LayerNormOp::getOperationName(), emitLayerNorm);
  registry.add(RmsNormOp::getOperationName(), emitRmsNorm);
  registry.add(BatchNormOp::getOperationName(), emitBatchNorm);
  registry.add(InstanceNormOp::getOperationName(), emitInstanceNorm);
  registry.add(GroupNormOp::getOperationName(), emitGroupNorm);
  registry.add(LrnOp::getOperationName(), emitLrn);
}

} // namespace sluice::codegen
