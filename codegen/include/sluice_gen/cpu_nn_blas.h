//===- sluice_gen/cpu_nn_blas.h - BLAS convolutions -*- C++ -*-===//
//
// Float convolutions of the cpu target as OpenBLAS GEMMs: im2col + GEMM per
// (sample, group), and GEMM + col2im for the transposed form. Separate from
// cpu_nn.h so that bundles without float convolutions do not link OpenBLAS.
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CPU_NN_BLAS_H
#define SLUICE_GEN_CPU_NN_BLAS_H

#include "sluice_gen/cpu_blas.h"
#include "sluice_gen/cpu_nn.h"

#include <memory>
#include <new>

/// A scratch buffer of at least `bytes`, kept per calling thread between
/// runs: im2col matrices are megabytes, and a fresh malloc of that size is a
/// fresh mmap whose page faults cost as much as the copy. Freed with the
/// model (cpu_scratch.h).
static inline void *sluice_scratch(size_t bytes) {
  static thread_local sluice_scratch_buffer buffer;
  return buffer.get(bytes);
}

/// Adds bias[m] to every (n, m) plane.
template <typename T>
static inline void sluice_add_channel_bias(int threads, int64_t batch, int64_t channels,
                                           int64_t plane, const T *bias, T *out) {
#pragma omp parallel for collapse(2) num_threads(threads) if (batch * channels * plane > 32768)
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t m = 0; m < channels; ++m) {
      T *p = out + (n * channels + m) * plane;
      const T b = bias[m];
      for (int64_t i = 0; i < plane; ++i)
        p[i] += b;
    }
}

#ifndef SLUICE_CONV_SLICE_BYTES
#define SLUICE_CONV_SLICE_BYTES (512 * 1024)
#endif

/// dst[j] = src[j] for j < count: an im2col row segment, often short (7
/// or 14 floats in ResNet's late layers), where a memcpy call costs more
/// than the copy; AVX-512 copies floats with a masked tail instead.
template <typename T>
static inline void sluice_copy_span(const T *src, int64_t count, T *dst) {
  memcpy(dst, src, (size_t)count * sizeof(T));
}
#if defined(__AVX512F__)
static inline void sluice_copy_span(const float *src, int64_t count, float *dst) {
  int64_t j = 0;
  for (; j + 16 <= count; j += 16)
    _mm512_storeu_ps(dst + j, _mm512_loadu_ps(src + j));
  if (j < count) {
    const __mmask16 m = (__mmask16)((1u << (count - j)) - 1);
    _mm512_mask_storeu_ps(dst + j, m, _mm512_maskz_loadu_ps(m, src + j));
  }
}
#endif

/// dst[j] = src[j * stride] for j < count: the inner loop of a strided
/// im2col row. Stride 2 (ResNet's stem and downsampling convs) takes 16
/// floats per two vector loads and a permute on AVX-512, where the scalar
/// loop ran at about a float per cycle.
template <typename T>
static inline void sluice_strided_copy(const T *src, int64_t stride, int64_t count, T *dst) {
  for (int64_t j = 0; j < count; ++j)
    dst[j] = src[j * stride];
}
#if defined(__AVX512F__)
static inline void sluice_strided_copy(const float *src, int64_t stride, int64_t count,
                                       float *dst) {
  int64_t j = 0;
  if (stride == 2) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                           28, 30);
    // Reads src[2j .. 2j+31]; the last element needed is src[2(count-1)],
    // so full steps stop while 2j + 31 <= 2(count-1) + 1 stays in bounds.
    for (; j + 16 <= count; j += 16) {
      const __m512 lo = _mm512_loadu_ps(src + 2 * j);
      const __m512 hi = _mm512_maskz_loadu_ps((__mmask16)0x7FFF, src + 2 * j + 16);
      _mm512_storeu_ps(dst + j, _mm512_permutex2var_ps(lo, even, hi));
    }
  }
  for (; j < count; ++j)
    dst[j] = src[j * stride];
}
#endif

