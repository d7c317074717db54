//===- sluice_gen/cuda_attention.h - fused attention (cuda) -*- C++ -*-===//
//
// `sluice.attention` (kernel form F4) on the GPU in one kernel: softmax(scale
// * Q K^T + mask) V with the scores kept on chip. Semantics follow the
// reference evaluator and the cpu kernel (sluice_gen/cpu_attention.h):
// causal keys j <= i + Sk - Sq, a float mask added to the scaled scores, a
// boolean mask keeping where true, rotary (rotate-half) on Q and K, and NaN
// for a row whose keys are all masked out. Every tensor is read and the
// output written through the strides of a sluice_cuda_attn_desc (one per
// batch dim, row, column), so head splits and transposes cost no copies.
//
// Two kernels, both with FlashAttention's online softmax (running row max
// m and sum l in fp32; a new key tile rescales the accumulator by
// exp2(m_old - m_new); probabilities are exp2 of log2e-prescaled scores;
// the output is divided by l once at the end):
//
//   sluice_attn_mma  f16/bf16, head dim 64 or 128 (D == Dv), no rotary:
//     FlashAttention-2. A block of 4 warps owns 64 query rows (16 per warp)
//     and streams K/V tiles of BK keys through shared memory (Q's
//     fragments stay in registers). S = Q K^T and
//     O += P V are mma.sync.m16n8k16 (inline PTX, sm_80+) with fp32
//     accumulators; P is S's accumulator fragment repacked to f16/bf16 as
//     the A operand (no shared-memory round trip). Tiles past the causal
//     diagonal of the block's last row are not visited.
//   sluice_attn_fma  every other float case (f32, other head dims <= 256,
//     rotary applied while tiles are loaded): 4 warps own 4R query rows;
//     per K/V tile each lane scores one key, the warp shares max and
//     probabilities through shuffles, and each lane accumulates Dv/32 output
//     columns with FMAs.
//
// Not used: cp.async, ldmatrix (tiles are loaded by plain 16-byte or
// element loads into padded shared rows), split-K over keys. Built for an
// architecture below sm_80 (--gpu-arch=sm_75), the mma kernel computes each
// mma.sync with warp shuffles and FMAs instead (same fragments, same
// results, no tensor cores).
//
// Host emulation (test/unit/CudaAttentionEmuTest.cpp): with SLUICE_ATTN_EMU
// defined, the including file supplies threadIdx/blockIdx, __syncthreads,
// __shfl_*_sync, `__shared__` and sluice_attn_emu_mma (the PTX fragment
// layout in host code), and the same kernel source runs on the host.
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CUDA_ATTENTION_H
#define SLUICE_GEN_CUDA_ATTENTION_H

#include "sluice_gen/scalar.h"

#include <math.h>
#include <stdint.h>
#include <type_traits>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define SLUICE_ATTN_FN __device__ __forceinline__
#elif defined(SLUICE_ATTN_EMU)
#define SLUICE_ATTN_FN inline
#else
#error "sluice_gen/cuda_attention.h needs nvcc (or SLUICE_ATTN_EMU for host emulation)"
#endif

/// Most batch dims (heads are batch dims) the descriptor holds.
#define SLUICE_CUDA_ATTN_MAX_BATCH 8

/// How one tensor is addressed in attention's index space (as
/// sluice_attn_access on cpu): a stride per batch dim (0 where it
/// broadcasts), the row (sequence) and the column (head or key) dim.
struct sluice_cuda_attn_access {
  int64_t batch[SLUICE_CUDA_ATTN_MAX_BATCH];
  int64_t row, col;
};

/// Sizes and strides of one attention, passed by value to the kernels.
struct sluice_cuda_attn_desc {
  int nbatch;
  int64_t batch[SLUICE_CUDA_ATTN_MAX_BATCH];
  int64_t sq, sk, d, dv;
  float scale;
  bool causal;
  /// With causal: a sliding window of this many keys per row (0: none).
  int64_t window;
  /// 0: none, 1: additive float mask, 2: boolean keep-mask.
  int mask;
  bool rotary;
  sluice_cuda_attn_access q, k, v, m, out, cos_q, sin_q, cos_k, sin_k;
};

