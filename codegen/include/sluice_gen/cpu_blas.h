//===- sluice_gen/cpu_blas.h - OpenBLAS calls of cpu bundles -*- C++ -*-===//
//
// GEMMs of the cpu target are library calls into OpenBLAS (cblas). The
// thread count follows the run's; OpenBLAS keeps it globally, so it is set
// only when it changes. On AVX-512 builds float GEMMs use cpu_gemm.h
// instead (OpenBLAS runs its AVX2 kernels on the target machines); on AVX2
// builds only the one-row GEMMs do (sluice_sgemm::preferred).
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CPU_BLAS_H
#define SLUICE_GEN_CPU_BLAS_H

#include <cblas.h>

#include <memory>
#include <mutex>

#include "sluice_gen/scalar.h"

#include "sluice_gen/cpu_gemm.h"

/// OpenBLAS's thread count is process-wide: contexts running at once on
/// several threads share it, so the cache of the last count set is read and
/// written under a lock (it was a plain static: a data race). Contexts
/// that run concurrently with different thread counts still take turns
/// setting it; give them the same count (docs/runtime.md).
static inline void sluice_blas_threads(int threads) {
  static std::mutex lock;
  static int current = -1;
  std::lock_guard<std::mutex> guard(lock);
  if (threads != current) {
    openblas_set_num_threads(threads);
    current = threads;
  }
}

/// C[i][j] += bias[i] over an m x n block with leading dimension ldc: the
/// bias pass after a GEMM where it cannot be fused (OpenBLAS, doubles).
/// `omp simd`: GCC at -O2 left the plain loop scalar.
template <typename T>
static inline void sluice_add_row_bias(int64_t m, int64_t n, const T *bias, T *c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    const T bi = bias[i];
    T *ci = c + i * ldc;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j)
      ci[j] += bi;
  }
}

/// C[batch] = A[batch] x B[batch], row-major, per-batch element offsets.
template <typename T> struct sluice_gemm;
template <> struct sluice_gemm<float> {
  static void run(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                  const float *b, int64_t ldb, float *c, int64_t ldc) {
#if defined(SLUICE_SGEMM_ISA)
    if (sluice_sgemm::preferred(m)) {
      sluice_sgemm::gemm(m, n, k, a, lda, b, ldb, c, ldc);
      return;
    }
#endif
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k,
                1.0f, a, (int)lda, b, (int)ldb, 0.0f, c, (int)ldc);
  }
  /// run with an epilogue `epi(r0, rows, c0, cols)` on blocks of C as they
  /// are finished (sluice_sgemm::gemm_ep); after the whole call with cblas.
  template <typename Epilogue>
  static void run_ep(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                     const float *b, int64_t ldb, float *c, int64_t ldc, const Epilogue &epi) {
#if defined(SLUICE_SGEMM_ISA)
    if (sluice_sgemm::preferred(m)) {
      sluice_sgemm::gemm_ep(m, n, k, a, lda, b, ldb, c, ldc, nullptr, epi);
      return;
    }
#endif
    run(m, n, k, a, lda, b, ldb, c, ldc);
    epi(0, m, 0, n);
  }
  /// run, then C[i][j] += bias[i]: on AVX-512 the add happens in the
  /// GEMM's last store (convolution bias without a second pass over C).
  static void run_bias(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                       const float *b, int64_t ldb, float *c, int64_t ldc, const float *bias) {
#if defined(SLUICE_SGEMM_ISA)
    if (sluice_sgemm::preferred(m)) {
      sluice_sgemm::gemm(m, n, k, a, lda, b, ldb, c, ldc, bias);
      return;
    }
#endif
    run(m, n, k, a, lda, b, ldb, c, ldc);
    sluice_add_row_bias(m, n, bias, c, ldc);
  }
};
template <> struct sluice_gemm<double> {
  static void run(int64_t m, int64_t n, int64_t k, const double *a, int64_t lda,
                  const double *b, int64_t ldb, double *c, int64_t ldc) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k,
                1.0, a, (int)lda, b, (int)ldb, 0.0, c, (int)ldc);
  }
  /// run, then the epilogue on the whole block (it is still in cache when
  /// the caller's tiles are small).
  template <typename Epilogue>
  static void run_ep(int64_t m, int64_t n, int64_t k, const double *a, int64_t lda,
                     const double *b, int64_t ldb, double *c, int64_t ldc,
                     const Epilogue &epi) {
    run(m, n, k, a, lda, b, ldb, c, ldc);
    epi(0, m, 0, n);
  }
  /// run, then C[i][j] += bias[i] (a second pass; no fused form here).
  static void run_bias(int64_t m, int64_t n, int64_t k, const double *a, int64_t lda,
                       const double *b, int64_t ldb, double *c, int64_t ldc,
                       const double *bias) {
    run(m, n, k, a, lda, b, ldb, c, ldc);
    sluice_add_row_bias(m, n, bias, c, ldc);
  }
};

