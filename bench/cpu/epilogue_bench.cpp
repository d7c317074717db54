// GEMM + bias + GELU (BERT-base FF1: [M x 768] x [768 x 3072]) three ways:
//   plain  the GEMM alone (sluice_gemm_batched), the lower bound;
//   split  the GEMM, then the bias + GELU as the elementwise kernel a
//          separate group gets (rows in parallel, an `omp simd` inner loop);
//   ew     the bias + GELU pass of split alone;
//   fused  sluice_gemm_batched_ep with the epilogue a GEMM group (form F2,
//          codegen/cpu/groups/Gemm.cpp) generates: bias + GELU on each block
//          of C right after the GEMM finished it.
// Each: the best and the median of 15 samples, 1 thread and `threads`.
//
// Build (from the repository root):
//   c++ -std=c++17 -O2 -march=native -fopenmp -I codegen/include -I include \
//       bench/cpu/epilogue_bench.cpp -lopenblas -o /tmp/epilogue_bench
//   /tmp/epilogue_bench [threads]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <ctime>
#include <vector>

#include "sluice_gen/cpu.h"
#include "sluice_gen/cpu_blas.h"

static double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/// Wall time (best, median) and process CPU time (best) of 25 samples: on a
/// shared, loaded machine the CPU time of a 1-thread run is the steadier
/// figure (it does not count time spent waiting for a core).
template <typename F> static void time_it(const char *what, F &&f) {
  std::vector<double> wall, cpu;
  f();
  for (int i = 0; i < 25; ++i) {
    double c0 = cpu_seconds();
    auto t0 = std::chrono::steady_clock::now();
    f();
    wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    cpu.push_back(cpu_seconds() - c0);
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  std::printf("  %-6s wall best %7.3f ms, median %7.3f ms; cpu best %7.3f ms\n", what,
              wall[0] * 1e3, wall[wall.size() / 2] * 1e3, cpu[0] * 1e3);
}

int main(int argc, char **argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int64_t n = 3072, k = 768;
  for (int64_t m : {128, 512}) {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> a(m * k), b(k * n), bias(n), c(m * n), ref(m * n);
    for (float &v : a) v = dist(rng);
    for (float &v : b) v = dist(rng);
    for (float &v : bias) v = dist(rng);
    const int64_t off[] = {0};
    const float *in2 = bias.data();
    float *out0 = c.data();
    for (int t : {1, threads}) {
      std::printf("M=%lld N=%lld K=%lld, %d thread(s)\n", (long long)m, (long long)n,
                  (long long)k, t);
      time_it("plain", [&] { sluice_gemm_batched(t, 1, m, n, k, a.data(), off, b.data(), off, out0); });
      time_it("split", [&] {
        sluice_gemm_batched(t, 1, m, n, k, a.data(), off, b.data(), off, out0);
#pragma omp parallel for num_threads(t)
        for (int64_t o = 0; o < m; ++o) {
          const int64_t b0 = o * n;
#pragma omp simd
          for (int64_t i = 0; i < n; ++i) {
            const float v0 = out0[b0 + i] + in2[i];
            out0[b0 + i] = sl_gelu(v0);
          }
        }
      });
      std::copy(c.begin(), c.end(), ref.begin());
      std::vector<float> scratch(c);
      time_it("ew", [&] {
        float *x = scratch.data();
#pragma omp parallel for num_threads(t)
        for (int64_t o = 0; o < m; ++o) {
#pragma omp simd
          for (int64_t i = 0; i < n; ++i)
            x[o * n + i] = sl_gelu(x[o * n + i] + in2[i]) * 1e-3f;
        }
      });
      const auto epilogue = [&](int64_t batch, int64_t r0, int64_t rows, int64_t c0, int64_t cols) {
        for (int64_t r = r0; r < r0 + rows; ++r) {
          const int64_t row = batch * m + r;
          const int64_t b1 = row * n;
#pragma omp simd
          for (int64_t j = c0; j < c0 + cols; ++j) {
            const float acc = out0[b1 + j];
            const float v0 = acc + in2[j];
            out0[b1 + j] = sl_gelu(v0);
          }
        }
      };
      time_it("fused", [&] {
        sluice_gemm_batched_ep(t, 1, m, n, k, a.data(), off, k, b.data(), off, n, out0, epilogue);
      });
      // Interleaved A/B of split and fused (the machine's load drifts):
      // best and lower-quartile mean of 60 alternating samples each.
      {
        std::vector<double> ts, tf;
        auto split = [&] {
          sluice_gemm_batched(t, 1, m, n, k, a.data(), off, b.data(), off, out0);
#pragma omp parallel for num_threads(t)
          for (int64_t o = 0; o < m; ++o) {
            const int64_t b0 = o * n;
#pragma omp simd
            for (int64_t i = 0; i < n; ++i)
              out0[b0 + i] = sl_gelu(out0[b0 + i] + in2[i]);
          }
        };
        auto fused = [&] {
          sluice_gemm_batched_ep(t, 1, m, n, k, a.data(), off, k, b.data(), off, n, out0, epilogue);
        };
        for (int i = 0; i < 60; ++i) {
          auto t0 = std::chrono::steady_clock::now();
          split();
          auto t1 = std::chrono::steady_clock::now();
          fused();
          auto t2 = std::chrono::steady_clock::now();
          ts.push_back(std::chrono::duration<double>(t1 - t0).count());
          tf.push_back(std::chrono::duration<double>(t2 - t1).count());
        }
        std::sort(ts.begin(), ts.end());
        std::sort(tf.begin(), tf.end());
        auto q = [](const std::vector<double> &v) {
          double s = 0;
          for (size_t i = 0; i < v.size() / 4; ++i)
            s += v[i];
          return s / (v.size() / 4) * 1e3;
        };
        std::printf("  A/B    split best %7.3f ms, low-quartile mean %7.3f ms | fused best %7.3f ms, "
                    "low-quartile mean %7.3f ms\n",
                    ts[0] * 1e3, q(ts), tf[0] * 1e3, q(tf));
      }
      double err = 0;
      for (int64_t i = 0; i < m * n; ++i)
        err = std::max(err, (double)std::fabs(c[i] - ref[i]));
      std::printf("  fused vs split: max abs diff %.3g\n", err);
    }
  }
  return 0;
}