/// Whether causal (and sliding-window) attention drops key j for query i.
SLUICE_ATTN_FN bool sluice_cattn_dropped(const sluice_cuda_attn_desc &d, int64_t i, int64_t j) {
  const int64_t last = i + d.sk - d.sq;
  return d.causal && (j > last || (d.window > 0 && j <= last - d.window));
}

/// The first key tile (of `bk` keys) a query block starting at row i0 sees:
/// a sliding window skips the tiles before its first row's window.
SLUICE_ATTN_FN int64_t sluice_cattn_first_tile(const sluice_cuda_attn_desc &d, int64_t i0,
                                               int64_t bk) {
  if (!d.causal || d.window <= 0)
    return 0;
  int64_t first = i0 + d.sk - d.sq - d.window + 1;
  return first <= 0 ? 0 : first / bk * bk;
}

/// log2(e): scores are carried in base-2 units so that exp is one exp2.
#define SLUICE_ATTN_LOG2E 1.4426950408889634f

/// Element offset of batch `b` (row-major over d.batch) for one access.
SLUICE_ATTN_FN int64_t sluice_cattn_offset(const sluice_cuda_attn_desc &d,
                                           const sluice_cuda_attn_access &a, int64_t b) {
  int64_t off = 0;
  for (int x = d.nbatch - 1; x >= 0; --x) {
    off += (b % d.batch[x]) * a.batch[x];
    b /= d.batch[x];
  }
  return off;
}

/// Storage to float (hardware conversions on the device).
template <typename T> SLUICE_ATTN_FN float sluice_attn_ld(T v) { return (float)v; }
template <> SLUICE_ATTN_FN float sluice_attn_ld(sluice_f16 v) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(v.bits));
#else
  return sluice_load(v);
#endif
}
template <> SLUICE_ATTN_FN float sluice_attn_ld(sluice_bf16 v) {
#if defined(__CUDA_ARCH__)
  return __bfloat162float(__ushort_as_bfloat16(v.bits));
#else
  return sluice_load(v);
#endif
}
template <> SLUICE_ATTN_FN float sluice_attn_ld(bool v) { return v ? 1.0f : 0.0f; }

/// Two floats as one f16x2 / bf16x2 register (lo in the low half, as the
/// mma fragments order consecutive columns), rounded to nearest even.
template <typename T> SLUICE_ATTN_FN uint32_t sluice_attn_pack(float lo, float hi);
template <> SLUICE_ATTN_FN uint32_t sluice_attn_pack<sluice_f16>(float lo, float hi) {
#if defined(__CUDA_ARCH__)
  __half2 h = __floats2half2_rn(lo, hi);
  return *(uint32_t *)&h;
#else
  return (uint32_t)sluice_to_f16(lo).bits | ((uint32_t)sluice_to_f16(hi).bits << 16);
#endif
}
template <> SLUICE_ATTN_FN uint32_t sluice_attn_pack<sluice_bf16>(float lo, float hi) {
#if defined(__CUDA_ARCH__)
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *(uint32_t *)&h;
#else
  return (uint32_t)sluice_to_bf16(lo).bits | ((uint32_t)sluice_to_bf16(hi).bits << 16);
#endif
}

/// The two 16-bit halves of a fragment register as floats.
template <typename T> SLUICE_ATTN_FN float sluice_attn_lo(uint32_t r) {
  T x;
  x.bits = (uint16_t)(r & 0xffffu);
  return sluice_attn_ld(x);
}
template <typename T> SLUICE_ATTN_FN float sluice_attn_hi(uint32_t r) {
  T x;
  x.bits = (uint16_t)(r >> 16);
  return sluice_attn_ld(x);
}