/// Rows [r0, r1) and columns [c0, c0 + cols) of the im2col matrix of `cpg`
/// channels at `xc` (row (c, k) holds x[c, o*s - pb + k*d] for output
/// position o, 0 in padding), row r at col + r * cols.
template <typename T>
static inline void sluice_im2col_rows(const sluice_window &g, int64_t cpg, const T *xc,
                                      int64_t r0, int64_t r1, int64_t c0, int64_t cols,
                                      T *col) {
  (void)cpg;
  const int64_t inSize = g.inSize(), kSize = g.kSize();
  const int64_t end = c0 + cols;
  // Output coordinates of the first column; later segments step them
  // (divisions per segment cost as much as the copy for 7-wide outputs).
  const int64_t start2 = c0 % g.out[2], start01 = c0 / g.out[2];
  const int64_t start1 = start01 % g.out[1], start0 = start01 / g.out[1];
  // Row r = ((c * k[0] + k0) * k[1] + k1) * k[2] + k2, stepped per row
  // rather than divided out (five divisions a row showed in profiles).
  int64_t c = r0 / kSize, k0, k1, k2;
  {
    const int64_t kIdx = r0 % kSize;
    k0 = kIdx / (g.k[1] * g.k[2]);
    k1 = (kIdx / g.k[2]) % g.k[1];
    k2 = kIdx % g.k[2];
  }
  for (int64_t r = r0; r < r1; ++r) {
    if (r > r0 && ++k2 == g.k[2]) {
      k2 = 0;
      if (++k1 == g.k[1]) {
        k1 = 0;
        if (++k0 == g.k[0]) {
          k0 = 0;
          ++c;
        }
      }
    }
    const T *xp = xc + c * inSize;
    T *dst = col + r * cols - c0;
    const int64_t base = k2 * g.d[2] - g.pb[2], s2 = g.s[2];
    int64_t o2 = start2, o1 = start1, o0 = start0;
    for (int64_t o = c0; o < end;) {
      const int64_t seg = g.out[2] - o2 < end - o ? g.out[2] - o2 : end - o;
      const int64_t i0 = o0 * g.s[0] - g.pb[0] + k0 * g.d[0];
      const int64_t i1 = o1 * g.s[1] - g.pb[1] + k1 * g.d[1];
      T *d = dst + o - o2; // indexed by o2
      if (i0 < 0 || i0 >= g.in[0] || i1 < 0 || i1 >= g.in[1]) {
        for (int64_t j = o2; j < o2 + seg; ++j)
          d[j] = T(0);
      } else {
        const T *row = xp + (i0 * g.in[1] + i1) * g.in[2];
        if (s2 == 1) {
          // Contiguous: zeros, a copy, zeros.
          int64_t lo = -base > o2 ? -base : o2;
          int64_t hi = g.in[2] - base < o2 + seg ? g.in[2] - base : o2 + seg;
          if (lo > o2 + seg)
            lo = o2 + seg;
          if (hi < lo)
            hi = lo;
          for (int64_t j = o2; j < lo; ++j)
            d[j] = T(0);
          if (hi > lo)
            sluice_copy_span(row + lo + base, hi - lo, d + lo);
          for (int64_t j = hi; j < o2 + seg; ++j)
            d[j] = T(0);
        } else {
          // Strided: zeros, a strided copy with no bounds checks, zeros.
          // Positions j with 0 <= j*s2 + base < in[2].
          const int64_t end2 = o2 + seg;
          int64_t lo = base >= 0 ? 0 : (-base + s2 - 1) / s2;
          int64_t hi = g.in[2] - base <= 0 ? 0 : (g.in[2] - base + s2 - 1) / s2;
          lo = lo < o2 ? o2 : lo > end2 ? end2 : lo;
          hi = hi > end2 ? end2 : hi < lo ? lo : hi;
          for (int64_t j = o2; j < lo; ++j)
            d[j] = T(0);
          sluice_strided_copy(row + lo * s2 + base, s2, hi - lo, d + lo);
          for (int64_t j = hi; j < end2; ++j)
            d[j] = T(0);
        }
      }
      o += seg;
      o2 = 0;
      if (++o1 == g.out[1]) {
        o1 = 0;
        ++o0;
      }
    }
  }
}

/// Columns [c0, c0 + cols) of the whole im2col matrix into `col` with
/// leading dimension `cols`.
template <typename T>
static inline void sluice_im2col_cols(const sluice_window &g, int64_t cpg, const T *xc,
                                      int64_t c0, int64_t cols, T *col) {
  sluice_im2col_rows(g, cpg, xc, 0, cpg * g.kSize(), c0, cols, col);
}

