//===- attention_test.cu - the cuda attention kernels vs doubles ----------===//
//
// Runs sluice_attn_mma (FlashAttention-2, mma.sync) and sluice_attn_fma
// (sluice_gen/cuda_attention.h) as generated bundles launch them, on random
// data, and compares every output element with softmax(scale Q K^T + mask) V
// computed on the host in double from the same rounded inputs (tolerance
// 1e-5 for f32, 4e-3 for f16, 3e-2 for bf16; NaN where a row sees no key).
// Covers head dims 64 and 128 on tensor cores, odd and wide head dims on
// FMAs, causal (with Sq != Sk), additive and boolean masks, rotary, a packed
// QKV layout, a transposed K and heads sharing K/V. Exits 77 (skipped)
// without a GPU.
//
//===----------------------------------------------------------------------===//

#include "sluice_gen/cuda_attention.h"

#include "GpuTest.h"
#include "common/AttentionReference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace sluice_attention_test;
using sluice_gpu_test::DeviceBuffer;

int failures = 0;

/// The launch the emitter (codegen/cuda/groups/Attention.cpp) would write.
template <typename T, typename MT, typename RT>
void launch(const sluice_cuda_attn_desc &d, const T *q, const T *k, const T *v, const MT *m,
            const RT *cs, const RT *sn, T *out, std::string &kernel) {
  bool done = false;
  if constexpr (!std::is_same<T, float>::value) {
    if (!d.rotary && d.d == d.dv && d.d == 64) {
      kernel = "mma<64, 64>";
      sluice_attn_mma<T, MT, 64, 64><<<sluice_attn_blocks(d, 64), 128>>>(d, q, k, v, m, out);
      done = true;
    } else if (!d.rotary && d.d == d.dv && d.d == 128) {
      kernel = "mma<128, 32>";
      sluice_attn_mma<T, MT, 128, 32><<<sluice_attn_blocks(d, 64), 128>>>(d, q, k, v, m, out);
      done = true;
    }
  }
  if (done) {
  } else if (d.d <= 64 && d.dv <= 64) {
    kernel = "fma<64, 64, 4, 32>";
    sluice_attn_fma<T, MT, RT, 64, 64, 4, 32>
        <<<sluice_attn_blocks(d, 16), 128>>>(d, q, k, v, m, cs, sn, out);
  } else if (d.d <= 128 && d.dv <= 128) {
    kernel = "fma<128, 128, 4, 32>";
    sluice_attn_fma<T, MT, RT, 128, 128, 4, 32>
        <<<sluice_attn_blocks(d, 16), 128>>>(d, q, k, v, m, cs, sn, out);
  } else {
    kernel = "fma<256, 256, 2, 16>";
    sluice_attn_fma<T, MT, RT, 256, 256, 2, 16>
        <<<sluice_attn_blocks(d, 8), 128>>>(d, q, k, v, m, cs, sn, out);
  }
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
}

template <typename T> const char *typeName() {
  return std::is_same<T, float>::value        ? "f32"
         : std::is_same<T, sluice_f16>::value ? "f16"
                                              : "bf16";
}
template <typename T> double tolerance() {
  return std::is_same<T, float>::value ? 1e-5 : std::is_same<T, sluice_f16>::value ? 4e-3 : 3e-2;
}

