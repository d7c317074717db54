//===- TensorTest.cpp - host tensor numerics ------------------------------===//

#include "lib/reference/Tensor.h"

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
