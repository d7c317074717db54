//===- Elementwise.cpp - ONNX elementwise ops to sluice -------------------===//
//
// Arithmetic, comparison, logic, unary math, casts, and the activation
// functions ONNX defines as functions of those (decomposed here).
//
//===----------------------------------------------------------------------===//

#include "lib/onnx/Binder.h"
#include "lib/onnx/Expr.h"
#include "lib/reference/Evaluator.h"
#include "lib/support/TensorFiles.h"

#include "dialects/sluice/SluiceOps.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace sluice;

namespace sluice::onnx_import {
namespace {

/// Before opset 7, binary ops broadcast only with broadcast=1, aligning the
/// second operand at `axis` (default: suffix alignment, as NumPy). Fails
/// (null) on an axis that does not place the second operand inside the
/// first.
Value legacyBroadcastRhs(Binder &b, Value lhs, Value rhs) {
  if (b.opset() >= 7 || !b.attrInt("broadcast", 0) || !b.hasAttr("axis"))
    return rhs;
  auto lhsType = dyn_cast<RankedTensorType>(lhs.getType());
  auto rhsType = dyn_cast<RankedTensorType>(rhs.getType());
  if (!lhsType || !rhsType || !rhsType.hasStaticShape())
    return rhs;
  int64_t axis = b.attrInt("axis", 0), rank = lhsType.getRank();
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1) ||
      (axis < 0 ? axis + rank : axis) + rhsType.getRank() > rank) {
    (void)b.fail("broadcast axis " + std::to_string(axis) +
                 " does not place the second input (rank " +
                 std::to_string(rhsType.getRank()) +
                 ") inside the first (rank " + std::to_string(rank) + ")");
    return Value();
  }
  if (axis < 0)
    axis += rank;
  SmallVector<int64_t> shape(axis, 1);
  shape.append(rhsType.getShape().begin(), rhsType.getShape().end());
  while ((int64_t)shape.size() < lhsType.getRank())
    shape.push_back(1);
  return b.create<ReshapeOp>(rhs, b.constI64(shape), false);
}

template <typename OpTy>
LogicalResult binaryHandler(Binder &b) {
  Value lhs = b.input(0), rhs = b.input(1);
  if (!lhs || !rhs)
    return b.fail("expects two inputs");
  Value aligned = legacyBroadcastRhs(b, lhs, rhs);
  if (!aligned)
    return failure();
  return b.output(b.create<OpTy>(lhs, aligned));
}

template <typename OpTy>
LogicalResult unaryHandler(Binder &b) {
  if (!b.input(0))
    return b.fail("expects one input");
  return b.output(b.create<OpTy>(b.input(0)));
}

/// Max, Min, Sum: folds any number of inputs pairwise.
template <typename OpTy>
LogicalResult variadicHandler(Binder &b) {
  if (b.numInputs() == 0)
    return b.fail("expects at least one input");
  Value acc = b.input(0);
  for (unsigned i = 1; i < b.numInputs(); ++i)
    acc = b.create<OpTy>(acc, b.input(i));
  return b.output(acc);
}

LogicalResult meanHandler(Binder &b) {
  if (failed(variadicHandler<AddOp>(b)))
    return failure();
  Value sum = b.outputs()[0];
  Value count = b.constScalar(b.elementType(0), b.numInputs());
  return b.output(b.create<DivOp>(sum, count));
}

LogicalResult powHandler(Binder &b) {
  // ONNX allows a different exponent type; the result has the base's type.
  Value base = b.input(0);
  Value exponent = b.castTo(b.input(1), b.elementType(0));
  Value aligned = legacyBroadcastRhs(b, base, exponent);
  if (!aligned)
    return failure();
  return b.output(b.create<PowOp>(base, aligned));
}

LogicalResult modHandler(Binder &b) {
  bool fmod = b.attrInt("fmod", 0) != 0;
  if (!fmod && isa<FloatType>(b.elementType(0)))
    return b.fail("Mod with fmod=0 is undefined for floating-point inputs");
  return b.output(b.create<ModOp>(b.input(0), b.input(1), fmod));
}

