//===- Float8Test.cpp - E4M3FN conversions ---------------------------------===//
//
// ONNX FLOAT8E4M3FN as the evaluator (lib/support/Tensor.h) and generated
// code (sluice_gen/scalar.h) convert it, against an oracle written here the
// slow way: the nearest of the 253 finite values by search, ties to the
// even code, ONNX's saturation rules (beyond 448: +-448 when saturating,
// else NaN; 464 is a tie that goes to 448). Both implementations must agree
// with it, and with each other, bit for bit.
//
//===----------------------------------------------------------------------===//

#include "codegen/include/sluice_gen/scalar.h"
#include "lib/support/Tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace sluice;

namespace {

/// The value of code `c` from the format's definition.
double oracleValue(int c) {
  int sign = c >> 7, exponent = (c >> 3) & 0xF, mantissa = c & 7;
  if (exponent == 15 && mantissa == 7)
    return NAN;
  double v = exponent == 0 ? std::ldexp(mantissa / 8.0, -6)
                           : std::ldexp(1.0 + mantissa / 8.0, exponent - 7);
  return sign ? -v : v;
}

/// The code ONNX's Cast gives `x`, by search over the positive codes.
uint8_t oracleEncode(float x, bool saturate) {
  uint8_t sign = std::signbit(x) ? 0x80 : 0;
  double a = std::fabs((double)x);
  if (std::isnan(x))
    return sign | 0x7F;
  if (std::isinf(x))
    return sign | (saturate ? 0x7E : 0x7F);
  int best = 0;
  double bestDiff = INFINITY;
  for (int c = 0; c <= 0x7E; ++c) {
    double d = std::fabs(oracleValue(c) - a);
    if (d < bestDiff || (d == bestDiff && (c & 1) == 0 && (best & 1))) {
      best = c;
      bestDiff = d;
    }
  }
  // Past 448 by more than half its ulp (32): out of range.
  if (a > 464.0)
    return sign | (saturate ? 0x7E : 0x7F);
  return sign | (uint8_t)best;
}

TEST(Float8E4M3, EveryCodeDecodes) {
  for (int c = 0; c < 256; ++c) {
    double want = oracleValue(c);
    float tensorValue = float8E4M3ToFloat((uint8_t)c);
    float generated = sluice_load(sluice_f8e4m3{(uint8_t)c});
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(tensorValue)) << c;
      EXPECT_TRUE(std::isnan(generated)) << c;
      continue;
    }
    EXPECT_EQ(tensorValue, (float)want) << c;
    EXPECT_EQ(generated, (float)want) << c;
    // Every finite code encodes back to itself (0x80, -0, included).
    EXPECT_EQ(floatToFloat8E4M3(tensorValue), c) << c;
    EXPECT_EQ(sluice_f8e4m3_bits(tensorValue, true), c) << c;
  }
  EXPECT_EQ(float8E4M3ToFloat(0x7E), 448.0f);
  EXPECT_EQ(float8E4M3ToFloat(0x01), std::ldexp(1.0f, -9));
}

TEST(Float8E4M3, RoundsToNearestEvenAndSaturates) {
  struct Case {
    float x;
    uint8_t saturating, notSaturating;
  };
  const Case cases[] = {
      {1.0625f, 0x38, 0x38},        // halfway 1 and 1.125: even (1)
      {1.1875f, 0x3A, 0x3A},        // halfway 1.125 and 1.25: even (1.25)
      {448.0f, 0x7E, 0x7E},         //
      {464.0f, 0x7E, 0x7E},         // the tie above 448 goes to 448 (even)
      {465.0f, 0x7E, 0x7F},         // out of range
      {1e6f, 0x7E, 0x7F},           //
      {-1e6f, 0xFE, 0xFF},          //
      {INFINITY, 0x7E, 0x7F},       //
      {-INFINITY, 0xFE, 0xFF},      //
      {0.00390625f, 0x02, 0x02},    // 2^-8: a subnormal (2 * 2^-9)
      {0.0009765625f, 0x00, 0x00},  // 2^-10: halfway 0 and 2^-9 -> 0
      {0.00146484375f, 0x01, 0x01}, // 1.5 * 2^-10 -> 2^-9
      {0.015136719f, 0x08, 0x08},   // rounds up out of the subnormals
      {-0.0f, 0x80, 0x80},
  };
  for (const Case &c : cases) {
    EXPECT_EQ(floatToFloat8E4M3(c.x, true), c.saturating) << c.x;
    EXPECT_EQ(floatToFloat8E4M3(c.x, false), c.notSaturating) << c.x;
    EXPECT_EQ(sluice_f8e4m3_bits(c.x, true), c.saturating) << c.x;
    EXPECT_EQ(sluice_f8e4m3_bits(c.x, false), c.notSaturating) << c.x;
  }
  EXPECT_EQ(floatToFloat8E4M3(NAN) & 0x7F, 0x7F);
  EXPECT_EQ(sluice_f8e4m3_bits(NAN, true) & 0x7F, 0x7F);
}

TEST(Float8E4M3, MatchesTheOracleOverFloat32) {
  // Every 371st float32 bit pattern from 2^-12 to 2^10, both signs: every
  // binade of the format and its neighbours, with ties and carries.
  uint32_t lo, hi;
  float flo = std::ldexp(1.0f, -12), fhi = std::ldexp(1.0f, 10);
  std::memcpy(&lo, &flo, 4);
  std::memcpy(&hi, &fhi, 4);
  int64_t checked = 0;
  for (uint32_t bits = lo; bits < hi; bits += 371) {
    for (uint32_t sign : {0u, 0x80000000u}) {
      uint32_t word = bits | sign;
      float x;
      std::memcpy(&x, &word, 4);
      for (bool saturate : {true, false}) {
        uint8_t want = oracleEncode(x, saturate);
        ASSERT_EQ(floatToFloat8E4M3(x, saturate), want) << x << " saturate " << saturate;
        ASSERT_EQ(sluice_f8e4m3_bits(x, saturate), want) << x << " saturate " << saturate;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 900000);
}

TEST(Float8E4M3, TensorStoresOneByteAndCastsSaturate) {
  EXPECT_EQ(dtypeSize(DType::F8E4M3), 1u);
  EXPECT_TRUE(isFloatDType(DType::F8E4M3));
  EXPECT_EQ(parseDType("f8e4m3fn"), DType::F8E4M3);
  Tensor f = Tensor::fromDoubles(DType::F32, {4}, {0.3, -500.0, 17.0, 1.0625});
  Tensor q = f.castTo(DType::F8E4M3);
  EXPECT_EQ(q.byteSize(), 4u);
  // 0.3 -> 0.3125 (0x2A: 1.25 * 2^-2); -500 saturates; 17 -> 16 (tie to
  // even between 16 and 18); 1.0625 -> 1.
  EXPECT_EQ(q.data<uint8_t>()[0], 0x2A);
  EXPECT_EQ(q.getDouble(1), -448.0);
  EXPECT_EQ(q.getDouble(2), 16.0);
  EXPECT_EQ(q.getDouble(3), 1.0);
  Tensor back = q.castTo(DType::F16);
  EXPECT_EQ(back.getDouble(0), 0.3125);
}

} // namespace
