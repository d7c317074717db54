//===- CudaQuantHostTest.cpp - the quantized cuda kernels' host arithmetic -===//
//
// The host arithmetic of the quantized cuda kernels: the compiler's part,
// sluice_gen/layout/cuda_quant_layout.h, and the host-and-device rounding
// and int4 access of sluice_gen/cuda_quant_kernels.cuh. QuantizeLinear's
// rounding against the independent reference, int4
// packing in ONNX order, column sums and the u8 -> s8 zero-point
// correction of the IMMA path, the packing of constant int8 weights for
// IMMA, the weight-only split plan and the workspace sizes.
//
//===----------------------------------------------------------------------===//

#include "sluice_gen/layout/cuda_quant_layout.h"

// The host-and-device functions, on the host as CudaQuantEmuTest.cpp
// includes them.
#include "CudaRowEmulation.h"

#include "sluice_gen/cuda_quant_kernels.cuh"

#include "common/QuantReference.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace {

using namespace sluice_quant_test;

TEST(CudaQuantHost, QuantValueRoundsHalfToEvenAndSaturates) {
  struct Case {
    float x, scale;
    int32_t zp, qmin, qmax, expect;
  };
  const Case cases[] = {
      {2.5f, 1.0f, 0, -128, 127, 2},       {3.5f, 1.0f, 0, -128, 127, 4},
      {-2.5f, 1.0f, 0, -128, 127, -2},     {-3.5f, 1.0f, 0, -128, 127, -4},
      {0.5f, 1.0f, 0, 0, 255, 0},          {1.5f, 1.0f, 10, 0, 255, 12},
      {0.25f, 0.1f, 128, 0, 255, 130},     {1000.0f, 0.5f, 0, -128, 127, 127},
      {-1000.0f, 0.5f, 3, 0, 255, 0},      {NAN, 1.0f, 5, 0, 255, 0},
      {INFINITY, 1.0f, 0, -128, 127, 127}, {-INFINITY, 1.0f, 0, -128, 127, -128},
      {0.3f, 0.1f, 0, 0, 255, 3},
  };
  for (const Case &c : cases) {
    EXPECT_EQ(sluice_quant_value(c.x, c.scale, c.zp, c.qmin, c.qmax), c.expect)
        << c.x << " / " << c.scale << " + " << c.zp;
    EXPECT_EQ(quantizeRef(c.x, c.scale, c.zp, c.qmin, c.qmax), c.expect) << c.x;
  }
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-40.0f, 40.0f);
  for (int i = 0; i < 20000; ++i) {
    // Multiples of a quarter of the scale hit exact ties often.
    const float x = i % 2 ? dist(rng) : std::round(dist(rng) * 4.0f) / 4.0f * 0.125f;
    ASSERT_EQ(sluice_quant_value(x, 0.125f, 7, 0, 255), quantizeRef(x, 0.125f, 7, 0, 255)) << x;
    ASSERT_EQ(sluice_quant_value(x, 0.3f, 0, -128, 127), quantizeRef(x, 0.3f, 0, -128, 127)) << x;
  }
}

TEST(CudaQuantHost, Int4PackingIsOnnxOrder) {
  const int8_t values[] = {1, -2, 7, -8, 0, 5, -1};
  uint8_t packed[4] = {0xaa, 0xaa, 0xaa, 0xaa};
  sluice_int4_pack(values, 7, packed);
  // Element 2i in the low nibble of byte i; the odd tail's high nibble is 0.
  EXPECT_EQ(packed[0], 0xe1);
  EXPECT_EQ(packed[1], 0x87);
  EXPECT_EQ(packed[2], 0x50);
  EXPECT_EQ(packed[3], 0x0f);
  for (int e = 0; e < 7; ++e)
    EXPECT_EQ(sluice_int4_at(packed, e, true), values[e]) << e;
  const int8_t unsignedValues[] = {0, 15, 8, 7, 3};
  sluice_int4_pack(unsignedValues, 5, packed);
  for (int e = 0; e < 5; ++e)
    EXPECT_EQ(sluice_int4_at(packed, e, false), unsignedValues[e]) << e;
}

