// The int8 GEMM of quantized cpu bundles (sluice_gen/cpu_int8.h) against the
// f32 GEMM the cpu target runs today (sluice_gemm_batched: the AVX-512 SGEMM
// of cpu_gemm.h on AVX-512 builds, OpenBLAS otherwise) and, when oneDNN is
// installed (Debian libdnnl-dev), against oneDNN's int8 matmul, on the
// BERT-base GEMMs (M = 128 x batch; K = 768 -> N = 768 (QKV per third, attention
// out), 768 -> 3072 (FFN up), 3072 -> 768 (FFN down)) in one run.
//
// Every variant computes the same f32 C = A W + bias from the same data:
//   f32        sluice_gemm_batched on f32 A, W; the bias in a second pass
//   int8       sluice_int8_gemm on the already-quantized u8 A (per tensor)
//              and the packed per-column s8 W, dequantized with the bias in
//              the epilogue: what a quantized GEMM costs when the previous
//              op's epilogue produced u8
//   int8+q     sluice_int8_quantize of the f32 A, then int8: the GEMM
//              behind an f32 producer
//   onednn     dnnl::matmul u8 x s8 -> f32 with per-column output scales,
//              the src zero point and the bias; weights reordered once
//              into its own blocked layout (as ours are packed once)
// GOP/s counts 2 M N K operations (the best of three rounds of medians);
// ratios are time ratios (> 1: the int8 kernel is faster). Each shape
// first prints each variant's relative L2 error against a double GEMM of
// the f32 operands (the quantization error) and the two int8 GEMMs'
// difference (float rounding only).
//
// Build and run (from the repository root; bench/cpu/int8_gemm_bench.sh
// does both, with or without oneDNN):
//   c++ -std=c++17 -O2 -march=native -fopenmp -I codegen/include -I include
//       bench/cpu/int8_gemm_bench.cpp -lopenblas -ldnnl -o /tmp/int8_gemm_bench
//   (-DSLUICE_BENCH_NO_DNNL and no -ldnnl without oneDNN)
//   /tmp/int8_gemm_bench [--batch=B ...] [threads ...]   (default: batch 1 and 4, threads 1 2)
#include "sluice_gen/cpu_blas.h"
#include "sluice_gen/cpu_int8.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <omp.h>
#include <random>
#include <string>
#include <vector>

#if !defined(SLUICE_BENCH_NO_DNNL) && __has_include(<oneapi/dnnl/dnnl.hpp>)
#define SLUICE_BENCH_DNNL 1
#include <oneapi/dnnl/dnnl.hpp>
#endif

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

struct Shape {
  const char *what;
  int64_t k, n;
};

double relativeL2(const std::vector<float> &c, const std::vector<double> &ref) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    err += (c[i] - ref[i]) * (c[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  return std::sqrt(err / norm);
}

#ifdef SLUICE_BENCH_DNNL
/// oneDNN's int8 matmul for one shape, set up once (weights reordered).
struct OneDnnMatmul {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::matmul prim;
  dnnl::memory src, weights, bias, dst;
  std::vector<float> biasScaled;
  OneDnnMatmul(int64_t m, int64_t n, int64_t k, uint8_t *a, int32_t zeroA, float scaleA,
               const int8_t *w, const std::vector<float> &scaleW, const float *biasData, float *c) {
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    const dnnl::memory::desc aMd({m, k}, dt::u8, tag::ab), wMd({k, n}, dt::s8, tag::any),
        bMd({1, n}, dt::f32, tag::ab), cMd({m, n}, dt::f32, tag::ab);
    dnnl::primitive_attr attr;
    std::vector<float> scales(n);
    for (int64_t j = 0; j < n; ++j)
      scales[j] = scaleA * scaleW[j];
    attr.set_output_scales(1 << 1, scales);
    attr.set_zero_points(DNNL_ARG_SRC, 0, {zeroA});
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(aMd, wMd, bMd, cMd), attr, engine);
    prim = dnnl::matmul(pd);
    src = dnnl::memory(aMd, engine, a);
    // oneDNN 2.x scales the bias with the sums (dst = scale * (acc +
    // bias)); ours adds it after scaling.
    biasScaled.resize(n);
    for (int64_t j = 0; j < n; ++j)
      biasScaled[j] = biasData[j] / scales[j];
    bias = dnnl::memory(bMd, engine, biasScaled.data());
    dst = dnnl::memory(cMd, engine, c);
    dnnl::memory user({{k, n}, dt::s8, tag::ab}, engine, (void *)w);
    weights = dnnl::memory(pd.weights_desc(), engine);
    dnnl::reorder(user, weights).execute(stream, user, weights);
    stream.wait();
  }
  void run() {
    prim.execute(stream, {{DNNL_ARG_SRC, src},
                          {DNNL_ARG_WEIGHTS, weights},
                          {DNNL_ARG_BIAS, bias},
                          {DNNL_ARG_DST, dst}});
    stream.wait();
  }
};
#endif

} // namespace

