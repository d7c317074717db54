//===- sluice_gen/cpu_attention.h - fused attention (cpu) -*- C++ -*-===//
//
// `sluice.attention` (kernel form F4) in one pass: softmax(scale * Q K^T +
// mask) V without writing the scores to memory. Semantics follow the
// reference evaluator (lib/reference/Composite.cpp): fp32 softmax statistics,
// causal keys j <= i + Sk - Sq, a float mask added to the scaled scores, a
// boolean mask keeping where true, rotary (rotate-half) on Q and K first, and
// NaN for a row whose keys are all masked out.
//
// Every tensor is read (and the output written) through strides: one per
// batch dim (0 where it broadcasts), one for rows, one for columns, so the
// head split of a QKV GEMM output and the transposes around attention cost
// no copies. The emitter (codegen/cpu/groups/Attention.cpp) fills a
// sluice_attn_desc with compile-time sizes and strides.
//
// Float path (f32, f16, bf16 storage; arithmetic in f32), per (batch, block
// of query rows) tile, tiles spread over OpenMP threads:
//   1. K^T (rotated) and V packed into per-thread scratch in the SGEMM
//      micro-kernel's 32-column panels, once per batch the thread sees
//      (every query block of the batch reuses them: no packing in the GEMMs);
//   2. the query block packed (rotated, times scale) into [rows x D];
//   3. S = Qblk K^T with the SGEMM micro-kernel (cpu_gemm.h) over the keys
//      the block can see (causal: the masked key range is skipped);
//   4. mask, row max, exp (16 lanes), sums; keys past a row's causal limit
//      get probability 0;
//   5. O = P V (micro-kernel), rows scaled by 1/sum while written out.
// Without AVX-512 or AVX2 + FMA the GEMMs are plain loops over the same panels.
// f64 uses a plain loop nest in double (as the evaluator).
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CPU_ATTENTION_H
#define SLUICE_GEN_CPU_ATTENTION_H

#include "sluice_gen/cpu_gemm.h"
#include "sluice_gen/cpu_reduce.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <type_traits>

/// Most batch dims (heads are batch dims) the descriptor holds.
#define SLUICE_ATTN_MAX_BATCH 8

/// How one tensor is addressed in attention's index space: strides for
/// every batch dim of the query (0 where the tensor broadcasts), the row
/// (sequence) dim and the column (head or key) dim.
struct sluice_attn_access {
  int64_t batch[SLUICE_ATTN_MAX_BATCH];
  int64_t row, col;
};

/// Sizes and strides of one attention (filled by generated code).
struct sluice_attn_desc {
  int nbatch;
  int64_t batch[SLUICE_ATTN_MAX_BATCH];
  int64_t sq, sk, d, dv;
  float scale;
  bool causal;
  /// With causal: a sliding window of this many keys per row (0: none).
  int64_t window;
  /// 0: none, 1: additive float mask, 2: boolean keep-mask.
  int mask;
  bool rotary;
  /// Rows of the query block a tile computes (0: chosen here).
  int64_t block;
  /// q, k and v over [B..., S, D]; m over [B..., Sq, Sk]; out over
  /// [B..., Sq, Dv]; cos/sin over the query's and the key's shapes.
  sluice_attn_access q, k, v, m, out, cos_q, sin_q, cos_k, sin_k;
};

/// Element offsets of batch `b` (row-major over d.batch) for one access.
static inline int64_t sluice_attn_offset(const sluice_attn_desc &d, const sluice_attn_access &a,
                                         int64_t b) {
  int64_t off = 0;
  for (int x = d.nbatch - 1; x >= 0; --x) {
    off += (b % d.batch[x]) * a.batch[x];
    b /= d.batch[x];
  }
  return off;
}

/// Width of the packed panels of K^T and V: the AVX-512 SGEMM micro-kernel's
/// (two AVX2 micro-tiles).
#define SLUICE_ATTN_NR 32