/// mma.sync's result without tensor cores (GPUs before sm_80, where the
/// instruction does not exist): every lane fetches the A row fragments of
/// its two rows and the B column fragments of its two columns from the
/// lanes that hold them (32 shuffles) and forms its four dot products in
/// fp32. Slow but exact to the same fragment contract.
template <typename T>
SLUICE_ATTN_FN void sluice_attn_mma_shuffled(float c[4], const uint32_t a[4],
                                             const uint32_t b[2]) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  for (int s = 0; s < 4; ++s) {
    // Lane 4g + s holds A[g][2s, 2s+1] (a0), A[g+8][2s, 2s+1] (a1) and the
    // same at columns + 8 (a2, a3); lane 4n + s holds B[2s, 2s+1][n] (b0)
    // and B[2s+8, 2s+9][n] (b1).
    const unsigned full = 0xffffffffu;
    const uint32_t a0 = __shfl_sync(full, a[0], 4 * g + s), a1 = __shfl_sync(full, a[1], 4 * g + s);
    const uint32_t a2 = __shfl_sync(full, a[2], 4 * g + s), a3 = __shfl_sync(full, a[3], 4 * g + s);
    const uint32_t b00 = __shfl_sync(full, b[0], 8 * t + s),
                   b01 = __shfl_sync(full, b[1], 8 * t + s);
    const uint32_t b10 = __shfl_sync(full, b[0], 8 * t + 4 + s),
                   b11 = __shfl_sync(full, b[1], 8 * t + 4 + s);
    auto dot = [&](uint32_t x, uint32_t y, uint32_t bx, uint32_t by) {
      return sluice_attn_lo<T>(x) * sluice_attn_lo<T>(bx) +
             sluice_attn_hi<T>(x) * sluice_attn_hi<T>(bx) +
             sluice_attn_lo<T>(y) * sluice_attn_lo<T>(by) +
             sluice_attn_hi<T>(y) * sluice_attn_hi<T>(by);
    };
    c[0] += dot(a0, a2, b00, b01);
    c[1] += dot(a0, a2, b10, b11);
    c[2] += dot(a1, a3, b00, b01);
    c[3] += dot(a1, a3, b10, b11);
  }
}

/// c += a b for one warp: m16n8k16, A row-major 16x16 (4 regs), B
/// "col" 16x8 (2 regs), fp32 C/D (4 regs), fragments as in the PTX ISA
/// (groupID = lane / 4, threadID_in_group = lane % 4).
template <typename T>
SLUICE_ATTN_FN void sluice_attn_mma16816(float c[4], const uint32_t a[4], const uint32_t b[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same<T, sluice_f16>::value)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#elif defined(__CUDA_ARCH__)
  sluice_attn_mma_shuffled<T>(c, a, b); // --gpu-arch below sm_80
#elif defined(SLUICE_ATTN_EMU)
  sluice_attn_emu_mma(std::is_same<T, sluice_bf16>::value, c, a, b);
#endif
}

/// Loads a [ROWS x D] tile of 16-bit elements into shared rows of D + 8
/// (the padding spreads the fragment reads over banks): rows past `valid`
/// are zero. 16-byte vector loads when the tensor's columns are contiguous
/// and every row starts 16-byte aligned; element loads otherwise.
template <int ROWS, int D>
SLUICE_ATTN_FN void sluice_attn_load_tile(uint16_t (*dst)[D + 8], const uint16_t *src,
                                          int64_t rowStride, int64_t colStride, int64_t valid,
                                          bool vec, int tid) {
  if (vec) {
    for (int e = tid; e < ROWS * (D / 8); e += 128) {
      const int r = e / (D / 8), c = (e % (D / 8)) * 8;
      uint4 x = {0u, 0u, 0u, 0u};
      if (r < valid)
        x = *(const uint4 *)(src + r * rowStride + c);
      *(uint4 *)&dst[r][c] = x;
    }
  } else {
    for (int e = tid; e < ROWS * D; e += 128) {
      const int r = e / D, c = e % D;
      dst[r][c] = r < valid ? src[r * rowStride + c * colStride] : (uint16_t)0;
    }
  }
}

/// Whether one tensor's tile rows can be read as 16-byte vectors.
SLUICE_ATTN_FN bool sluice_attn_vec_ok(const void *base, const sluice_cuda_attn_access &a,
                                       int nbatch) {
  if (a.col != 1 || a.row % 8 != 0 || ((uintptr_t)base & 15) != 0)
    return false;
  for (int x = 0; x < nbatch; ++x)
    if (a.batch[x] % 8 != 0)
      return false;
  return true;
}

/// Rows of the query tile of sluice_attn_mma (4 warps x 16 rows).
#define SLUICE_ATTN_MMA_ROWS 64