template <typename T, typename MT> void run(const Problem &problem, std::mt19937 &rng) {
  using RT = T;
  Problem p = problem;
  p.scale = (float)(1.0 / std::sqrt((double)p.d));
  Case<T, MT, RT> c(p, rng);
  const sluice_cuda_attn_desc &d = c.d;
  DeviceBuffer<T> qDev(c.qBuf), kDev(c.kHost()), vDev(c.vHost()), outDev(c.out);
  DeviceBuffer<RT> cosDev(c.cosBuf), sinDev(c.sinBuf);
  DeviceBuffer<MT> maskDev(c.maskBuf.get(), c.maskN);
  std::string kernel;
  launch<T, MT, RT>(d, qDev.ptr, kDev.ptr + c.kOffset, vDev.ptr + c.vOffset,
                    p.mask ? maskDev.ptr : nullptr, cosDev.ptr, sinDev.ptr, outDev.ptr, kernel);
  c.out = outDev.read();

  const std::vector<double> ref = c.reference();
  double worst = 0;
  int64_t bad = 0;
  const double tol = tolerance<T>();
  size_t at = 0;
  for (int64_t b = 0; b < c.batches; ++b)
    for (int64_t i = 0; i < p.sq; ++i)
      for (int64_t col = 0; col < p.dv; ++col) {
        const double want = ref[at++], got = c.got(b, i, col);
        if (std::isnan(want) != std::isnan(got)) {
          ++bad;
          continue;
        }
        if (std::isnan(want))
          continue;
        const double err = std::fabs(got - want) / (1.0 + std::fabs(want));
        worst = std::max(worst, err);
        bad += err > tol;
      }
  const bool ok = bad == 0;
  printf("%-4s %-34s %-22s max err %.3g: %s\n", typeName<T>(), p.name, kernel.c_str(), worst,
         ok ? "ok" : "FAILED");
  failures += !ok;
}

} // namespace

int main() {
  if (sluice_gpu_test::noDevice())
    return sluice_gpu_test::kSkipped;
  std::mt19937 rng(1234);
  Problem plain64{"d64 plain, S 100", {2, 2}, 100, 100, 64, 64};
  Problem causal64{"d64 causal, S 130", {1, 3}, 130, 130, 64, 64};
  causal64.causal = true;
  Problem mask64{"d64 additive mask, 40 x 77", {2, 2}, 40, 77, 64, 64};
  mask64.mask = 1;
  Problem cache64{"d64 causal + bool mask, 50 x 70", {1, 2}, 50, 70, 64, 64};
  cache64.causal = true;
  cache64.mask = 2;
  Problem nan64{"d64 causal, 100 x 70 (NaN rows)", {2, 1}, 100, 70, 64, 64};
  nan64.causal = true;
  Problem packed128{"d128 causal, packed QKV, S 90", {2, 2}, 90, 90, 128, 128};
  packed128.causal = true;
  packed128.packedQKV = true;
  Problem strided128{"d128 K^T, shared K/V, mask", {2, 4}, 33, 45, 128, 128};
  strided128.transposedK = true;
  strided128.broadcastKV = true;
  strided128.mask = 1;
  Problem long128{"d128 causal, S 1000", {1, 2}, 1000, 1000, 128, 128};
  long128.causal = true;
  Problem odd{"d40/dv24 bool mask, shared K/V", {2, 3}, 20, 24, 40, 24};
  odd.mask = 2;
  odd.broadcastKV = true;
  Problem wide{"d160 causal, 30 x 20", {2, 1}, 30, 20, 160, 160};
  wide.causal = true;
  Problem rotary{"d64 rotary causal, S 37", {1, 2}, 37, 37, 64, 64};
  rotary.rotary = true;
  rotary.causal = true;
  Problem dv{"d128 dv64, 20 x 36", {2, 1}, 20, 36, 128, 64};

  // Tensor cores.
  for (const Problem *p :
       std::initializer_list<const Problem *>{&plain64, &causal64, &nan64, &packed128, &long128}) {
    run<sluice_f16, sluice_f16>(*p, rng);
    run<sluice_bf16, sluice_bf16>(*p, rng);
  }
  run<sluice_f16, sluice_f16>(mask64, rng);
  run<sluice_f16, bool>(cache64, rng);
  run<sluice_bf16, float>(strided128, rng);
  // FMA kernel.
  run<float, float>(plain64, rng);
  run<float, float>(mask64, rng);
  run<float, bool>(odd, rng);
  run<float, float>(wide, rng);
  run<float, float>(rotary, rng);
  run<sluice_f16, sluice_f16>(rotary, rng);
  run<sluice_bf16, bool>(odd, rng);
  run<sluice_f16, sluice_f16>(dv, rng);
  if (failures) {
    printf("%d attention cases FAILED\n", failures);
    return 1;
  }
  printf("all attention cases ok\n");
  return 0;
}
