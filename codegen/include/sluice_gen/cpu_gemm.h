//===- sluice_gen/cpu_gemm.h - AVX-512/AVX2 single-threaded SGEMM -*- C++ -*-===//
//
// A BLIS/MLAS-style f32 GEMM (C = A x B, row-major, no transposes, beta = 0)
// for AVX-512 builds of cpu bundles. It exists because the OpenBLAS these
// bundles link runs its AVX2 (Haswell) kernels on the target machines
// (OPENBLAS_CORETYPE=Haswell), roughly two thirds of what an AVX-512 kernel
// reaches; this header gets MLAS-class speed without another dependency.
// AVX2 + FMA builds get the same loop nest with a 6 x 16 micro-kernel in
// ymm registers; there OpenBLAS's own kernels are the ones it replaces, so
// only the shapes where this one measured faster take it (`preferred`),
// and the fused attention runs its micro-kernel on its packed panels.
//
// The GEMM is single-threaded: callers (sluice_gemm_batched, the im2col
// convolutions) already spread tiles over the run's OpenMP threads. Packing
// buffers are per calling thread, freed with the model (cpu_scratch.h).
//
// Structure (the classic Goto/BLIS loop nest):
//   for each NC-column block of B
//     for each KC-deep slice of K:   pack B[KC x NC] into NR-column panels
//       for each MC-row block of A:  (in L2)
//         for each NR-column panel:  (stays in L1 while A panels stream)
//           for each MR-row panel:   micro-kernel on an MR x NR tile of C
// (MR x NR: 12 x 32 on AVX-512, 6 x 16 on AVX2.)
// Unlike BLIS, A is not packed: broadcasting straight from MR row streams of
// A measured as fast or faster here, and packing A cost up to half the time
// when N is small (ResNet's late layers: N = 49).
//
// The per-thread float scratch (sluice_float_scratch) is defined for every
// build: the fused attention (cpu_attention.h) takes its buffers from it.
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CPU_GEMM_H
#define SLUICE_GEN_CPU_GEMM_H

#include <cstdint>
#include <cstdlib>

#include "sluice_gen/cpu_scratch.h"
#include "sluice_gen/layout/cpu_gemm_pack.h"

/// Users of sluice_float_scratch; each has its own buffer, since the SGEMM's
/// packing buffer is in use while the fused attention's is read.
enum sluice_scratch_slot { SLUICE_SCRATCH_SGEMM, SLUICE_SCRATCH_ATTENTION };

/// Per-thread scratch of at least `floats` floats for `Slot`, 64-byte
/// aligned, or null when it cannot be allocated. Grown as needed, freed
/// with the model (cpu_scratch.h). Separate from sluice_scratch, which the
/// convolutions hold (the im2col matrix) while they call the GEMM.
template <sluice_scratch_slot Slot> static inline float *sluice_float_scratch(int64_t floats) {
  static thread_local sluice_scratch_buffer buffer;
  return (float *)buffer.get((size_t)(floats > 0 ? floats : 0) * sizeof(float));
}

/// The ISA of sluice_sgemm: 512 (AVX-512F: 12 x 32 tiles in zmm registers),
/// 256 (AVX2 + FMA: 6 x 16 tiles in ymm registers), or undefined (no packed
/// kernel: GEMMs go to OpenBLAS, cpu_blas.h). Bundles are built with
/// -march=native, so this is the build host's processor.
#if defined(__AVX512F__)
#define SLUICE_SGEMM_ISA 512
#elif defined(__AVX2__) && defined(__FMA__)
#define SLUICE_SGEMM_ISA 256
#endif

#if defined(SLUICE_SGEMM_ISA)

#include <cstring>
#include <immintrin.h>

