//===- SgemmTest.cpp - the cpu f32 GEMM (sluice_gen/cpu_gemm.h) -----------===//
//
// sluice_sgemm::gemm_ep against a double-precision reference: edge tiles in
// rows and columns (every row count of the micro-kernel, columns that fill
// one vector, part of one, or part of the second), K over several slices
// and K = 0, padded leading dimensions, the bias of the last K slice, the
// one-row in-place path, the epilogue callback (every element of C exactly
// once, after it is final), and the fused attention's panel GEMM
// (sluice_attn_gemm, which runs the same micro-kernel on 32-column panels),
// and the GEMM over a weight packed ahead of time
// (sluice_sgemm_pack_panels + sluice_sgemm_packed_batched_ep: the layout the
// compiler writes to weights.bin) with its thread tiles and batches.
//
// test/unit/CMakeLists.txt builds this file once per ISA the host can run
// (avx512, avx2), with SLUICE_SGEMM_EXPECT_ISA naming the one each build
// must select.
//
//===----------------------------------------------------------------------===//
#include "sluice_gen/cpu_attention.h"
#include "sluice_gen/cpu_blas.h"
#include "sluice_gen/cpu_gemm.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <random>
#include <vector>

#if !defined(SLUICE_SGEMM_ISA)
#error "this test needs a build with AVX-512F or AVX2 + FMA"
#endif

namespace {

TEST(Sgemm, SelectsTheExpectedIsa) { EXPECT_EQ(SLUICE_SGEMM_ISA, SLUICE_SGEMM_EXPECT_ISA); }

/// Runs C = A B (+ bias) with padded leading dimensions and checks C
/// against a double reference, and that the epilogue saw every element of
/// C once, after its final value was stored.
void check(int64_t m, int64_t n, int64_t k, bool withBias, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t lda = k + 3, ldb = n + 5, ldc = n + 7;
  std::vector<float> a(m * lda), b((k > 0 ? k : 1) * ldb), bias(m), c(m * ldc, -7.0f);
  for (float &x : a)
    x = dist(rng);
  for (float &x : b)
    x = dist(rng);
  for (float &x : bias)
    x = dist(rng);
  std::vector<int> seen(m * n, 0);
  bool finalWhenSeen = true;
  std::vector<double> want(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = withBias ? bias[i] : 0.0;
      for (int64_t p = 0; p < k; ++p)
        s += (double)a[i * lda + p] * b[p * ldb + j];
      want[i * n + j] = s;
    }
  auto epi = [&](int64_t r0, int64_t rows, int64_t c0, int64_t cols) {
    for (int64_t i = r0; i < r0 + rows; ++i)
      for (int64_t j = c0; j < c0 + cols; ++j) {
        ++seen[i * n + j];
        if (std::fabs(c[i * ldc + j] - want[i * n + j]) > 1e-4 * (1 + k))
          finalWhenSeen = false;
      }
  };
  sluice_sgemm::gemm_ep(m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc,
                        withBias ? bias.data() : nullptr, epi);
  double worst = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      worst = std::max(worst, std::fabs(c[i * ldc + j] - want[i * n + j]));
  EXPECT_LE(worst, 2e-6 * (1 + k)) << m << "x" << n << "x" << k;
  // Padding columns of C are never written.
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = n; j < ldc && i * ldc + j < (int64_t)c.size(); ++j)
      ASSERT_EQ(c[i * ldc + j], -7.0f) << "padding written at " << i << "," << j;
  for (int64_t e = 0; e < m * n; ++e)
    ASSERT_EQ(seen[e], 1) << "element " << e << " of " << m << "x" << n << "x" << k;
  EXPECT_TRUE(finalWhenSeen) << m << "x" << n << "x" << k;
}

TEST(Sgemm, EveryTileEdge) {
  uint32_t seed = 1;
  const int64_t nr = sluice_sgemm::NR, vl = sluice_sgemm::VL;
  for (int64_t m = 1; m <= 2 * sluice_sgemm::MR + 1; ++m)
    for (int64_t n : {int64_t(1), vl - 1, vl, vl + 1, nr - 1, nr, nr + 3, 2 * nr + vl / 2})
      check(m, n, 19, m % 2 == 0, seed++);
}

TEST(Sgemm, DeepAndWide) {
  // K over several slices (KC), N over several blocks (NC), M over
  // several row blocks (MC).
  check(sluice_sgemm::MC + 13, 2 * sluice_sgemm::NC + 37, 2 * sluice_sgemm::KC + 5, true, 7);
  check(64, 768, 3 * sluice_sgemm::KC, false, 8);
}