/// Runs `tile(batch, r0, rows, c0, cols)` over the tiles a batched GEMM is
/// split into for `threads`, spread over them by OpenMP: rows and columns
/// are halved until there are enough tiles, keeping column blocks of 64 or
/// more (starting on multiples of `colAlign`) and row blocks of 16 or more;
/// GEMMs under 2 MFLOP whose B has under 2^16 elements stay on one thread.
template <typename Tile>
static inline void sluice_gemm_tiles(int threads, int64_t batches, int64_t m, int64_t n,
                                     int64_t k, int64_t colAlign, const Tile &tile) {
  int64_t rowBlocks = 1, colBlocks = 1;
  const double flops = 2.0 * (double)batches * m * n * (k > 0 ? k : 1);
  // Few rows (a classifier's or a decoder's one-row GEMM) are bound by
  // reading B, which more threads read faster: split from 2^16 elements.
  const double bElements = (double)batches * n * (k > 0 ? k : 1);
  if (threads > 1 && (flops > 2e6 || bElements > 65536)) {
    while (batches * rowBlocks * colBlocks < 2 * threads) {
      if (n / (colBlocks * 2) >= 64 && n >= m)
        colBlocks *= 2;
      else if (m / (rowBlocks * 2) >= 16)
        rowBlocks *= 2;
      else if (n / (colBlocks * 2) >= 64)
        colBlocks *= 2;
      else
        break;
    }
  }
  const int64_t tiles = batches * rowBlocks * colBlocks;
  const int64_t rowStep = (m + rowBlocks - 1) / rowBlocks;
  const int64_t colStep = ((n + colBlocks - 1) / colBlocks + colAlign - 1) / colAlign * colAlign;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && tiles > 1)
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t batch = t / (rowBlocks * colBlocks);
    const int64_t rb = (t / colBlocks) % rowBlocks, cb = t % colBlocks;
    const int64_t r0 = rb * rowStep, c0 = cb * colStep;
    const int64_t rows = (r0 + rowStep < m ? r0 + rowStep : m) - r0;
    const int64_t cols = (c0 + colStep < n ? c0 + colStep : n) - c0;
    if (rows > 0 && cols > 0)
      tile(batch, r0, rows, c0, cols);
  }
}

/// Batched GEMM with strided operands and a fused epilogue (form F2 kernel
/// groups): batch i reads A at a + aOff[i] (rows lda apart) and B at
/// b + bOff[i] (rows ldb apart) and writes C at c + i*m*n (contiguous).
/// `epi(batch, r0, rows, c0, cols)` runs on each block of C right after the
/// GEMM finished it, on the thread that computed it, while it is in cache:
/// the epilogue is part of the same pass over the output, not a second one.
///
/// All parallelism is OpenMP's: the (batch, column block, row block) tiles
/// are spread over the run's threads and each tile is one single-threaded
/// BLAS call. Letting OpenBLAS start its own threads right after OpenMP
/// regions makes the two pools fight for the cores (OpenMP's workers spin
/// for a while after each region), which cost several times the GEMM time.
template <typename T, typename Epilogue>
static inline void sluice_gemm_batched_ep(int threads, int64_t batches, int64_t m, int64_t n,
                                          int64_t k, const T *a, const int64_t *aOff,
                                          int64_t lda, const T *b, const int64_t *bOff,
                                          int64_t ldb, T *c, const Epilogue &epi) {
  sluice_blas_threads(1);
  if (m == 0 || n == 0 || batches == 0)
    return;
  sluice_gemm_tiles(threads, batches, m, n, k, 16,
                    [&](int64_t batch, int64_t r0, int64_t rows, int64_t c0, int64_t cols) {
    T *ct = c + batch * m * n + r0 * n + c0;
    auto tileEpi = [&](int64_t i0, int64_t ni, int64_t j0, int64_t nj) {
      epi(batch, r0 + i0, ni, c0 + j0, nj);
    };
    if (k <= 0) {
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          ct[i * n + j] = 0;
      tileEpi(0, rows, 0, cols);
      return;
    }
    sluice_gemm<T>::run_ep(rows, cols, k, a + aOff[batch] + r0 * lda, lda, b + bOff[batch] + c0,
                           ldb, ct, n, tileEpi);
  });
}

