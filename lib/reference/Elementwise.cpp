//===- Elementwise.cpp - evaluators for constants, casts, elementwise ops -===//

#include "lib/reference/EvalUtils.h"

#include "dialects/sluice/SluiceOps.h"

#include <cmath>
#include <cstring>

using namespace mlir;
using namespace sluice;

namespace sluice {
namespace {

/// Applies a unary function elementwise; floats go through double, integers
/// through int64.
template <typename FloatFn, typename IntFn>
LogicalResult unary(Operation *op, ArrayRef<const Tensor *> operands,
                    std::vector<Tensor> &results, FloatFn floatFn,
                    IntFn intFn) {
  const Tensor &x = *operands[0];
  Tensor out(resultDType(op), x.shape());
  int64_t n = x.numElements();
  if (isFloatDType(x.dtype())) {
    for (int64_t i = 0; i < n; ++i)
      out.setDouble(i, floatFn(x.getDouble(i)));
  } else {
    for (int64_t i = 0; i < n; ++i)
      out.setInt(i, intFn(x.getInt(i)));
  }
  results.push_back(std::move(out));
  return success();
}

template <typename FloatFn>
EvalFn floatUnary(FloatFn fn) {
  return [fn](Operation *op, ArrayRef<const Tensor *> operands,
              std::vector<Tensor> &results) {
    return unary(op, operands, results, fn, [](int64_t v) { return v; });
  };
}

template <typename FloatFn, typename IntFn>
EvalFn anyUnary(FloatFn floatFn, IntFn intFn) {
  return [floatFn, intFn](Operation *op, ArrayRef<const Tensor *> operands,
                          std::vector<Tensor> &results) {
    return unary(op, operands, results, floatFn, intFn);
  };
}

/// Applies a broadcasting binary function. `floatFn(double, double)` is used
/// when the operands are floats, `intFn(int64, int64)` otherwise; the result
/// is stored as the result element type (i1 for comparisons).
template <typename FloatFn, typename IntFn>
EvalFn binary(FloatFn floatFn, IntFn intFn) {
  return [floatFn, intFn](Operation *op, ArrayRef<const Tensor *> operands,
                          std::vector<Tensor> &results) -> LogicalResult {
    const Tensor &a = *operands[0], &b = *operands[1];
    auto shape = broadcastShapes(op, {a.shape(), b.shape()});
    if (failed(shape))
      return failure();
    Tensor out(resultDType(op), *shape);
    bool isFloat = isFloatDType(a.dtype());
    bool floatResult = isFloatDType(out.dtype());
    bool isU64 = a.dtype() == DType::U64;
    forEachBroadcast(*shape, {a.shape(), b.shape()},
                     [&](int64_t i, const std::vector<int64_t> &idx) {
                       if (isFloat || isU64) {
                         auto v = floatFn(a.getDouble(idx[0]), b.getDouble(idx[1]));
                         if (floatResult || isU64)
                           out.setDouble(i, v);
                         else
                           out.setInt(i, (int64_t)v);
                       } else {
                         out.setInt(i, intFn(a.getInt(idx[0]), b.getInt(idx[1])));
                       }
                     });
    results.push_back(std::move(out));
    return success();
  };
}

/// Same function for both domains (comparisons, min/max, add ...).
#define SAME_FN(expr)                                                          \
  binary([](double a, double b) { return expr; },                              \
         [](int64_t a, int64_t b) { return (int64_t)(expr); })

int64_t integerPow(int64_t base, int64_t exponent) {
  if (exponent < 0)
    return base == 1 ? 1 : base == -1 ? (exponent % 2 ? -1 : 1) : 0;
  int64_t result = 1;
  while (exponent) {
    if (exponent & 1)
      result *= base;
    base *= base;
    exponent >>= 1;
  }
  return result;
}

double roundHalfToEven(double v) { return std::nearbyint(v); }

LogicalResult evalConstant(Operation *op, ArrayRef<const Tensor *>,
                           std::vector<Tensor> &results) {
  auto tensor = tensorFromAttr(cast<ConstantOp>(op).getValue());
  if (failed(tensor))
    return op->emitOpError("cannot read constant value");
  results.push_back(std::move(*tensor));
  return success();
}

LogicalResult evalCast(Operation *op, ArrayRef<const Tensor *> operands,
                       std::vector<Tensor> &results) {
  const Tensor &x = *operands[0];
  DType to = resultDType(op);
  if (to == DType::BF16 && isFloatDType(x.dtype()) &&
      cast<CastOp>(op).getTruncateBf16()) {
    // Keep the high half of each float's bits (round toward zero).
    Tensor out(to, x.shape());
    auto *bits = out.mutableData<uint16_t>();
    for (int64_t i = 0; i < x.numElements(); ++i) {
      float f = (float)x.getDouble(i);
      uint32_t word;
      std::memcpy(&word, &f, 4);
      bits[i] = (uint16_t)(word >> 16);
    }
    results.push_back(std::move(out));
    return success();
  }
  if (to == DType::F8E4M3 && x.dtype() != DType::String && !cast<CastOp>(op).getSaturate()) {
    // Out-of-range values become NaN instead of +-448 (ONNX saturate = 0).
    Tensor out(to, x.shape());
    auto *bits = out.mutableData<uint8_t>();
    for (int64_t i = 0; i < x.numElements(); ++i)
      bits[i] = floatToFloat8E4M3((float)x.getDouble(i), /*saturate=*/false);
    results.push_back(std::move(out));
    return success();
  }
  if (x.dtype() == DType::String && to != DType::String)
    for (int64_t i = 0; i < x.numElements(); ++i)
      if (!parseNumber(x.getString(i)))
        return op->emitOpError("cannot parse '")
               << x.getString(i) << "' as a number";
  results.push_back(x.castTo(to));
  return success();
}

LogicalResult evalSelect(Operation *op, ArrayRef<const Tensor *> operands,
                         std::vector<Tensor> &results) {
  const Tensor &c = *operands[0], &t = *operands[1], &f = *operands[2];
  auto shape = broadcastShapes(op, {c.shape(), t.shape(), f.shape()});
  if (failed(shape))
    return failure();
  Tensor out(resultDType(op), *shape);
  size_t width = dtypeSize(out.dtype());
  auto *dst = static_cast<char *>(out.mutableData());
  auto *tp = static_cast<const char *>(t.rawData());
  auto *fp = static_cast<const char *>(f.rawData());
  forEachBroadcast(*shape, {c.shape(), t.shape(), f.shape()},
                   [&](int64_t i, const std::vector<int64_t> &idx) {
                     const char *src = c.getInt(idx[0]) ? tp + idx[1] * width
                                                        : fp + idx[2] * width;
                     std::memcpy(dst + i * width, src, width);
                   });
  results.push_back(std::move(out));
  return success();
}

LogicalResult evalIsInf(Operation *op, ArrayRef<const Tensor *> operands,
                        std::vector<Tensor> &results) {
  auto isInf = cast<IsInfOp>(op);
  bool pos = isInf.getDetectPositive(), neg = isInf.getDetectNegative();
  const Tensor &x = *operands[0];
  Tensor out(DType::Bool, x.shape());
  for (int64_t i = 0; i < x.numElements(); ++i) {
    double v = x.getDouble(i);
    out.setInt(i, std::isinf(v) && ((v > 0 && pos) || (v < 0 && neg)));
  }
  results.push_back(std::move(out));
  return success();
}

LogicalResult evalMod(Operation *op, ArrayRef<const Tensor *> operands,
                      std::vector<Tensor> &results) {
  static const EvalFn cMod =
      binary([](double a, double b) { return std::fmod(a, b); },
             [](int64_t a, int64_t b) { return b == 0 ? 0 : a % b; });
  static const EvalFn pythonMod = binary(
      [](double a, double b) {
        double r = std::fmod(a, b);
        return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
      },
      [](int64_t a, int64_t b) {
        if (b == 0)
          return (int64_t)0;
        int64_t r = a % b;
        return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
      });
  return cast<ModOp>(op).getFmod() ? cMod(op, operands, results)
                                   : pythonMod(op, operands, results);
}

/// Integer widths for shifts and bitwise-not on unsigned types.
int64_t maskToWidth(int64_t v, DType type) {
  switch (type) {
  case DType::U8: return v & 0xff;
  case DType::U16: return v & 0xffff;
  case DType::U32: return v & 0xffffffffll;
  default: return v;
  }
}

} // namespace

void registerElementwiseEvaluators(EvalRegistry &r) {
  r.add(ConstantOp::getOperationName(), evalConstant);
  r.add(CastOp::getOperationName(), evalCast);
  r.add(SelectOp::getOperationName(), evalSelect);
  r.add(IsInfOp::getOperationName(), evalIsInf);
  r.add(ModOp::getOperationName(), evalMod);
  r.add(IsNaNOp::getOperationName(),
        [](Operation *op, ArrayRef<const Tensor *> operands,
           std::vector<Tensor> &results) {
          const Tensor &x = *operands[0];
          Tensor out(DType::Bool, x.shape());
          for (int64_t i = 0; i < x.numElements(); ++i)
            out.setInt(i, std::isnan(x.getDouble(i)));
          results.push_back(std::move(out));
          return success();
        });

  r.add(AbsOp::getOperationName(),
        anyUnary([](double v) { return std::fabs(v); },
                 [](int64_t v) { return v < 0 ? -v : v; }));
  r.add(NegOp::getOperationName(), anyUnary([](double v) { return -v; },
                                            [](int64_t v) { return -v; }));
  r.add(SignOp::getOperationName(),
        anyUnary([](double v) { return std::isnan(v) ? v : (double)((v > 0) - (v < 0)); },
                 [](int64_t v) { return (int64_t)((v > 0) - (v < 0)); }));
  r.add(ReluOp::getOperationName(),
        anyUnary([](double v) { return v > 0 ? v : (std::isnan(v) ? v : 0.0); },
                 [](int64_t v) { return v > 0 ? v : 0; }));
  r.add(ExpOp::getOperationName(), floatUnary([](double v) { return std::exp(v); }));
  r.add(LogOp::getOperationName(), floatUnary([](double v) { return std::log(v); }));
  r.add(SqrtOp::getOperationName(), floatUnary([](double v) { return std::sqrt(v); }));
  r.add(RsqrtOp::getOperationName(),
        floatUnary([](double v) { return 1.0 / std::sqrt(v); }));
  r.add(ReciprocalOp::getOperationName(), floatUnary([](double v) { return 1.0 / v; }));
  r.add(TanhOp::getOperationName(), floatUnary([](double v) { return std::tanh(v); }));
  r.add(SigmoidOp::getOperationName(),
        floatUnary([](double v) { return 1.0 / (1.0 + std::exp(-v)); }));
  r.add(ErfOp::getOperationName(), floatUnary([](double v) { return std::erf(v); }));
  r.add(SinOp::getOperationName(), floatUnary([](double v) { return std::sin(v); }));
  r.add(CosOp::getOperationName(), floatUnary([](double v) { return std::cos(v); }));
  r.add(TanOp::getOperationName(), floatUnary([](double v) { return std::tan(v); }));
  r.add(AsinOp::getOperationName(), floatUnary([](double v) { return std::asin(v); }));
  r.add(AcosOp::getOperationName(), floatUnary([](double v) { return std::acos(v); }));
  r.add(AtanOp::getOperationName(), floatUnary([](double v) { return std::atan(v); }));
  r.add(SinhOp::getOperationName(), floatUnary([](double v) { return std::sinh(v); }));
  r.add(CoshOp::getOperationName(), floatUnary([](double v) { return std::cosh(v); }));
  r.add(AsinhOp::getOperationName(), floatUnary([](double v) { return std::asinh(v); }));
  r.add(AcoshOp::getOperationName(), floatUnary([](double v) { return std::acosh(v); }));
  r.add(AtanhOp::getOperationName(), floatUnary([](double v) { return std::atanh(v); }));
  r.add(CeilOp::getOperationName(), floatUnary([](double v) { return std::ceil(v); }));
  r.add(FloorOp::getOperationName(), floatUnary([](double v) { return std::floor(v); }));
  r.add(RoundOp::getOperationName(), floatUnary(roundHalfToEven));
  r.add(NotOp::getOperationName(),
        anyUnary([](double v) { return (double)(v == 0); },
                 [](int64_t v) { return (int64_t)(v == 0); }));
  r.add(BitwiseNotOp::getOperationName(),
        [](Operation *op, ArrayRef<const Tensor *> operands,
           std::vector<Tensor> &results) {
          DType type = operands[0]->dtype();
          return unary(op, operands, results, [](double v) { return v; },
                       [type](int64_t v) { return maskToWidth(~v, type); });
        });

  r.add(AddOp::getOperationName(), SAME_FN(a + b));
  r.add(SubOp::getOperationName(), SAME_FN(a - b));
  r.add(MulOp::getOperationName(), SAME_FN(a * b));
  r.add(DivOp::getOperationName(),
        binary([](double a, double b) { return a / b; },
               [](int64_t a, int64_t b) { return b == 0 ? (int64_t)0 : a / b; }));
  r.add(PowOp::getOperationName(),
        binary([](double a, double b) { return std::pow(a, b); }, integerPow));
  r.add(MaxOp::getOperationName(),
        binary([](double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); },
               [](int64_t a, int64_t b) { return std::max(a, b); }));
  r.add(MinOp::getOperationName(),
        binary([](double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); },
               [](int64_t a, int64_t b) { return std::min(a, b); }));
  r.add(AndOp::getOperationName(), SAME_FN(a != 0 && b != 0));
  r.add(OrOp::getOperationName(), SAME_FN(a != 0 || b != 0));
  r.add(XorOp::getOperationName(), SAME_FN((a != 0) != (b != 0)));
  r.add(BitwiseAndOp::getOperationName(),
        binary([](double a, double b) { return (double)((uint64_t)a & (uint64_t)b); },
               [](int64_t a, int64_t b) { return a & b; }));
  r.add(BitwiseOrOp::getOperationName(),
        binary([](double a, double b) { return (double)((uint64_t)a | (uint64_t)b); },
               [](int64_t a, int64_t b) { return a | b; }));
  r.add(BitwiseXorOp::getOperationName(),
        binary([](double a, double b) { return (double)((uint64_t)a ^ (uint64_t)b); },
               [](int64_t a, int64_t b) { return a ^ b; }));
  r.add(ShiftLeftOp::getOperationName(),
        binary([](double a, double b) { return (double)((uint64_t)a << (uint64_t)b); },
               [](int64_t a, int64_t b) { return b >= 64 ? 0 : (int64_t)((uint64_t)a << b); }));
  r.add(ShiftRightOp::getOperationName(),
        binary([](double a, double b) { return (double)((uint64_t)a >> (uint64_t)b); },
               [](int64_t a, int64_t b) { return b >= 64 ? 0 : (int64_t)((uint64_t)a >> b); }));
  r.add(EqualOp::getOperationName(), SAME_FN(a == b));
  r.add(LessOp::getOperationName(), SAME_FN(a < b));
  r.add(LessEqualOp::getOperationName(), SAME_FN(a <= b));
  r.add(GreaterOp::getOperationName(), SAME_FN(a > b));
  r.add(GreaterEqualOp::getOperationName(), SAME_FN(a >= b));
}

} // namespace sluice