/// C[m x n] = A[m x kc] B, B packed in SLUICE_ATTN_NR-column panels (panel
/// j at bp + j * panelStride holds B[p][j*NR + q] at p*NR + q, zero-padded
/// past n): the SGEMM's micro-kernel without its packing pass, since K^T
/// and V are packed once per batch and reused by every query block.
static inline void sluice_attn_gemm(int64_t m, int64_t n, int64_t kc, const float *a,
                                    int64_t lda, const float *bp, int64_t panelStride, float *c,
                                    int64_t ldc) {
  const int64_t NR = SLUICE_ATTN_NR;
#if defined(SLUICE_SGEMM_ISA)
  if (kc <= 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = 0.0f;
    return;
  }
  // Row panels of near-equal height (as sluice_sgemm::gemm). A panel is
  // one micro-tile wide on AVX-512 (NR = 32) and two on AVX2 (16 each).
  const int64_t panels = (m + sluice_sgemm::MR - 1) / sluice_sgemm::MR;
  if (panels == 0)
    return;
  const int64_t base = m / panels, extra = m % panels;
  for (int64_t jr = 0; jr < n; jr += NR) {
    const int64_t cols = n - jr < NR ? n - jr : NR;
    const float *panel = bp + (jr / NR) * panelStride;
    for (int64_t sub = 0; sub < cols; sub += sluice_sgemm::NR) {
      const int64_t w = cols - sub < sluice_sgemm::NR ? cols - sub : sluice_sgemm::NR;
      for (int64_t r = 0, ir = 0; r < panels; ++r) {
        const int64_t rows = base + (r < extra ? 1 : 0);
        sluice_sgemm::tile<true>(rows, kc, a + ir * lda, lda, panel + sub, NR,
                                 c + ir * ldc + jr + sub, ldc, w, false, nullptr);
        ir += rows;
      }
    }
  }
#else
  // Four rows at a time: each panel row is loaded once for four FMAs.
  for (int64_t jr = 0; jr < n; jr += NR) {
    const int64_t cols = n - jr < NR ? n - jr : NR;
    const float *panel = bp + (jr / NR) * panelStride;
    for (int64_t i0 = 0; i0 < m; i0 += 4) {
      const int64_t rows = m - i0 < 4 ? m - i0 : 4;
      float acc[4][SLUICE_ATTN_NR] = {};
      for (int64_t p = 0; p < kc; ++p) {
        const float *bq = panel + p * NR;
        const float x0 = a[i0 * lda + p];
        const float x1 = rows > 1 ? a[(i0 + 1) * lda + p] : 0.0f;
        const float x2 = rows > 2 ? a[(i0 + 2) * lda + p] : 0.0f;
        const float x3 = rows > 3 ? a[(i0 + 3) * lda + p] : 0.0f;
#pragma omp simd
        for (int64_t q = 0; q < SLUICE_ATTN_NR; ++q) {
          acc[0][q] += x0 * bq[q];
          acc[1][q] += x1 * bq[q];
          acc[2][q] += x2 * bq[q];
          acc[3][q] += x3 * bq[q];
        }
      }
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t q = 0; q < cols; ++q)
          c[(i0 + r) * ldc + jr + q] = acc[r][q];
    }
  }
#endif
}