/// The epilogue of a plain batched GEMM: nothing (it inlines away, leaving
/// the tiles' plain GEMM calls).
struct sluice_no_batched_epilogue {
  void operator()(int64_t, int64_t, int64_t, int64_t, int64_t) const {}
};

/// Batched GEMM: batch i reads a + aOff[i], b + bOff[i], writes c + i*m*n
/// (all contiguous): sluice_gemm_batched_ep without an epilogue.
template <typename T>
static inline void sluice_gemm_batched(int threads, int64_t batches, int64_t m, int64_t n,
                                       int64_t k, const T *a, const int64_t *aOff,
                                       const T *b, const int64_t *bOff, T *c) {
  sluice_gemm_batched_ep(threads, batches, m, n, k, a, aOff, k, b, bOff, n, c,
                         sluice_no_batched_epilogue());
}

#if defined(SLUICE_SGEMM_ISA)
/// sluice_gemm_batched_ep for f32 with B a weight packed at compile time
/// (sluice_sgemm_pack_panels, panels sluice_sgemm::NR wide over depth k,
/// shared by every batch): the same tiles, column tiles starting on panel
/// boundaries, each one sluice_sgemm::gemm_packed_ep call: no B packing at
/// run time (SLUICE_CPU_PACKED_WEIGHTS=1; docs/benchmarks.md has what it
/// measured).
template <typename Epilogue>
static inline void sluice_sgemm_packed_batched_ep(int threads, int64_t batches, int64_t m,
                                                  int64_t n, int64_t k, const float *a,
                                                  const int64_t *aOff, int64_t lda,
                                                  const float *bp, float *c,
                                                  const Epilogue &epi) {
  if (m == 0 || n == 0 || batches == 0)
    return;
  sluice_gemm_tiles(threads, batches, m, n, k, sluice_sgemm::NR,
                    [&](int64_t batch, int64_t r0, int64_t rows, int64_t c0, int64_t cols) {
    auto tileEpi = [&](int64_t i0, int64_t ni, int64_t j0, int64_t nj) {
      epi(batch, r0 + i0, ni, c0 + j0, nj);
    };
    sluice_sgemm::gemm_packed_ep(rows, cols, k, a + aOff[batch] + r0 * lda, lda, bp + c0 * k,
                                 c + batch * m * n + r0 * n + c0, n, tileEpi);
  });
}
#endif