namespace sluice_sgemm {

#if SLUICE_SGEMM_ISA == 512
/// Rows of the micro-kernel tile: 12 rows x 2 vectors = 24 accumulator
/// registers of the 32, leaving room for the two B vectors and a broadcast.
constexpr int64_t MR = 12;
/// Floats per vector register.
constexpr int64_t VL = 16;
/// Columns of the micro-kernel tile (two 16-float vectors). B is packed into
/// panels of this width, zero-padded at the right edge.
constexpr int64_t NR = 32;
/// Most depth of a K slice: one KC x NR panel of B (48 KiB) stays in the L1
/// data cache while the micro-kernel sweeps the A panels of a row block.
/// K is cut into slices of near-equal depth (576 -> 2 x 288, not 384 + 192).
/// 384 measured best of 192..512 here (each slice after the first reads and
/// rewrites C, so deeper is better until the B panel leaves L1).
constexpr int64_t KC = 384;
/// Rows of an A block: A is read in place (each micro-kernel broadcasts from
/// MR row streams), and MC x KC floats (288 KiB) stay in L2 while the block
/// is multiplied by every B panel.
constexpr int64_t MC = 192;
/// Most columns of a packed B block (KC x NC floats, 1.5 MiB, in L2/L3); N
/// is cut into blocks of near-equal width, multiples of NR. 1024 measured
/// best of 512..4096 here.
constexpr int64_t NC = 1024;
#else
/// AVX2 + FMA (16 ymm registers): 6 rows x 2 vectors = 12 accumulators,
/// two B vectors and a broadcast, the BLIS Haswell/Zen shape.
constexpr int64_t MR = 6;
constexpr int64_t VL = 8;
constexpr int64_t NR = 16;
/// KC x NR floats (16 KiB at 256) stay in a 32 KiB L1; MC x KC (192 KiB)
/// in a 512 KiB L2. Measured on an AMD EPYC (Zen 3) at the BERT-base
/// shapes: see docs/benchmarks.md.
constexpr int64_t KC = 256;
constexpr int64_t MC = 192;
constexpr int64_t NC = 1024;
#endif

#if SLUICE_SGEMM_ISA == 512
/// Packs rows [0, kc) and columns [0, cols) of B into NR-column panels:
/// panel j holds B[p][j*NR + q] at bp[j*NR*kc + p*NR + q], columns past
/// `cols` zero.
static inline void pack_b(int64_t kc, int64_t cols, const float *b, int64_t ldb, float *bp) {
  for (int64_t j0 = 0; j0 < cols; j0 += NR) {
    const int64_t nr = cols - j0 < NR ? cols - j0 : NR;
    float *dst = bp + j0 * kc;
    const float *src = b + j0;
    if (nr == NR) {
      for (int64_t p = 0; p < kc; ++p) {
        _mm512_store_ps(dst + p * NR, _mm512_loadu_ps(src + p * ldb));
        _mm512_store_ps(dst + p * NR + 16, _mm512_loadu_ps(src + p * ldb + 16));
      }
    } else {
      const __mmask16 m0 = (__mmask16)(nr >= 16 ? 0xFFFF : (1u << nr) - 1);
      const __mmask16 m1 = (__mmask16)(nr <= 16 ? 0 : (1u << (nr - 16)) - 1);
      for (int64_t p = 0; p < kc; ++p) {
        _mm512_store_ps(dst + p * NR, _mm512_maskz_loadu_ps(m0, src + p * ldb));
        _mm512_store_ps(dst + p * NR + 16, _mm512_maskz_loadu_ps(m1, src + p * ldb + 16));
      }
    }
  }
}

/// Micro-kernel: the R x (16*NV) tile C[i][q] (+)= sum_p a[i*lda + p] *
/// bp[p*ldbp + q] over p < kc (B packed: ldbp = NR, or the attention's
/// panel width; B read in place for single-panel GEMMs: ldbp = ldb),
/// accumulated in R*NV zmm registers; each step loads NV vectors of B and
/// broadcasts R values of A into FMAs. Columns at or past `cols` are masked
/// off on C stores (and on B loads when B is read in place; packed panels
/// are zero-padded, 64-byte aligned and loaded whole). `accumulate` adds to
/// C (later K slices); otherwise C is overwritten (never read). A non-null
/// `bias` (the last K slice only) adds bias[i] to row i in the same store,
/// after the sum, so the result matches a separate bias pass bit for bit
/// while C is written once instead of being read and written again.
template <int R, int NV, bool Packed>
static inline void kernel(int64_t kc, const float *a, int64_t lda, const float *bp,
                          int64_t ldbp, float *c, int64_t ldc, int64_t cols, bool accumulate,
                          const float *bias, const float *pf = nullptr) {
  __mmask16 mask[NV];
#pragma GCC unroll 2
  for (int v = 0; v < NV; ++v) {
    const int64_t left = cols - 16 * v;
    mask[v] = (__mmask16)(left >= 16 ? 0xFFFF : left <= 0 ? 0 : (1u << left) - 1);
  }
  const float *arow[R];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
    arow[i] = a + i * lda;
  __m512 acc[R][NV];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v)
      acc[i][v] = _mm512_setzero_ps();
  auto step = [&](int64_t p) __attribute__((always_inline)) {
    __m512 b[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v)
      b[v] = Packed ? _mm512_load_ps(bp + p * ldbp + 16 * v) // padded, aligned
                    : _mm512_maskz_loadu_ps(mask[v], bp + p * ldbp + 16 * v);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const __m512 av = _mm512_set1_ps(arow[i][p]);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v)
        acc[i][v] = _mm512_fmadd_ps(av, b[v], acc[i][v]);
    }
  };
  if (Packed && pf) {
    // Prefetch the next panel's rows (NR floats: two lines) into L1 while
    // this one is multiplied.
    for (int64_t p = 0; p < kc; ++p) {
      _mm_prefetch((const char *)(pf + p * ldbp), _MM_HINT_T0);
      _mm_prefetch((const char *)(pf + p * ldbp + 16), _MM_HINT_T0);
      step(p);
    }
  } else {
    for (int64_t p = 0; p < kc; ++p)
      step(p);
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) {
      float *cp = c + i * ldc + 16 * v;
      __m512 x = acc[i][v];
      if (accumulate)
        x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mask[v], cp));
      if (bias)
        x = _mm512_add_ps(x, _mm512_set1_ps(bias[i]));
      _mm512_mask_storeu_ps(cp, mask[v], x);
    }
}
#else
/// Lane mask of the first `left` floats of a ymm vector (all when >= 8).
static inline __m256i lanes(int64_t left) {
  const int n = left >= 8 ? 8 : left <= 0 ? 0 : (int)left;
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/// pack_b of the AVX-512 build, with 8-float vectors (masked at the right
/// edge, zero-padded to NR).
static inline void pack_b(int64_t kc, int64_t cols, const float *b, int64_t ldb, float *bp) {
  for (int64_t j0 = 0; j0 < cols; j0 += NR) {
    const int64_t nr = cols - j0 < NR ? cols - j0 : NR;
    float *dst = bp + j0 * kc;
    const float *src = b + j0;
    if (nr == NR) {
      for (int64_t p = 0; p < kc; ++p) {
        _mm256_store_ps(dst + p * NR, _mm256_loadu_ps(src + p * ldb));
        _mm256_store_ps(dst + p * NR + 8, _mm256_loadu_ps(src + p * ldb + 8));
      }
    } else {
      const __m256i m0 = lanes(nr), m1 = lanes(nr - 8);
      for (int64_t p = 0; p < kc; ++p) {
        _mm256_store_ps(dst + p * NR, _mm256_maskload_ps(src + p * ldb, m0));
        _mm256_store_ps(dst + p * NR + 8, _mm256_maskload_ps(src + p * ldb + 8, m1));
      }
    }
  }
}

/// The AVX-512 micro-kernel's contract with R x (8*NV) tiles in ymm
/// registers: masked loads and stores only at a right edge (cols < 8*NV).
template <int R, int NV, bool Packed>
static inline void kernel(int64_t kc, const float *a, int64_t lda, const float *bp,
                          int64_t ldbp, float *c, int64_t ldc, int64_t cols, bool accumulate,
                          const float *bias, const float *pf = nullptr) {
  const bool full = cols >= 8 * NV;
  __m256i mask[NV];
#pragma GCC unroll 2
  for (int v = 0; v < NV; ++v)
    mask[v] = lanes(cols - 8 * v);
  const float *arow[R];
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
    arow[i] = a + i * lda;
  __m256 acc[R][NV];
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v)
      acc[i][v] = _mm256_setzero_ps();
  auto step = [&](int64_t p) __attribute__((always_inline)) {
    __m256 b[NV];
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v)
      b[v] = Packed ? _mm256_load_ps(bp + p * ldbp + 8 * v) : _mm256_loadu_ps(bp + p * ldbp + 8 * v);
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      const __m256 av = _mm256_broadcast_ss(arow[i] + p);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v)
        acc[i][v] = _mm256_fmadd_ps(av, b[v], acc[i][v]);
    }
  };
  if (Packed && pf) {
    // Prefetch the next panel's rows (NR floats: one line) into L1 while
    // this one is multiplied.
    for (int64_t p = 0; p < kc; ++p) {
      _mm_prefetch((const char *)(pf + p * ldbp), _MM_HINT_T0);
      step(p);
    }
  } else if (Packed || full) {
    for (int64_t p = 0; p < kc; ++p)
      step(p);
  } else {
    for (int64_t p = 0; p < kc; ++p) {
      __m256 b[NV];
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v)
        b[v] = _mm256_maskload_ps(bp + p * ldbp + 8 * v, mask[v]);
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
        const __m256 av = _mm256_broadcast_ss(arow[i] + p);
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v)
          acc[i][v] = _mm256_fmadd_ps(av, b[v], acc[i][v]);
      }
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) {
      float *cp = c + i * ldc + 8 * v;
      __m256 x = acc[i][v];
      if (full) {
        if (accumulate)
          x = _mm256_add_ps(x, _mm256_loadu_ps(cp));
        if (bias)
          x = _mm256_add_ps(x, _mm256_set1_ps(bias[i]));
        _mm256_storeu_ps(cp, x);
      } else {
        if (accumulate)
          x = _mm256_add_ps(x, _mm256_maskload_ps(cp, mask[v]));
        if (bias)
          x = _mm256_add_ps(x, _mm256_set1_ps(bias[i]));
        _mm256_maskstore_ps(cp, mask[v], x);
      }
    }
}
#endif

