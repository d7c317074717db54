// The weight-only GEMM of w8a16 / w4a16 cpu bundles (sluice_gen/cpu_wonly.h)
// against the f32 GEMM the cpu target runs for float weights
// (sluice_gemm_batched of cpu_blas.h: the AVX-512 SGEMM of cpu_gemm.h on
// AVX-512 builds, OpenBLAS otherwise), at GPT-2 decoding GEMMs in one run:
// M = 1, 4, 16 rows (tokens) against K x N = 768 x 2304 (fused QKV),
// 768 x 3072 (MLP up) and 3072 x 768 (MLP down).
//
// Every variant computes C = A W from the same f32 W:
//   f32   sluice_gemm_batched on f32 A and W (4 K N bytes of weights)
//   w8    sluice_wonly_gemm, int8 per column + f16 scales (K N bytes + 2 N)
//   w4    sluice_wonly_gemm, int4 in groups of 128 + f16 scales
//         (K N / 2 bytes + 2 N ceil(K / 128))
// GB/s is weight bytes read per second (the memory-bound quantity at small
// M: each weight byte is read once per call); ratios are time ratios
// (> 1: the quantized GEMM is faster). Each shape also prints the relative
// L2 error of w8 and w4 against the f32 result (the quantization error).
//
// Build and run (bench/cpu/wonly_gemm_bench.sh does both):
//   c++ -std=c++17 -O2 -march=native -fopenmp -I codegen/include -I include
//       bench/cpu/wonly_gemm_bench.cpp -lopenblas -o /tmp/wonly_gemm_bench
//   /tmp/wonly_gemm_bench [threads ...]   (default: 1 2)
#include "sluice_gen/cpu_blas.h"
#include "sluice_gen/cpu_wonly.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace {

/// Median seconds per call over 9 samples of >= 20 ms each.
template <typename F> double medianSeconds(F &&f) {
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
  std::vector<double> samples;
  for (int i = 0; i < 9; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r)
      f();
    samples.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                      reps);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

/// Symmetric quantization as sluice-quantize-weights does it: max|w| / qmax
/// per column and block, rounded to f16 first.
struct Quantized {
  std::vector<uint8_t> q;
  std::vector<sluice_f16> scales;
  int64_t group;
};
Quantized quantize(const std::vector<float> &w, int64_t k, int64_t n, int bits, int64_t group) {
  Quantized out;
  out.group = bits == 8 ? k : std::min(group, k);
  const int qmax = bits == 8 ? 127 : 7, qmin = bits == 8 ? -127 : -8;
  const int64_t blocks = (k + out.group - 1) / out.group;
  std::vector<int8_t> values(k * n);
  out.scales.resize(blocks * n);
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t j = 0; j < n; ++j) {
      float amax = 0;
      for (int64_t p = b * out.group; p < std::min(k, (b + 1) * out.group); ++p)
        amax = std::max(amax, std::fabs(w[p * n + j]));
      sluice_f16 h = sluice_to_f16(std::max(amax / qmax, 6.1e-5f));
      out.scales[b * n + j] = h;
      float s = sluice_load(h);
      for (int64_t p = b * out.group; p < std::min(k, (b + 1) * out.group); ++p)
        values[p * n + j] =
            (int8_t)std::min<float>(qmax, std::max<float>(qmin, std::nearbyint(w[p * n + j] / s)));
    }
  if (bits == 8) {
    out.q.assign((const uint8_t *)values.data(), (const uint8_t *)values.data() + k * n);
  } else {
    out.q.assign((k * n + 1) / 2, 0);
    for (int64_t i = 0; i < k * n; ++i)
      out.q[i / 2] |= (uint8_t)((values[i] & 0xF) << (4 * (i % 2)));
  }
  return out;
}

double relL2(const std::vector<float> &x, const std::vector<float> &ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    num += (double)(x[i] - ref[i]) * (x[i] - ref[i]);
    den += (double)ref[i] * ref[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

} // namespace

int main(int argc, char **argv) {
  std::vector<int> threadCounts;
  for (int i = 1; i < argc; ++i)
    threadCounts.push_back(std::atoi(argv[i]));
  if (threadCounts.empty())
    threadCounts = {1, 2};
  struct Shape {
    const char *what;
    int64_t k, n;
  } shapes[] = {
      {"qkv 768x2304", 768, 2304}, {"up 768x3072", 768, 3072}, {"down 3072x768", 3072, 768}};
  std::printf("weight-only GEMM (%s path) vs f32 GEMM; GB/s of weight bytes; ratio = f32 time / "
              "quantized time\n",
              sluice_wonly_isa_name());
  std::printf("%-14s %3s %3s | %8s %8s %8s | %7s %7s | %8s %8s\n", "shape", "M", "thr", "f32 GB/s",
              "w8 GB/s", "w4 GB/s", "f32/w8", "f32/w4", "w8 relL2", "w4 relL2");
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  for (const Shape &s : shapes) {
    std::vector<float> w(s.k * s.n);
    for (auto &v : w)
      v = dist(rng);
    Quantized q8 = quantize(w, s.k, s.n, 8, 128), q4 = quantize(w, s.k, s.n, 4, 128);
    sluice_wonly_b<sluice_f16> b8{q8.q.data(), q8.scales.data(), 8, q8.group};
    sluice_wonly_b<sluice_f16> b4{q4.q.data(), q4.scales.data(), 4, q4.group};
    const double bytes32 = 4.0 * s.k * s.n;
    const double bytes8 = (double)q8.q.size() + 2.0 * q8.scales.size();
    const double bytes4 = (double)q4.q.size() + 2.0 * q4.scales.size();
    for (int64_t m : {1, 4, 16}) {
      std::vector<float> a(m * s.k);
      for (auto &v : a)
        v = dist(rng) * 50;
      std::vector<float> c32(m * s.n), c8(m * s.n), c4(m * s.n);
      const int64_t zero = 0;
      auto none = [](int64_t, int64_t, int64_t, int64_t) {};
      for (int threads : threadCounts) {
        auto f32 = [&] {
          sluice_gemm_batched(threads, 1, m, s.n, s.k, a.data(), &zero, w.data(), &zero,
                              c32.data());
        };
        auto w8 = [&] {
          sluice_wonly_gemm(threads, m, s.n, s.k, a.data(), s.k, b8, c8.data(), s.n, none);
        };
        auto w4 = [&] {
          sluice_wonly_gemm(threads, m, s.n, s.k, a.data(), s.k, b4, c4.data(), s.n, none);
        };
        double t32 = 1e30, t8 = 1e30, t4 = 1e30;
        for (int round = 0; round < 3; ++round) {
          t32 = std::min(t32, medianSeconds(f32));
          t8 = std::min(t8, medianSeconds(w8));
          t4 = std::min(t4, medianSeconds(w4));
        }
        std::printf("%-14s %3lld %3d | %8.1f %8.1f %8.1f | %7.2f %7.2f | %8.4f %8.4f\n", s.what,
                    (long long)m, threads, bytes32 / t32 * 1e-9, bytes8 / t8 * 1e-9,
                    bytes4 / t4 * 1e-9, t32 / t8, t32 / t4, relL2(c8, c32), relL2(c4, c32));
      }
    }
  }
  return 0;
}