/// Convolution as GEMMs per (sample, group): out_g = W_g x col_g, W_g
/// (M/group) x (C/group * kSize), col_g the im2col matrix. The output is cut
/// into tiles (column blocks of output positions, then row blocks of
/// channels) over one OpenMP region; each tile builds its own im2col slice in
/// a per-thread scratch buffer (still in cache for its GEMM) and runs a
/// single-threaded GEMM with the bias added in its store (run_bias). A pointwise (1x1,
/// stride 1, unpadded) convolution reads x directly. Returns nonzero when a
/// workspace cannot be allocated.
template <typename T>
static inline int32_t sluice_conv_gemm(int threads, const sluice_window &g, int64_t batch,
                                       int64_t channels, int64_t outChannels, int64_t group,
                                       const T *x, const T *w, const T *bias, T *out) {
  const int64_t cpg = channels / group, mpg = outChannels / group;
  const int64_t inSize = g.inSize(), kSize = g.kSize(), outSize = g.outSize();
  const int64_t m = mpg, n = outSize, k = cpg * kSize;
  if (batch * outChannels * outSize == 0)
    return 0;
  bool pointwise = kSize == 1 && inSize == outSize;
  for (int i = 0; i < 3; ++i)
    pointwise = pointwise && g.s[i] == 1 && g.pb[i] == 0 && g.in[i] == g.out[i];
  sluice_blas_threads(1);
  if (threads < 1)
    threads = 1;
  // Tiles: column blocks of at least 64 positions (a multiple of 16), then
  // row blocks of at least 16 channels for the remaining threads.
  int64_t colBlock = (n + threads - 1) / threads;
  colBlock = (colBlock + 15) / 16 * 16;
  // A tile's im2col slice (k x colBlock) should stay in L2 for its GEMM.
  int64_t cacheCols = (SLUICE_CONV_SLICE_BYTES / (int64_t)sizeof(T) / (k > 0 ? k : 1) + 15) / 16 * 16;
  if (!pointwise && colBlock > cacheCols)
    colBlock = cacheCols;
  if (colBlock < 64)
    colBlock = 64;
  if (colBlock > n)
    colBlock = n;
  // Few columns (ResNet's 14x14 layers: N = 196, K = 1152..2304): split
  // the channels instead, over one shared im2col matrix (shareCol below).
  // Column tiles of 49 each re-read all of W and pay the 32-column panel
  // rounding per tile; row tiles read their share of W once (256 x 196 x
  // 2304: 0.88 -> 0.75 ms on 2 threads). No gain measured at N = 784.
  if (!pointwise && n <= 256 && m >= 16 * threads)
    colBlock = n;
  const int64_t colBlocks = (n + colBlock - 1) / colBlock;
  // Even blocks: 196 columns as 4 x 49, not 64 + 64 + 64 + 4 (a 4-column
  // GEMM runs at a quarter of the speed).
  colBlock = (n + colBlocks - 1) / colBlocks;
  int64_t rowBlocks = threads / colBlocks;
  if (rowBlocks > m / 16)
    rowBlocks = m / 16;
  if (rowBlocks < 1)
    rowBlocks = 1;
  const int64_t rowBlock = (m + rowBlocks - 1) / rowBlocks;
  const int64_t tiles = colBlocks * rowBlocks;
  const bool parallel = tiles > 1 && m * n * k >= (1 << 17);
  // One column block split by rows (ResNet's 7x7 layers: N = 49, K up to
  // 4608): every tile would build the same im2col matrix, so the threads
  // build it once together, each a share of its rows, before the GEMMs.
  const bool shareCol = !pointwise && parallel && colBlocks == 1 && rowBlocks > 1 && k > 0;
  int32_t failed = 0;
  for (int64_t s = 0; s < batch; ++s)
    for (int64_t grp = 0; grp < group; ++grp) {
      const T *xc = x + (s * channels + grp * cpg) * inSize;
      const T *wg = w + grp * mpg * k;
      T *oc = out + (s * outChannels + grp * mpg) * outSize;
      T *shared = shareCol ? (T *)sluice_scratch((size_t)(k * n) * sizeof(T)) : nullptr;
      if (shared) {
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t t = 0; t < threads; ++t)
          sluice_im2col_rows(g, cpg, xc, k * t / threads, k * (t + 1) / threads, 0, n, shared);
      }
#pragma omp parallel for num_threads(threads) schedule(static) if (parallel)
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t r0 = (t / colBlocks) * rowBlock, c0 = (t % colBlocks) * colBlock;
        const int64_t rows = m - r0 < rowBlock ? m - r0 : rowBlock;
        const int64_t cols = n - c0 < colBlock ? n - c0 : colBlock;
        if (rows <= 0 || cols <= 0)
          continue;
        T *c = oc + r0 * n + c0;
        const T *bt = bias ? bias + grp * mpg + r0 : nullptr;
        if (k == 0) {
          for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < cols; ++j)
              c[i * n + j] = bt ? T(0) + bt[i] : T(0);
        } else if (pointwise) {
          if (bt)
            sluice_gemm<T>::run_bias(rows, cols, k, wg + r0 * k, k, xc + c0, n, c, n, bt);
          else
            sluice_gemm<T>::run(rows, cols, k, wg + r0 * k, k, xc + c0, n, c, n);
        } else {
          T *col = shared;
          if (!col) {
            col = (T *)sluice_scratch((size_t)(k * cols) * sizeof(T));
            if (!col) {
              failed = 1;
              continue;
            }
            sluice_im2col_cols(g, cpg, xc, c0, cols, col);
          }
          if (bt)
            sluice_gemm<T>::run_bias(rows, cols, k, wg + r0 * k, k, col, cols, c, n, bt);
          else
            sluice_gemm<T>::run(rows, cols, k, wg + r0 * k, k, col, cols, c, n);
        }
      }
    }
  return failed;
}