#if defined(__AVX512F__)
/// Transposes a 16 x 16 block: row r of the source (src + r * lds, 16
/// floats) becomes column r of the destination (dst + c * ldd).
static inline void sluice_attn_transpose16(const float *src, int64_t lds, float *dst,
                                           int64_t ldd) {
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i)
    r[i] = _mm512_loadu_ps(src + i * lds);
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  // Lane L of r[4g + x] now: rows 4g..4g+3 of column 4L + x.
  for (int g = 0; g < 4; ++g) {
    r[4 * g + 0] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
    r[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xEE);
    r[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
    r[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
  }
  for (int h = 0; h < 2; ++h)
    for (int x = 0; x < 4; ++x) {
      t[8 * h + x] = _mm512_shuffle_f32x4(r[8 * h + x], r[8 * h + 4 + x], 0x88);
      t[8 * h + 4 + x] = _mm512_shuffle_f32x4(r[8 * h + x], r[8 * h + 4 + x], 0xDD);
    }
  for (int x = 0; x < 4; ++x) {
    _mm512_storeu_ps(dst + x * ldd, _mm512_shuffle_f32x4(t[x], t[8 + x], 0x88));
    _mm512_storeu_ps(dst + (8 + x) * ldd, _mm512_shuffle_f32x4(t[x], t[8 + x], 0xDD));
    _mm512_storeu_ps(dst + (4 + x) * ldd, _mm512_shuffle_f32x4(t[4 + x], t[12 + x], 0x88));
    _mm512_storeu_ps(dst + (12 + x) * ldd, _mm512_shuffle_f32x4(t[4 + x], t[12 + x], 0xDD));
  }
}
#endif

/// Row `x` (D elements, column stride xs) rotated with cos/sin rows into
/// dst, times `mul`: x * cos + rotate_half(x) * sin.
template <typename T, typename RT, typename C>
static inline void sluice_attn_rotate(int64_t n, const T *x, int64_t xs, const RT *cs,
                                      const RT *sn, int64_t rs, int64_t ss, C mul, C *dst,
                                      int64_t dstStride) {
  const int64_t h = n / 2;
  for (int64_t c = 0; c < n; ++c) {
    C xc = (C)sluice_load(x[c * xs]);
    C partner = c < h ? -(C)sluice_load(x[(c + h) * xs]) : (C)sluice_load(x[(c - h) * xs]);
    dst[c * dstStride] =
        (xc * (C)sluice_load(cs[c * rs]) + partner * (C)sluice_load(sn[c * ss])) * mul;
  }
}

/// The f64 path (and any storage type): the evaluator's loop nest.
template <typename C, typename T, typename MT, typename RT>
static inline int32_t sluice_attention_simple(int threads, const sluice_attn_desc &d,
                                              const T *q, const T *k, const T *v,
                                              const MT *mask, const RT *cosp, const RT *sinp,
                                              T *out) {
  int64_t batches = 1;
  for (int x = 0; x < d.nbatch; ++x)
    batches *= d.batch[x];
  const int64_t rows = batches * d.sq;
  const C inf = (C)INFINITY;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && rows * d.sk * (d.d + d.dv) > 65536)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t b = r / d.sq, i = r % d.sq;
    C *buf = (C *)malloc(sizeof(C) * (size_t)(d.sk + 2 * d.d + 1));
    if (!buf)
      continue;
    C *s = buf, *qr = buf + d.sk, *kr = qr + d.d;
    const int64_t qo = sluice_attn_offset(d, d.q, b) + i * d.q.row;
    const int64_t ko = sluice_attn_offset(d, d.k, b), vo = sluice_attn_offset(d, d.v, b);
    const int64_t mo = d.mask ? sluice_attn_offset(d, d.m, b) + i * d.m.row : 0;
    if (d.rotary)
      sluice_attn_rotate<T, RT, C>(d.d, q + qo, d.q.col,
                                   cosp + sluice_attn_offset(d, d.cos_q, b) + i * d.cos_q.row,
                                   sinp + sluice_attn_offset(d, d.sin_q, b) + i * d.sin_q.row,
                                   d.cos_q.col, d.sin_q.col, (C)1, qr, 1);
    else
      for (int64_t c = 0; c < d.d; ++c)
        qr[c] = (C)sluice_load(q[qo + c * d.q.col]);
    C mx = -inf;
    for (int64_t j = 0; j < d.sk; ++j) {
      const T *kj = k + ko + j * d.k.row;
      if (d.rotary)
        sluice_attn_rotate<T, RT, C>(
            d.d, kj, d.k.col, cosp + sluice_attn_offset(d, d.cos_k, b) + j * d.cos_k.row,
            sinp + sluice_attn_offset(d, d.sin_k, b) + j * d.sin_k.row, d.cos_k.col,
            d.sin_k.col, (C)1, kr, 1);
      else
        for (int64_t c = 0; c < d.d; ++c)
          kr[c] = (C)sluice_load(kj[c * d.k.col]);
      C acc = 0;
      for (int64_t c = 0; c < d.d; ++c)
        acc += qr[c] * kr[c];
      acc *= (C)d.scale;
      if (d.mask == 1)
        acc += (C)sluice_load(mask[mo + j * d.m.col]);
      else if (d.mask == 2 && !sluice_load(mask[mo + j * d.m.col]))
        acc = -inf;
      if (d.causal && (j > i + d.sk - d.sq || (d.window > 0 && j <= i + d.sk - d.sq - d.window)))
        acc = -inf;
      s[j] = acc;
      mx = acc > mx ? acc : mx;
    }
    C sum = 0;
    for (int64_t j = 0; j < d.sk; ++j) {
      s[j] = exp(s[j] - mx);
      sum += s[j];
    }
    const int64_t oo = sluice_attn_offset(d, d.out, b) + i * d.out.row;
    for (int64_t c = 0; c < d.dv; ++c) {
      C acc = 0;
      for (int64_t j = 0; j < d.sk; ++j)
        acc += s[j] * (C)sluice_load(v[vo + j * d.v.row + c * d.v.col]);
      out[oo + c * d.out.col] = SLUICE_STORE(T, acc / sum);
    }
    free(buf);
  }
  return 0;
}