TEST(CudaQuantHost, ColumnSumsCorrectTheShiftedActivation) {
  // The IMMA path's identity: sum (a - zA) b = sum (a - 128) b - zc colsum,
  // zc = sluice_int8_zero_correction(true, zA), for u8 a; s8 as it is.
  std::mt19937 rng(5);
  const int64_t k = 77, n = 9;
  std::vector<int8_t> b(k * n);
  for (auto &v : b)
    v = (int8_t)(int)(rng() % 256 - 128);
  std::vector<int32_t> colsum(n);
  sluice_int8_colsums(k, n, b.data(), n, 1, colsum.data());
  for (int64_t j = 0; j < n; ++j) {
    int32_t s = 0;
    for (int64_t p = 0; p < k; ++p)
      s += b[p * n + j];
    EXPECT_EQ(colsum[j], s);
  }
  for (int32_t zA : {0, 1, 128, 200, 255}) {
    std::vector<uint8_t> a(k);
    for (auto &v : a)
      v = (uint8_t)(rng() % 256);
    const int32_t zc = sluice_int8_zero_correction(true, zA);
    for (int64_t j = 0; j < n; ++j) {
      int64_t exact = 0, shifted = 0;
      for (int64_t p = 0; p < k; ++p) {
        exact += ((int64_t)a[p] - zA) * b[p * n + j];
        shifted += (int64_t)(int8_t)(a[p] ^ 0x80) * b[p * n + j];
      }
      EXPECT_EQ(exact, shifted - (int64_t)zc * colsum[j]) << "zA " << zA;
    }
  }
  EXPECT_EQ(sluice_int8_zero_correction(false, -3), -3);
}

TEST(CudaQuantHost, WeightOnlyPlanCoversK) {
  struct Case {
    int64_t m, n, k;
    int bits, sms;
  };
  const Case cases[] = {{1, 768, 768, 8, 132},    {1, 768, 3072, 4, 132}, {16, 4096, 4096, 4, 132},
                        {4, 50000, 4096, 8, 132}, {1, 10, 5, 4, 132},     {3, 128, 1000, 8, 1},
                        {1, 300, 127, 8, 80}};
  for (const Case &c : cases) {
    const SluiceWonlyPlan p = sluice_wonly_plan(c.m, c.n, c.k, c.bits, c.sms);
    const int64_t rows = sluice_wonly_stage_rows(c.bits);
    EXPECT_EQ(p.colTiles, (c.n + 127) / 128);
    EXPECT_GE(p.splits, 1);
    EXPECT_EQ(p.kPerSplit % rows, 0);
    EXPECT_GE(p.splits * p.kPerSplit, c.k) << "splits must cover K";
    EXPECT_LT((p.splits - 1) * p.kPerSplit, c.k) << "no empty split";
    EXPECT_EQ(p.partialBytes, p.splits > 1 ? p.splits * c.m * c.n * 4 : 0);
    // A split spans at least two stages, unless K has fewer.
    if (p.splits > 1) {
      EXPECT_GE(p.kPerSplit, 2 * rows);
    }
  }
  EXPECT_EQ(sluice_wonly_stage_rows(8), 64);
  EXPECT_EQ(sluice_wonly_stage_rows(4), 128);
  // Decoding shapes on an H100 (132 SMs): too few column tiles alone.
  EXPECT_GT(sluice_wonly_plan(1, 768, 3072, 4, 132).splits, 1);
  EXPECT_EQ(sluice_wonly_plan(1, 60000, 4096, 8, 132).splits, 1);
  // The scratch caps the splits: room for 3 splits' partial sums, or for
  // less than 2 (then one split and no scratch).
  const SluiceWonlyPlan capped = sluice_wonly_plan(2, 128, 8192, 8, 132, 3 * 2 * 128 * 4 + 5);
  EXPECT_EQ(capped.splits, 3);
  EXPECT_GE(capped.splits * capped.kPerSplit, 8192);
  const SluiceWonlyPlan single = sluice_wonly_plan(2, 128, 8192, 8, 132, 2 * 2 * 128 * 4 - 1);
  EXPECT_EQ(single.splits, 1);
  EXPECT_EQ(single.partialBytes, 0);
  EXPECT_GE(single.kPerSplit, 8192);
  EXPECT_EQ(sluice_wonly_m_tile(1), 1);
  EXPECT_EQ(sluice_wonly_m_tile(3), 4);
  EXPECT_EQ(sluice_wonly_m_tile(9), 16);
  EXPECT_EQ(sluice_wonly_m_tile(16), 16);
}

