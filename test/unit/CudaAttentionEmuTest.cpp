//===- CudaAttentionEmuTest.cpp - cuda attention kernels run on the host --===//
//
// The kernels of sluice_gen/cuda_attention.h compiled as host C++ and run
// on the fiber emulation of blocks, barriers and shuffles (CudaRowEmulation.h)
// with an mma.sync fragment model (CudaAttentionEmulation.h). So the
// tensor-core kernel's tiling, fragment repacking, online softmax, masks
// and causal tile skipping all run, and so does its pre-sm_80 path (mma
// through warp shuffles). Results are compared with softmax(scale Q
// K^T + mask) V computed in double from the same (rounded) inputs.
//
//===----------------------------------------------------------------------===//

#include "CudaAttentionEmulation.h"

#include "common/AttentionReference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sluice_gen/scalar.h"

// ---- Cases ----------------------------------------------------------------

namespace {

using namespace sluice_attention_test;

enum class Kernel { Mma, Fma };

/// Runs one problem through the chosen kernel under emulation and compares
/// with the double reference; returns the number of elements compared.
template <Kernel kernel, typename T, typename MT, typename RT, int D, int BK, int DP = 0,
          int DVP = 0, int R = 4>
void runCase(const Problem &p, double atol, double rtol, uint32_t seed) {
  SCOPED_TRACE("sq=" + std::to_string(p.sq) + " sk=" + std::to_string(p.sk) +
               " d=" + std::to_string(p.d) + " dv=" + std::to_string(p.dv) +
               " causal=" + std::to_string(p.causal) + " mask=" + std::to_string(p.mask) +
               " rotary=" + std::to_string(p.rotary));
  std::mt19937 rng(seed);
  Case<T, MT, RT> c(p, rng);
  const sluice_cuda_attn_desc &d = c.d;
  const T *qp = c.qBuf.data(), *kp = c.kHost().data() + c.kOffset,
          *vp = c.vHost().data() + c.vOffset;
  const MT *mp = p.mask ? c.maskBuf.get() : nullptr;
  T *outp = c.out.data();
  // A barrier or shuffle not reached by every thread throws (a test failure).
  if constexpr (kernel == Kernel::Mma) {
    sluice_emu::launch(sluice_attn_blocks(d, SLUICE_ATTN_MMA_ROWS), 128, [&] {
      sluice_attn_mma<T, MT, D, BK>(d, qp, kp, vp, mp, outp);
    });
  } else {
    const RT *cosp = c.cosBuf.data(), *sinp = c.sinBuf.data();
    sluice_emu::launch(sluice_attn_blocks(d, 4 * R), 128, [&] {
      sluice_attn_fma<T, MT, RT, DP, DVP, R, BK>(d, qp, kp, vp, mp, cosp, sinp, outp);
    });
  }

  const std::vector<double> ref = c.reference();
  int64_t compared = 0, nans = 0;
  for (int64_t b = 0; b < c.batches; ++b)
    for (int64_t i = 0; i < p.sq; ++i)
      for (int64_t col = 0; col < p.dv; ++col) {
        const double want = ref[compared], got = c.got(b, i, col);
        ++compared;
        if (std::isnan(want)) {
          ++nans;
          ASSERT_TRUE(std::isnan(got)) << "b " << b << " row " << i << " col " << col
                                       << ": every key masked, expected NaN, got " << got;
          continue;
        }
        ASSERT_NEAR(got, want, atol + rtol * std::fabs(want))
            << "b " << b << " row " << i << " col " << col;
      }
  EXPECT_EQ(compared, c.batches * p.sq * p.dv);
  // Masks that drop whole rows must have produced NaN rows.
  if (p.mask && p.sq > 5) {
    EXPECT_GT(nans, 0);
  }
}

constexpr double kHalfTol = 4e-3, kBf16Tol = 3e-2, kF32Tol = 2e-5;

// -- The FlashAttention-2 tensor-core kernel (emulated mma.sync) ----------

TEST(CudaAttentionEmu, MmaF16D64Plain) {
  Problem p;
  p.sq = p.sk = 100; // two query tiles, the second partial; two key tiles
  runCase<Kernel::Mma, sluice_f16, sluice_f16, sluice_f16, 64, 64>(p, kHalfTol, kHalfTol, 1);
}

TEST(CudaAttentionEmu, MmaF16D64Causal) {
  Problem p;
  p.batch = {1, 2};
  p.sq = p.sk = 130;
  p.causal = true;
  runCase<Kernel::Mma, sluice_f16, sluice_f16, sluice_f16, 64, 64>(p, kHalfTol, kHalfTol, 2);
}

TEST(CudaAttentionEmu, MmaF16D64AdditiveMask) {
  Problem p;
  p.sq = 40;
  p.sk = 77;
  p.mask = 1;
  runCase<Kernel::Mma, sluice_f16, sluice_f16, sluice_f16, 64, 64>(p, kHalfTol, kHalfTol, 3);
}

TEST(CudaAttentionEmu, MmaF16D64BoolMaskCausalCache) {
  // A decoder step over a cache: 50 queries, 70 keys.
  Problem p;
  p.sq = 50;
  p.sk = 70;
  p.causal = true;
  p.mask = 2;
  runCase<Kernel::Mma, sluice_f16, bool, sluice_f16, 64, 64>(p, kHalfTol, kHalfTol, 4);
}

TEST(CudaAttentionEmu, MmaF16CausalMoreQueriesThanKeys) {
  // Rows 0-29 see no key (NaN); the first query tile visits no key tile.
  Problem p;
  p.batch = {2, 1};
  p.sq = 100;
  p.sk = 70;
  p.causal = true;
  runCase<Kernel::Mma, sluice_f16, sluice_f16, sluice_f16, 64, 64>(p, kHalfTol, kHalfTol, 5);
}

TEST(CudaAttentionEmu, MmaF16D128CausalStridedPacked) {
  Problem p;
  p.sq = p.sk = 90;
  p.d = p.dv = 128;
  p.causal = true;
  p.packedQKV = true; // 16-byte vector tile loads
  runCase<Kernel::Mma, sluice_f16, sluice_f16, sluice_f16, 128, 32>(p, kHalfTol, kHalfTol, 6);
}

TEST(CudaAttentionEmu, MmaF16D128TransposedKBroadcastKV) {
  Problem p;
  p.sq = 33;
  p.sk = 45;
  p.d = p.dv = 128;
  p.transposedK = true; // element loads
  p.broadcastKV = true;
  p.mask = 1;
  runCase<Kernel::Mma, sluice_f16, float, sluice_f16, 128, 32>(p, kHalfTol, kHalfTol, 7);
}

TEST(CudaAttentionEmu, MmaBf16D64Causal) {
  Problem p;
  p.sq = p.sk = 70;
  p.causal = true;
  runCase<Kernel::Mma, sluice_bf16, sluice_bf16, sluice_bf16, 64, 64>(p, kBf16Tol, kBf16Tol, 8);
}

// The same kernel as built for GPUs before sm_80: mma.sync computed with
// warp shuffles (sluice_attn_mma_shuffled) instead of the fragment model.
struct ShuffledMma {
  ShuffledMma() { attn_emu::shuffledMma = true; }
  ~ShuffledMma() { attn_emu::shuffledMma = false; }
};

TEST(CudaAttentionEmu, MmaShuffledFallbackF16D64CausalMask) {
  ShuffledMma fallback;
  Problem p;
  p.sq = 70;
  p.sk = 90;
  p.causal = true;
  p.mask = 1;
  runCase<Kernel::Mma, sluice_f16, sluice_f16, sluice_f16, 64, 64>(p, kHalfTol, kHalfTol, 16);
}

TEST(CudaAttentionEmu, MmaShuffledFallbackBf16D128) {
  ShuffledMma fallback;
  Problem p;
  p.batch = {1, 2};
  p.sq = p.sk = 40;
  p.d = p.dv = 128;
  runCase<Kernel::Mma, sluice_bf16, sluice_bf16, sluice_bf16, 128, 32>(p, kBf16Tol, kBf16Tol, 17);
}

TEST(CudaAttentionEmu, MmaF16D64SlidingWindowSharedKV) {
  // Mistral-style: causal with a 50-key window over 200 keys (the first key
  // tiles of the later query tiles skipped), key/value heads shared (GQA).
  Problem p;
  p.batch = {1, 2};
  p.sq = p.sk = 200;
  p.causal = true;
  p.window = 50;
  p.broadcastKV = true;
  runCase<Kernel::Mma, sluice_f16, sluice_f16, sluice_f16, 64, 64>(p, kHalfTol, kHalfTol, 30);
}

// -- The tiled FMA kernel --------------------------------------------------

TEST(CudaAttentionEmu, FmaF32SlidingWindowMaskCache) {
  // A window of 7 keys, 30 queries over 70 cached keys, an additive mask.
  Problem p;
  p.sq = 30;
  p.sk = 70;
  p.causal = true;
  p.window = 7;
  p.mask = 1;
  runCase<Kernel::Fma, float, float, float, 64, 32, 64, 64, 4>(p, kF32Tol, kF32Tol, 31);
}

TEST(CudaAttentionEmu, FmaF32D64) {
  Problem p;
  p.sq = p.sk = 37;
  runCase<Kernel::Fma, float, float, float, 64, 32, 64, 64, 4>(p, kF32Tol, kF32Tol, 9);
}

TEST(CudaAttentionEmu, FmaF32CausalAdditiveMask) {
  Problem p;
  p.sq = 21;
  p.sk = 45;
  p.causal = true;
  p.mask = 1;
  runCase<Kernel::Fma, float, float, float, 64, 32, 64, 64, 4>(p, kF32Tol, kF32Tol, 10);
}

TEST(CudaAttentionEmu, FmaF32OddHeadDimsBoolMaskBroadcast) {
  Problem p;
  p.sq = 20;
  p.sk = 24;
  p.d = 40;
  p.dv = 24;
  p.mask = 2;
  p.broadcastKV = true;
  runCase<Kernel::Fma, float, bool, float, 0, 32, 64, 32, 4>(p, kF32Tol, kF32Tol, 11);
}

TEST(CudaAttentionEmu, FmaF32WideHeadCausal) {
  Problem p;
  p.batch = {2, 1};
  p.sq = 30;
  p.sk = 20;
  p.d = p.dv = 160;
  p.causal = true;
  runCase<Kernel::Fma, float, float, float, 0, 16, 160, 160, 2>(p, kF32Tol, kF32Tol, 12);
}

TEST(CudaAttentionEmu, FmaF32RotaryCausal) {
  Problem p;
  p.sq = p.sk = 19;
  p.d = p.dv = 16;
  p.rotary = true;
  p.causal = true;
  runCase<Kernel::Fma, float, float, float, 0, 32, 32, 32, 4>(p, kF32Tol, kF32Tol, 13);
}

TEST(CudaAttentionEmu, FmaF16RotaryD64) {
  Problem p;
  p.sq = p.sk = 24;
  p.rotary = true;
  p.mask = 1;
  runCase<Kernel::Fma, sluice_f16, sluice_f16, sluice_f16, 0, 32, 64, 64, 4>(p, kHalfTol, kHalfTol,
                                                                             14);
}

TEST(CudaAttentionEmu, FmaF32TransposedK) {
  Problem p;
  p.sq = 17;
  p.sk = 50;
  p.d = p.dv = 32;
  p.transposedK = true;
  runCase<Kernel::Fma, float, float, float, 0, 32, 32, 32, 4>(p, kF32Tol, kF32Tol, 15);
}

} // namespace