/// Runs the kernel for a panel of `rows` <= MR rows (templated on the row
/// count so that short edge panels do no wasted FMAs).
template <int NV, bool Packed>
static inline void kernel_rows(int64_t rows, int64_t kc, const float *a, int64_t lda,
                               const float *bp, int64_t ldbp, float *c, int64_t ldc,
                               int64_t cols, bool acc, const float *bias,
                               const float *pf = nullptr) {
  switch (rows) {
#if SLUICE_SGEMM_ISA == 512
  case 12: kernel<12, NV, Packed>(kc, a, lda, bp, ldbp, c, ldc, cols, acc, bias, pf); break;
  case 11: kernel<11, NV, Packed>(kc, a, lda, bp, ldbp, c, ldc, cols, acc, bias, pf); break;
  case 10: kernel<10, NV, Packed>(kc, a, lda, bp, ldbp, c, ldc, cols, acc, bias, pf); break;
  case 9: kernel<9, NV, Packed>(kc, a, lda, bp, ldbp, c, ldc, cols, acc, bias, pf); break;
  case 8: kernel<8, NV, Packed>(kc, a, lda, bp, ldbp, c, ldc, cols, acc, bias, pf); break;
  case 7: kernel<7, NV, Packed>(kc, a, lda, bp, ldbp, c, ldc, cols, acc, bias, pf); break;
#endif
  case 6: kernel<6, NV, Packed>(kc, a, lda, bp, ldbp, c, ldc, cols, acc, bias, pf); break;
  case 5: kernel<5, NV, Packed>(kc, a, lda, bp, ldbp, c, ldc, cols, acc, bias, pf); break;
  case 4: kernel<4, NV, Packed>(kc, a, lda, bp, ldbp, c, ldc, cols, acc, bias, pf); break;
  case 3: kernel<3, NV, Packed>(kc, a, lda, bp, ldbp, c, ldc, cols, acc, bias, pf); break;
  case 2: kernel<2, NV, Packed>(kc, a, lda, bp, ldbp, c, ldc, cols, acc, bias, pf); break;
  default: kernel<1, NV, Packed>(kc, a, lda, bp, ldbp, c, ldc, cols, acc, bias, pf); break;
  }
}

