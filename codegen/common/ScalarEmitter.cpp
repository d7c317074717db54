//===- ScalarEmitter.cpp - elementwise ops as C++ scalar expressions ------===//

#include "codegen/common/ScalarEmitter.h"

#include "dialects/sluice/SluiceOps.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstdio>

using namespace mlir;

namespace sluice::codegen {

std::string storageType(Type t) {
  if (t.isF32()) return "float";
  if (t.isF64()) return "double";
  if (t.isF16()) return "sluice_f16";
  if (t.isBF16()) return "sluice_bf16";
  if (isa<Float8E4M3FNType>(t)) return "sluice_f8e4m3";
  if (t.isInteger(1)) return "bool";
  // 4-bit integers are bytes of packed nibbles in bundles (weights).
  if (t.isInteger(4)) return "uint8_t";
  if (auto i = dyn_cast<IntegerType>(t))
    return std::string(i.isUnsigned() ? "uint" : "int") +
           std::to_string(i.getWidth()) + "_t";
  return "";
}

std::string computeType(Type t) {
  if (t.isF32() || t.isF16() || t.isBF16() || isa<Float8E4M3FNType>(t)) return "float";
  if (t.isF64()) return "double";
  if (t.isInteger(1)) return "bool";
  if (isa<IntegerType>(t)) return "int64_t";
  return "";
}

int64_t storageBytes(Type t) {
  if (t.isInteger(1))
    return 1;
  return (t.getIntOrFloatBitWidth() + 7) / 8;
}

std::string loadExpr(Type t, const std::string &expr) {
  if (t.isF16() || t.isBF16() || isa<Float8E4M3FNType>(t))
    return "sluice_load(" + expr + ")";
  // Every integer type computes in int64_t, as the evaluator does (uint64
  // wraps there too).
  if (isa<IntegerType>(t) && !t.isInteger(1) && !t.isSignlessInteger(64) &&
      !t.isSignedInteger(64))
    return "(int64_t)" + expr;
  return expr;
}

std::string storeExpr(Type t, const std::string &expr) {
  return "SLUICE_STORE(" + storageType(t) + ", " + expr + ")";
}

std::string literal(DenseElementsAttr value, int64_t index) {
  Type t = value.getElementType();
  if (value.isSplat())
    index = 0;
  char buffer[64];
  if (isa<FloatType>(t)) {
    double v = value.getValues<APFloat>()[index].convertToDouble();
    bool single = !t.isF64();
    if (std::isnan(v))
      return single ? "(float)NAN" : "(double)NAN";
    if (std::isinf(v))
      return std::string(v < 0 ? "-" : "") + (single ? "(float)INFINITY" : "(double)INFINITY");
    std::snprintf(buffer, sizeof buffer, single ? "%.9gf" : "%.17g", v);
    std::string text = buffer;
    // "1f" is not a literal; "1.f" is.
    if (single && text.find_first_of(".eEn") == std::string::npos)
      text.insert(text.size() - 1, ".");
    if (!single && text.find_first_of(".eEn") == std::string::npos)
      text += ".0";
    return text;
  }
  if (t.isInteger(1))
    return value.getValues<bool>()[index] ? "true" : "false";
  APInt v = value.getValues<APInt>()[index];
  int64_t s = cast<IntegerType>(t).isUnsigned() ? (int64_t)v.getZExtValue()
                                                 : v.getSExtValue();
  if (s == INT64_MIN)
    return "INT64_MIN";
  std::snprintf(buffer, sizeof buffer, "(int64_t)%lldLL", (long long)s);
  return buffer;
}

static Type elementTypeOf(Value v) {
  return cast<ShapedType>(v.getType()).getElementType();
}

FailureOr<std::string> emitScalar(Operation *op, ArrayRef<std::string> in) {
  auto call = [&](const char *fn) {
    std::string s = std::string(fn) + "(";
    for (size_t i = 0; i < in.size(); ++i)
      s += (i ? ", " : "") + in[i];
    return s + ")";
  };
  auto infix = [&](const char *sym) {
    return "(" + in[0] + " " + sym + " " + in[1] + ")";
  };
  // Operands of comparisons meet in the wider of their compute types.
  std::string result =
      llvm::TypeSwitch<Operation *, std::string>(op)
          .Case([&](CastOp cast) -> std::string {
            Type from = elementTypeOf(cast.getInput());
            Type to = elementTypeOf(cast.getOutput());
            if (isa<StringType>(from) || isa<StringType>(to))
              return "";
            // fp8 results are rounded here: a fused consumer reads the
            // E4M3 value, not the wider one.
            if (isa<Float8E4M3FNType>(to))
              return "sl_f8e4m3_round((float)(" + in[0] + "), " +
                     (cast.getSaturate() ? "true" : "false") + ")";
            if (to.isBF16() && isa<FloatType>(from) && cast.getTruncateBf16())
              return "sluice_load(sluice_to_bf16_truncate((float)" + in[0] + "))";
            if (isa<IntegerType>(to) && !to.isInteger(1) && isa<FloatType>(from))
              return "sl_f2i((double)" + in[0] + ")";
            if (to.isInteger(1))
              return "(" + in[0] + " != 0)";
            return "(" + computeType(to) + ")(" + in[0] + ")";
          })
          .Case([&](QuantizeLinearOp q) -> std::string {
            // Per-tensor only (kernel::isElementwise): the evaluator divides
            // in f32 unless the input is f64, rounds half to even, adds the
            // zero point and saturates; NaN gives 0.
            Type from = elementTypeOf(q.getInput());
            if (isa<Float8E4M3FNType>(elementTypeOf(q.getOutput()))) {
              // fp8 (Form F8): x / scale in f32 (+ the zero point, 0),
              // rounded to E4M3, saturating as the op says.
              std::string quotient = "((float)(" + in[0] + ") / (float)(" + in[1] + "))";
              if (q.getZeroPoint())
                quotient = "(" + quotient + " + (float)(" + in[2] + "))";
              return "sl_f8e4m3_round(" + quotient + ", " + (q.getSaturate() ? "true" : "false") +
                     ")";
            }
            auto to = cast<IntegerType>(elementTypeOf(q.getOutput()));
            unsigned width = to.getWidth();
            bool wide = from.isF64() || width > 16;
            std::string t = wide ? "(double)" : "(float)";
            std::string quotient = "(" + t + "(" + in[0] + ") / " + t + "(" + in[1] + "))";
            if (wide && !from.isF64())
              quotient = "(double)((float)(" + in[0] + ") / (float)(" + in[1] + "))";
            int64_t lo = to.isUnsigned() ? 0 : -(int64_t(1) << (width - 1));
            int64_t hi = to.isUnsigned() ? (int64_t)((uint64_t(1) << width) - 1)
                                         : (int64_t(1) << (width - 1)) - 1;
            if (width >= 64)
              return "";
            std::string zero = q.getZeroPoint() ? t + "(" + in[2] + ")" : t + "0";
            return "sl_quantize(" + quotient + ", " + zero + ", " + t + std::to_string(lo) +
                   "LL, " + t + std::to_string(hi) + "LL)";
          })
          .Case([&](DequantizeLinearOp dq) -> std::string {
            // (x - zero_point) * scale in double, rounded once to the
            // result type (the evaluator); in float when the difference
            // of two at most 16-bit integers is exact in float (the float
            // product is then the correctly rounded one).
            Type from = elementTypeOf(dq.getInput());
            Type to = elementTypeOf(dq.getOutput());
            std::string diff = dq.getZeroPoint() ? "(" + in[0] + " - " + in[2] + ")" : in[0];
            // fp8: (x - zero point) * scale in f32, as the evaluator.
            if (isa<Float8E4M3FNType>(from))
              return "(" + computeType(to) + ")((float)" + diff + " * (float)(" + in[1] + "))";
            if (!to.isF64() && from.getIntOrFloatBitWidth() <= 16)
              return "((float)" + diff + " * (float)(" + in[1] + "))";
            return "(" + computeType(to) + ")((double)" + diff + " * (double)(" + in[1] + "))";
          })
          .Case([&](AbsOp) { return call("sl_abs"); })
          .Case([&](NegOp) { return "(-" + in[0] + ")"; })
          .Case([&](SignOp) { return call("sl_sign"); })
          .Case([&](ExpOp) { return call("sl_exp"); })
          .Case([&](LogOp) { return call("sl_log"); })
          .Case([&](SqrtOp) { return call("sl_sqrt"); })
          .Case([&](RsqrtOp op) {
            return "(" + computeType(elementTypeOf(op.getInput())) + ")1 / sl_sqrt(" + in[0] + ")";
          })
          .Case([&](ReciprocalOp op) {
            return "((" + computeType(elementTypeOf(op.getInput())) + ")1 / " + in[0] + ")";
          })
          .Case([&](TanhOp) { return call("sl_tanh"); })
          .Case([&](SigmoidOp) { return call("sl_sigmoid"); })
          .Case([&](ReluOp) { return call("sl_relu"); })
          .Case([&](ErfOp) { return call("sl_erf"); })
          .Case([&](GeluOp g) {
            return call(g.getApproximate() == "tanh" ? "sl_gelu_tanh" : "sl_gelu");
          })
          .Case([&](SiluOp) { return call("sl_silu"); })
          .Case([&](SinOp) { return call("sl_sin"); })
          .Case([&](CosOp) { return call("sl_cos"); })
          .Case([&](TanOp) { return call("sl_tan"); })
          .Case([&](AsinOp) { return call("sl_asin"); })
          .Case([&](AcosOp) { return call("sl_acos"); })
          .Case([&](AtanOp) { return call("sl_atan"); })
          .Case([&](SinhOp) { return call("sl_sinh"); })
          .Case([&](CoshOp) { return call("sl_cosh"); })
          .Case([&](AsinhOp) { return call("sl_asinh"); })
          .Case([&](AcoshOp) { return call("sl_acosh"); })
          .Case([&](AtanhOp) { return call("sl_atanh"); })
          .Case([&](CeilOp) { return call("sl_ceil"); })
          .Case([&](FloorOp) { return call("sl_floor"); })
          .Case([&](RoundOp) { return call("sl_round_even"); })
          .Case([&](NotOp) { return "(!" + in[0] + ")"; })
          .Case([&](BitwiseNotOp) { return "(~" + in[0] + ")"; })
          .Case([&](IsNaNOp) { return call("sl_isnan"); })
          .Case([&](IsInfOp op) {
            return "sl_isinf(" + in[0] + ", " +
                   (op.getDetectPositive() ? "true" : "false") + ", " +
                   (op.getDetectNegative() ? "true" : "false") + ")";
          })
          .Case([&](AddOp) { return infix("+"); })
          .Case([&](SubOp) { return infix("-"); })
          .Case([&](MulOp) { return infix("*"); })
          .Case([&](DivOp) { return call("sl_div"); })
          .Case([&](PowOp) { return call("sl_pow"); })
          .Case([&](MaxOp) { return call("sl_max"); })
          .Case([&](MinOp) { return call("sl_min"); })
          .Case([&](ModOp op) { return call(op.getFmod() ? "sl_cmod" : "sl_pymod"); })
          .Case([&](AndOp) { return infix("&&"); })
          .Case([&](OrOp) { return infix("||"); })
          .Case([&](XorOp) { return infix("!="); })
          .Case([&](BitwiseAndOp) { return infix("&"); })
          .Case([&](BitwiseOrOp) { return infix("|"); })
          .Case([&](BitwiseXorOp) { return infix("^"); })
          .Case([&](ShiftLeftOp) { return call("sl_shl"); })
          .Case([&](ShiftRightOp) { return call("sl_shr"); })
          .Case([&](EqualOp) { return infix("=="); })
          .Case([&](LessOp) { return infix("<"); })
          .Case([&](LessEqualOp) { return infix("<="); })
          .Case([&](GreaterOp) { return infix(">"); })
          .Case([&](GreaterEqualOp) { return infix(">="); })
          .Case([&](SelectOp) {
            return "(" + in[0] + " ? " + in[1] + " : " + in[2] + ")";
          })
          .Default([](Operation *) { return std::string(); });
  if (result.empty())
    return op->emitOpError("has no scalar expression");
  return result;
}

} // namespace sluice::codegen
