//===- WonlyGemmTest.cpp - the cpu weight-only GEMM (sluice_gen/cpu_wonly.h) ===//
//
// The weight-only GEMM of w8a16 / w4a16 cpu bundles against a scalar
// double-precision reference on the same dequantized weights: both paths
// (GEMV for M <= 8, dequantized panels above), odd M, N and K, K not a
// multiple of the group, odd N (int4 rows that start mid-byte), padded
// leading dimensions, f16 / bf16 activations, f16 / f32 scales, threads,
// and the epilogue callback (every element of C once, after it is final).
//
// test/unit/CMakeLists.txt builds this file once per path the host can run
// (avx512, avx2, scalar), with SLUICE_WONLY_EXPECT_ISA naming the path each
// build must select.
//
//===----------------------------------------------------------------------===//
#include "sluice_gen/cpu_wonly.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

/// A random quantized weight: int8 or int4 values (one per byte, kept for
/// the reference), their stored form and scales.
struct Weight {
  int bits;
  int64_t k, n, group;
  bool isUnsigned = false;
  std::vector<int> values;      // k * n, for the reference
  std::vector<uint8_t> stored;  // bytes or packed nibbles
  std::vector<float> scales;    // ceil(k / group) * n
  std::vector<sluice_f16> scales16;
  std::vector<int> zeros;       // ceil(k / group) * n; empty: symmetric
  std::vector<uint8_t> storedZeros;
};

/// Values stored as the kernel reads them: bytes, or nibbles packed two per
/// byte, low first.
std::vector<uint8_t> store(const std::vector<int> &values, int bits) {
  if (bits == 8) {
    std::vector<uint8_t> bytes;
    for (int v : values)
      bytes.push_back((uint8_t)v);
    return bytes;
  }
  std::vector<uint8_t> packed((values.size() + 1) / 2, 0);
  for (size_t i = 0; i < values.size(); ++i)
    packed[i / 2] |= (uint8_t)((values[i] & 0xF) << (4 * (i % 2)));
  return packed;
}

Weight makeWeight(int bits, int64_t k, int64_t n, int64_t group, std::mt19937 &rng,
                  bool isUnsigned, bool zeroPoints) {
  Weight w;
  w.bits = bits;
  w.k = k;
  w.n = n;
  w.group = group;
  w.isUnsigned = isUnsigned;
  const int top = bits == 8 ? 255 : 15;
  const int lo = isUnsigned ? 0 : -(top + 1) / 2, hi = isUnsigned ? top : top / 2;
  std::uniform_int_distribution<int> value(lo, hi);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  w.values.resize(k * n);
  for (auto &v : w.values)
    v = value(rng);
  w.stored = store(w.values, bits);
  const int64_t groups = (k + group - 1) / group;
  for (int64_t i = 0; i < groups * n; ++i) {
    // Scales exactly representable in f16, so both scale types agree.
    const sluice_f16 h = sluice_to_f16(scale(rng));
    w.scales16.push_back(h);
    w.scales.push_back(sluice_load(h));
  }
  if (zeroPoints) {
    w.zeros.resize(groups * n);
    for (auto &z : w.zeros)
      z = value(rng);
    w.storedZeros = store(w.zeros, bits);
  }
  return w;
}

/// The dequantized weight (k, j) as the kernel computes it (in float).
float dequant(const Weight &w, int64_t p, int64_t j) {
  const int64_t block = (p / w.group) * w.n + j;
  const int zero = w.zeros.empty() ? 0 : w.zeros[block];
  return (float)(w.values[p * w.n + j] - zero) * w.scales[block];
}

/// C = A x dequant(B) in double over the same float weights q * s.
std::vector<double> reference(const std::vector<float> &a, int64_t m, int64_t lda,
                              const Weight &w) {
  std::vector<double> c(m * w.n, 0.0);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t p = 0; p < w.k; ++p)
      for (int64_t j = 0; j < w.n; ++j) {
        c[r * w.n + j] += (double)a[r * lda + p] * (double)dequant(w, p, j);
      }
  return c;
}

/// Runs the GEMM with an epilogue that adds `bias` and counts visits, and
/// checks C against the reference (tolerance from the sum of |products|).
template <typename TA, typename S>
void check(int64_t m, int64_t k, int64_t n, int bits, int64_t group, int threads, int64_t padA,
           int64_t padC, const std::string &what, bool isUnsigned = false,
           bool zeroPoints = false) {
  std::mt19937 rng((uint32_t)(m * 1000003 + k * 1009 + n * 17 + bits + group));
  Weight w = makeWeight(bits, k, n, group, rng, isUnsigned, zeroPoints);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t lda = k + padA, ldc = n + padC;
  std::vector<float> a(m * lda);
  std::vector<TA> aStored(m * lda);
  for (int64_t i = 0; i < m * lda; ++i) {
    if constexpr (sizeof(TA) == sizeof(float)) {
      a[i] = dist(rng);
      aStored[i] = a[i];
    } else {
      aStored[i] = sluice_store_t<TA>::apply(dist(rng));
      a[i] = sluice_load(aStored[i]); // the reference sees the rounded value
    }
  }
  std::vector<float> bias(n);
  for (auto &v : bias)
    v = dist(rng);
  sluice_wonly_b<S> b;
  b.q = w.stored.data();
  if constexpr (sizeof(S) == sizeof(float))
    b.scales = (const S *)w.scales.data();
  else
    b.scales = (const S *)w.scales16.data();
  b.bits = bits;
  b.group = group;
  b.is_unsigned = isUnsigned;
  b.zero = zeroPoints ? w.storedZeros.data() : nullptr;
  std::vector<float> c(m * ldc, -777.0f);
  std::vector<int> visits(m * n, 0);
  sluice_wonly_gemm(threads, m, n, k, aStored.data(), lda, b, c.data(), ldc,
                    [&](int64_t r0, int64_t rows, int64_t c0, int64_t cols) {
                      for (int64_t r = r0; r < r0 + rows; ++r)
                        for (int64_t j = c0; j < c0 + cols; ++j) {
                          c[r * ldc + j] += bias[j];
                          ++visits[r * n + j];
                        }
                    });
  std::vector<double> ref = reference(a, m, lda, w);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double magnitude = 0;
      for (int64_t p = 0; p < k; ++p)
        magnitude += std::fabs((double)a[r * lda + p] * dequant(w, p, j));
      const double expected = ref[r * n + j] + bias[j];
      ASSERT_NEAR(c[r * ldc + j], expected, 1e-5 * magnitude + 1e-6)
          << what << " m=" << m << " k=" << k << " n=" << n << " bits=" << bits
          << " group=" << group << " at (" << r << ", " << j << ")";
      ASSERT_EQ(visits[r * n + j], 1) << what << " epilogue visits at (" << r << ", " << j << ")";
    }
  // Padding columns of C are never written.
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = n; j < ldc; ++j)
      ASSERT_EQ(c[r * ldc + j], -777.0f) << what;
}

