//===- Int8GemmTest.cpp - the cpu int8 GEMM (sluice_gen/cpu_int8.h) -------===//
//
// The int8 GEMM of quantized cpu bundles against plain integer and scalar
// references: exact int32 sums at odd sizes (the zero-point and s8-shift
// compensation included), bit-exact f32 dequantization and saturating
// requantization, the activation quantizer, threading and the
// fused-epilogue callback. The packed weight layout and the weight
// quantizer, which the compiler runs, are Int8PackTest.cpp's.
//
// test/unit/CMakeLists.txt builds this file once per ISA path the host can
// run (AVX-512 VNNI, AVX-512 BW, ymm VNNI, AVX2, scalar, AMX in emulation),
// with SLUICE_INT8_EXPECT_ISA naming the path each build must select, and
// compiles it for AVX-VNNI and AMX targets (SLUICE_INT8_EXPECT_ISA_ID).
//
//===----------------------------------------------------------------------===//
#include "sluice_gen/cpu_int8.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

// Compile-only builds for ISAs this host may lack check the selection.
#ifdef SLUICE_INT8_EXPECT_ISA_ID
static_assert(SLUICE_INT8_ISA == SLUICE_INT8_EXPECT_ISA_ID, "unexpected ISA path selected");
#endif

namespace {

/// A random weight (K x N, row-major, full s8 range: -128 included, the
/// value that breaks a naive vpmaddubsw) and its packed form.
struct Weight {
  int64_t k, n;
  std::vector<int8_t> b;
  std::vector<uint8_t> packed;
  Weight(int64_t k, int64_t n, std::mt19937 &rng) : k(k), n(n), b(k * n) {
    std::uniform_int_distribution<int> dist(-128, 127);
    for (int8_t &x : b)
      x = (int8_t)dist(rng);
    pack();
  }
  Weight(int64_t k, int64_t n, int8_t value) : k(k), n(n), b(k * n, value) { pack(); }
  void pack() {
    packed.assign(sluice_int8_packed_b_bytes(k, n), 0xEE);
    sluice_int8_pack_b(k, n, b.data(), n, 1, packed.data());
  }
};

/// sum_p (a[i][p] - zeroA) * b[p][j] in 64 bits: the value the GEMM must
/// return as int32 (checked to fit, so the comparison is meaningful).
template <typename TA>
std::vector<int32_t> referenceSums(int64_t m, const std::vector<TA> &a, int64_t lda, int32_t zeroA,
                                   const Weight &w) {
  std::vector<int32_t> out(m * w.n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < w.n; ++j) {
      int64_t sum = 0;
      for (int64_t p = 0; p < w.k; ++p)
        sum += (int64_t)((int32_t)a[i * lda + p] - zeroA) * w.b[p * w.n + j];
      EXPECT_TRUE(sum >= std::numeric_limits<int32_t>::min() &&
                  sum <= std::numeric_limits<int32_t>::max());
      out[i * w.n + j] = (int32_t)sum;
    }
  return out;
}

template <typename TA> std::vector<TA> randomActivation(int64_t count, std::mt19937 &rng) {
  std::uniform_int_distribution<int> dist(std::numeric_limits<TA>::min(),
                                          std::numeric_limits<TA>::max());
  std::vector<TA> a(count);
  for (TA &x : a)
    x = (TA)dist(rng);
  return a;
}

/// Runs the int32 GEMM into a C with padding columns (ldc > n) that must
/// stay untouched, and compares with the reference.
template <typename TA>
void expectExactSums(int threads, int64_t m, int64_t n, int64_t k, int32_t zeroA,
                     std::mt19937 &rng) {
  SCOPED_TRACE(testing::Message() << "m=" << m << " n=" << n << " k=" << k << " zA=" << zeroA
                                  << " threads=" << threads);
  const int64_t lda = k + 3, ldc = n + 5;
  const std::vector<TA> a = randomActivation<TA>(m * lda, rng);
  const Weight w(k, n, rng);
  const int32_t sentinel = 0x5A5A5A5A;
  std::vector<int32_t> c(m * ldc, sentinel);
  sluice_int8_gemm(threads, m, n, k, a.data(), lda, zeroA, 1.0f, w.packed.data(), nullptr, nullptr,
                   nullptr, c.data(), ldc);
  const std::vector<int32_t> ref = referenceSums(m, a, lda, zeroA, w);
  int64_t wrong = 0, touched = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      if (j >= n)
        touched += c[i * ldc + j] != sentinel;
      else
        wrong += c[i * ldc + j] != ref[i * n + j];
    }
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(touched, 0);
}

TEST(Int8Gemm, SelectsTheExpectedIsaPath) {
#ifdef SLUICE_INT8_EXPECT_ISA
  EXPECT_STREQ(sluice_int8_isa_name(), SLUICE_INT8_EXPECT_ISA);
#else
  GTEST_SKIP() << "a build outside test/unit/CMakeLists.txt: " << sluice_int8_isa_name();
#endif
}