TEST(CudaQuantHost, ConstantWeightsPackForImma) {
  // [colsum (256-byte padded) | B^T as [N][K]], from a transposed view too.
  std::mt19937 rng(31);
  const int64_t k = 13, n = 70;
  std::vector<int8_t> b(k * n);
  for (auto &v : b)
    v = (int8_t)(int)(rng() % 256 - 128);
  ASSERT_EQ(sluice_int8_nk_colsum_bytes(n), 512);
  ASSERT_EQ(sluice_int8_nk_bytes(k, n), 512 + k * n);
  for (bool transposedView : {false, true}) {
    // The same matrix stored [K, N] (strides n, 1) or [N, K] (1, k).
    std::vector<int8_t> stored(b.size());
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j)
        stored[transposedView ? j * k + p : p * n + j] = b[p * n + j];
    std::vector<unsigned char> packed(sluice_int8_nk_bytes(k, n), 0xcc);
    sluice_int8_pack_nk(k, n, stored.data(), transposedView ? 1 : n, transposedView ? k : 1,
                        packed.data());
    std::vector<int32_t> colsum(n);
    sluice_int8_colsums(k, n, b.data(), n, 1, colsum.data());
    for (int64_t j = 0; j < n; ++j) {
      int32_t s;
      memcpy(&s, packed.data() + 4 * j, 4);
      EXPECT_EQ(s, colsum[j]) << j;
      for (int64_t p = 0; p < k; ++p)
        ASSERT_EQ((int8_t)packed[512 + j * k + p], b[p * n + j]) << p << ", " << j;
    }
    for (int64_t e = 4 * n; e < 512; ++e)
      ASSERT_EQ(packed[e], 0) << "padding byte " << e;
  }
}

TEST(CudaQuantHost, WorkspaceSizes) {
  // int8: the int32 product, the shifted u8 A, device column sums (per
  // batch when B is), each 256-aligned, then cuBLASLt's part.
  SluiceInt8GemmShape g{5, 6, 7, 7, 7, SLUICE_INT8_B_NK, 1, 3, 2, 35, 42};
  const SluiceInt8Scratch s = sluice_int8_scratch(g, true);
  EXPECT_EQ(s.acc, 256);
  EXPECT_EQ(s.shifted, 256);
  EXPECT_EQ(s.colsum, 256);
  EXPECT_EQ(sluice_int8_gemm_workspace(g), 768 + SLUICE_QUANT_LT_WORKSPACE);
  g = SluiceInt8GemmShape{128, 768, 768, 768, 768, SLUICE_INT8_B_NK, 0, 0, 1, 0, 0};
  EXPECT_EQ(sluice_int8_scratch(g, false).total, 128 * 768 * 4);
  // Weight-only: M <= 16 the split-K partials (for up to 256 SMs), M > 16
  // the dequantized B, the f32 product and cuBLASLt's part.
  SluiceWonlyShape w{1, 768, 3072, 3072, 768, 4, 1, 0, 128};
  EXPECT_EQ(sluice_wonly_workspace(w, 2),
            sluice_quant_round256(sluice_wonly_plan(1, 768, 3072, 4, 256).partialBytes));
  EXPECT_GT(sluice_wonly_workspace(w, 2), 0);
  w.m = 64;
  EXPECT_EQ(sluice_wonly_workspace(w, 2),
            3072 * 768 * 2 + 64 * 768 * 4 + SLUICE_QUANT_LT_WORKSPACE);
}

} // namespace
