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

/// One attention problem: logical sizes, layout choices and options.
struct Problem {
  std::vector<int64_t> batch{2, 2};
  int64_t sq = 16, sk = 16, d = 64, dv = 64;
  bool causal = false, rotary = false;
  int mask = 0;             ///< 0 none, 1 additive, 2 boolean
  bool broadcastKV = false; ///< k/v shared by the heads (batch stride 0)
  bool transposedK = false; ///< K stored [B, D, Sk] (column stride Sk)
  bool packedQKV = false;   ///< q, k, v rows interleaved in one buffer
  float scale = 0.125f;
};

/// Host tensors (as doubles, after rounding to the storage type) and their
/// storage copies, addressed through the descriptor's accesses.
template <typename T> struct Data {
  std::vector<T> qkv, q, k, v, out, cosv, sinv;
  std::vector<double> qkvD, qD, kD, vD, cosD, sinD;
  std::vector<float> maskF;
  std::vector<bool> maskB;
  std::unique_ptr<bool[]> maskBool;
};

template <typename T> T store(double x) { return SLUICE_STORE(T, (float)x); }
template <typename T> double load(T x) { return (double)sluice_load(x); }

int64_t offsetOf(const sluice_cuda_attn_desc &d, const sluice_cuda_attn_access &a, int64_t b) {
  int64_t off = 0;
  for (int x = d.nbatch - 1; x >= 0; --x) {
    off += (b % d.batch[x]) * a.batch[x];
    b /= d.batch[x];
  }
  return off;
}

/// Contiguous row-major strides of [batch..., rows, cols] as an access.
sluice_cuda_attn_access contiguous(const std::vector<int64_t> &batch, int64_t rows, int64_t cols,
                                   bool broadcastHeads = false) {
  sluice_cuda_attn_access a{};
  a.col = 1;
  a.row = cols;
  int64_t stride = rows * cols;
  for (int x = (int)batch.size() - 1; x >= 0; --x) {
    const bool bcast = broadcastHeads && x == (int)batch.size() - 1;
    a.batch[x] = bcast ? 0 : stride;
    stride *= bcast ? 1 : batch[x];
  }
  return a;
}