int main(int argc, char **argv) {
  std::vector<int> threadCounts, batches;
  for (int i = 1; i < argc; ++i) {
    if (!strncmp(argv[i], "--batch=", 8))
      batches.push_back(atoi(argv[i] + 8));
    else
      threadCounts.push_back(atoi(argv[i]));
  }
  if (threadCounts.empty())
    threadCounts = {1, 2};
  if (batches.empty())
    batches = {1, 4};
  const Shape shapes[] = {{"qkv/out 768->768", 768, 768},
                          {"ffn up 768->3072", 768, 3072},
                          {"ffn down 3072->768", 3072, 768}};
#ifdef SLUICE_BENCH_DNNL
  const bool dnnl = true;
#else
  const bool dnnl = false;
#endif
  printf("int8 path: %s; f32 GEMM: %s; oneDNN: %s\n", sluice_int8_isa_name(),
#if defined(__AVX512F__)
         "sluice_sgemm (AVX-512, cpu_gemm.h)",
#else
         "OpenBLAS cblas_sgemm",
#endif
         dnnl ? "dnnl::matmul u8 x s8 -> f32" : "not built");
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (int batch : batches)
    for (const Shape &s : shapes) {
      const int64_t m = 128 * batch, n = s.n, k = s.k;
      // BERT-like operands: activations with a few outliers, small weights.
      std::vector<float> x(m * k), w(k * n), bias(n);
      for (float &v : x)
        v = dist(rng) * (rng() % 64 == 0 ? 4.0f : 1.0f);
      for (float &v : w)
        v = dist(rng) * 0.04f;
      for (float &v : bias)
        v = dist(rng) * 0.1f;
      float lo = 0, hi = 0;
      for (float v : x) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
      const float scaleA = (hi - lo) / 255;
      const int32_t zeroA = (int32_t)std::nearbyint(-lo / scaleA);
      std::vector<uint8_t> a(m * k);
      sluice_int8_quantize(1, m * k, x.data(), scaleA, zeroA, a.data());
      std::vector<int8_t> wq(k * n);
      std::vector<float> scaleW(n);
      sluice_int8_quantize_weights(k, n, w.data(), n, 1, wq.data(), scaleW.data());
      std::vector<uint8_t> packed(sluice_int8_packed_b_bytes(k, n));
      sluice_int8_pack_b(k, n, wq.data(), n, 1, packed.data());

      std::vector<double> ref(m * n);
      for (int64_t i = 0; i < m; ++i) {
        std::vector<double> row(n, 0.0);
        for (int64_t p = 0; p < k; ++p) {
          const double xv = x[i * k + p];
          const float *wr = w.data() + p * n;
          for (int64_t j = 0; j < n; ++j)
            row[j] += xv * wr[j];
        }
        for (int64_t j = 0; j < n; ++j)
          ref[i * n + j] = row[j] + bias[j];
      }
      std::vector<float> cF(m * n), cI(m * n), cD(m * n, 0.0f);
      const int64_t zeroOff = 0;
      const auto runF32 = [&](int t) {
        sluice_gemm_batched(t, 1, m, n, k, x.data(), &zeroOff, w.data(), &zeroOff, cF.data());
#pragma omp parallel for num_threads(t) schedule(static)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j)
            cF[i * n + j] += bias[j];
      };
      const auto runInt8 = [&](int t) {
        sluice_int8_gemm(t, m, n, k, a.data(), k, zeroA, scaleA, packed.data(), scaleW.data(),
                         bias.data(), nullptr, cI.data(), n);
      };
      std::vector<uint8_t> aq(m * k);
      const auto runInt8Q = [&](int t) {
        sluice_int8_quantize(t, m * k, x.data(), scaleA, zeroA, aq.data());
        sluice_int8_gemm(t, m, n, k, aq.data(), k, zeroA, scaleA, packed.data(), scaleW.data(),
                         bias.data(), nullptr, cI.data(), n);
      };
#ifdef SLUICE_BENCH_DNNL
      OneDnnMatmul onednn(m, n, k, a.data(), zeroA, scaleA, wq.data(), scaleW, bias.data(),
                          cD.data());
      const auto runDnnl = [&](int t) {
        omp_set_num_threads(t);
        onednn.run();
      };
      runDnnl(1);
#endif
      runF32(1);
      runInt8(1);
      printf("\nM=%lld K=%lld N=%lld (%s, batch %d)\n  rel L2 vs double GEMM: f32 %.1e,"
             " int8 %.2e",
             (long long)m, (long long)k, (long long)n, s.what, batch, relativeL2(cF, ref),
             relativeL2(cI, ref));
      if (dnnl) {
        // The two int8 GEMMs differ only in float rounding.
        std::vector<double> cI64(cI.begin(), cI.end());
        printf(", onednn %.2e (int8 vs onednn %.1e)", relativeL2(cD, ref), relativeL2(cD, cI64));
      }
      printf("\n");
      printf("  threads   f32 GOP/s  int8 GOP/s  int8+q GOP/s  onednn GOP/s   int8/f32  "
             "int8+q/f32  int8/onednn\n");
      const double ops = 2.0 * m * n * k;
      for (int t : threadCounts) {
        // Three rounds over the variants, each keeping its best median:
        // the machine's load may change between variants.
        double tf = 1e30, ti = 1e30, tq = 1e30, td = 0;
        for (int round = 0; round < 3; ++round) {
          tf = std::min(tf, medianSeconds([&] { runF32(t); }));
          ti = std::min(ti, medianSeconds([&] { runInt8(t); }));
          tq = std::min(tq, medianSeconds([&] { runInt8Q(t); }));
#ifdef SLUICE_BENCH_DNNL
          const double d = medianSeconds([&] { runDnnl(t); });
          td = round == 0 ? d : std::min(td, d);
#endif
        }
        printf("  %7d  %10.1f  %10.1f  %12.1f  %12s  %8.2fx  %9.2fx  %10s\n", t, ops / tf * 1e-9,
               ops / ti * 1e-9, ops / tq * 1e-9,
               td > 0 ? std::to_string(ops / td * 1e-9).substr(0, 6).c_str() : "-", tf / ti,
               tf / tq, td > 0 ? (std::to_string(td / ti).substr(0, 4) + "x").c_str() : "-");
      }
    }
  return 0;
}