/// C (m x n) = A^T x B with A stored k x m (row-major), B k x n: column
/// blocks over the OpenMP team, single-threaded OpenBLAS calls. (OpenBLAS's
/// own pthread workers and OpenMP's spin-waiting team fight over the cores
/// when both run: the kernels around a GEMM use OpenMP, so the GEMM does
/// too.)
static inline void sluice_gemm_tn_block(int64_t m, int64_t cols, int64_t k, const float *a,
                                        const float *b, int64_t ld, float *c) {
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)m, (int)cols, (int)k, 1.0f, a,
              (int)m, b, (int)ld, 0.0f, c, (int)ld);
}
static inline void sluice_gemm_tn_block(int64_t m, int64_t cols, int64_t k, const double *a,
                                        const double *b, int64_t ld, double *c) {
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)m, (int)cols, (int)k, 1.0, a,
              (int)m, b, (int)ld, 0.0, c, (int)ld);
}
template <typename T>
static inline void sluice_gemm_tn(int threads, int64_t m, int64_t n, int64_t k, const T *a,
                                  const T *b, T *c) {
  sluice_blas_threads(1);
  int64_t colBlock = threads > 1 ? (n + threads - 1) / threads : n;
  colBlock = (colBlock + 15) / 16 * 16;
  if (colBlock < 64)
    colBlock = 64;
  const int64_t colBlocks = (n + colBlock - 1) / colBlock;
#pragma omp parallel for num_threads(threads) if (colBlocks > 1 && m * n * k >= (1 << 17))
  for (int64_t t = 0; t < colBlocks; ++t) {
    const int64_t c0 = t * colBlock, cols = n - c0 < colBlock ? n - c0 : colBlock;
    sluice_gemm_tn_block(m, cols, k, a, b + c0, n, c + c0);
  }
}

/// Transposed convolution: per (sample, group) col = W_g^T x X_g with W_g
/// (C/group) x (M/group * kSize), then col2im scatters col[(m, k), i] to
/// out[m, i*s - pb + k*d] (sizes here: `g.in` is the input, `g.out` the
/// cropped output). Each output channel is owned by one thread.
template <typename T>
static inline int32_t sluice_conv_transpose_gemm(int threads, const sluice_window &g,
                                                 int64_t batch, int64_t channels,
                                                 int64_t outChannels, int64_t group,
                                                 const T *x, const T *w, const T *bias,
                                                 T *out) {
  const int64_t cpg = channels / group, mpg = outChannels / group;
  const int64_t inSize = g.inSize(), kSize = g.kSize(), outSize = g.outSize();
  const int64_t total = batch * outChannels * outSize;
  for (int64_t i = 0; i < total; ++i)
    out[i] = T(0);
  if (total == 0 || inSize == 0 || kSize == 0)
    goto bias_only;
  {
    T *col = (T *)sluice_scratch((size_t)(mpg * kSize * inSize) * sizeof(T));
    if (!col)
      return 1;
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t grp = 0; grp < group; ++grp) {
        const T *xc = x + (n * channels + grp * cpg) * inSize;
        if (cpg == 0)
          continue;
        sluice_gemm_tn(threads, mpg * kSize, inSize, cpg, w + grp * cpg * mpg * kSize, xc, col);
#pragma omp parallel for num_threads(threads) if (mpg * kSize * inSize > 32768)
        for (int64_t m = 0; m < mpg; ++m) {
          T *op = out + (n * outChannels + grp * mpg + m) * outSize;
          for (int64_t kIdx = 0; kIdx < kSize; ++kIdx) {
            const int64_t k0 = kIdx / (g.k[1] * g.k[2]), k1 = (kIdx / g.k[2]) % g.k[1],
                          k2 = kIdx % g.k[2];
            const T *src = col + (m * kSize + kIdx) * inSize;
            for (int64_t i0 = 0; i0 < g.in[0]; ++i0) {
              const int64_t p0 = i0 * g.s[0] - g.pb[0] + k0 * g.d[0];
              if (p0 < 0 || p0 >= g.out[0])
                continue;
              for (int64_t i1 = 0; i1 < g.in[1]; ++i1) {
                const int64_t p1 = i1 * g.s[1] - g.pb[1] + k1 * g.d[1];
                if (p1 < 0 || p1 >= g.out[1])
                  continue;
                const T *s = src + (i0 * g.in[1] + i1) * g.in[2];
                T *d = op + (p0 * g.out[1] + p1) * g.out[2];
                for (int64_t i2 = 0; i2 < g.in[2]; ++i2) {
                  const int64_t p2 = i2 * g.s[2] - g.pb[2] + k2 * g.d[2];
                  if (p2 >= 0 && p2 < g.out[2])
                    d[p2] += s[i2];
                }
              }
            }
          }
        }
      }
  }