/// FlashAttention-2 with tensor cores (see the file comment). T:
/// sluice_f16 or sluice_bf16; D: head dim (64 or 128, = Dv); BK: keys per
/// tile. Grid: batches x query tiles, 128 threads.
template <typename T, typename MT, int D, int BK>
__global__ void __launch_bounds__(128)
    sluice_attn_mma(const sluice_cuda_attn_desc d, const T *__restrict__ q, const T *__restrict__ k,
                    const T *__restrict__ v, const MT *__restrict__ mask, T *__restrict__ out) {
  static_assert(D % 16 == 0 && BK % 16 == 0, "mma tiles");
  constexpr int BQ = SLUICE_ATTN_MMA_ROWS;
  __shared__ __align__(16) uint16_t qs[BQ][D + 8];
  __shared__ __align__(16) uint16_t ks[BK][D + 8];
  __shared__ __align__(16) uint16_t vs[BK][D + 8];

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, tg = lane % 4;
  const int64_t qTiles = (d.sq + BQ - 1) / BQ;
  const int64_t b = (int64_t)blockIdx.x / qTiles;
  // Heaviest (causal: last) query tiles first.
  const int64_t i0 = (qTiles - 1 - (int64_t)blockIdx.x % qTiles) * BQ;
  const int64_t sq = d.sq, sk = d.sk;

  const uint16_t *qb = (const uint16_t *)q + sluice_cattn_offset(d, d.q, b) + i0 * d.q.row;
  const uint16_t *kb = (const uint16_t *)k + sluice_cattn_offset(d, d.k, b);
  const uint16_t *vb = (const uint16_t *)v + sluice_cattn_offset(d, d.v, b);
  const bool vecQ = sluice_attn_vec_ok(q, d.q, d.nbatch);
  const bool vecK = sluice_attn_vec_ok(k, d.k, d.nbatch);
  const bool vecV = sluice_attn_vec_ok(v, d.v, d.nbatch);
  sluice_attn_load_tile<BQ, D>(qs, qb, d.q.row, d.q.col, sq - i0, vecQ, tid);

  // The warp's Q rows as A fragments, kept in registers for every key tile.
  __syncthreads();
  uint32_t qa[D / 16][4];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const int r = warp * 16 + g, c = kk * 16 + 2 * tg;
    qa[kk][0] = *(const uint32_t *)&qs[r][c];
    qa[kk][1] = *(const uint32_t *)&qs[r + 8][c];
    qa[kk][2] = *(const uint32_t *)&qs[r][c + 8];
    qa[kk][3] = *(const uint32_t *)&qs[r + 8][c + 8];
  }

  // This thread's two rows (fragment rows g and g + 8 of the warp's 16).
  const int64_t row0 = i0 + warp * 16 + g, row1 = row0 + 8;
  const MT *mrow0 = nullptr, *mrow1 = nullptr;
  if (d.mask) {
    const int64_t mo = sluice_cattn_offset(d, d.m, b);
    mrow0 = row0 < sq ? mask + mo + row0 * d.m.row : nullptr;
    mrow1 = row1 < sq ? mask + mo + row1 * d.m.row : nullptr;
  }
  const float scale2 = d.scale * SLUICE_ATTN_LOG2E;
  float o[D / 8][4];
