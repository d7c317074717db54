// f32 GEMM libraries on BERT-base's shapes (seq 128) for hosts without
// AVX-512, where the cpu target's GEMM tiles call OpenBLAS: single-threaded
// OpenBLAS cblas_sgemm against oneDNN's dnnl_sgemm on the tiles
// sluice_gemm_batched_ep gives each thread (2 threads: 128 x N cut into
// column blocks) and on the whole GEMMs, checked against each other.
//
// Build (from the repository root):
//   c++ -O3 -march=native -fopenmp bench/cpu/sgemm_avx2_bench.cpp -lopenblas -ldnnl \
//       -o /tmp/sgemm_avx2_bench
// Run: /tmp/sgemm_avx2_bench   (one thread per call, as the tiles run)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include <cblas.h>
#include <dnnl.h>
#include <omp.h>

#include "bench_timing.h"

struct Shape {
  const char *what;
  int64_t m, n, k;
};

int main() {
  openblas_set_num_threads(1);
  omp_set_num_threads(1);
  const Shape shapes[] = {
      {"qkv/out 128x768x768", 128, 768, 768},
      {"ffn1 128x3072x768", 128, 3072, 768},
      {"ffn2 128x768x3072", 128, 768, 3072},
      {"tile: qkv/out 128x192x768", 128, 192, 768},
      {"tile: ffn1 128x768x768", 128, 768, 768},
      {"tile: ffn2 128x192x3072", 128, 192, 3072},
  };
  std::printf("1 thread; ms (fastest of 9 samples); ratio < 1: oneDNN faster\n");
  std::printf("%-28s %9s %9s %7s %9s\n", "shape (m x n x k)", "openblas", "onednn", "ratio",
              "GFLOP/s");
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (const Shape &s : shapes) {
    std::vector<float> a(s.m * s.k), b(s.k * s.n), c1(s.m * s.n), c2(s.m * s.n);
    for (float &v : a)
      v = dist(rng);
    for (float &v : b)
      v = dist(rng);
    auto blas = [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)s.m, (int)s.n, (int)s.k, 1.f,
                  a.data(), (int)s.k, b.data(), (int)s.n, 0.f, c1.data(), (int)s.n);
    };
    auto dnnl = [&] {
      dnnl_sgemm('N', 'N', s.m, s.n, s.k, 1.f, a.data(), s.k, b.data(), s.n, 0.f, c2.data(),
                 s.n);
    };
    double tb = best_ms(blas), td = best_ms(dnnl);
    double err = 0, scale = 0;
    for (size_t i = 0; i < c1.size(); ++i) {
      err = std::max(err, (double)std::fabs(c1[i] - c2[i]));
      scale = std::max(scale, (double)std::fabs(c1[i]));
    }
    std::printf("%-28s %9.3f %9.3f %7.2f %9.1f%s\n", s.what, tb, td, td / tb,
                2.0 * s.m * s.n * s.k / (std::min(tb, td) * 1e6),
                err > 1e-5 * scale ? "  MISMATCH" : "");
  }
  return 0;
}
