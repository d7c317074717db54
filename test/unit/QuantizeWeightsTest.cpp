//===- QuantizeWeightsTest.cpp - weight-only quantization arithmetic ------===//
//
// The math of sluice-quantize-weights (passes/compress/QuantizeWeights.h)
// and of 4-bit tensors (lib/support/Tensor.h), apart from the IR: scales
// rounded to f16 before quantizing, blocks along K with a short last block,
// the error bound of symmetric rounding, zero columns, and the nibble
// packing bundles and ONNX files use.
//
//===----------------------------------------------------------------------===//

#include "passes/compress/QuantizeWeights.h"
#include "lib/support/Tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace sluice;

namespace {

TEST(Nibbles, PackLowFirstAndUnpackSignExtends) {
  const int8_t values[5] = {-1, 7, -8, 3, 5};
  std::vector<uint8_t> packed = packNibbles(values, 5);
  ASSERT_EQ(packed.size(), 3u);
  EXPECT_EQ(packed[0], 0x7F);
  EXPECT_EQ(packed[1], 0x38);
  EXPECT_EQ(packed[2], 0x05);
  int8_t back[5];
  unpackNibbles(packed.data(), 5, /*isSigned=*/true, back);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(back[i], values[i]) << i;
  uint8_t unsignedBack[5];
  unpackNibbles(packed.data(), 5, /*isSigned=*/false, unsignedBack);
  EXPECT_EQ(unsignedBack[0], 15);
  EXPECT_EQ(unsignedBack[2], 8);
}

TEST(Nibbles, TensorElementsWrapToFourBits) {
  Tensor i4(DType::I4, {4});
  i4.setInt(0, 7);
  i4.setInt(1, -8);
  i4.setInt(2, 8); // wraps to -8
  i4.setDouble(3, -3.0);
  EXPECT_EQ(i4.getInt(0), 7);
  EXPECT_EQ(i4.getInt(1), -8);
  EXPECT_EQ(i4.getInt(2), -8);
  EXPECT_EQ(i4.getInt(3), -3);
  Tensor u4(DType::U4, {2});
  u4.setInt(0, 15);
  u4.setInt(1, 16); // wraps to 0
  EXPECT_EQ(u4.getInt(0), 15);
  EXPECT_EQ(u4.getInt(1), 0);
  EXPECT_EQ(dtypeSize(DType::I4), 1u);
  EXPECT_EQ(std::string(dtypeName(DType::U4)), "u4");
  EXPECT_EQ(parseDType("i4"), DType::I4);
}

/// The float a stored f16 scale stands for.
float scaleOf(const QuantizedWeight &q, int64_t i) { return halfToFloat(q.scales[i]); }

TEST(QuantizeWeightMatrix, Int8PerColumnUsesTheF16Scale) {
  // [3, 2]: column 0 is {1, 7, -4}, column 1 {-2, 0.5, 0}.
  const float w[6] = {1.0f, -2.0f, 7.0f, 0.5f, -4.0f, 0.0f};
  QuantizedWeight q = quantizeWeightMatrix(w, 3, 2, 8, 3);
  ASSERT_EQ(q.scales.size(), 2u);
  EXPECT_EQ(q.scales[0], floatToHalf(7.0f / 127.0f));
  EXPECT_EQ(q.scales[1], floatToHalf(2.0f / 127.0f));
  // Each column's maximum maps to +-127, the others to w / (the stored f16
  // scale) rounded: 1 / 0.0551147 = 18.14, -4 / 0.0551147 = -72.58.
  EXPECT_EQ(q.values[2], 127);
  EXPECT_EQ(q.values[1], -127);
  EXPECT_EQ(q.values[0], 18);
  EXPECT_EQ(q.values[4], -73);
  EXPECT_EQ(q.values[3], (int8_t)std::nearbyint(0.5f / scaleOf(q, 1)));
  EXPECT_EQ(q.values[5], 0);
}

TEST(QuantizeWeightMatrix, Int4BlocksWithAShortLastBlock) {
  // K = 300, group 128: blocks of 128, 128 and 44 rows.
  const int64_t k = 300, n = 5;
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> w(k * n);
  for (auto &v : w)
    v = dist(rng);
  QuantizedWeight q = quantizeWeightMatrix(w.data(), k, n, 4, 128);
  EXPECT_EQ(q.group, 128);
  ASSERT_EQ(q.scales.size(), 3u * n);
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t j = 0; j < n; ++j) {
      float amax = 0;
      for (int64_t p = b * 128; p < std::min<int64_t>(k, (b + 1) * 128); ++p)
        amax = std::max(amax, std::fabs(w[p * n + j]));
      EXPECT_EQ(q.scales[b * n + j], floatToHalf(amax / 7.0f)) << b << "," << j;
      const float s = scaleOf(q, b * n + j);
      for (int64_t p = b * 128; p < std::min<int64_t>(k, (b + 1) * 128); ++p) {
        const int v = q.values[p * n + j];
        ASSERT_GE(v, -8);
        ASSERT_LE(v, 7);
        // Symmetric rounding: within half a step, except where the f16
        // rounding of the scale pushed max|w| just past 7 steps.
        EXPECT_LE(std::fabs(v * s - w[p * n + j]), 0.5f * s + 1e-3f * amax);
      }
    }
}

TEST(QuantizeWeightMatrix, GroupLargerThanKAndZeroColumns) {
  const float w[4] = {0.0f, 3.0f, 0.0f, -6.0f}; // [2, 2], column 0 all zero
  QuantizedWeight q = quantizeWeightMatrix(w, 2, 2, 4, 128);
  EXPECT_EQ(q.group, 2); // min(group, K)
  ASSERT_EQ(q.scales.size(), 2u);
  EXPECT_EQ(q.scales[0], 0x0400); // f16's smallest normal, not zero
  EXPECT_EQ(q.values[0], 0);
  EXPECT_EQ(q.values[2], 0);
  EXPECT_EQ(q.values[3], -7);
  EXPECT_EQ(q.values[1], (int8_t)std::nearbyint(3.0f / scaleOf(q, 1)));
}

} // namespace
