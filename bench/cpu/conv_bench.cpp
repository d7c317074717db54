// Speed of the cpu target's f32 convolutions on ResNet-18's shapes (batch 1,
// 224x224) and a depthwise one: im2col + OpenBLAS (sluice_conv_gemm of
// sluice_gen/cpu_nn_blas.h) against oneDNN's convolution primitive with the
// tensors in Sluice's NCHW layout (sluice_gen/cpu_nn_dnnl.h, weights
// reordered once) and with oneDNN's own blocked layout (src reordered in,
// dst reordered out per call), all checked against each other.
//
// Build (from the repository root):
//   c++ -O3 -march=native -fopenmp -I codegen/include bench/cpu/conv_bench.cpp \
//       -lopenblas -ldnnl -o /tmp/conv_bench
// Run: /tmp/conv_bench [threads]   (default 2)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <omp.h>

#include "sluice_gen/cpu_nn_blas.h"
#include "sluice_gen/cpu_nn_dnnl.h"

#include "bench_timing.h"

struct Shape {
  const char *what;
  int64_t c, m, h, k, s, p, group;
};

static double maxRel(const std::vector<float> &a, const std::vector<float> &b) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::fabs((double)a[i] - b[i]));
    scale = std::max(scale, std::fabs((double)b[i]));
  }
  return worst / (scale > 0 ? scale : 1);
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const Shape shapes[] = {
      {"stem 3->64 7x7/2 @224", 3, 64, 224, 7, 2, 3, 1},
      {"64->64 3x3 @56", 64, 64, 56, 3, 1, 1, 1},
      {"64->128 3x3/2 @56", 64, 128, 56, 3, 2, 1, 1},
      {"64->128 1x1/2 @56", 64, 128, 56, 1, 2, 0, 1},
      {"128->128 3x3 @28", 128, 128, 28, 3, 1, 1, 1},
      {"128->256 3x3/2 @28", 128, 256, 28, 3, 2, 1, 1},
      {"256->256 3x3 @14", 256, 256, 14, 3, 1, 1, 1},
      {"256->512 3x3/2 @14", 256, 512, 14, 3, 2, 1, 1},
      {"512->512 3x3 @7", 512, 512, 7, 3, 1, 1, 1},
      {"dw 128 3x3 @56", 128, 128, 56, 3, 1, 1, 128},
      {"dw 512 3x3 @14", 512, 512, 14, 3, 1, 1, 512},
  };
  std::printf("threads %d; ms (fastest of 9 samples: the machine is shared); ratios < 1: faster than im2col+OpenBLAS\n", threads);
  std::printf("%-24s %9s %9s %9s %7s %7s  %s\n", "shape", "im2col", "dnnl", "dnnl-blk", "r",
              "r-blk", "oneDNN implementation (nchw / blocked)");
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (const Shape &sh : shapes) {
    int64_t o = (sh.h + 2 * sh.p - sh.k) / sh.s + 1;
    sluice_window g = {{1, sh.h, sh.h}, {1, sh.k, sh.k}, {1, o, o}, {1, sh.s, sh.s},
                       {1, 1, 1},       {0, sh.p, sh.p}, {0, sh.p, sh.p}};
    std::vector<float> x(sh.c * sh.h * sh.h), w(sh.m * sh.c / sh.group * sh.k * sh.k), b(sh.m);
    for (float &v : x)
      v = dist(rng);
    for (float &v : w)
      v = dist(rng) * 0.1f;
    for (float &v : b)
      v = dist(rng);
    std::vector<float> ref(sh.m * o * o), got(ref.size()), blk(ref.size());
    auto gemm = [&] {
      if (sh.group == sh.c)
        sluice_conv_direct<float>(threads, g, 1, sh.c, sh.m, sh.group, x.data(), w.data(),
                                  b.data(), 0.0f, (const int64_t *)nullptr, 0, ref.data());
      else
        sluice_conv_gemm<float>(threads, g, 1, sh.c, sh.m, sh.group, x.data(), w.data(),
                                b.data(), ref.data());
    };
    sluice_dnnl_conv nchw(g, 1, sh.c, sh.m, sh.group, true, false),
        blocked(g, 1, sh.c, sh.m, sh.group, true, true);
    auto run = [&](sluice_dnnl_conv &c, std::vector<float> &out) {
      if (c.run(threads, x.data(), w.data(), b.data(), out.data()))
        std::abort();
    };
    double tg = best_ms(gemm), td = best_ms([&] { run(nchw, got); }),
           tb = best_ms([&] { run(blocked, blk); });
    double e1 = maxRel(got, ref), e2 = maxRel(blk, ref);
    std::printf("%-24s %9.3f %9.3f %9.3f %7.2f %7.2f  %s / %s%s\n", sh.what, tg, td, tb, td / tg,
                tb / tg, nchw.impl(), blocked.impl(),
                e1 > 1e-5 || e2 > 1e-5 ? "  MISMATCH" : "");
  }
  return 0;
}