#pragma unroll
  for (int x = 0; x < D / 8; ++x)
    o[x][0] = o[x][1] = o[x][2] = o[x][3] = 0.0f;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;

  // Keys the block sees: causal rows i see j <= i + sk - sq.
  int64_t kEnd = sk;
  if (d.causal) {
    kEnd = i0 + BQ + sk - sq;
    kEnd = kEnd < 0 ? 0 : (kEnd > sk ? sk : kEnd);
  }
  for (int64_t j0 = sluice_cattn_first_tile(d, i0, BK); j0 < kEnd; j0 += BK) {
    __syncthreads(); // the previous tile's readers are done
    sluice_attn_load_tile<BK, D>(ks, kb + j0 * d.k.row, d.k.row, d.k.col, sk - j0, vecK, tid);
    sluice_attn_load_tile<BK, D>(vs, vb + j0 * d.v.row, d.v.row, d.v.col, sk - j0, vecV, tid);
    __syncthreads();

    // S = Q K^T: 16 rows x BK keys per warp, fp32.
    float s[BK / 8][4];
#pragma unroll
    for (int n = 0; n < BK / 8; ++n)
      s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
      for (int n = 0; n < BK / 8; ++n) {
        // B[k][n] = K[key n][dim k]: two consecutive dims of one key row.
        uint32_t bf[2];
        bf[0] = *(const uint32_t *)&ks[n * 8 + g][kk * 16 + 2 * tg];
        bf[1] = *(const uint32_t *)&ks[n * 8 + g][kk * 16 + 2 * tg + 8];
        sluice_attn_mma16816<T>(s[n], qa[kk], bf);
      }

    // Scale (base 2), masks, causal limit; the tile's row maxima.
    float t0 = -INFINITY, t1 = -INFINITY;
#pragma unroll
    for (int n = 0; n < BK / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t j = j0 + n * 8 + 2 * tg + (e & 1);
        const int64_t i = e < 2 ? row0 : row1;
        const MT *mr = e < 2 ? mrow0 : mrow1;
        float x = s[n][e] * scale2;
        if (j >= sk || sluice_cattn_dropped(d, i, j))
          x = -INFINITY;
        else if (mr) {
          const MT mv = mr[j * d.m.col];
          if (d.mask == 1)
            x += sluice_attn_ld(mv) * SLUICE_ATTN_LOG2E;
          else if (!sluice_attn_ld(mv))
            x = -INFINITY;
        }
        s[n][e] = x;
        if (e < 2)
          t0 = fmaxf(t0, x);
        else
          t1 = fmaxf(t1, x);
      }
    // The four threads of a fragment row hold its BK columns.
    t0 = fmaxf(t0, __shfl_xor_sync(0xffffffffu, t0, 1));
    t0 = fmaxf(t0, __shfl_xor_sync(0xffffffffu, t0, 2));
    t1 = fmaxf(t1, __shfl_xor_sync(0xffffffffu, t1, 1));
    t1 = fmaxf(t1, __shfl_xor_sync(0xffffffffu, t1, 2));
    const float n0 = fmaxf(m0, t0), n1 = fmaxf(m1, t1);
    // A row with no visible key yet keeps m = -inf: exp2(-inf - 0) = 0.
    const float u0 = n0 == -INFINITY ? 0.0f : n0, u1 = n1 == -INFINITY ? 0.0f : n1;
    const float alpha0 = exp2f(m0 - u0), alpha1 = exp2f(m1 - u1);
    m0 = n0;
    m1 = n1;
    l0 *= alpha0;
    l1 *= alpha1;
#pragma unroll
    for (int x = 0; x < D / 8; ++x) {
      o[x][0] *= alpha0;
      o[x][1] *= alpha0;
      o[x][2] *= alpha1;
      o[x][3] *= alpha1;
    }
#pragma unroll
    for (int n = 0; n < BK / 8; ++n) {
      s[n][0] = exp2f(s[n][0] - u0);
      s[n][1] = exp2f(s[n][1] - u0);
      s[n][2] = exp2f(s[n][2] - u1);
      s[n][3] = exp2f(s[n][3] - u1);
      l0 += s[n][0] + s[n][1];
      l1 += s[n][2] + s[n][3];
    }

    // O += P V: P's A fragments are S's accumulators of two key octets.
#pragma unroll
    for (int kc = 0; kc < BK / 16; ++kc) {
      uint32_t a[4];
      a[0] = sluice_attn_pack<T>(s[2 * kc][0], s[2 * kc][1]);
      a[1] = sluice_attn_pack<T>(s[2 * kc][2], s[2 * kc][3]);
      a[2] = sluice_attn_pack<T>(s[2 * kc + 1][0], s[2 * kc + 1][1]);
      a[3] = sluice_attn_pack<T>(s[2 * kc + 1][2], s[2 * kc + 1][3]);
      const int kr = kc * 16 + 2 * tg;
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        // B[k][n] = V[key k][col n]: two keys of one column, packed.
        const int c = n * 8 + g;
        uint32_t bf[2];
        bf[0] = (uint32_t)vs[kr][c] | ((uint32_t)vs[kr + 1][c] << 16);
        bf[1] = (uint32_t)vs[kr + 8][c] | ((uint32_t)vs[kr + 9][c] << 16);
        sluice_attn_mma16816<T>(o[n], a, bf);
      }
    }
  }

  l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
  l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
  // Every key masked out: NaN, as the evaluator gives.
  const float inv0 = l0 > 0.0f ? 1.0f / l0 : NAN, inv1 = l1 > 0.0f ? 1.0f / l1 : NAN;
  T *ob = out + sluice_cattn_offset(d, d.out, b);
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    const int64_t c = n * 8 + 2 * tg;
    if (row0 < sq) {
      ob[row0 * d.out.row + c * d.out.col] = SLUICE_STORE(T, o[n][0] * inv0);
      ob[row0 * d.out.row + (c + 1) * d.out.col] = SLUICE_STORE(T, o[n][1] * inv0);
    }
    if (row1 < sq) {
      ob[row1 * d.out.row + c * d.out.col] = SLUICE_STORE(T, o[n][2] * inv1);
      ob[row1 * d.out.row + (c + 1) * d.out.col] = SLUICE_STORE(T, o[n][3] * inv1);
    }
  }
}