TEST(Int8Gemm, ExactSumsAtOddSizes) {
  std::mt19937 rng(1);
  const int64_t sizes[] = {1, 3, 17, 64, 127, 768};
  for (int64_t m : sizes)
    for (int64_t n : sizes)
      for (int64_t k : sizes) {
        if (m * n * k > (int64_t(1) << 26))
          continue; // the reference's time; 768 x 768 x 64 and below
        expectExactSums<uint8_t>(1, m, n, k, (int32_t)((m * 7 + n * 3 + k) % 256), rng);
      }
}

TEST(Int8Gemm, ExactSumsWithSignedActivations) {
  // s8 A: the kernels shift it by 128 and compensate with (zA + 128).
  std::mt19937 rng(2);
  for (int32_t zeroA : {-128, -5, 0, 77, 127})
    for (int64_t k : {1, 17, 127, 768})
      expectExactSums<int8_t>(1, 19, 67, k, zeroA, rng);
}

TEST(Int8Gemm, ExtremeValuesDoNotSaturate) {
  // 255 x 127 (and x -128) in every product: two adjacent ones overflow a
  // vpmaddubsw int16; the sums must still be exact.
  for (int8_t bv : {(int8_t)127, (int8_t)-128})
    for (int32_t zeroA : {0, 255}) {
      const int64_t m = 7, n = 33, k = 4099;
      const Weight w(k, n, bv);
      std::vector<uint8_t> a(m * k, 255);
      std::vector<int32_t> c(m * n);
      sluice_int8_gemm(1, m, n, k, a.data(), k, zeroA, 1.0f, w.packed.data(), nullptr, nullptr,
                       nullptr, c.data(), n);
      for (int32_t x : c)
        ASSERT_EQ(x, (int64_t)(255 - zeroA) * bv * k);
    }
}

TEST(Int8Gemm, SumsWrapToTheExactValue) {
  // K = 70000: sum a*b (255 * 127 * K = 2.27e9) wraps int32, the true value
  // (55 * 127 * K = 4.9e8) does not; modular arithmetic gives it exactly.
  const int64_t m = 2, n = 3, k = 70000;
  const Weight w(k, n, (int8_t)127);
  std::vector<uint8_t> a(m * k, 255);
  std::vector<int32_t> c(m * n);
  sluice_int8_gemm(1, m, n, k, a.data(), k, 200, 1.0f, w.packed.data(), nullptr, nullptr, nullptr,
                   c.data(), n);
  for (int32_t x : c)
    EXPECT_EQ(x, 55 * 127 * k);
}

TEST(Int8Gemm, RowBlocksAndDeepK) {
  // More rows than one L2 row block (682 rows at K = 768; 48 at K = 12000).
  std::mt19937 rng(3);
  expectExactSums<uint8_t>(1, 1500, 70, 768, 131, rng);
  expectExactSums<uint8_t>(1, 100, 5, 12000, 3, rng);
}

TEST(Int8Gemm, Threads) {
  // Column panels per thread; rows when there are fewer panels than threads.
  std::mt19937 rng(4);
  for (int threads : {2, 3, 4}) {
    expectExactSums<uint8_t>(threads, 128, 768, 768, 120, rng);
    expectExactSums<uint8_t>(threads, 300, 17, 64, 9, rng);
    expectExactSums<uint8_t>(threads, 1, 3072, 64, 250, rng);
    expectExactSums<int8_t>(threads, 127, 130, 127, -3, rng);
  }
}

TEST(Int8Gemm, ZeroDepth) {
  const float scaleB[3] = {1, 2, 3}, bias[3] = {0.5f, -1, 7};
  std::vector<uint8_t> packed(sluice_int8_packed_b_bytes(0, 3));
  sluice_int8_pack_b(0, 3, nullptr, 3, 1, packed.data());
  float c[6];
  int32_t ci[6];
  const uint8_t *noA = nullptr;
  sluice_int8_gemm(1, 2, 3, 0, noA, 0, 3, 0.5f, packed.data(), scaleB, bias, nullptr, c, 3);
  sluice_int8_gemm(1, 2, 3, 0, noA, 0, 3, 0.5f, packed.data(), scaleB, bias, nullptr, ci, 3);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(c[i], bias[i % 3]);
    EXPECT_EQ(ci[i], 0);
  }
}

/// Per-column scales and a bias for the f32 and requantized outputs.
struct Factors {
  std::vector<float> scaleB, bias;
  Factors(int64_t n, std::mt19937 &rng) : scaleB(n), bias(n) {
    std::uniform_real_distribution<float> s(1e-4f, 3e-3f), b(-2.0f, 2.0f);
    for (int64_t j = 0; j < n; ++j) {
      scaleB[j] = s(rng);
      bias[j] = b(rng);
    }
  }
};

