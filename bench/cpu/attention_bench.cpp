// Fused attention (sluice_gen/cpu_attention.h, kernel form F4) against the
// unfused path on BERT-base shapes: B = 1, 12 heads, S = 128, D = 64, an
// additive [B, 1, 1, S] padding mask, q/k/v read from one [B, S, 3*768] QKV
// GEMM output and the result written as [B, S, 768].
//
// The unfused path is what the graph compiles to without the fusion: the
// same header functions the single-op kernels call, one pass over memory
// each:
//   copies   q, k, v -> [B, H, S, D] and k -> [B, H, D, S] (the transposes
//            after the head split; k's two transposes fold into one)
//   gemm     S = Q K^T (sluice_gemm_batched)
//   scale    S = S * scale + mask (one elementwise kernel)
//   softmax  rows of S (sluice_softmax_rows_f32)
//   gemm     O = P V (sluice_gemm_batched)
//   copy     O -> [B, S, H*D] (the transpose back)
// "core" is gemm + scale + softmax + gemm alone (as if the copies were free).
//
// Build (from the repository root):
//   c++ -std=c++17 -O2 -march=native -fopenmp -I codegen/include -I include \
//       bench/cpu/attention_bench.cpp -lopenblas -o /tmp/attention_bench
//   /tmp/attention_bench [--seq=N] [threads ...]   (default: S = 128; 1 and all cores)
// It checks the fused result against the unfused one (max abs difference)
// before timing.
#include "sluice_gen/cpu_attention.h"
#include "sluice_gen/cpu_blas.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <omp.h>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int64_t B = 1, H = 12, D = 64, HID = H * D;
int64_t S = 128; // --seq=N

/// Median and minimum seconds of single calls (after warm-up calls) over
/// about three seconds, the variants interleaved call by call so that a
/// change in the machine's load hits all of them alike; the minimum is the
/// steadier number on a shared machine.
struct Timing {
  double median, min;
};

template <typename... F> std::vector<Timing> time_calls(F &&...fs) {
  std::vector<std::function<void()>> calls = {fs...};
  for (int i = 0; i < 20; ++i)
    for (auto &f : calls)
      f();
  std::vector<std::vector<double>> samples(calls.size());
  double spent = 0;
  while (samples[0].size() < 50 || (spent < 3.0 && samples[0].size() < 20000)) {
    for (size_t v = 0; v < calls.size(); ++v) {
      auto t0 = std::chrono::steady_clock::now();
      calls[v]();
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      samples[v].push_back(s);
      spent += s;
    }
  }
  std::vector<Timing> out;
  for (auto &v : samples) {
    std::sort(v.begin(), v.end());
    out.push_back({v[v.size() / 2], v.front()});
  }
  return out;
}

struct Buffers {
  std::vector<float> qkv, mask, out;
  // Unfused intermediates.
  std::vector<float> qh, kt, vh, scores, probs, oh, out2;
};

sluice_attn_desc bertDesc() {
  sluice_attn_desc d{};
  d.nbatch = 2;
  d.batch[0] = B;
  d.batch[1] = H;
  d.sq = d.sk = S;
  d.d = d.dv = D;
  d.scale = 0.125f;
  d.mask = 1;
  // q/k/v: [B, S, 3*HID] viewed as [B, H, S, D].
  for (sluice_attn_access *a : {&d.q, &d.k, &d.v}) {
    a->batch[0] = S * 3 * HID;
    a->batch[1] = D;
    a->row = 3 * HID;
    a->col = 1;
  }
  d.m.batch[0] = S; // [B, 1, 1, S]
  d.m.row = 0;
  d.m.col = 1;
  // out: [B, H, S, D] written as [B, S, H*D].
  d.out.batch[0] = S * HID;
  d.out.batch[1] = D;
  d.out.row = HID;
  d.out.col = 1;
  return d;
}

void fused(int threads, const sluice_attn_desc &d, Buffers &b) {
  const float *x = b.qkv.data();
  sluice_attention<float, float, float>(threads, d, x, x + HID, x + 2 * HID, b.mask.data(),
                                        nullptr, nullptr, b.out.data());
}

void copies_in(int threads, Buffers &b) {
  const float *x = b.qkv.data();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t h = 0; h < B * H; ++h) {
    const int64_t bi = h / H, hi = h % H;
    for (int64_t s = 0; s < S; ++s) {
      const float *row = x + (bi * S + s) * 3 * HID + hi * D;
#pragma omp simd
      for (int64_t c = 0; c < D; ++c) {
        b.qh[(h * S + s) * D + c] = row[c];
        b.vh[(h * S + s) * D + c] = row[2 * HID + c];
      }
      for (int64_t c = 0; c < D; ++c)
        b.kt[(h * D + c) * S + s] = row[HID + c];
    }
  }
}