LogicalResult bitShiftHandler(Binder &b) {
  std::string direction = b.attrString("direction", "");
  if (direction == "LEFT")
    return b.output(b.create<ShiftLeftOp>(b.input(0), b.input(1)));
  if (direction == "RIGHT")
    return b.output(b.create<ShiftRightOp>(b.input(0), b.input(1)));
  return b.fail("BitShift direction must be LEFT or RIGHT, got '" + direction + "'");
}

/// Comparisons: ONNX Equal on floats compares values (NaN != NaN).
template <typename OpTy>
LogicalResult compareHandler(Binder &b) {
  Value lhs = b.input(0), rhs = b.input(1);
  Value aligned = legacyBroadcastRhs(b, lhs, rhs);
  if (!aligned)
    return failure();
  return b.output(b.create<OpTy>(lhs, aligned));
}

/// Cast / CastLike to `element`; `saturate` = 0 (opset 19) matters only for
/// float8 results, which then hold NaN for out-of-range values.
LogicalResult castWithSaturate(Binder &b, Value x, Type element) {
  if (isa<Float8E4M3FNType>(element) && b.attrInt("saturate", 1) == 0) {
    auto type = cast<TensorType>(x.getType()).clone(element);
    return b.output(CastOp::create(b.b, b.loc, type, x, /*truncate_bf16=*/false,
                                   /*saturate=*/false));
  }
  return b.output(b.castTo(x, element));
}

LogicalResult castHandler(Binder &b) {
  int to = b.attrInt("to", 0);
  DType dtype;
  if (b.opset() < 6 && b.attr("to") && b.attr("to")->type() == onnx::AttributeProto::STRING) {
    // Opset 1 spells the target as a string ("FLOAT").
    onnx::TensorProto::DataType parsed;
    if (!onnx::TensorProto::DataType_Parse(b.attrString("to", ""), &parsed))
      return b.fail("Cast to unknown type '" + b.attrString("to", "") + "'");
    to = parsed;
  }
  if (!dtypeFromOnnx(to, dtype))
    return b.fail("Cast to unsupported type " +
                  onnx::TensorProto::DataType_Name((onnx::TensorProto::DataType)to));
  Type element = typeFromDType(b.b.getContext(), dtype);
  Value x = b.input(0);
  if (element.isBF16() && b.opset() < 19 && isa<FloatType>(b.elementType(0)) &&
      !b.elementType(0).isBF16()) {
    // Before opset 19, ONNX's reference truncated floats to bfloat16.
    auto type = cast<TensorType>(x.getType()).clone(element);
    return b.output(CastOp::create(b.b, b.loc, type, x, /*truncate_bf16=*/true));
  }
  return castWithSaturate(b, x, element);
}

LogicalResult castLikeHandler(Binder &b) {
  return castWithSaturate(b, b.input(0), b.elementType(1));
}

LogicalResult identityHandler(Binder &b) { return b.output(b.input(0)); }

LogicalResult whereHandler(Binder &b) {
  return b.output(b.create<SelectOp>(b.input(0), b.input(1), b.input(2)));
}

LogicalResult clipHandler(Binder &b) {
  Value x = b.input(0);
  Type element = b.elementType(0);
  Value lo, hi;
  if (b.opset() < 11) {
    if (b.hasAttr("min"))
      lo = b.constScalar(element, b.attrFloat("min", 0));
    if (b.hasAttr("max"))
      hi = b.constScalar(element, b.attrFloat("max", 0));
  } else {
    lo = b.input(1);
    hi = b.input(2);
  }
  if (lo)
    x = b.create<MaxOp>(x, lo);
  if (hi)
    x = b.create<MinOp>(x, hi);
  return b.output(x);
}