TEST(Int8Gemm, DequantizedOutputIsBitExact) {
  std::mt19937 rng(5);
  for (bool withBias : {false, true})
    for (int threads : {1, 2})
      for (int64_t k : {5, 127, 768}) {
        const int64_t m = 33, n = 131, ldc = n + 1;
        const int32_t zeroA = 97;
        const float scaleA = 0.0173f;
        const std::vector<uint8_t> a = randomActivation<uint8_t>(m * k, rng);
        const Weight w(k, n, rng);
        const Factors f(n, rng);
        const float *bias = withBias ? f.bias.data() : nullptr;
        std::vector<float> c(m * ldc, -1.0f);
        sluice_int8_gemm(threads, m, n, k, a.data(), k, zeroA, scaleA, w.packed.data(),
                         f.scaleB.data(), bias, nullptr, c.data(), ldc);
        const std::vector<int32_t> ref = referenceSums(m, a, k, zeroA, w);
        int64_t wrong = 0;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            const float expected =
                std::fma((float)ref[i * n + j], scaleA * f.scaleB[j], bias ? bias[j] : 0.0f);
            wrong += memcmp(&expected, &c[i * ldc + j], 4) != 0;
          }
        EXPECT_EQ(wrong, 0) << "k=" << k << " bias=" << withBias << " threads=" << threads;
        EXPECT_EQ(c[ldc - 1], -1.0f);
      }
}

/// The requantized GEMM against the reference's f32 values requantized by
/// the scalar formula; returns how many outputs hit qmin, qmax, neither.
template <typename TC>
std::array<int64_t, 3> expectRequantized(int threads, const sluice_int8_requant &rq,
                                         std::mt19937 &rng) {
  const int64_t m = 45, n = 100, k = 300;
  const int32_t zeroA = 140;
  const float scaleA = 0.02f;
  const std::vector<uint8_t> a = randomActivation<uint8_t>(m * k, rng);
  const Weight w(k, n, rng);
  const Factors f(n, rng);
  std::vector<TC> c(m * n);
  sluice_int8_gemm(threads, m, n, k, a.data(), k, zeroA, scaleA, w.packed.data(), f.scaleB.data(),
                   f.bias.data(), &rq, c.data(), n);
  const std::vector<int32_t> ref = referenceSums(m, a, k, zeroA, w);
  std::array<int64_t, 3> counts = {0, 0, 0};
  int64_t wrong = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const float y = std::fma((float)ref[i * n + j], scaleA * f.scaleB[j], f.bias[j]);
      const int32_t expected = sluice_int8_requant_value(y, rq);
      wrong += c[i * n + j] != expected;
      ++counts[expected == rq.qmin ? 0 : expected == rq.qmax ? 1 : 2];
    }
  EXPECT_EQ(wrong, 0);
  return counts;
}

TEST(Int8Gemm, RequantizedOutputSaturates) {
  // Output scales small enough that both ends saturate: the test covers
  // the clamp and the values between.
  std::mt19937 rng(6);
  for (int threads : {1, 2}) {
    const auto u8 =
        expectRequantized<uint8_t>(threads, sluice_int8_requant_for<uint8_t>(0.02f, 128), rng);
    EXPECT_GT(u8[0], 0);
    EXPECT_GT(u8[1], 0);
    EXPECT_GT(u8[2], 0);
    const auto s8 =
        expectRequantized<int8_t>(threads, sluice_int8_requant_for<int8_t>(0.02f, -3), rng);
    EXPECT_GT(s8[0], 0);
    EXPECT_GT(s8[1], 0);
    EXPECT_GT(s8[2], 0);
    // A fused ReLU: nothing below the zero point.
    const auto relu = expectRequantized<uint8_t>(threads, {0.02f, 100, 100, 255}, rng);
    EXPECT_GT(relu[0], 0);
    EXPECT_GT(relu[2], 0);
  }
}

template <typename T> void expectQuantizeMatchesScalar(int threads, int64_t count, int32_t zero) {
  SCOPED_TRACE(testing::Message() << "count=" << count << " threads=" << threads);
  // Ties (x / scale = j + 0.5 exactly), saturation at both ends, NaN.
  const float scale = 0.25f;
  std::vector<float> x(count);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-50.0f, 50.0f);
  for (int64_t i = 0; i < count; ++i)
    x[i] = i % 3 == 0 ? ((float)(i % 700) - 350.0f + 0.5f) * scale : dist(rng);
  if (count > 5)
    x[5] = NAN;
  std::vector<T> q(count);
  sluice_int8_quantize(threads, count, x.data(), scale, zero, q.data());
  const sluice_int8_requant rq = sluice_int8_requant_for<T>(scale, zero);
  int64_t wrong = 0, saturated = 0;
  for (int64_t i = 0; i < count; ++i) {
    // The ONNX formula in double: x / scale is exact here in float too.
    const double r = std::nearbyint((double)x[i] / scale) + zero;
    const int32_t expected =
        std::isnan(x[i]) ? rq.qmin : (int32_t)std::fmin(std::fmax(r, rq.qmin), rq.qmax);
    wrong += q[i] != expected;
    saturated += expected == rq.qmin || expected == rq.qmax;
  }
  EXPECT_EQ(wrong, 0);
  if (count > 100) {
    EXPECT_GT(saturated, 0);
  }
}

