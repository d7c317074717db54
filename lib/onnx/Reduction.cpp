//===- Reduction.cpp - ONNX reductions, softmax, top-k, scans -------------===//
//
// Reductions (the L1/L2/log-sum family decomposed over `reduce`), arg
// reductions, the softmax family (Hardmax decomposed over `argmax`), TopK,
// CumSum, and the two losses, which ONNX defines as functions and which
// decompose here into a one-hot class mask, `select` and `reduce`.
//
//===----------------------------------------------------------------------===//

#include "lib/onnx/Binder.h"
#include "lib/support/Tensor.h"

#include "dialects/sluice/SluiceOps.h"

#include <numeric>

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

/// The node's reduction parameters, read once and reused by the several
/// `reduce` ops of a decomposition.
struct ReduceParams {
  Value axes;
  bool keepdims, noopWithEmptyAxes;
  Value reduce(Binder &b, Value x, ReduceKind kind, bool keep) const {
    return b.create<ReduceOp>(x, axes, kind, keep, noopWithEmptyAxes);
  }
  Value reduce(Binder &b, Value x, ReduceKind kind) const {
    return reduce(b, x, kind, keepdims);
  }
};

/// ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare (axes
/// input from opset 18): each is a `reduce` plus elementwise ops. Integer
/// inputs go through f64 where the math needs a float (sqrt, log, exp) and
/// come back truncated, as the ONNX reference's astype does.
LogicalResult composedReduceHandler(Binder &b) {
  Value x = b.input(0);
  if (!x)
    return b.fail("expects a data input");
  ReduceParams p{reduceAxes(b, 18), b.attrInt("keepdims", 1) != 0,
                 b.attrInt("noop_with_empty_axes", 0) != 0};
  StringRef op = b.opType();
  if (op == "ReduceL1")
    return b.output(p.reduce(b, b.create<AbsOp>(x), ReduceKind::sum));
  if (op == "ReduceSumSquare")
    return b.output(p.reduce(b, b.create<MulOp>(x, x), ReduceKind::sum));

  Type element = b.elementType(0);
  Type floatElement = isa<FloatType>(element) ? element : b.b.getF64Type();
  x = b.castTo(x, floatElement);
  Value result;
  if (op == "ReduceL2") {
    result =
        b.create<SqrtOp>(p.reduce(b, b.create<MulOp>(x, x), ReduceKind::sum));
  } else if (op == "ReduceLogSum") {
    result = b.create<LogOp>(p.reduce(b, x, ReduceKind::sum));
  } else {
    // log(sum(exp(x))) = m + log(sum(exp(x - m))) with m the max, so exp
    // cannot overflow. An infinite max would give inf - inf = NaN, so the
    // shift is 0 there: the sum is then inf or 0, and its log is right.
    Value zero = b.constScalar(floatElement, 0);
    Value maxKept = p.reduce(b, x, ReduceKind::max, /*keep=*/true);
    if (!maxKept)
      return failure();
    Value shiftKept = b.create<SelectOp>(b.create<IsInfOp>(maxKept, true, true),
                                         zero, maxKept);
    Value sum = p.reduce(b, b.create<ExpOp>(b.create<SubOp>(x, shiftKept)),
                         ReduceKind::sum);
    // Reducing the size-1 dims of the kept shift only drops them.
    Value shift = p.reduce(b, shiftKept, ReduceKind::max);
    result = b.create<AddOp>(b.create<LogOp>(sum), shift);
  }
  if (!result)
    return failure();
  return b.output(b.castTo(result, element));
}