/// One micro-tile of `rows` <= MR rows and `cols` <= NR columns: the kernel
/// with as many vectors as the columns need (B rows `ldbp` floats apart).
template <bool Packed>
static inline void tile(int64_t rows, int64_t kc, const float *a, int64_t lda, const float *bp,
                        int64_t ldbp, float *c, int64_t ldc, int64_t cols, bool acc,
                        const float *bias, const float *pf = nullptr) {
  if (cols > VL)
    kernel_rows<2, Packed>(rows, kc, a, lda, bp, ldbp, c, ldc, cols, acc, bias, pf);
  else
    kernel_rows<1, Packed>(rows, kc, a, lda, bp, ldbp, c, ldc, cols, acc, bias, pf);
}

/// The GEMMs without products: nothing when C is empty; C = bias[i] (or 0)
/// and the epilogue on all of it when K is 0. True when it handled the call.
template <typename Epilogue>
static inline bool trivial(int64_t m, int64_t n, int64_t k, float *c, int64_t ldc,
                           const float *bias, const Epilogue &epi) {
  if (m <= 0 || n <= 0)
    return true;
  if (k > 0)
    return false;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      c[i * ldc + j] = bias ? 0.0f + bias[i] : 0.0f;
  epi(0, m, 0, n);
  return true;
}