LogicalResult activationHandler(Binder &b) {
  Value x = b.input(0);
  if (!x)
    return b.fail("expects one input");
  Expr e{b, b.elementType(0)};
  StringRef op = b.opType();
  Value r;
  if (op == "LeakyRelu") {
    double alpha = b.attrFloat("alpha", 0.01f);
    r = e.select(e.less(x, e.c(0)), e.mul(x, e.c(alpha)), x);
  } else if (op == "Elu") {
    double alpha = b.attrFloat("alpha", 1.0f);
    r = e.select(e.less(x, e.c(0)), e.mul(e.c(alpha), e.sub(e.exp(x), e.c(1))), x);
  } else if (op == "Selu") {
    double alpha = b.attrFloat("alpha", 1.67326319217681884765625f);
    double gamma = b.attrFloat("gamma", 1.05070102214813232421875f);
    Value negative = e.mul(e.c(alpha), e.sub(e.exp(x), e.c(1)));
    r = e.mul(e.c(gamma), e.select(e.greater(x, e.c(0)), x, negative));
  } else if (op == "Celu") {
    double alpha = b.attrFloat("alpha", 1.0f);
    Value scaled = e.mul(e.c(alpha), e.sub(e.exp(e.div(x, e.c(alpha))), e.c(1)));
    r = e.add(e.max(x, e.c(0)), e.min(e.c(0), scaled));
  } else if (op == "HardSigmoid") {
    double alpha = b.attrFloat("alpha", 0.2f), beta = b.attrFloat("beta", 0.5f);
    r = e.max(e.c(0), e.min(e.c(1), e.add(e.mul(x, e.c(alpha)), e.c(beta))));
  } else if (op == "HardSwish") {
    Value gate = e.max(e.c(0), e.min(e.c(1), e.add(e.mul(x, e.c(1.0 / 6)), e.c(0.5))));
    r = e.mul(x, gate);
  } else if (op == "Softplus") {
    r = e.softplus(x);
  } else if (op == "Softsign") {
    r = e.div(x, e.add(e.c(1), b.create<AbsOp>(x)));
  } else if (op == "ThresholdedRelu") {
    double alpha = b.attrFloat("alpha", 1.0f);
    r = e.select(e.greater(x, e.c(alpha)), x, e.c(0));
  } else if (op == "PRelu") {
    Value slope = b.input(1);
    // Before opset 7 a 1-D slope is per channel (axis 1), not NumPy-aligned.
    auto slopeType = b.rankedType(1), xType = b.rankedType(0);
    if (b.opset() < 7 && slopeType && xType && slopeType.getRank() == 1 &&
        xType.getRank() > 2 && slopeType.getDimSize(0) != 1) {
      SmallVector<int64_t> shape(xType.getRank() - 1, 1);
      shape[0] = slopeType.getDimSize(0);
      slope = b.create<ReshapeOp>(slope, b.constI64(shape), false);
    }
    r = e.select(e.less(x, e.c(0)), e.mul(x, slope), x);
  } else if (op == "Mish") {
    r = e.mul(x, b.create<TanhOp>(e.softplus(x)));
  } else if (op == "Shrink") {
    double bias = b.attrFloat("bias", 0.0f), lambd = b.attrFloat("lambd", 0.5f);
    Value below = e.less(x, e.c(-lambd)), above = e.greater(x, e.c(lambd));
    r = e.select(below, e.add(x, e.c(bias)),
                 e.select(above, e.sub(x, e.c(bias)), e.c(0)));
  } else if (op == "Gelu") {
    std::string approximate = b.attrString("approximate", "none");
    if (approximate == "tanh") {
      // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
      Value cube = e.mul(x, e.mul(x, x));
      Value inner = e.mul(e.c(std::sqrt(2.0 / M_PI)), e.add(x, e.mul(e.c(0.044715), cube)));
      r = e.mul(e.mul(e.c(0.5), x), e.add(e.c(1), b.create<TanhOp>(inner)));
    } else if (approximate == "none") {
      Value erf = b.create<ErfOp>(e.mul(x, e.c(M_SQRT1_2)));
      r = e.mul(e.mul(e.c(0.5), x), e.add(e.c(1), erf));
    } else {
      return b.fail("Gelu approximate must be 'none' or 'tanh'");
    }
  }
  return b.output(r);
}

/// `value` as %g prints it (0.5, 1e-05).
std::string shortNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

