//===- Int8PackTest.cpp - the cpu int8 weight layout (sluice_gen/layout) --===//
//
// sluice_gen/layout/cpu_int8_pack.h, the portable part of the cpu int8 GEMM
// that the compiler runs: the packed weight layout, the symmetric
// per-column weight quantizer and the rounding rule of requantization.
// Built as the compiler builds it: no OpenMP, no ISA flags, no other
// sluice_gen header.
//
//===----------------------------------------------------------------------===//
#include "sluice_gen/layout/cpu_int8_pack.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace {

TEST(Int8Pack, PackedLayoutIsTheDocumentedOne) {
  // K = 6 (two groups, the second half empty), N = 70 (two panels, the
  // second mostly padding); B given both as [K, N] and as [N, K].
  const int64_t k = 6, n = 70;
  std::vector<int8_t> b(k * n), bt(n * k);
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) {
      b[p * n + j] = (int8_t)((p * 31 + j * 7) % 256 - 128);
      bt[j * k + p] = b[p * n + j];
    }
  const int64_t bytes = sluice_int8_packed_b_bytes(k, n);
  ASSERT_EQ(bytes, 256 * 2 * (1 + 2));
  std::vector<uint8_t> packed(bytes, 0xEE), packedT(bytes, 0xEE);
  sluice_int8_pack_b(k, n, b.data(), n, 1, packed.data());
  sluice_int8_pack_b(k, n, bt.data(), 1, k, packedT.data());
  EXPECT_EQ(packed, packedT);
  for (int64_t j = 0; j < 128; ++j) {
    int32_t sum = 0, stored;
    for (int64_t p = 0; j < n && p < k; ++p)
      sum += b[p * n + j];
    memcpy(&stored, packed.data() + 4 * j, 4);
    EXPECT_EQ(stored, sum) << "colsum " << j;
  }
  const int8_t *data = (const int8_t *)packed.data() + 256 * 2;
  for (int64_t panel = 0; panel < 2; ++panel)
    for (int64_t g = 0; g < 2; ++g)
      for (int64_t c = 0; c < 64; ++c)
        for (int64_t t = 0; t < 4; ++t) {
          const int64_t p = 4 * g + t, j = 64 * panel + c;
          const int8_t expected = p < k && j < n ? b[p * n + j] : 0;
          EXPECT_EQ(data[(panel * 2 + g) * 256 + 4 * c + t], expected) << "k=" << p << " n=" << j;
        }
}

TEST(Int8Pack, RequantValueRoundsHalfToEvenAndSaturates) {
  const sluice_int8_requant u8 = sluice_int8_requant_for<uint8_t>(1.0f, 0);
  const sluice_int8_requant s8 = sluice_int8_requant_for<int8_t>(0.5f, 10);
  EXPECT_EQ(sluice_int8_requant_value(2.5f, u8), 2);
  EXPECT_EQ(sluice_int8_requant_value(3.5f, u8), 4);
  EXPECT_EQ(sluice_int8_requant_value(2.4999f, u8), 2);
  EXPECT_EQ(sluice_int8_requant_value(254.5f, u8), 254);
  EXPECT_EQ(sluice_int8_requant_value(255.5f, u8), 255);
  EXPECT_EQ(sluice_int8_requant_value(1e9f, u8), 255);
  EXPECT_EQ(sluice_int8_requant_value(-0.5f, u8), 0);
  EXPECT_EQ(sluice_int8_requant_value(-1e9f, u8), 0);
  EXPECT_EQ(sluice_int8_requant_value(INFINITY, u8), 255);
  EXPECT_EQ(sluice_int8_requant_value(NAN, u8), 0);
  EXPECT_EQ(sluice_int8_requant_value(-1.25f, s8), 8);   // -2.5 -> -2, + 10
  EXPECT_EQ(sluice_int8_requant_value(-1.75f, s8), 6);   // -3.5 -> -4, + 10
  EXPECT_EQ(sluice_int8_requant_value(58.75f, s8), 127); // 117.5 -> 118 + 10, clamped
  EXPECT_EQ(sluice_int8_requant_value(-69.25f, s8), -128);
  EXPECT_EQ(sluice_int8_requant_value(NAN, s8), -128);
}

TEST(Int8Pack, QuantizeWeightsPerColumn) {
  // [N, K] storage (a Gemm transB weight); column 1 is all zero.
  const int64_t k = 5, n = 3;
  const float wt[n][k] = {
      {0.5f, -1.27f, 0.01f, 1.0f, -0.3f}, {0, 0, 0, 0, 0}, {-2.54f, 2.0f, 0.02f, 1.27f, -0.01f}};
  int8_t q[k * n];
  float scale[n];
  sluice_int8_quantize_weights(k, n, &wt[0][0], 1, k, q, scale);
  EXPECT_FLOAT_EQ(scale[0], 1.27f / 127);
  EXPECT_EQ(scale[1], 1.0f);
  EXPECT_FLOAT_EQ(scale[2], 2.54f / 127);
  EXPECT_EQ(q[1 * n + 0], -127); // the column's peak maps to the range's end
  EXPECT_EQ(q[0 * n + 2], -127);
  EXPECT_EQ(q[3 * n + 2], 64); // 1.27 / 0.02 = 63.5 -> 64 (half to even)
  for (int64_t p = 0; p < k; ++p) {
    EXPECT_EQ(q[p * n + 1], 0);
    for (int64_t j : {0, 2})
      EXPECT_LE(std::fabs(q[p * n + j] * scale[j] - wt[j][p]), scale[j] / 2 * 1.0001f);
  }
}

} // namespace