/// Before opset 13 Softmax, LogSoftmax and Hardmax flatten the input to 2-D
/// at `axis` (default 1) and normalize each row; from 13 on they normalize
/// along `axis` (default -1). `apply(x, axis)` builds the op along one axis.
template <typename Fn>
LogicalResult normalizeHandler(Binder &b, Fn apply) {
  Value x = b.input(0);
  if (!x)
    return b.fail("expects one input");
  if (b.opset() >= 13)
    return b.output(apply(x, b.attrInt("axis", -1)));
  auto type = b.rankedType(0);
  if (!type)
    return b.fail(b.opType() + " before opset 13 needs a ranked input");
  int64_t rank = type.getRank(), axis = b.attrInt("axis", 1);
  if (axis < -rank || axis > rank)
    return b.fail("axis " + Twine(axis) + " out of range for rank " +
                  Twine(rank));
  if (axis < 0)
    axis += rank;
  if (rank == 2 && axis == 1)
    return b.output(apply(x, 1));
  // The 2-D shape is [outer, inner]; one of the two may be left to Reshape's
  // -1 when its dims are dynamic.
  int64_t outer = 1, inner = 1;
  bool outerStatic = true, innerStatic = true;
  for (int64_t i = 0; i < rank; ++i) {
    bool isOuter = i < axis;
    if (type.isDynamicDim(i))
      (isOuter ? outerStatic : innerStatic) = false;
    else
      (isOuter ? outer : inner) *= type.getDimSize(i);
  }
  if (!outerStatic && !innerStatic)
    return b.fail(b.opType() +
                  " before opset 13 needs static dims on one side of axis");
  Value flat = b.create<ReshapeOp>(
      x, b.constI64({outerStatic ? outer : -1, innerStatic ? inner : -1}),
      false);
  Value y = flat ? apply(flat, 1) : Value();
  Value shape = type.hasStaticShape()
                    ? b.constI64(type.getShape())
                    : b.create<ShapeOp>(x, int64_t(0), IntegerAttr());
  return b.output(b.create<ReshapeOp>(y, shape, false));
}

template <bool log>
LogicalResult softmaxHandler(Binder &b) {
  return normalizeHandler(b, [&](Value x, int64_t axis) {
    return b.create<SoftmaxOp>(x, axis, log);
  });
}

/// A constant i64 tensor 0, 1, ..., count-1 laid out along dim 0 of a
/// tensor of rank `1 + trailingOnes`, so that it broadcasts against a tensor
/// whose dim `rank - 1 - trailingOnes` counts classes or positions.
Value iotaAlongDim(Binder &b, int64_t count, int64_t trailingOnes) {
  std::vector<int64_t> values(count);
  std::iota(values.begin(), values.end(), 0);
  std::vector<int64_t> shape(1 + trailingOnes, 1);
  shape[0] = count;
  return b.constTensor(Tensor::fromInt64(values).reshaped(shape));
}

/// The index along `axis` of every element of `x`, shaped to broadcast
/// against `x`: a constant 0..n-1 of shape [n, 1...] when the dim is static,
/// else an exclusive prefix count of ones along `axis` (the select only
/// borrows x's shape: both branches are 1).
Value positionsAlong(Binder &b, Value x, int64_t axis) {
  auto type = cast<RankedTensorType>(x.getType());
  if (!type.isDynamicDim(axis))
    return iotaAlongDim(b, type.getDimSize(axis), type.getRank() - 1 - axis);
  Value one = b.constI64Scalar(1);
  Value anyCondition = isa<FloatType>(type.getElementType())
                           ? b.create<IsNaNOp>(x)
                           : b.create<EqualOp>(x, x);
  Value ones = b.create<SelectOp>(anyCondition, one, one);
  return b.create<CumSumOp>(ones, b.constI64Scalar(axis), /*exclusive=*/true,
                            /*reverse=*/false);
}

/// Hardmax: 1 at the first maximum along the axis, 0 elsewhere, built as
/// argmax compared against the positions along that axis.
LogicalResult hardmaxHandler(Binder &b) {
  return normalizeHandler(b, [&](Value x, int64_t axis) -> Value {
    auto type = dyn_cast<RankedTensorType>(x.getType());
    if (!type) {
      (void)b.fail("Hardmax needs a ranked input");
      return Value();
    }
    int64_t rank = type.getRank();
    if (axis < -rank || axis >= rank) {
      (void)b.fail("axis " + Twine(axis) + " out of range for rank " +
                   Twine(rank));
      return Value();
    }
    if (axis < 0)
      axis += rank;
    Value index = b.create<ArgMaxOp>(x, axis, true, false);
    Value positions = positionsAlong(b, x, axis);
    Value isMax = b.create<EqualOp>(index, positions);
    return isMax ? b.castTo(isMax, type.getElementType()) : Value();
  });
}

template <typename OpTy>
LogicalResult argReduceHandler(Binder &b) {
  if (!b.input(0))
    return b.fail("expects one input");
  return b.output(b.create<OpTy>(b.input(0), b.attrInt("axis", 0),
                                 b.attrInt("keepdims", 1) != 0,
                                 b.attrInt("select_last_index", 0) != 0));
}