LogicalResult dropoutHandler(Binder &b) {
  // Inference only: the data passes through. ONNX defines training mode
  // with a ratio of 0 as the identity too (torchvision's Swin exports
  // Dropout(ratio=0, training_mode=true)); only a real training-mode dropout
  // (ratio > 0, or one not known at compile time) needs randomness.
  if (b.opset() >= 12 && b.hasInput(2)) {
    auto training = getConstantIntValues(b.input(2));
    if (!training || (training->size() == 1 && (*training)[0] != 0)) {
      // The ratio input defaults to 0.5.
      std::optional<SmallVector<double>> ratio;
      if (b.hasInput(1))
        ratio = getConstantFloatValues(b.input(1));
      bool identity = ratio && ratio->size() == 1 && (*ratio)[0] == 0.0;
      if (!identity)
        return b.fail(std::string("Dropout in training mode with ") +
                      (!training ? "a training_mode computed at run time"
                       : !b.hasInput(1) ? "the default ratio 0.5"
                       : ratio && ratio->size() == 1 ? "ratio " + shortNumber((*ratio)[0])
                                                     : "a ratio computed at run time") +
                      " is not supported (inference only; a ratio of 0 is the identity)");
    }
  }
  if (b.opset() < 7 && b.attrInt("is_test", 0) == 0)
    return b.fail("Dropout with is_test=0 (training) is not supported");
  b.setOutput(0, b.input(0));
  if (b.numOutputs() > 1 && !b.proto().output(1).empty()) {
    // The mask keeps everything: a constant when the shape is known here,
    // else all-true of the input's run-time shape (shape propagation makes
    // it a constant once the shapes are specialized).
    auto type = b.rankedType(0);
    if (type && type.hasStaticShape()) {
      auto maskType = RankedTensorType::get(type.getShape(), b.b.getI1Type());
      b.setOutput(1, ConstantOp::create(b.b, b.loc, DenseElementsAttr::get(maskType, true)));
    } else {
      Value shape = b.create<ShapeOp>(b.input(0), int64_t(0), IntegerAttr());
      auto one = RankedTensorType::get({1}, b.b.getI1Type());
      b.setOutput(1, b.create<ConstantOfShapeOp>(shape, DenseElementsAttr::get(one, true)));
    }
  }
  return success();
}

/// Constant: one of value (tensor), value_float(s), value_int(s).
LogicalResult constantHandler(Binder &b) {
  if (auto tensor = b.attrTensor("value"))
    return b.output(b.constTensor(*tensor));
  if (b.hasAttr("value_float"))
    return b.output(b.constScalar(b.b.getF32Type(), b.attrFloat("value_float", 0)));
  if (b.hasAttr("value_int"))
    return b.output(b.constI64Scalar(b.attrInt("value_int", 0)));
  if (b.hasAttr("value_ints"))
    return b.output(b.constI64(b.attrInts("value_ints")));
  if (b.hasAttr("value_floats")) {
    std::vector<float> values = b.attrFloats("value_floats");
    Tensor t(DType::F32, {(int64_t)values.size()});
    for (size_t i = 0; i < values.size(); ++i)
      t.setDouble(i, values[i]);
    return b.output(b.constTensor(t));
  }
  if (b.hasAttr("value"))
    return failure(); // attrTensor reported why
  return b.fail("Constant needs a value, value_float(s) or value_int(s) attribute "
                "(sparse and string constants are not supported)");
}

LogicalResult isInfHandler(Binder &b) {
  return b.output(b.create<IsInfOp>(b.input(0), b.attrInt("detect_positive", 1) != 0,
                                    b.attrInt("detect_negative", 1) != 0));
}

} // namespace