void core(int threads, Buffers &b) {
  std::vector<int64_t> aOff(B * H), bOff(B * H);
  for (int64_t h = 0; h < B * H; ++h) {
    aOff[h] = h * S * D;
    bOff[h] = h * D * S;
  }
  sluice_gemm_batched<float>(threads, B * H, S, S, D, b.qh.data(), aOff.data(), b.kt.data(),
                             bOff.data(), b.scores.data());
  float *sc = b.scores.data();
  const float *m = b.mask.data();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t r = 0; r < B * H * S; ++r) {
    const int64_t bi = r / (H * S);
#pragma omp simd
    for (int64_t j = 0; j < S; ++j)
      sc[r * S + j] = sc[r * S + j] * 0.125f + m[bi * S + j];
  }
  sluice_softmax_rows_f32(threads, sc, b.probs.data(), B * H * S, S, false);
  for (int64_t h = 0; h < B * H; ++h) {
    aOff[h] = h * S * S;
    bOff[h] = h * S * D;
  }
  sluice_gemm_batched<float>(threads, B * H, S, D, S, b.probs.data(), aOff.data(), b.vh.data(),
                             bOff.data(), b.oh.data());
}

void copy_out(int threads, Buffers &b) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t h = 0; h < B * H; ++h) {
    const int64_t bi = h / H, hi = h % H;
    for (int64_t s = 0; s < S; ++s) {
#pragma omp simd
      for (int64_t c = 0; c < D; ++c)
        b.out2[(bi * S + s) * HID + hi * D + c] = b.oh[(h * S + s) * D + c];
    }
  }
}

void unfused(int threads, Buffers &b) {
  copies_in(threads, b);
  core(threads, b);
  copy_out(threads, b);
}

} // namespace

int main(int argc, char **argv) {
  std::vector<int> threadCounts;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]).rfind("--seq=", 0) == 0)
      S = atoll(argv[i] + 6);
    else
      threadCounts.push_back(atoi(argv[i]));
  }
  if (threadCounts.empty()) {
    threadCounts.push_back(1);
    if (omp_get_num_procs() > 1)
      threadCounts.push_back(omp_get_num_procs());
  }
  Buffers b;
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  b.qkv.resize(B * S * 3 * HID);
  for (float &f : b.qkv)
    f = u(rng);
  b.mask.assign(B * S, 0.0f);
  for (int64_t s = S - 16; s < S; ++s)
    b.mask[s] = -10000.0f; // the last 16 positions padded
  b.out.resize(B * S * HID);
  b.out2.resize(B * S * HID);
  b.qh.resize(B * H * S * D);
  b.kt.resize(B * H * D * S);
  b.vh.resize(B * H * S * D);
  b.scores.resize(B * H * S * S);
  b.probs.resize(B * H * S * S);
  b.oh.resize(B * H * S * D);
  const sluice_attn_desc d = bertDesc();

  fused(1, d, b);
  unfused(1, b);
  double diff = 0;
  for (size_t i = 0; i < b.out.size(); ++i)
    diff = std::max(diff, (double)std::fabs(b.out[i] - b.out2[i]));
  std::printf("BERT-base attention: B=%lld H=%lld S=%lld D=%lld, [B,1,1,S] mask, QKV views\n",
              (long long)B, (long long)H, (long long)S, (long long)D);
  std::printf("fused vs unfused: max abs difference %.3g\n", diff);
  if (!(diff < 1e-4)) {
    std::printf("MISMATCH\n");
    return 1;
  }
  const double flops = 2.0 * B * H * S * S * (D + D);
  for (int t : threadCounts) {
    std::vector<Timing> times = time_calls([&] { fused(t, d, b); }, [&] { unfused(t, b); },
                                           [&] { core(t, b); });
    const Timing tf = times[0], tu = times[1], tc = times[2];
    for (int min = 0; min < 2; ++min) {
      double f = min ? tf.min : tf.median, u = min ? tu.min : tu.median,
             c = min ? tc.min : tc.median;
      std::printf("threads %2d %-6s: fused %7.1f us (%5.1f GFLOP/s)  unfused %7.1f us  "
                  "unfused core %7.1f us  unfused/fused %.2fx (core/fused %.2fx)\n",
                  t, min ? "min" : "median", f * 1e6, flops / f * 1e-9, u * 1e6, c * 1e6, u / f,
                  c / f);
    }
  }
  return 0;
}