/// Half-precision GEMMs (f16/bf16 storage, from --precision). OpenBLAS has
/// no half GEMM: A and B are widened into f32 scratch (the span the batches
/// read, keeping their offsets and row strides), the f32 GEMM accumulates in
/// fp32 into an f32 C, and the epilogue narrows on its stores. Widening
/// costs one pass over A and B, small beside the GEMM's m*n*k products.
/// dst[i] = src[i] as float over [begin, end): eight f16 per instruction
/// with F16C (the compiler does not vectorize the scalar conversion), bf16
/// as a shift the compiler vectorizes.
static inline void sluice_widen_block(const sluice_f16 *src, float *dst, int64_t begin,
                                      int64_t end) {
  int64_t i = begin;
#ifdef SLUICE_F16C
  for (; i + 8 <= end; i += 8)
    _mm256_storeu_ps(dst + i,
                     _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
#endif
  for (; i < end; ++i)
    dst[i] = sluice_load(src[i]);
}
static inline void sluice_widen_block(const sluice_bf16 *src, float *dst, int64_t begin,
                                      int64_t end) {
  const uint16_t *bits = (const uint16_t *)src;
  uint32_t *words = (uint32_t *)dst;
#pragma omp simd
  for (int64_t i = begin; i < end; ++i)
    words[i] = (uint32_t)bits[i] << 16;
}

template <typename H>
static inline float *sluice_widen_span(int threads, const H *src, int64_t count,
                                       std::unique_ptr<float[]> &buffer) {
  buffer.reset(new float[count > 0 ? count : 1]);
  float *dst = buffer.get();
  const int64_t chunk = 16384;
  const int64_t chunks = (count + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && chunks > 4)
  for (int64_t c = 0; c < chunks; ++c)
    sluice_widen_block(src, dst, c * chunk, c * chunk + chunk < count ? c * chunk + chunk : count);
  return dst;
}

/// Elements from the base pointer up to the end of the last batch's block
/// (`rows` rows `ld` apart, `cols` wide).
static inline int64_t sluice_span_end(int64_t batches, const int64_t *off, int64_t rows,
                                      int64_t ld, int64_t cols) {
  int64_t end = 0;
  for (int64_t i = 0; i < batches; ++i) {
    int64_t e = off[i] + (rows > 0 ? (rows - 1) * ld + cols : 0);
    end = e > end ? e : end;
  }
  return end;
}

template <typename H, typename Epilogue>
static inline void sluice_gemm_batched_half_ep(int threads, int64_t batches, int64_t m,
                                               int64_t n, int64_t k, const H *a,
                                               const int64_t *aOff, int64_t lda, const H *b,
                                               const int64_t *bOff, int64_t ldb, float *c,
                                               const Epilogue &epi) {
  if (m == 0 || n == 0 || batches == 0)
    return;
  std::unique_ptr<float[]> aBuf, bBuf;
  const float *a32 = sluice_widen_span(threads, a, sluice_span_end(batches, aOff, m, lda, k), aBuf);
  const float *b32 = sluice_widen_span(threads, b, sluice_span_end(batches, bOff, k, ldb, n), bBuf);
  sluice_gemm_batched_ep(threads, batches, m, n, k, a32, aOff, lda, b32, bOff, ldb, c, epi);
}

/// The F2 group form on half operands: C is f32 scratch the epilogue reads.
template <typename Epilogue>
static inline void sluice_gemm_batched_ep(int threads, int64_t batches, int64_t m, int64_t n,
                                          int64_t k, const sluice_f16 *a, const int64_t *aOff,
                                          int64_t lda, const sluice_f16 *b, const int64_t *bOff,
                                          int64_t ldb, float *c, const Epilogue &epi) {
  sluice_gemm_batched_half_ep(threads, batches, m, n, k, a, aOff, lda, b, bOff, ldb, c, epi);
}
template <typename Epilogue>
static inline void sluice_gemm_batched_ep(int threads, int64_t batches, int64_t m, int64_t n,
                                          int64_t k, const sluice_bf16 *a, const int64_t *aOff,
                                          int64_t lda, const sluice_bf16 *b, const int64_t *bOff,
                                          int64_t ldb, float *c, const Epilogue &epi) {
  sluice_gemm_batched_half_ep(threads, batches, m, n, k, a, aOff, lda, b, bOff, ldb, c, epi);
}

/// Plain batched GEMM on half storage (contiguous operands): f32 C scratch,
/// narrowed into `c` block by block as the GEMM finishes them.
template <typename H>
static inline void sluice_gemm_batched_half(int threads, int64_t batches, int64_t m, int64_t n,
                                            int64_t k, const H *a, const int64_t *aOff,
                                            const H *b, const int64_t *bOff, H *c) {
  std::unique_ptr<float[]> cBuf(new float[batches * m * n > 0 ? batches * m * n : 1]);
  float *c32 = cBuf.get();
  const auto narrow = [&](int64_t batch, int64_t r0, int64_t rows, int64_t c0, int64_t cols) {
    for (int64_t r = r0; r < r0 + rows; ++r) {
      const int64_t base = (batch * m + r) * n;
      for (int64_t j = c0; j < c0 + cols; ++j)
        c[base + j] = SLUICE_STORE(H, c32[base + j]);
    }
  };
  sluice_gemm_batched_half_ep(threads, batches, m, n, k, a, aOff, k, b, bOff, n, c32, narrow);
}
static inline void sluice_gemm_batched(int threads, int64_t batches, int64_t m, int64_t n,
                                       int64_t k, const sluice_f16 *a, const int64_t *aOff,
                                       const sluice_f16 *b, const int64_t *bOff, sluice_f16 *c) {
  sluice_gemm_batched_half(threads, batches, m, n, k, a, aOff, b, bOff, c);
}
static inline void sluice_gemm_batched(int threads, int64_t batches, int64_t m, int64_t n,
                                       int64_t k, const sluice_bf16 *a, const int64_t *aOff,
                                       const sluice_bf16 *b, const int64_t *bOff, sluice_bf16 *c) {
  sluice_gemm_batched_half(threads, batches, m, n, k, a, aOff, b, bOff, c);
}

#endif // SLUICE_GEN_CPU_BLAS_H