/// TopK: `k` is an attribute before opset 10 and an input from 10 on;
/// `largest` and `sorted` exist from opset 11.
LogicalResult topKHandler(Binder &b) {
  Value x = b.input(0);
  if (!x)
    return b.fail("expects a data input");
  Value k;
  if (b.opset() < 10) {
    if (!b.hasAttr("k"))
      return b.fail("TopK before opset 10 needs the k attribute");
    k = b.constI64({b.attrInt("k", 0)});
  } else {
    k = b.input(1);
    if (!k)
      return b.fail("TopK needs a K input");
    auto kType = dyn_cast<RankedTensorType>(k.getType());
    if (!kType || !isa<IntegerType>(kType.getElementType()))
      return b.fail("TopK's K must be a ranked integer tensor");
    k = b.castTo(k, b.b.getI64Type());
    if (kType.getRank() != 1)
      k = b.create<ReshapeOp>(k, b.constI64({1}), false);
  }
  Operation *topk = b.createOp<TopKOp>(x, k, b.attrInt("axis", -1),
                                       b.attrInt("largest", 1) != 0,
                                       b.attrInt("sorted", 1) != 0);
  if (!topk)
    return failure();
  b.setOutput(0, topk->getResult(0));
  b.setOutput(1, topk->getResult(1));
  return success();
}

LogicalResult cumSumHandler(Binder &b) {
  if (!b.input(0) || !b.input(1))
    return b.fail("expects data and axis inputs");
  return b.output(b.create<CumSumOp>(b.input(0), b.input(1),
                                     b.attrInt("exclusive", 0) != 0,
                                     b.attrInt("reverse", 0) != 0));
}

/// `target` [N, d1...] as [N, 1, d1...], to broadcast against the class dim.
/// With at most one dynamic dim a reshape says it directly; otherwise a
/// trailing 1 is appended (Reshape's 0 copies each dim in place) and moved
/// to position 1 by a transpose.
Value unsqueezeClassDim(Binder &b, Value target) {
  auto type = cast<RankedTensorType>(target.getType());
  int64_t rank = type.getRank();
  SmallVector<int64_t> shape(type.getShape());
  if (llvm::count_if(shape, ShapedType::isDynamic) <= 1) {
    shape.insert(shape.begin() + 1, 1);
    for (int64_t &d : shape)
      if (ShapedType::isDynamic(d))
        d = -1;
    return b.create<ReshapeOp>(target, b.constI64(shape), false);
  }
  SmallVector<int64_t> copyThenOne(rank, 0), perm{0, rank};
  copyThenOne.push_back(1);
  for (int64_t i = 1; i < rank; ++i)
    perm.push_back(i);
  Value withOne = b.create<ReshapeOp>(target, b.constI64(copyThenOne), false);
  return b.create<TransposeOp>(withOne, perm);
}