TEST(Int8Gemm, QuantizeActivations) {
  for (int threads : {1, 2})
    for (int64_t count : {1, 17, 100003}) {
      expectQuantizeMatchesScalar<uint8_t>(threads, count, 128);
      expectQuantizeMatchesScalar<uint8_t>(threads, count, 3);
      expectQuantizeMatchesScalar<int8_t>(threads, count, 0);
      expectQuantizeMatchesScalar<int8_t>(threads, count, -20);
    }
}

TEST(Int8Gemm, EpilogueSeesEveryFinishedBlockOnce) {
  // The callback runs once per element, after the element holds its final
  // value (a fused elementwise epilogue reads it there).
  std::mt19937 rng(8);
  for (int threads : {1, 2}) {
    const int64_t m = 77, n = 200, k = 96;
    const std::vector<uint8_t> a = randomActivation<uint8_t>(m * k, rng);
    const Weight w(k, n, rng);
    const std::vector<int32_t> ref = referenceSums(m, a, k, 11, w);
    std::vector<int32_t> c(m * n, 0);
    std::vector<int> seen(m * n, 0), early(m * n, 0);
    sluice_int8_gemm_ep(threads, m, n, k, a.data(), k, 11, 1.0f, w.packed.data(), nullptr, nullptr,
                        nullptr, c.data(), n,
                        [&](int64_t r0, int64_t rows, int64_t c0, int64_t cols) {
                          for (int64_t i = r0; i < r0 + rows; ++i)
                            for (int64_t j = c0; j < c0 + cols; ++j) {
                              ++seen[i * n + j];
                              early[i * n + j] += c[i * n + j] != ref[i * n + j];
                            }
                        });
    for (int64_t i = 0; i < m * n; ++i) {
      ASSERT_EQ(seen[i], 1) << "element " << i << " threads " << threads;
      ASSERT_EQ(early[i], 0) << "element " << i << " threads " << threads;
    }
  }
}

TEST(Int8Gemm, QuantizedMatMulApproximatesFloat) {
  // The whole chain the compiler emits: per-tensor u8 activation (min/max
  // calibration), per-column s8 weight, f32 output with bias; relative L2
  // error against a double GEMM of the unquantized operands.
  std::mt19937 rng(9);
  const int64_t m = 64, n = 96, k = 256;
  std::normal_distribution<float> dist(0.3f, 1.0f);
  std::vector<float> x(m * k), w(k * n), bias(n);
  for (float &v : x)
    v = dist(rng);
  for (float &v : w)
    v = dist(rng) * 0.05f;
  for (float &v : bias)
    v = dist(rng);
  float lo = 0, hi = 0;
  for (float v : x) {
    lo = std::fmin(lo, v);
    hi = std::fmax(hi, v);
  }
  const float scaleA = (hi - lo) / 255;
  const int32_t zeroA = (int32_t)std::nearbyint(-lo / scaleA);
  std::vector<uint8_t> a(m * k);
  sluice_int8_quantize(1, m * k, x.data(), scaleA, zeroA, a.data());
  std::vector<int8_t> q(k * n);
  std::vector<float> scaleB(n);
  sluice_int8_quantize_weights(k, n, w.data(), n, 1, q.data(), scaleB.data());
  std::vector<uint8_t> packed(sluice_int8_packed_b_bytes(k, n));
  sluice_int8_pack_b(k, n, q.data(), n, 1, packed.data());
  std::vector<float> c(m * n);
  sluice_int8_gemm(2, m, n, k, a.data(), k, zeroA, scaleA, packed.data(), scaleB.data(),
                   bias.data(), nullptr, c.data(), n);
  double err = 0, norm = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = bias[j];
      for (int64_t p = 0; p < k; ++p)
        ref += (double)x[i * k + p] * w[p * n + j];
      err += (c[i * n + j] - ref) * (c[i * n + j] - ref);
      norm += ref * ref;
    }
  const double rel = std::sqrt(err / norm);
  EXPECT_LT(rel, 0.02);
  EXPECT_GT(rel, 0.0); // quantized: not the float GEMM itself
}

} // namespace