bias_only:
  if (bias)
    sluice_add_channel_bias(threads, batch, outChannels, outSize, bias, out);
  return 0;
}


/// Half-precision (f16/bf16, from --precision) convolutions: OpenBLAS has no
/// half GEMM, so input, weights and bias are widened to f32, the f32 form
/// runs (fp32 accumulation) into f32 scratch, and the result is narrowed.
template <typename H, typename Conv>
static inline int32_t sluice_conv_half(int threads, int64_t xCount, int64_t wCount,
                                       int64_t biasCount, int64_t outCount, const H *x,
                                       const H *w, const H *bias, H *out, const Conv &conv) {
  std::unique_ptr<float[]> xBuf, wBuf, biasBuf;
  const float *x32 = sluice_widen_span(threads, x, xCount, xBuf);
  const float *w32 = sluice_widen_span(threads, w, wCount, wBuf);
  const float *bias32 = bias ? sluice_widen_span(threads, bias, biasCount, biasBuf) : nullptr;
  std::unique_ptr<float[]> outBuf(new (std::nothrow) float[outCount > 0 ? outCount : 1]);
  if (!outBuf)
    return 1;
  float *out32 = outBuf.get();
  if (int32_t status = conv(x32, w32, bias32, out32))
    return status;
#pragma omp parallel for simd schedule(static) num_threads(threads) if (threads > 1 && outCount > 65536)
  for (int64_t i = 0; i < outCount; ++i)
    out[i] = SLUICE_STORE(H, out32[i]);
  return 0;
}

#define SLUICE_HALF_CONV(H)                                                                \
  static inline int32_t sluice_conv_gemm(int threads, const sluice_window &g, int64_t batch, \
                                         int64_t channels, int64_t outChannels,            \
                                         int64_t group, const H *x, const H *w,             \
                                         const H *bias, H *out) {                           \
    return sluice_conv_half(                                                                \
        threads, batch * channels * g.inSize(), outChannels * (channels / group) * g.kSize(), \
        outChannels, batch * outChannels * g.outSize(), x, w, bias, out,                    \
        [&](const float *x32, const float *w32, const float *b32, float *o32) {             \
          return sluice_conv_gemm<float>(threads, g, batch, channels, outChannels, group,  \
                                         x32, w32, b32, o32);                               \
        });                                                                                 \
  }                                                                                         \
  static inline int32_t sluice_conv_transpose_gemm(                                         \
      int threads, const sluice_window &g, int64_t batch, int64_t channels,                 \
      int64_t outChannels, int64_t group, const H *x, const H *w, const H *bias, H *out) {  \
    return sluice_conv_half(                                                                \
        threads, batch * channels * g.inSize(), channels * (outChannels / group) * g.kSize(), \
        outChannels, batch * outChannels * g.outSize(), x, w, bias, out,                    \
        [&](const float *x32, const float *w32, const float *b32, float *o32) {             \
          return sluice_conv_transpose_gemm<float>(threads, g, batch, channels,             \
                                                   outChannels, group, x32, w32, b32, o32); \
        });                                                                                 \
  }
SLUICE_HALF_CONV(sluice_f16)
SLUICE_HALF_CONV(sluice_bf16)
#undef SLUICE_HALF_CONV

#endif // SLUICE_GEN_CPU_NN_BLAS_H