int64_t spanOf(const std::vector<int64_t> &batch, const sluice_cuda_attn_access &a, int64_t rows,
               int64_t cols) {
  int64_t s = (rows - 1) * a.row + (cols - 1) * a.col;
  for (size_t x = 0; x < batch.size(); ++x)
    s += (batch[x] - 1) * a.batch[x];
  return s + 1;
}

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
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  sluice_cuda_attn_desc d{};
  d.nbatch = (int)p.batch.size();
  int64_t batches = 1;
  for (size_t x = 0; x < p.batch.size(); ++x) {
    d.batch[x] = p.batch[x];
    batches *= p.batch[x];
  }
  d.sq = p.sq;
  d.sk = p.sk;
  d.d = p.d;
  d.dv = p.dv;
  d.scale = p.scale;
  d.causal = p.causal;
  d.mask = p.mask;
  d.rotary = p.rotary;

  // Layouts.
  std::vector<T> qBuf, kBuf, vBuf;
  int64_t kOffset = 0, vOffset = 0;
  if (p.packedQKV) {
    // [B0, S, B1, 3, D]-like: one row of the buffer holds every head's q,
    // then k, then v (a QKV GEMM output split into heads).
    const int64_t heads = p.batch.back(), rowLen = 3 * heads * p.d;
    d.q.col = d.k.col = d.v.col = 1;
    d.q.row = d.k.row = d.v.row = rowLen;
    d.q.batch[1] = d.k.batch[1] = d.v.batch[1] = p.d;
    d.q.batch[0] = d.k.batch[0] = d.v.batch[0] = p.sq * rowLen;
    kOffset = heads * p.d;
    vOffset = 2 * heads * p.d;
  } else {
    d.q = contiguous(p.batch, p.sq, p.d);
    d.k = contiguous(p.batch, p.sk, p.d, p.broadcastKV);
    d.v = contiguous(p.batch, p.sk, p.dv, p.broadcastKV);
    if (p.transposedK) {
      // K stored [B..., D, Sk]: rows (keys) are columns of the buffer.
      d.k = contiguous(p.batch, p.d, p.sk, p.broadcastKV);
      std::swap(d.k.row, d.k.col);
    }
  }
  d.out = contiguous(p.batch, p.sq, p.dv);
  d.m = contiguous(p.batch, p.sq, p.sk);
  d.m.batch[d.nbatch - 1] = 0; // one mask for every head
  d.cos_q = contiguous({}, p.sq, p.d);
  d.sin_q = d.cos_q;
  d.cos_k = contiguous({}, p.sk, p.d);
  d.sin_k = d.cos_k;
  for (int x = 0; x < d.nbatch; ++x)
    d.cos_q.batch[x] = d.sin_q.batch[x] = d.cos_k.batch[x] = d.sin_k.batch[x] = 0;
  // Rotary tables for positions: cos/sin rows (sk >= sq rows are enough
  // when the tables are indexed from position 0 for both).
  const int64_t positions = std::max(p.sq, p.sk);

  auto fill = [&](std::vector<T> &buf, std::vector<double> &rounded, int64_t n) {
    buf.resize(n);
    rounded.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      buf[i] = store<T>(uni(rng));
      rounded[i] = load(buf[i]);
    }
  };
  std::vector<double> qD, kD, vD;
  const T *qp, *kp, *vp;
  if (p.packedQKV) {
    fill(qBuf, qD, spanOf(p.batch, d.q, p.sq, p.d) + vOffset);
    kD = vD = qD;
    qp = qBuf.data();
    kp = qBuf.data() + kOffset;
    vp = qBuf.data() + vOffset;
  } else {
    fill(qBuf, qD, spanOf(p.batch, d.q, p.sq, p.d));
    fill(kBuf, kD, spanOf(p.batch, d.k, p.sk, p.d));
    fill(vBuf, vD, spanOf(p.batch, d.v, p.sk, p.dv));
    qp = qBuf.data();
    kp = kBuf.data();
    vp = vBuf.data();
  }
  std::vector<RT> cosBuf(positions * p.d), sinBuf(positions * p.d);
  std::vector<double> cosD(positions * p.d), sinD(positions * p.d);
  for (int64_t i = 0; i < positions; ++i)
    for (int64_t c = 0; c < p.d; ++c) {
      const double angle = i / std::pow(100.0, (double)(c % (p.d / 2)) / (p.d / 2));
      cosBuf[i * p.d + c] = store<RT>(std::cos(angle));
      sinBuf[i * p.d + c] = store<RT>(std::sin(angle));
      cosD[i * p.d + c] = load(cosBuf[i * p.d + c]);
      sinD[i * p.d + c] = load(sinBuf[i * p.d + c]);
    }
  // Masks: additive values with some -inf (a whole row for query 3), a
  // boolean keep-mask with about a quarter dropped (all of row 5).
  const int64_t maskN = spanOf(p.batch, d.m, p.sq, p.sk);
  std::unique_ptr<MT[]> maskBuf(new MT[maskN]);
  std::vector<double> maskD(maskN);
  for (int64_t i = 0; i < maskN; ++i) {
    const int64_t row = (i / p.sk) % p.sq;
    if (p.mask == 2) {
      const bool keep = row != 5 && (rng() % 4) != 0;
      maskBuf[i] = SLUICE_STORE(MT, keep ? 1.0f : 0.0f);
      maskD[i] = keep;
    } else {
      const double x = row == 3 || rng() % 8 == 0 ? -INFINITY : uni(rng);
      maskBuf[i] = SLUICE_STORE(MT, (float)x);
      maskD[i] = load(maskBuf[i]);
    }
  }

  const int64_t outN = spanOf(p.batch, d.out, p.sq, p.dv);
  std::vector<T> out(outN, store<T>(12345.0));
  const MT *mp = p.mask ? maskBuf.get() : nullptr;
  // A barrier or shuffle not reached by every thread throws (a test failure).
  if constexpr (kernel == Kernel::Mma) {
    sluice_emu::launch(sluice_attn_blocks(d, SLUICE_ATTN_MMA_ROWS), 128, [&] {
      sluice_attn_mma<T, MT, D, BK>(d, qp, kp, vp, mp, out.data());
    });
  } else {
    sluice_emu::launch(sluice_attn_blocks(d, 4 * R), 128, [&] {
      sluice_attn_fma<T, MT, RT, DP, DVP, R, BK>(d, qp, kp, vp, mp, cosBuf.data(), sinBuf.data(),
                                                 out.data());
    });
  }

  // The reference, in double.
  const int64_t kOff = p.packedQKV ? kOffset : 0, vOff = p.packedQKV ? vOffset : 0;
  auto rotated = [&](const std::vector<double> &x, int64_t base, int64_t colStride, int64_t pos,
                     int64_t c) {
    if (!p.rotary)
      return x[base + c * colStride];
    const int64_t h = p.d / 2;
    const double partner = c < h ? -x[base + (c + h) * colStride] : x[base + (c - h) * colStride];
    return x[base + c * colStride] * cosD[pos * p.d + c] + partner * sinD[pos * p.d + c];
  };
  int64_t compared = 0, nans = 0;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t i = 0; i < p.sq; ++i) {
      std::vector<double> s(p.sk);
      double mx = -INFINITY;
      const int64_t qBase = offsetOf(d, d.q, b) + i * d.q.row;
      for (int64_t j = 0; j < p.sk; ++j) {
        const int64_t kBase = kOff + offsetOf(d, d.k, b) + j * d.k.row;
        double acc = 0;
        for (int64_t c = 0; c < p.d; ++c)
          acc += rotated(qD, qBase, d.q.col, i, c) * rotated(kD, kBase, d.k.col, j, c);
        acc *= p.scale;
        const double mv = maskD[offsetOf(d, d.m, b) + i * d.m.row + j * d.m.col];
        if (p.mask == 1)
          acc += mv;
        else if (p.mask == 2 && mv == 0)
          acc = -INFINITY;
        if (p.causal && j > i + p.sk - p.sq)
          acc = -INFINITY;
        s[j] = acc;
        mx = std::max(mx, acc);
      }
      double sum = 0;
      for (int64_t j = 0; j < p.sk; ++j) {
        s[j] = mx == -INFINITY ? 0.0 : std::exp(s[j] - mx);
        sum += s[j];
      }
      for (int64_t c = 0; c < p.dv; ++c) {
        double ref = 0;
        for (int64_t j = 0; j < p.sk; ++j)
          ref += s[j] * vD[vOff + offsetOf(d, d.v, b) + j * d.v.row + c * d.v.col];
        ref = sum > 0 ? ref / sum : NAN;
        const double got = load(out[offsetOf(d, d.out, b) + i * d.out.row + c * d.out.col]);
        ++compared;
        if (std::isnan(ref)) {
          ++nans;
          ASSERT_TRUE(std::isnan(got)) << "b " << b << " row " << i << " col " << c
                                       << ": every key masked, expected NaN, got " << got;
          continue;
        }
        ASSERT_NEAR(got, ref, atol + rtol * std::fabs(ref))
            << "b " << b << " row " << i << " col " << c;
      }
    }
  EXPECT_EQ(compared, batches * p.sq * p.dv);
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

// -- The tiled FMA kernel --------------------------------------------------

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