/// Negative log-likelihood of `logProb` [N, C, d1...] at the classes
/// `target` [N, d1...]: loss = -logProb[n, target, d...] * weight[target],
/// 0 where target == ignore_index, then reduced ("none", "sum", or "mean",
/// which divides by the sum of the weights that were used).
///
/// The class pick is a one-hot mask (target compared against 0..C-1) that
/// selects and sums over the class dim: an out-of-range target, such as an
/// ignore_index outside [0, C), picks nothing instead of reading out of
/// bounds.
Value negativeLogLikelihood(Binder &b, Value logProb, Value target,
                            Value weight) {
  auto type = dyn_cast<RankedTensorType>(logProb.getType());
  auto targetType = dyn_cast<RankedTensorType>(target.getType());
  if (!type || !targetType || type.getRank() < 2 ||
      targetType.getRank() != type.getRank() - 1) {
    (void)b.fail("expects input [N, C, d1...] and target [N, d1...]");
    return Value();
  }
  if (!isa<IntegerType>(targetType.getElementType())) {
    (void)b.fail("target must hold integer class indices");
    return Value();
  }
  std::string reduction = b.attrString("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    (void)b.fail("unknown reduction '" + reduction + "'");
    return Value();
  }
  int64_t rank = type.getRank();
  Type element = type.getElementType();
  Value zero = b.constScalar(element, 0);
  Value classIds = b.castTo(target, b.b.getI64Type());
  // Separate statements keep the op order independent of the compiler's
  // argument evaluation order.
  Value targetWithClassDim = unsqueezeClassDim(b, classIds);
  Value positionClasses = positionsAlong(b, logProb, 1);
  Value isClass = b.create<EqualOp>(targetWithClassDim, positionClasses);
  Value classDim = b.constI64({1});
  auto pickClass = [&](Value perClass) {
    return b.create<ReduceOp>(b.create<SelectOp>(isClass, perClass, zero),
                              classDim, ReduceKind::sum, false, false);
  };
  Value picked = pickClass(logProb);
  // The weight of each position's class; null means "all ones".
  Value picksWeight;
  if (weight) {
    SmallVector<int64_t> weightShape(rank - 1, 1);
    weightShape[0] = -1;
    picksWeight =
        pickClass(b.create<ReshapeOp>(weight, b.constI64(weightShape), false));
  }
  if (b.hasAttr("ignore_index")) {
    Value kept = b.create<NotOp>(b.create<EqualOp>(
        classIds, b.constI64Scalar(b.attrInt("ignore_index", 0))));
    picksWeight = picksWeight ? b.create<SelectOp>(kept, picksWeight, zero)
                  : kept      ? b.castTo(kept, element)
                              : Value();
    if (!picksWeight)
      return Value();
  }
  Value loss = b.create<NegOp>(
      picksWeight ? b.create<MulOp>(picked, picksWeight) : picked);
  if (reduction == "none")
    return loss;
  Value total =
      b.create<ReduceOp>(loss, Value(), ReduceKind::sum, false, false);
  if (reduction == "sum")
    return total;
  if (!picksWeight)
    return b.create<ReduceOp>(loss, Value(), ReduceKind::mean, false, false);
  Value weightTotal =
      b.create<ReduceOp>(picksWeight, Value(), ReduceKind::sum, false, false);
  return b.create<DivOp>(total, weightTotal);
}

LogicalResult nllLossHandler(Binder &b) {
  if (!b.input(0) || !b.input(1))
    return b.fail("expects input and target");
  return b.output(negativeLogLikelihood(b, b.input(0), b.input(1), b.input(2)));
}

/// SoftmaxCrossEntropyLoss: NLL of log_softmax over the class dim (1); the
/// optional second output is that log-probability tensor.
LogicalResult softmaxCrossEntropyHandler(Binder &b) {
  if (!b.input(0) || !b.input(1))
    return b.fail("expects scores and labels");
  Value logProb = b.create<SoftmaxOp>(b.input(0), int64_t(1), true);
  if (!logProb)
    return failure();
  Value loss = negativeLogLikelihood(b, logProb, b.input(1), b.input(2));
  if (failed(b.output(loss)))
    return failure();
  if (b.numOutputs() > 1)
    b.setOutput(1, logProb);
  return success();
}

} // namespace

void registerReductionHandlers(OpRegistry &r) {
  r.on("ReduceSum", 1, reduceHandler<ReduceKind::sum, 13>);
  r.on("ReduceMean", 1, reduceHandler<ReduceKind::mean, 18>);
  r.on("ReduceMax", 1, reduceHandler<ReduceKind::max, 18>);
  r.on("ReduceMin", 1, reduceHandler<ReduceKind::min, 18>);
  r.on("ReduceProd", 1, reduceHandler<ReduceKind::prod, 18>);
  r.on("ReduceL1", 1, composedReduceHandler);
  r.on("ReduceL2", 1, composedReduceHandler);
  r.on("ReduceLogSum", 1, composedReduceHandler);
  r.on("ReduceLogSumExp", 1, composedReduceHandler);
  r.on("ReduceSumSquare", 1, composedReduceHandler);
  r.on("ArgMax", 1, argReduceHandler<ArgMaxOp>);
  r.on("ArgMin", 1, argReduceHandler<ArgMinOp>);
  r.on("Softmax", 1, softmaxHandler<false>);
  r.on("LogSoftmax", 1, softmaxHandler<true>);
  r.on("Hardmax", 1, hardmaxHandler);
  r.on("TopK", 1, topKHandler);
  r.on("CumSum", 11, cumSumHandler);
  r.on("NegativeLogLikelihoodLoss", 12, nllLossHandler);
  r.on("SoftmaxCrossEntropyLoss", 12, softmaxCrossEntropyHandler);
}

} // namespace sluice::onnx_import