/// The loop nest's block sizes: K in slices of near-equal depth, at most
/// KC (576 -> 2 x 288, not 384 + 192), N in blocks of near-equal width, at
/// most NC, multiples of NR.
static inline void blocking(int64_t n, int64_t k, int64_t *kcMax, int64_t *ncMax) {
  const int64_t kSlices = (k + KC - 1) / KC;
  *kcMax = (k + kSlices - 1) / kSlices;
  const int64_t nBlocks = (n + NC - 1) / NC;
  *ncMax = ((n + nBlocks - 1) / nBlocks + NR - 1) / NR * NR;
}

/// The Goto/BLIS loop nest over B panels (after the in-place cases): for
/// each NC-column block and KC-deep slice, `prepare(jc, nc, pc, kc)` (packs
/// that block of B, or nothing when B is packed ahead of time), then every
/// MR x NR tile of an MC-row block against `panel(jc, jr, pc, kc)`, the
/// panel holding columns jc + jr.. for depths pc.. (rows NR floats apart).
/// With `prefetch`, each panel's first row tile prefetches the next panel
/// (B from memory, once per GEMM). `bias` is added in the last slice's
/// stores; `epi` runs on each finished MC x NR block.
template <typename Prepare, typename Panel, typename Epilogue>
static inline void blocked(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                           float *c, int64_t ldc, const float *bias, bool prefetch,
                           const Prepare &prepare, const Panel &panel, const Epilogue &epi) {
  int64_t kcMax, ncMax;
  blocking(n, k, &kcMax, &ncMax);
  for (int64_t jc = 0; jc < n; jc += ncMax) {
    const int64_t nc = n - jc < ncMax ? n - jc : ncMax;
    for (int64_t pc = 0; pc < k; pc += kcMax) {
      const int64_t kc = k - pc < kcMax ? k - pc : kcMax;
      const bool acc = pc > 0, last = pc + kc >= k;
      prepare(jc, nc, pc, kc);
      for (int64_t ic = 0; ic < m; ic += MC) {
        const int64_t mc = m - ic < MC ? m - ic : MC;
        // Row panels of near-equal height (64 rows: 11,11,11,11,10,10
        // rather than 12 x 5 + 4): short panels waste the FMA pipes.
        const int64_t panels = (mc + MR - 1) / MR;
        const int64_t base = mc / panels, extra = mc % panels;
        const float *ablock = a + ic * lda + pc;
        for (int64_t jr = 0; jr < nc; jr += NR) {
          const int64_t cols = nc - jr < NR ? nc - jr : NR;
          const float *bpanel = panel(jc, jr, pc, kc);
          const float *next = prefetch && jr + NR < nc ? panel(jc, jr + NR, pc, kc) : nullptr;
          for (int64_t r = 0, ir = 0; r < panels; ++r) {
            const int64_t rows = base + (r < extra ? 1 : 0);
            const float *br = bias && last ? bias + ic + ir : nullptr;
            tile<true>(rows, kc, ablock + ir * lda, lda, bpanel, NR,
                       c + (ic + ir) * ldc + jc + jr, ldc, cols, acc, br,
                       r == 0 ? next : nullptr);
            ir += rows;
          }
          if (last)
            epi(ic, mc, jc + jr, cols);
        }
      }
    }
  }
}

/// The epilogue of a plain GEMM: nothing.
struct no_epilogue {
  void operator()(int64_t, int64_t, int64_t, int64_t) const {}
};

