//===- TensorTest.cpp - host tensor numerics ------------------------------===//

#include "lib/support/Tensor.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace sluice;

TEST(Tensor, HalfRoundTripsRepresentableValues) {
  for (float v : {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.9604645e-08f})
    EXPECT_EQ(halfToFloat(floatToHalf(v)), v) << v;
}

TEST(Tensor, HalfRoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1.0).
  EXPECT_EQ(halfToFloat(floatToHalf(1.0f + 0.00048828125f)), 1.0f);
  // 1 + 3*2^-11 is halfway between 1+2^-10 and 1+2^-9: ties to even (1+2^-9).
  EXPECT_EQ(halfToFloat(floatToHalf(1.0f + 3 * 0.00048828125f)), 1.0f + 0.001953125f);
  EXPECT_TRUE(std::isinf(halfToFloat(floatToHalf(70000.0f))));
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(NAN))));
}

TEST(Tensor, Bfloat16KeepsEightMantissaBits) {
  EXPECT_EQ(bfloat16ToFloat(floatToBfloat16(1.0f)), 1.0f);
  EXPECT_EQ(bfloat16ToFloat(floatToBfloat16(3.140625f)), 3.140625f);
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: rounds to even (1.0).
  EXPECT_EQ(bfloat16ToFloat(floatToBfloat16(1.00390625f)), 1.0f);
}

TEST(Tensor, CastTruncatesTowardZeroAndSaturatesBool) {
  Tensor t = Tensor::fromDoubles(DType::F32, {4}, {1.9, -1.9, 0.0, 3.0});
  Tensor i = t.castTo(DType::I32);
  EXPECT_EQ(i.getInt(0), 1);
  EXPECT_EQ(i.getInt(1), -1);
  Tensor b = t.castTo(DType::Bool);
  EXPECT_EQ(b.getInt(0), 1);
  EXPECT_EQ(b.getInt(2), 0);
}

TEST(Tensor, ReshapeSharesStorageAndWritesCopy) {
  Tensor a = Tensor::fromDoubles(DType::F32, {2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor b = a.reshaped({3, 2});
  EXPECT_EQ(a.rawData(), b.rawData());
  b.setDouble(0, 42);
  EXPECT_EQ(a.getDouble(0), 0);
  EXPECT_EQ(b.getDouble(0), 42);
  EXPECT_THROW(a.reshaped({4}), std::logic_error);
}

TEST(Tensor, StridesAreRowMajor) {
  Tensor t(DType::I8, {2, 3, 4});
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(t.byteSize(), 24u);
  EXPECT_EQ(t.describe(), "i8[2x3x4]");
}

TEST(Tensor, FloatsPrintAsShortestRoundTripText) {
  Tensor t = Tensor::fromDoubles(DType::F32, {6},
                                 {0.039187793, 1.0, -2.5, 1e-5, 1e16, NAN});
  Tensor s = t.castTo(DType::String);
  ASSERT_EQ(s.dtype(), DType::String);
  EXPECT_EQ(s.getString(0), "0.039187793"); // float32 precision, not double
  EXPECT_EQ(s.getString(1), "1.0");
  EXPECT_EQ(s.getString(2), "-2.5");
  EXPECT_EQ(s.getString(3), "1e-05");
  EXPECT_EQ(s.getString(4), "1e+16");
  EXPECT_EQ(s.getString(5), "nan");
  // The text reads back as the same float32 values.
  Tensor back = s.castTo(DType::F32);
  for (int64_t i = 0; i < 5; ++i)
    EXPECT_EQ(back.getDouble(i), t.getDouble(i)) << i;
  EXPECT_TRUE(std::isnan(back.getDouble(5)));
}

TEST(Tensor, StringsParseNanInfAndIntegers) {
  Tensor s(DType::String, {6});
  const char *texts[] = {"NaN", "INF", "+INF", "-INF", "9007199254740993", "3.7"};
  for (int64_t i = 0; i < 6; ++i)
    s.setString(i, texts[i]);
  Tensor f = s.castTo(DType::F32);
  EXPECT_TRUE(std::isnan(f.getDouble(0)));
  EXPECT_EQ(f.getDouble(1), INFINITY);
  EXPECT_EQ(f.getDouble(2), INFINITY);
  EXPECT_EQ(f.getDouble(3), -INFINITY);
  Tensor i64 = s.castTo(DType::I64);
  EXPECT_EQ(i64.getInt(4), 9007199254740993); // exact, not through double
  EXPECT_EQ(i64.getInt(5), 3);                // truncates like float to int
  EXPECT_FALSE(parseNumber("abc"));
  EXPECT_FALSE(parseNumber(""));
  EXPECT_EQ(Tensor::fromInt64({-7}).castTo(DType::String).getString(0), "-7");
}

TEST(Tensor, StringStorageIsCopiedOnWrite) {
  Tensor a(DType::String, {2});
  a.setString(0, "x");
  Tensor b = a.reshaped({1, 2});
  b.setString(0, "y");
  EXPECT_EQ(a.getString(0), "x");
  EXPECT_EQ(b.getString(0), "y");
  EXPECT_EQ(a.describe(), "string[2]");
}