/// Element c of a row of Q or K rotated (rotate-half), times `mul`:
/// x[c] cos[c] + (c < D/2 ? -x[c + D/2] : x[c - D/2]) sin[c].
template <typename T, typename RT>
SLUICE_ATTN_FN float sluice_attn_rotated(const T *x, int64_t xs, const RT *cs, int64_t cstride,
                                         const RT *sn, int64_t sstride, int64_t n, int64_t c) {
  const int64_t h = n / 2;
  const float xc = sluice_attn_ld(x[c * xs]);
  const float partner = c < h ? -sluice_attn_ld(x[(c + h) * xs]) : sluice_attn_ld(x[(c - h) * xs]);
  return xc * sluice_attn_ld(cs[c * cstride]) + partner * sluice_attn_ld(sn[c * sstride]);
}

/// The tiled FMA kernel (see the file comment). DP, DVP: head dims rounded
/// up to 32; R: query rows per warp; BK: keys per tile (32 or 16; a lane
/// scores key `lane`). Grid: batches x query tiles of 4R rows, 128 threads.
template <typename T, typename MT, typename RT, int DP, int DVP, int R, int BK>
__global__ void __launch_bounds__(128)
    sluice_attn_fma(const sluice_cuda_attn_desc d, const T *__restrict__ q, const T *__restrict__ k,
                    const T *__restrict__ v, const MT *__restrict__ mask,
                    const RT *__restrict__ cosp, const RT *__restrict__ sinp, T *__restrict__ out) {
  static_assert(DP % 32 == 0 && DVP % 32 == 0 && (BK == 32 || BK == 16), "fma tiles");
  constexpr int BQ = 4 * R;
  __shared__ float qs[BQ][DP];
  __shared__ float ks[BK][DP + 1]; // +1: lanes read different keys' rows
  __shared__ float vs[BK][DVP];

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int64_t qTiles = (d.sq + BQ - 1) / BQ;
  const int64_t b = (int64_t)blockIdx.x / qTiles;
  const int64_t i0 = (qTiles - 1 - (int64_t)blockIdx.x % qTiles) * BQ;
  const int64_t sq = d.sq, sk = d.sk, hd = d.d, dv = d.dv;

  // The query tile: rotated, times scale, zero past D and past Sq.
  {
    const int64_t qo = sluice_cattn_offset(d, d.q, b);
    const int64_t cqo = d.rotary ? sluice_cattn_offset(d, d.cos_q, b) : 0;
    const int64_t sqo = d.rotary ? sluice_cattn_offset(d, d.sin_q, b) : 0;
    for (int e = tid; e < BQ * DP; e += 128) {
      const int r = e / DP, c = e % DP;
      const int64_t i = i0 + r;
      float x = 0.0f;
      if (i < sq && c < hd) {
        const T *qi = q + qo + i * d.q.row;
        x = d.rotary ? sluice_attn_rotated(qi, d.q.col, cosp + cqo + i * d.cos_q.row, d.cos_q.col,
                                           sinp + sqo + i * d.sin_q.row, d.sin_q.col, hd, c)
                     : sluice_attn_ld(qi[c * d.q.col]);
        x *= d.scale;
      }
      qs[r][c] = x;
    }
  }
  const int64_t ko = sluice_cattn_offset(d, d.k, b), vo = sluice_cattn_offset(d, d.v, b);
  const int64_t cko = d.rotary ? sluice_cattn_offset(d, d.cos_k, b) : 0;
  const int64_t sko = d.rotary ? sluice_cattn_offset(d, d.sin_k, b) : 0;
  const int64_t mo = d.mask ? sluice_cattn_offset(d, d.m, b) : 0;

  float acc[R][DVP / 32];
  float mrow[R], lrow[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    mrow[r] = -INFINITY;
    lrow[r] = 0.0f;
#pragma unroll
    for (int t = 0; t < DVP / 32; ++t)
      acc[r][t] = 0.0f;
  }

  int64_t kEnd = sk;
  if (d.causal) {
    kEnd = i0 + BQ + sk - sq;
    kEnd = kEnd < 0 ? 0 : (kEnd > sk ? sk : kEnd);
  }
  for (int64_t j0 = sluice_cattn_first_tile(d, i0, BK); j0 < kEnd; j0 += BK) {
    __syncthreads();
    for (int e = tid; e < BK * DP; e += 128) {
      const int jj = e / DP, c = e % DP;
      const int64_t j = j0 + jj;
      float x = 0.0f;
      if (j < sk && c < hd) {
        const T *kj = k + ko + j * d.k.row;
        x = d.rotary ? sluice_attn_rotated(kj, d.k.col, cosp + cko + j * d.cos_k.row, d.cos_k.col,
                                           sinp + sko + j * d.sin_k.row, d.sin_k.col, hd, c)
                     : sluice_attn_ld(kj[c * d.k.col]);
      }
      ks[jj][c] = x;
    }
    for (int e = tid; e < BK * DVP; e += 128) {
      const int jj = e / DVP, c = e % DVP;
      const int64_t j = j0 + jj;
      vs[jj][c] = j < sk && c < dv ? sluice_attn_ld(v[vo + j * d.v.row + c * d.v.col]) : 0.0f;
    }
    __syncthreads();

    const int64_t j = j0 + lane;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int rr = warp * R + r;
      const int64_t i = i0 + rr;
      float x = -INFINITY;
      if (lane < BK && j < sk && !sluice_cattn_dropped(d, i, j)) {
        float dot = 0.0f;
#pragma unroll 8
        for (int c = 0; c < DP; ++c)
          dot = fmaf(qs[rr][c], ks[lane][c], dot);
        x = dot * SLUICE_ATTN_LOG2E;
        if (d.mask && i < sq) {
          const MT mv = mask[mo + i * d.m.row + j * d.m.col];
          if (d.mask == 1)
            x += sluice_attn_ld(mv) * SLUICE_ATTN_LOG2E;
          else if (!sluice_attn_ld(mv))
            x = -INFINITY;
        }
      }
      float t = x;
#pragma unroll
      for (int off = 16; off > 0; off /= 2)
        t = fmaxf(t, __shfl_xor_sync(0xffffffffu, t, off));
      const float mn = fmaxf(mrow[r], t);
      const float u = mn == -INFINITY ? 0.0f : mn;
      const float alpha = exp2f(mrow[r] - u);
      mrow[r] = mn;
      const float p = exp2f(x - u);
      lrow[r] = lrow[r] * alpha + p;
#pragma unroll
      for (int c = 0; c < DVP / 32; ++c)
        acc[r][c] *= alpha;
#pragma unroll 4
      for (int jj = 0; jj < BK; ++jj) {
        const float pj = __shfl_sync(0xffffffffu, p, jj);
#pragma unroll
        for (int c = 0; c < DVP / 32; ++c)
          acc[r][c] = fmaf(pj, vs[jj][lane + 32 * c], acc[r][c]);
      }
    }
  }

  T *ob = out + sluice_cattn_offset(d, d.out, b);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    float l = lrow[r];
#pragma unroll
    for (int off = 16; off > 0; off /= 2)
      l += __shfl_xor_sync(0xffffffffu, l, off);
    const int64_t i = i0 + warp * R + r;
    if (i >= sq)
      continue;
    const float inv = l > 0.0f ? 1.0f / l : NAN;
#pragma unroll
    for (int c = 0; c < DVP / 32; ++c) {
      const int64_t col = lane + 32 * c;
      if (col < dv)
        ob[i * d.out.row + col * d.out.col] = SLUICE_STORE(T, acc[r][c] * inv);
    }
  }
}

/// Grid size of a kernel with query tiles of `rows` rows.
static inline unsigned sluice_attn_blocks(const sluice_cuda_attn_desc &d, int64_t rows) {
  int64_t batches = 1;
  for (int x = 0; x < d.nbatch; ++x)
    batches *= d.batch[x];
  return (unsigned)(batches * ((d.sq + rows - 1) / rows));
}

#endif // SLUICE_GEN_CUDA_ATTENTION_H