/// C[m x n] = A[m x k] * B[k x n] (+ bias[i] on row i when `bias` is not
/// null: convolutions fuse their per-channel bias into the last store);
/// row-major with leading dimensions. `epi(r0, rows, c0, cols)` is called on
/// each block of C as soon as it holds its final values (an MC x NR block,
/// or MR x NR when B is read in place, 24 KiB at most: still in L1), so a
/// fused epilogue (bias, activation, residual; codegen/cpu/groups/Gemm.cpp)
/// reads C from cache instead of sweeping the whole matrix again.
template <typename Epilogue>
static inline void gemm_ep(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                           const float *b, int64_t ldb, float *c, int64_t ldc,
                           const float *bias, const Epilogue &epi) {
  if (trivial(m, n, k, c, ldc, bias, epi))
    return;
  int64_t kcMax, ncMax;
  blocking(n, k, &kcMax, &ncMax);
  const bool inPlace = m <= MR && (m <= 4 || k * ldb <= (int64_t(1) << 20));
  float *bp = inPlace ? nullptr : sluice_float_scratch<SLUICE_SCRATCH_SGEMM>(kcMax * ncMax);
  if (!bp) {
    // One row panel: each B element is used once, so packing B would only
    // add a copy. Stream B in place over the whole depth: 2-3x faster for
    // m <= 12. Not when B spans more than 4 MiB and the tile is tall
    // enough to be compute bound: 12 x 3072 x 768 ran at 18 GFLOP/s in
    // place (every step of a column panel on a new page) against ~100
    // packed. Also the fallback when the packing buffer cannot be had.
    for (int64_t ir = 0; ir < m; ir += MR) {
      const int64_t rows = m - ir < MR ? m - ir : MR;
      for (int64_t j = 0; j < n; j += NR) {
        const int64_t cols = n - j < NR ? n - j : NR;
        float *cp = c + ir * ldc + j;
        const float *br = bias ? bias + ir : nullptr;
        tile<false>(rows, k, a + ir * lda, lda, b + j, ldb, cp, ldc, cols, false, br);
        epi(ir, rows, j, cols);
      }
    }
    return;
  }
  blocked(m, n, k, a, lda, c, ldc, bias, false,
          [&](int64_t jc, int64_t nc, int64_t pc, int64_t kc) {
            pack_b(kc, nc, b + pc * ldb + jc, ldb, bp);
          },
          [&](int64_t, int64_t jr, int64_t, int64_t kc) { return bp + jr * kc; }, epi);
}

static inline void gemm(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                        const float *b, int64_t ldb, float *c, int64_t ldc,
                        const float *bias = nullptr) {
  gemm_ep(m, n, k, a, lda, b, ldb, c, ldc, bias, no_epilogue());
}

/// gemm_ep with B packed ahead of time (sluice_sgemm_pack_panels with NR,
/// over a depth of `k`): `bp` is the panel holding column 0 of this call's
/// C, so a caller's column tile must start on a panel boundary. The loop
/// nest of gemm_ep without its packing pass, which cost 20-35% of the time
/// at BERT's tile shapes.
template <typename Epilogue>
static inline void gemm_packed_ep(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                                  const float *bp, float *c, int64_t ldc, const Epilogue &epi) {
  if (trivial(m, n, k, c, ldc, nullptr, epi))
    return;
  blocked(m, n, k, a, lda, c, ldc, nullptr, true, [](int64_t, int64_t, int64_t, int64_t) {},
          [&](int64_t jc, int64_t jr, int64_t pc, int64_t) { return bp + (jc + jr) * k + pc * NR; },
          epi);
}

/// Whether cpu_blas.h's float GEMMs of `m` rows take this GEMM rather than
/// OpenBLAS. AVX-512: always. AVX2: only one-row GEMMs (matrix-vector),
/// where OpenBLAS's sgemm ran at 5-6 GFLOP/s and this one at 12-23 (1 x 768
/// x 768, 1 x 1000 x 512 on an AMD EPYC, Zen 3). At BERT's tile shapes
/// (128 x 384..1536 x 768..3072) OpenBLAS's Haswell kernel was 8-30%
/// faster than this one, whose 6 x 16 micro-kernel reaches about 77 GFLOP/s
/// (86% of the core's FMA peak) on operands in L1: the fused attention
/// (cpu_attention.h) uses that kernel on AVX2 too.
static inline bool preferred(int64_t m) {
#if SLUICE_SGEMM_ISA == 512
  (void)m;
  return true;
#else
  return m == 1;
#endif
}

} // namespace sluice_sgemm

#endif // SLUICE_SGEMM_ISA
#endif // SLUICE_GEN_CPU_GEMM_H