void registerElementwiseHandlers(OpRegistry &r) {
  r.on("Add", 1, binaryHandler<AddOp>);
  r.on("Sub", 1, binaryHandler<SubOp>);
  r.on("Mul", 1, binaryHandler<MulOp>);
  r.on("Div", 1, binaryHandler<DivOp>);
  r.on("Pow", 1, powHandler);
  r.on("Mod", 10, modHandler);
  r.on("BitShift", 11, bitShiftHandler);
  r.on("BitwiseAnd", 18, binaryHandler<BitwiseAndOp>);
  r.on("BitwiseOr", 18, binaryHandler<BitwiseOrOp>);
  r.on("BitwiseXor", 18, binaryHandler<BitwiseXorOp>);
  r.on("BitwiseNot", 18, unaryHandler<BitwiseNotOp>);
  r.on("And", 1, binaryHandler<AndOp>);
  r.on("Or", 1, binaryHandler<OrOp>);
  r.on("Xor", 1, binaryHandler<XorOp>);
  r.on("Not", 1, unaryHandler<NotOp>);
  r.on("Max", 1, variadicHandler<MaxOp>);
  r.on("Min", 1, variadicHandler<MinOp>);
  r.on("Sum", 1, variadicHandler<AddOp>);
  r.on("Mean", 1, meanHandler);
  r.on("Equal", 1, compareHandler<EqualOp>);
  r.on("Less", 1, compareHandler<LessOp>);
  r.on("LessOrEqual", 12, compareHandler<LessEqualOp>);
  r.on("Greater", 1, compareHandler<GreaterOp>);
  r.on("GreaterOrEqual", 12, compareHandler<GreaterEqualOp>);
  r.on("Where", 9, whereHandler);
  r.on("Cast", 1, castHandler);
  r.on("CastLike", 15, castLikeHandler);
  r.on("Identity", 1, identityHandler);
  r.on("Constant", 1, constantHandler);
  r.on("Clip", 1, clipHandler);
  r.on("Dropout", 1, dropoutHandler);
  r.on("IsNaN", 9, unaryHandler<IsNaNOp>);
  r.on("IsInf", 10, isInfHandler);

  r.on("Abs", 1, unaryHandler<AbsOp>);
  r.on("Neg", 1, unaryHandler<NegOp>);
  r.on("Sign", 9, unaryHandler<SignOp>);
  r.on("Exp", 1, unaryHandler<ExpOp>);
  r.on("Log", 1, unaryHandler<LogOp>);
  r.on("Sqrt", 1, unaryHandler<SqrtOp>);
  r.on("Reciprocal", 1, unaryHandler<ReciprocalOp>);
  r.on("Tanh", 1, unaryHandler<TanhOp>);
  r.on("Sigmoid", 1, unaryHandler<SigmoidOp>);
  r.on("Relu", 1, unaryHandler<ReluOp>);
  r.on("Erf", 9, unaryHandler<ErfOp>);
  r.on("Sin", 7, unaryHandler<SinOp>);
  r.on("Cos", 7, unaryHandler<CosOp>);
  r.on("Tan", 7, unaryHandler<TanOp>);
  r.on("Asin", 7, unaryHandler<AsinOp>);
  r.on("Acos", 7, unaryHandler<AcosOp>);
  r.on("Atan", 7, unaryHandler<AtanOp>);
  r.on("Sinh", 9, unaryHandler<SinhOp>);
  r.on("Cosh", 9, unaryHandler<CoshOp>);
  r.on("Asinh", 9, unaryHandler<AsinhOp>);
  r.on("Acosh", 9, unaryHandler<AcoshOp>);
  r.on("Atanh", 9, unaryHandler<AtanhOp>);
  r.on("Ceil", 1, unaryHandler<CeilOp>);
  r.on("Floor", 1, unaryHandler<FloorOp>);
  r.on("Round", 11, unaryHandler<RoundOp>);

  for (const char *activation :
       {"LeakyRelu", "Elu", "Selu", "HardSigmoid", "Softplus", "Softsign",
        "ThresholdedRelu", "PRelu"})
    r.on(activation, 1, activationHandler);
  r.on("Celu", 12, activationHandler);
  r.on("HardSwish", 14, activationHandler);
  r.on("Mish", 18, activationHandler);
  r.on("Shrink", 9, activationHandler);
  r.on("Gelu", 20, activationHandler);
}

} // namespace sluice::onnx_import