TEST(WonlyGemm, SelectsTheExpectedPath) {
#ifdef SLUICE_WONLY_EXPECT_ISA
  EXPECT_STREQ(sluice_wonly_isa_name(), SLUICE_WONLY_EXPECT_ISA);
#else
  GTEST_SKIP() << "no expected path named for this build";
#endif
}

TEST(WonlyGemm, NibblesAreLowFirstAndSigned) {
  const uint8_t packed[2] = {0x8F, 0x17}; // elements: -1, -8, 7, 1
  EXPECT_EQ(sluice_wonly_nibble(packed, 0), -1);
  EXPECT_EQ(sluice_wonly_nibble(packed, 1), -8);
  EXPECT_EQ(sluice_wonly_nibble(packed, 2), 7);
  EXPECT_EQ(sluice_wonly_nibble(packed, 3), 1);
  EXPECT_EQ(sluice_wonly_weight_bytes(4, 3, 5), 8);
  EXPECT_EQ(sluice_wonly_weight_bytes(8, 3, 5), 15);
}

TEST(WonlyGemm, Int8PerColumnGemv) {
  for (int64_t m : {1, 2, 3, 4, 5, 8})
    for (int64_t n : {1, 7, 64, 70, 130})
      check<float, sluice_f16>(m, 37, n, 8, 37, 1, 0, 0, "int8 gemv");
}

TEST(WonlyGemm, Int4BlockedGemv) {
  // K = 300 with G = 128: the last block holds 44 rows. n = 7 and 129:
  // int4 rows that start mid-byte.
  for (int64_t m : {1, 3, 4, 7})
    for (int64_t n : {2, 7, 64, 129, 192})
      check<float, sluice_f16>(m, 300, n, 4, 128, 1, 0, 0, "int4 gemv");
}

TEST(WonlyGemm, PanelPath) {
  for (int bits : {8, 4})
    for (int64_t m : {9, 16, 33})
      for (int64_t n : {5, 64, 100, 130})
        check<float, sluice_f16>(m, 257, n, bits, bits == 8 ? 257 : 32, 1, 0, 0, "panel");
}

TEST(WonlyGemm, ThreadsAndPaddedStrides) {
  for (int64_t m : {1, 4, 6, 20})
    for (int bits : {8, 4})
      check<float, sluice_f16>(m, 96, 200, bits, bits == 8 ? 96 : 64, 3, 5, 3, "threads");
}

TEST(WonlyGemm, HalfActivationsAndFloatScales) {
  for (int64_t m : {1, 4, 12}) {
    check<sluice_f16, sluice_f16>(m, 130, 70, 4, 128, 2, 0, 0, "f16 A");
    check<sluice_bf16, sluice_f16>(m, 130, 70, 8, 130, 2, 0, 0, "bf16 A");
    check<float, float>(m, 130, 70, 4, 16, 2, 0, 0, "f32 scales");
  }
}

TEST(WonlyGemm, UnsignedWithZeroPoints) {
  // ONNX QDQ models' UINT4 / UINT8 weights with a zero point per block
  // (and unsigned without one): both paths, odd N, K not a multiple of G.
  for (int bits : {4, 8})
    for (int64_t m : {1, 3, 12})
      for (int64_t n : {7, 64, 130}) {
        check<float, float>(m, 100, n, bits, 32, 1, 0, 0, "zero points", true, true);
        check<float, sluice_f16>(m, 100, n, bits, 32, 2, 0, 0, "unsigned", true, false);
        check<float, sluice_f16>(m, 100, n, bits, 32, 1, 0, 0, "signed zero points", false, true);
      }
}

TEST(WonlyGemm, TinyAndDegenerate) {
  check<float, sluice_f16>(1, 1, 1, 4, 1, 1, 0, 0, "1x1x1 int4");
  check<float, sluice_f16>(1, 1, 1, 8, 1, 1, 0, 0, "1x1x1 int8");
  check<float, sluice_f16>(2, 3, 3, 4, 2, 1, 0, 0, "odd group");
  // M = 0 or N = 0: nothing is written, no epilogue call.
  int calls = 0;
  sluice_wonly_b<sluice_f16> b{nullptr, nullptr, 8, 4};
  sluice_wonly_gemm(1, 0, 4, 4, (const float *)nullptr, 4, b, (float *)nullptr, 4,
                    [&](int64_t, int64_t, int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

} // namespace