TEST(Sgemm, OneRowAndZeroDepth) {
  check(1, 1000, 512, false, 9);
  check(1, 3, 700, true, 10);
  check(4, 2048, 600, true, 11);
  check(5, 17, 0, true, 12);
  check(3, 9, 0, false, 13);
}

TEST(Sgemm, AttentionPanelGemm) {
  // B packed in SLUICE_ATTN_NR-column panels, zero-padded, as the fused
  // attention packs K^T and V.
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t NR = SLUICE_ATTN_NR;
  for (int64_t m : {1, 5, 6, 7, 12, 13, 31})
    for (int64_t n : {1, 15, 16, 17, 32, 40, 77})
      for (int64_t kc : {0, 1, 64, 100}) {
        const int64_t panels = (n + NR - 1) / NR, panelStride = NR * (kc > 0 ? kc : 1);
        const int64_t lda = kc + 2, ldc = n + 1;
        std::vector<float> a(m * lda), bpStore(panels * panelStride + 16, 0.0f), c(m * ldc, 0);
        float *bp = (float *)(((uintptr_t)bpStore.data() + 63) & ~(uintptr_t)63);
        for (float &x : a)
          x = dist(rng);
        std::vector<float> bfull((kc > 0 ? kc : 1) * n);
        for (int64_t p = 0; p < kc; ++p)
          for (int64_t j = 0; j < n; ++j) {
            bfull[p * n + j] = dist(rng);
            bp[(j / NR) * panelStride + p * NR + j % NR] = bfull[p * n + j];
          }
        sluice_attn_gemm(m, n, kc, a.data(), lda, bp, panelStride, c.data(), ldc);
        double worst = 0;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double s = 0;
            for (int64_t p = 0; p < kc; ++p)
              s += (double)a[i * lda + p] * bfull[p * n + j];
            worst = std::max(worst, std::fabs(c[i * ldc + j] - s));
          }
        EXPECT_LE(worst, 1e-5 * (1 + kc)) << m << "x" << n << "x" << kc;
      }
}

/// A = [batches x m x k] (batch i at aOff[i]), B a k x n weight packed with
/// its view's offset and row stride, C = [batches x m x n].
void checkPacked(int threads, int64_t batches, int64_t m, int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t lda = k + 1, ldb = n + 3, offset = 5, nr = sluice_sgemm::NR;
  std::vector<float> a(batches * m * lda + 7), w(offset + (k > 0 ? k : 1) * ldb);
  for (float &x : a)
    x = dist(rng);
  for (float &x : w)
    x = dist(rng);
  std::vector<int64_t> aOff;
  for (int64_t b = 0; b < batches; ++b)
    aOff.push_back(b * m * lda + (b % 2) * 3); // uneven batch spacing
  const int64_t floats = sluice_sgemm_packed_floats(nr, k, n);
  float *packed = (float *)std::aligned_alloc(64, ((floats > 0 ? floats : 1) * 4 + 63) / 64 * 64);
  sluice_sgemm_pack_panels(nr, k, n, w.data() + offset, ldb, packed);
  std::vector<float> c(batches * m * n, -7.0f);
  std::vector<int> seen(batches * m * n, 0);
  auto epi = [&](int64_t batch, int64_t r0, int64_t rows, int64_t c0, int64_t cols) {
    for (int64_t i = r0; i < r0 + rows; ++i)
      for (int64_t j = c0; j < c0 + cols; ++j) {
#pragma omp atomic
        ++seen[(batch * m + i) * n + j];
      }
  };
  sluice_sgemm_packed_batched_ep(threads, batches, m, n, k, a.data(), aOff.data(), lda, packed,
                                 c.data(), epi);
  std::free(packed);
  double worst = 0;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += (double)a[aOff[b] + i * lda + p] * w[offset + p * ldb + j];
        worst = std::max(worst, std::fabs(c[(b * m + i) * n + j] - s));
        ASSERT_EQ(seen[(b * m + i) * n + j], 1) << b << "," << i << "," << j;
      }
  EXPECT_LE(worst, 2e-6 * (1 + k)) << batches << "x" << m << "x" << n << "x" << k << " threads "
                                  << threads;
}

TEST(Sgemm, PackedWeights) {
  uint32_t seed = 100;
  for (int threads : {1, 2, 3})
    for (int64_t batches : {1, 3})
      for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{
               {1, 40, 600}, {15, 45, 70}, {128, 300, 45}, {7, 17, 1}, {3, 5, 0}})
        checkPacked(threads, batches, m, n, k, seed++);
  // Several N blocks and K slices, split over two threads.
  checkPacked(2, 1, 70, 2 * sluice_sgemm::NC + 70, 2 * sluice_sgemm::KC + 9, seed++);
}

} // namespace
