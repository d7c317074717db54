// Correctness and speed of the AVX-512 SGEMM (sluice_gen/cpu_gemm.h) against
// single-threaded OpenBLAS cblas_sgemm on the shapes of BERT-base (seq 128,
// per-thread tiles: sluice_gemm_batched cuts 128 x N into 4 column blocks
// on 2 threads; the 64-row shapes are the row-split alternative) and ResNet-18 im2col convolutions.
//
// Build (from the repository root):
//   c++ -O2 -march=native -fopenmp -I codegen/include -I include bench/cpu/gemm_bench.cpp -lopenblas
// Any argument: correctness only, no timing.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include <cblas.h>

#include "sluice_gen/cpu_gemm.h"

#ifndef __AVX512F__
#error "gemm_bench needs an AVX-512 build (-march=native on an AVX-512 machine)"
#endif

struct Shape {
  const char *what;
  int64_t m, n, k;
};

template <typename F> static double median_seconds(F &&f, double flops) {
  // Calls per sample so that a sample takes ~20 ms.
  int reps = 1;
  for (;;) {
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r)
      f();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0.02 || reps > (1 << 20))
      break;
    reps *= 2;
  }
  (void)flops;
  std::vector<double> samples;
  for (int i = 0; i < 9; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r)
      f();
    samples.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

int main(int argc, char **) {
  openblas_set_num_threads(1);
  std::vector<Shape> shapes = {
      {"bert qkv/out", 128, 192, 768},   {"bert ffn1", 128, 768, 768},
      {"bert ffn2", 128, 192, 3072},     {"bert qkv/out", 128, 384, 768},   {"bert qkv/out", 64, 768, 768},
      {"bert ffn1", 128, 1536, 768},     {"bert ffn1", 64, 3072, 768},
      {"bert ffn2", 128, 384, 3072},     {"bert ffn2", 64, 768, 3072},
      {"bert attn qk", 128, 128, 64},    {"bert attn av", 128, 64, 128},
      {"resnet conv1", 64, 3136, 147},   {"resnet l1", 64, 3136, 576},
      {"resnet l2", 128, 784, 1152},     {"resnet l3", 256, 196, 2304},
      {"resnet l4", 512, 49, 4608},      {"resnet l4 ds", 512, 49, 256},    {"resnet l4 t", 256, 49, 4608},
      {"resnet l3 t", 128, 196, 2304},
      // The tiles sluice_conv_gemm really runs on 2 threads (im2col slices
      // of <= 512 KiB): conv1, layer1..layer4.
      {"conv tile c1", 64, 896, 147},    {"conv tile l1", 64, 240, 576},
      {"conv tile l2", 128, 128, 1152},  {"conv tile l3", 256, 64, 2304},
      {"conv tile l3e", 256, 4, 2304},   {"conv tile l4", 256, 49, 4608},
      {"pooler", 1, 768, 768},           {"resnet fc", 1, 1000, 512},
      {"few rows", 4, 768, 768},         {"12 rows", 12, 3072, 768},
      {"12 rows", 12, 768, 768},         {"4 rows", 4, 3072, 768},
      {"12 rows", 12, 384, 768},         {"8 rows", 8, 1536, 384},
      {"big square", 512, 512, 512},     {"odd", 37, 333, 301},
      {"tiny", 1, 1, 1},                 {"thin", 3, 17, 5},
  };
  bool quick = argc > 1;
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  int failures = 0;
  printf("%-14s %5s %5s %5s  %10s  %9s %9s %7s\n", "shape", "M", "N", "K", "max relerr",
         "openblas", "sluice", "speedup");
  for (const Shape &s : shapes) {
    // Sub-blocks of bigger matrices: leading dimensions exceed the extents.
    const int64_t lda = s.k + 3, ldb = s.n + 5, ldc = s.n + 7;
    std::vector<float> a(s.m * lda), b(s.k * ldb), c(s.m * ldc, NAN), c2(s.m * ldc, NAN);
    for (float &x : a)
      x = dist(rng);
    for (float &x : b)
      x = dist(rng);
    sluice_sgemm::gemm(s.m, s.n, s.k, a.data(), lda, b.data(), ldb, c.data(), ldc);
    // Double-precision reference; error relative to sum |a||b| per element.
    double maxErr = 0;
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        double ref = 0, mag = 0;
        for (int64_t p = 0; p < s.k; ++p) {
          ref += (double)a[i * lda + p] * b[p * ldb + j];
          mag += std::fabs((double)a[i * lda + p] * b[p * ldb + j]);
        }
        double err = std::fabs(c[i * ldc + j] - ref) / (mag > 0 ? mag : 1);
        if (!(err <= 1e-5))
          err = 1; // NaN: unwritten
        maxErr = std::max(maxErr, err);
      }
    // Padding columns of C must be untouched.
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = s.n; j < ldc; ++j)
        if (!std::isnan(c[i * ldc + j]))
          maxErr = 1;
    if (maxErr > 1e-5)
      ++failures;
    const double flops = 2.0 * s.m * s.n * s.k;
    double tb = 0, ts = 0;
    if (!quick) {
      tb = median_seconds([&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)s.m, (int)s.n, (int)s.k,
                    1.0f, a.data(), (int)lda, b.data(), (int)ldb, 0.0f, c2.data(), (int)ldc);
      }, flops);
      ts = median_seconds([&] {
        sluice_sgemm::gemm(s.m, s.n, s.k, a.data(), lda, b.data(), ldb, c.data(), ldc);
      }, flops);
    }
    printf("%-14s %5lld %5lld %5lld  %10.2e  %9.1f %9.1f %7.2f%s\n", s.what, (long long)s.m,
           (long long)s.n, (long long)s.k, maxErr, quick ? 0 : flops / tb * 1e-9,
           quick ? 0 : flops / ts * 1e-9, quick ? 0 : tb / ts, maxErr > 1e-5 ? "  FAIL" : "");
  }
  // Exhaustive small edge cases.
  for (int64_t m = 1; m <= 27; m += 1)
    for (int64_t n = 1; n <= 70; n += 3)
      for (int64_t k = 1; k <= 300; k += 37) {
        const int64_t lda = k + 1, ldb = n + 2, ldc = n + 3;
        std::vector<float> a(m * lda), b(k * ldb), c(m * ldc, NAN);
        for (float &x : a)
          x = dist(rng);
        for (float &x : b)
          x = dist(rng);
        sluice_sgemm::gemm(m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < ldc; ++j) {
            if (j >= n) {
              if (!std::isnan(c[i * ldc + j]))
                ++failures;
              continue;
            }
            double ref = 0, mag = 0;
            for (int64_t p = 0; p < k; ++p) {
              ref += (double)a[i * lda + p] * b[p * ldb + j];
              mag += std::fabs((double)a[i * lda + p] * b[p * ldb + j]);
            }
            if (!(std::fabs(c[i * ldc + j] - ref) <= 1e-5 * mag + 1e-30))
              ++failures;
          }
      }
  printf("%s (%d failures)\n", failures ? "FAILED" : "all correct", failures);
  return failures ? 1 : 0;
}