/// Rows of a query block: up to 64, fewer when there would not be two tiles
/// per thread or when the block's scores (rows x Sk floats) would leave L2
/// (long sequences: 1 MiB at most down to 16 rows).
static inline int64_t sluice_attn_block(const sluice_attn_desc &d, int64_t batches,
                                        int threads) {
  if (d.block > 0)
    return d.block < d.sq ? d.block : (d.sq > 0 ? d.sq : 1);
  int64_t mb = d.sq < 64 ? d.sq : 64;
  while (mb > 16 && (batches * ((d.sq + mb - 1) / mb) < 2 * threads || mb * d.sk > 262144))
    mb = (mb + 1) / 2;
  return mb > 0 ? mb : 1;
}

/// The float path of sluice_attention (f32, f16, bf16 storage).
template <typename T, typename MT, typename RT>
static inline int32_t sluice_attention_f32(int threads, const sluice_attn_desc &d, const T *q,
                                           const T *k, const T *v, const MT *mask,
                                           const RT *cosp, const RT *sinp, T *out) {
  int64_t batches = 1;
  for (int x = 0; x < d.nbatch; ++x)
    batches *= d.batch[x];
  if (batches == 0 || d.sq == 0 || d.dv == 0)
    return 0;
  const int64_t sq = d.sq, sk = d.sk, hd = d.d, dv = d.dv;
  const float scale = d.scale;
  const int64_t mb = sluice_attn_block(d, batches, threads);
  const int64_t qBlocks = (sq + mb - 1) / mb, tiles = batches * qBlocks;
  // Scratch per thread: K^T and V in panels, the query block, scores,
  // outputs, row scales.
  const int64_t NR = SLUICE_ATTN_NR, lds = sk > 0 ? (sk + 15) / 16 * 16 : 16;
  const int64_t ktPanel = NR * hd, vPanel = NR * sk;
  const int64_t ktSize = (sk + NR - 1) / NR * ktPanel, vSize = (dv + NR - 1) / NR * vPanel,
                qSize = (mb * hd + 15) / 16 * 16, sSize = mb * lds, oSize = (mb * dv + 15) / 16 * 16;
  const int64_t total = ktSize + vSize + qSize + sSize + oSize + mb + 16;
  const double work = 2.0 * (double)batches * sq * sk * (hd + dv);
  int failed = 0;
#pragma omp parallel num_threads(threads) if (threads > 1 && tiles > 1 && work > 1e6)
  {
    float *ws = sluice_float_scratch<SLUICE_SCRATCH_ATTENTION>(total);
    if (!ws) {
#pragma omp atomic write
      failed = 1;
    }
    float *kt = ws, *vp = kt + ktSize, *qp = vp + vSize, *s = qp + qSize, *o = s + sSize,
          *inv = o + oSize;
    // The batch offsets K^T / V were last packed for (per thread).
    int64_t packedK = -1, packedCos = -1, packedSin = -1, packedV = -1;
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tiles; ++t) {
      if (!ws)
        continue;
      const int64_t b = t / qBlocks, i0 = (t % qBlocks) * mb;
      const int64_t rows = sq - i0 < mb ? sq - i0 : mb;
      // Keys the block sees: causal rows i see j <= i + sk - sq.
      int64_t nk = sk;
      if (d.causal) {
        nk = i0 + rows + sk - sq;
        nk = nk < 0 ? 0 : (nk > sk ? sk : nk);
      }
      const int64_t ko = sluice_attn_offset(d, d.k, b);
      const int64_t cko = d.rotary ? sluice_attn_offset(d, d.cos_k, b) : 0;
      const int64_t sko = d.rotary ? sluice_attn_offset(d, d.sin_k, b) : 0;
      if (ko != packedK || cko != packedCos || sko != packedSin) {
        // K^T in panels: key j, head column c at
        // kt[(j / NR) * ktPanel + c * NR + j % NR]; keys past sk zero.
        int64_t jDone = 0;
#if defined(__AVX512F__)
        if constexpr (std::is_same<T, float>::value) {
          // f32 rows with unit-stride columns: 16 x 16 block transposes.
          if (!d.rotary && d.k.col == 1 && hd % 16 == 0) {
            for (; jDone + 16 <= sk; jDone += 16)
              for (int64_t c0 = 0; c0 < hd; c0 += 16)
                sluice_attn_transpose16(k + ko + jDone * d.k.row + c0, d.k.row,
                                        kt + (jDone / NR) * ktPanel + c0 * NR + jDone % NR,
                                        NR);
          }
        }
#endif
        for (int64_t j = jDone; j < (sk + NR - 1) / NR * NR; ++j) {
          float *dst = kt + (j / NR) * ktPanel + j % NR;
          if (j >= sk) {
            for (int64_t c = 0; c < hd; ++c)
              dst[c * NR] = 0.0f;
            continue;
          }
          const T *kj = k + ko + j * d.k.row;
          if (d.rotary)
            sluice_attn_rotate<T, RT, float>(hd, kj, d.k.col, cosp + cko + j * d.cos_k.row,
                                             sinp + sko + j * d.sin_k.row, d.cos_k.col,
                                             d.sin_k.col, 1.0f, dst, NR);
          else if (d.k.col == 1)
            for (int64_t c = 0; c < hd; ++c)
              dst[c * NR] = (float)sluice_load(kj[c]);
          else
            for (int64_t c = 0; c < hd; ++c)
              dst[c * NR] = (float)sluice_load(kj[c * d.k.col]);
        }
        packedK = ko;
        packedCos = cko;
        packedSin = sko;
      }
      const int64_t vo = sluice_attn_offset(d, d.v, b);
      if (vo != packedV) {
        // V in panels: key j, column c at vp[(c / NR) * vPanel + j * NR + c % NR];
        // columns past dv zero.
        for (int64_t j = 0; j < sk; ++j) {
          const T *vj = v + vo + j * d.v.row;
          for (int64_t c0 = 0; c0 < dv; c0 += NR) {
            float *dst = vp + (c0 / NR) * vPanel + j * NR;
            const int64_t cols = dv - c0 < NR ? dv - c0 : NR;
            if (d.v.col == 1) {
#pragma omp simd
              for (int64_t c = 0; c < cols; ++c)
                dst[c] = (float)sluice_load(vj[c0 + c]);
            } else {
              for (int64_t c = 0; c < cols; ++c)
                dst[c] = (float)sluice_load(vj[(c0 + c) * d.v.col]);
            }
            for (int64_t c = cols; c < NR; ++c)
              dst[c] = 0.0f;
          }
        }
        packedV = vo;
      }
      // The query block, rotated and scaled.
      const int64_t qo = sluice_attn_offset(d, d.q, b);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = i0 + r;
        const T *qi = q + qo + i * d.q.row;
        float *dst = qp + r * hd;
        if (d.rotary)
          sluice_attn_rotate<T, RT, float>(
              hd, qi, d.q.col, cosp + sluice_attn_offset(d, d.cos_q, b) + i * d.cos_q.row,
              sinp + sluice_attn_offset(d, d.sin_q, b) + i * d.sin_q.row, d.cos_q.col,
              d.sin_q.col, d.scale, dst, 1);
        else if (d.q.col == 1) {
#pragma omp simd
          for (int64_t c = 0; c < hd; ++c)
            dst[c] = (float)sluice_load(qi[c]) * scale;
        } else {
          for (int64_t c = 0; c < hd; ++c)
            dst[c] = (float)sluice_load(qi[c * d.q.col]) * scale;
        }
      }
      // Scores over the visible keys; a sliding window's block starts at
      // its first row's first key (whole panels), the keys before it stay
      // out of the GEMM and are masked below.
      int64_t k0 = 0;
      if (d.causal && d.window > 0) {
        k0 = i0 + sk - sq - d.window + 1;
        k0 = k0 < 0 ? 0 : (k0 > nk ? nk : k0);
        k0 = k0 / SLUICE_ATTN_NR * SLUICE_ATTN_NR;
      }
      if (nk > k0)
        sluice_attn_gemm(rows, nk - k0, hd, qp, hd, kt + (k0 / SLUICE_ATTN_NR) * ktPanel, ktPanel,
                         s + k0, lds);
      const int64_t mo = d.mask ? sluice_attn_offset(d, d.m, b) : 0;
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = i0 + r;
        float *sr = s + r * lds;
        int64_t lim = nk;
        if (d.causal) {
          lim = i + sk - sq + 1;
          lim = lim < 0 ? 0 : (lim > nk ? nk : lim);
        }
        if (d.causal && d.window > 0) {
          // Keys before the row's window: never scored (the block's first
          // k0) or scored and dropped.
          int64_t lo = i + sk - sq - d.window + 1;
          lo = lo < 0 ? 0 : (lo > lim ? lim : lo);
          for (int64_t j = 0; j < lo; ++j)
            sr[j] = -INFINITY;
        }
        const int64_t body = lim / 16 * 16;
        sluice_v16f mv = sluice_v16_splat(-INFINITY);
        int64_t maxDone = 0;
        // Whether the max pass below already added the mask: with fewer
        // than 16 visible keys it does so in its tail alone, maxDone 0.
        bool maskAdded = false;
        if constexpr (std::is_same<MT, float>::value) {
          if (d.mask == 1 && d.m.col == 1) {
            maskAdded = true;
            // f32 additive mask: added in the max pass.
            const float *mr = mask + mo + i * d.m.row;
            for (; maxDone < body; maxDone += 16) {
              sluice_v16f x = sluice_v16_load(sr + maxDone) + sluice_v16_load(mr + maxDone);
              sluice_v16_store(sr + maxDone, x);
              mv = x > mv ? x : mv;
            }
            for (int64_t j = body; j < lim; ++j)
              sr[j] += mr[j];
          }
        }
        if (maskAdded) {
          // Done above.
        } else if (d.mask == 1) {
          const MT *mr = mask + mo + i * d.m.row;
          if (d.m.col == 1) {
#pragma omp simd
            for (int64_t j = 0; j < lim; ++j)
              sr[j] += (float)sluice_load(mr[j]);
          } else if (d.m.col == 0) {
            const float add = (float)sluice_load(mr[0]);
#pragma omp simd
            for (int64_t j = 0; j < lim; ++j)
              sr[j] += add;
          } else {
            for (int64_t j = 0; j < lim; ++j)
              sr[j] += (float)sluice_load(mr[j * d.m.col]);
          }
        } else if (d.mask == 2) {
          const MT *mr = mask + mo + i * d.m.row;
          for (int64_t j = 0; j < lim; ++j)
            if (!sluice_load(mr[j * d.m.col]))
              sr[j] = -INFINITY;
        }
        for (int64_t j = maxDone; j < body; j += 16) {
          sluice_v16f x = sluice_v16_load(sr + j);
          mv = x > mv ? x : mv;
        }
        float mx = sluice_v16_max(mv);
        for (int64_t j = body; j < lim; ++j)
          mx = sr[j] > mx ? sr[j] : mx;
        if (lim == 0 || mx == -INFINITY) {
          // Every key masked out: NaN, as the evaluator (and Where ->
          // Softmax) gives.
          for (int64_t j = 0; j < nk; ++j)
            sr[j] = 0.0f;
          inv[r] = NAN;
          continue;
        }
        sluice_v16f sv = sluice_v16f{};
        for (int64_t j = 0; j < body; j += 16) {
          sluice_v16f e = sluice_exp_v16(sluice_v16_load(sr + j) - mx);
          sluice_v16_store(sr + j, e);
          sv += e;
        }
        float sum = sluice_v16_sum(sv);
        for (int64_t j = body; j < lim; ++j) {
          float e = sluice_exp_fast(sr[j] - mx);
          sr[j] = e;
          sum += e;
        }
        for (int64_t j = lim; j < nk; ++j)
          sr[j] = 0.0f;
        inv[r] = 1.0f / sum;
      }
      // O = P V, scaled per row on the way out.
      const int64_t oo = sluice_attn_offset(d, d.out, b);
      sluice_attn_gemm(rows, dv, nk, s, lds, vp, vPanel, o, dv);
      for (int64_t r = 0; r < rows; ++r) {
        const float f = inv[r];
        const float *orow = o + r * dv;
        T *dst = out + oo + (i0 + r) * d.out.row;
        if (d.out.col == 1) {
          if constexpr (std::is_same<T, float>::value) {
            float *fd = (float *)(void *)dst;
#pragma omp simd
            for (int64_t c = 0; c < dv; ++c)
              fd[c] = orow[c] * f;
          } else {
            for (int64_t c = 0; c < dv; ++c)
              dst[c] = SLUICE_STORE(T, orow[c] * f);
          }
        } else {
          for (int64_t c = 0; c < dv; ++c)
            dst[c * d.out.col] = SLUICE_STORE(T, orow[c] * f);
        }
      }
    }
  }
  return failed;
}

/// Fused attention (see the file comment). T: q/k/v/out storage, MT: mask
/// storage (T, or bool for a keep-mask), RT: cos/sin storage. Returns 0, or
/// 1 when scratch memory cannot be had.
template <typename T, typename MT, typename RT>
static inline int32_t sluice_attention(int threads, const sluice_attn_desc &d, const T *q,
                                       const T *k, const T *v, const MT *mask, const RT *cosp,
                                       const RT *sinp, T *out) {
  if constexpr (std::is_same<T, double>::value)
    return sluice_attention_simple<double>(threads, d, q, k, v, mask, cosp, sinp, out);
  else
    return sluice_attention_f32(threads, d, q, k, v, mask, cosp, sinp, out);
}

#endif // SLUICE_GEN_CPU_ATTENTION_H
