//===- sluice_gen/cpu_nn.h - nn kernels of the cpu target -*- C++ -*-===//
//
// Convolution, pooling, quantization, integer matmul, det, einsum, max
// unpooling, resize, roi_align, grid_sample and the recurrent cells, each a
// port of its evaluator (lib/reference/Linalg.cpp, Indexing.cpp).
//
// Window ops: every spatial form is normalized to 3-D by the emitter
// (missing leading dims have size 1, stride 1, dilation 1, no padding), so
// one loop nest serves 1-D, 2-D and 3-D. Float convolutions are im2col +
// OpenBLAS GEMM (transposed: GEMM + col2im), in sluice_gen/cpu_nn_blas.h;
// every other element type, and depthwise convolutions, run the direct loops
// here, accumulating in double (ints: int64; f32 depthwise: f32).
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CPU_NN_H
#define SLUICE_GEN_CPU_NN_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>

/// Geometry of a (normalized 3-D) window op. `in`/`out` are spatial sizes,
/// `pb`/`pe` begin/end pads.
struct sluice_window {
  int64_t in[3], k[3], out[3], s[3], d[3], pb[3], pe[3];
  int64_t inSize() const { return in[0] * in[1] * in[2]; }
  int64_t kSize() const { return k[0] * k[1] * k[2]; }
  int64_t outSize() const { return out[0] * out[1] * out[2]; }
};

/// The kernel taps [lo, hi) of a window starting at `start` (stride and
/// pad applied) that land inside [from, to).
static inline void sluice_tap_range(int64_t start, int64_t k, int64_t d, int64_t from,
                                    int64_t to, int64_t *lo, int64_t *hi) {
  int64_t l = 0, h = k;
  if (start < from)
    l = (from - start + d - 1) / d;
  if (start + (k - 1) * d >= to)
    h = to - start <= 0 ? 0 : (to - start + d - 1) / d;
  if (h < l)
    h = l;
  *lo = l;
  *hi = h;
}

/// Output positions [a, b) within [from, to) whose input position
/// o * stride + base lies in [0, in).
static inline void sluice_out_range(int64_t base, int64_t stride, int64_t in, int64_t from,
                                    int64_t to, int64_t *a, int64_t *b) {
  int64_t lo = base >= 0 ? 0 : (-base + stride - 1) / stride;
  int64_t hi = in - base <= 0 ? 0 : (in - base + stride - 1) / stride;
  lo = lo > from ? lo : from;
  hi = hi < to ? hi : to;
  *a = lo;
  *b = hi > lo ? hi : lo;
}

#define SLUICE_ROW_CHUNK 256

//===----------------------------------------------------------------------===//
// Direct convolution (any element type)
//===----------------------------------------------------------------------===//

/// out[n, m, o] = sum over the group's channels c and kernel k of
/// (x[n, c, o*s - pb + k*d] - xZero) * (w[m, c, k] - wZero[m]) (+ bias[m]).
/// A: the accumulation type (double, or int64_t for conv_integer).
/// `wZero` has `wZeroCount` values (0: none, 1: shared, M: per channel).
template <typename A, typename X, typename W, typename O, typename B, typename WZ>
static inline void sluice_conv_direct(int threads, const sluice_window &g, int64_t batch,
                                      int64_t channels, int64_t outChannels, int64_t group,
                                      const X *x, const W *w, const B *bias, A xZero,
                                      const WZ *wZero, int64_t wZeroCount, O *out) {
  const int64_t cpg = channels / group, mpg = outChannels / group;
  const int64_t inSize = g.inSize(), kSize = g.kSize(), outSize = g.outSize();
  const int64_t work = batch * outChannels * outSize * cpg * kSize;
  (void)work;
#pragma omp parallel for collapse(2) num_threads(threads) if (work > 32768)
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t m = 0; m < outChannels; ++m) {
      const int64_t grp = m / mpg;
      const A wz = wZeroCount == 0 ? A(0) : wZeroCount == 1 ? (A)wZero[0] : (A)wZero[m];
      O *op = out + (n * outChannels + m) * outSize;
      for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
        for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
          const int64_t s0 = o0 * g.s[0] - g.pb[0], s1 = o1 * g.s[1] - g.pb[1];
          int64_t lo0, hi0, lo1, hi1;
          sluice_tap_range(s0, g.k[0], g.d[0], 0, g.in[0], &lo0, &hi0);
          sluice_tap_range(s1, g.k[1], g.d[1], 0, g.in[1], &lo1, &hi1);
          // A chunk of the output row at a time, taps outermost, so the
          // innermost loop runs along the row (contiguous for stride 1).
          for (int64_t oc = 0; oc < g.out[2]; oc += SLUICE_ROW_CHUNK) {
            const int64_t cnt = g.out[2] - oc < SLUICE_ROW_CHUNK ? g.out[2] - oc : SLUICE_ROW_CHUNK;
            A acc[SLUICE_ROW_CHUNK];
            for (int64_t j = 0; j < cnt; ++j)
              acc[j] = A(0);
            for (int64_t c = 0; c < cpg; ++c) {
              const X *xp = x + (n * channels + grp * cpg + c) * inSize;
              const W *wp = w + (m * cpg + c) * kSize;
              for (int64_t k0 = lo0; k0 < hi0; ++k0) {
                const int64_t i0 = s0 + k0 * g.d[0];
                for (int64_t k1 = lo1; k1 < hi1; ++k1) {
                  const int64_t i1 = s1 + k1 * g.d[1];
                  const X *row = xp + (i0 * g.in[1] + i1) * g.in[2];
                  const W *wrow = wp + (k0 * g.k[1] + k1) * g.k[2];
                  for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
                    const A wv = (A)sluice_load(wrow[k2]) - wz;
                    int64_t a, b;
                    sluice_out_range(k2 * g.d[2] - g.pb[2], g.s[2], g.in[2], oc, oc + cnt, &a, &b);
                    const int64_t base = k2 * g.d[2] - g.pb[2];
                    if (g.s[2] == 1) {
                      const X *src = row + base;
#pragma omp simd
                      for (int64_t o2 = a; o2 < b; ++o2)
                        acc[o2 - oc] += ((A)sluice_load(src[o2]) - xZero) * wv;
                    } else {
#pragma omp simd
                      for (int64_t o2 = a; o2 < b; ++o2)
                        acc[o2 - oc] += ((A)sluice_load(row[o2 * g.s[2] + base]) - xZero) * wv;
                    }
                  }
                }
              }
            }
            for (int64_t j = 0; j < cnt; ++j) {
              A v = acc[j];
              if (bias)
                v += (A)sluice_load(bias[m]);
              op[(o0 * g.out[1] + o1) * g.out[2] + oc + j] = SLUICE_STORE(O, v);
            }
          }
        }
    }
}

/// Transposed convolution, direct scatter (element types without BLAS).
template <typename X, typename O>
static inline int32_t sluice_conv_transpose_direct(int threads, const sluice_window &g,
                                                   int64_t batch, int64_t channels,
                                                   int64_t outChannels, int64_t group,
                                                   const X *x, const X *w, const X *bias,
                                                   O *out) {
  double *acc = (double *)malloc((size_t)(batch * outChannels * g.outSize() + 1) * sizeof(double));
  if (!acc)
    return 1;
  const int64_t cpg = channels / group, mpg = outChannels / group;
  const int64_t inSize = g.inSize(), kSize = g.kSize(), outSize = g.outSize();
#pragma omp parallel for collapse(2) num_threads(threads) if (batch * outChannels * outSize * kSize > 32768)
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t mo = 0; mo < outChannels; ++mo) {
      const int64_t grp = mo / mpg, m = mo % mpg;
      double *a = acc + (n * outChannels + mo) * outSize;
      for (int64_t i = 0; i < outSize; ++i)
        a[i] = bias ? (double)sluice_load(bias[mo]) : 0.0;
      for (int64_t c = grp * cpg; c < (grp + 1) * cpg; ++c) {
        const X *xp = x + (n * channels + c) * inSize;
        const X *wp = w + (c * mpg + m) * kSize;
        for (int64_t i0 = 0; i0 < g.in[0]; ++i0)
          for (int64_t i1 = 0; i1 < g.in[1]; ++i1)
            for (int64_t i2 = 0; i2 < g.in[2]; ++i2) {
              const double v = (double)sluice_load(xp[(i0 * g.in[1] + i1) * g.in[2] + i2]);
              for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
                const int64_t p0 = i0 * g.s[0] - g.pb[0] + k0 * g.d[0];
                if (p0 < 0 || p0 >= g.out[0])
                  continue;
                for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
                  const int64_t p1 = i1 * g.s[1] - g.pb[1] + k1 * g.d[1];
                  if (p1 < 0 || p1 >= g.out[1])
                    continue;
                  for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
                    const int64_t p2 = i2 * g.s[2] - g.pb[2] + k2 * g.d[2];
                    if (p2 < 0 || p2 >= g.out[2])
                      continue;
                    a[(p0 * g.out[1] + p1) * g.out[2] + p2] +=
                        v * (double)sluice_load(wp[(k0 * g.k[1] + k1) * g.k[2] + k2]);
                  }
                }
              }
            }
      }
      O *op = out + (n * outChannels + mo) * outSize;
      for (int64_t i = 0; i < outSize; ++i)
        op[i] = SLUICE_STORE(O, a[i]);
    }
  free(acc);
  return 0;
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

/// kind: 0 max, 1 avg, 2 lp. Matches lib/reference/Linalg.cpp evalPool:
/// double arithmetic, average over in-bounds (or padded-window) count,
/// argmax the flat index in the unpadded input plane (+ plane * inSize),
/// column-major over the spatial dims when `columnMajor`. A chunk of an
/// output row at a time with the taps outermost: every output still sees its
/// taps in row-major kernel order (so ties, NaNs and sums match the
/// evaluator), and the inner loop runs along the row.
template <int Kind, typename T>
static inline void sluice_pool_impl(int threads, const sluice_window &g, int64_t planes,
                                    bool countIncludePad, double p, bool columnMajor,
                                    const T *x, T *out, int64_t *indices) {
  const int64_t inSize = g.inSize(), kSize = g.kSize(), outSize = g.outSize();
#pragma omp parallel for collapse(3) num_threads(threads) if (planes * outSize * kSize > 32768)
  for (int64_t plane = 0; plane < planes; ++plane)
    for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
        const T *xp = x + plane * inSize;
        const int64_t s0 = o0 * g.s[0] - g.pb[0], s1 = o1 * g.s[1] - g.pb[1];
        int64_t lo0, hi0, lo1, hi1, plo0, phi0, plo1, phi1;
        sluice_tap_range(s0, g.k[0], g.d[0], 0, g.in[0], &lo0, &hi0);
        sluice_tap_range(s1, g.k[1], g.d[1], 0, g.in[1], &lo1, &hi1);
        sluice_tap_range(s0, g.k[0], g.d[0], -g.pb[0], g.in[0] + g.pe[0], &plo0, &phi0);
        sluice_tap_range(s1, g.k[1], g.d[1], -g.pb[1], g.in[1] + g.pe[1], &plo1, &phi1);
        for (int64_t oc = 0; oc < g.out[2]; oc += SLUICE_ROW_CHUNK) {
          const int64_t cnt = g.out[2] - oc < SLUICE_ROW_CHUNK ? g.out[2] - oc : SLUICE_ROW_CHUNK;
          double acc[SLUICE_ROW_CHUNK];
          int64_t argmax[SLUICE_ROW_CHUNK];
          for (int64_t j = 0; j < cnt; ++j) {
            acc[j] = Kind == 0 ? -INFINITY : 0.0;
            argmax[j] = -1;
          }
          for (int64_t k0 = lo0; k0 < hi0; ++k0) {
            const int64_t i0 = s0 + k0 * g.d[0];
            for (int64_t k1 = lo1; k1 < hi1; ++k1) {
              const int64_t i1 = s1 + k1 * g.d[1];
              const T *row = xp + (i0 * g.in[1] + i1) * g.in[2];
              for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
                const int64_t base = k2 * g.d[2] - g.pb[2];
                int64_t a, b;
                sluice_out_range(base, g.s[2], g.in[2], oc, oc + cnt, &a, &b);
                if (Kind == 0 && !indices) {
                  // Branch-free (random data mispredicts every other tap).
#pragma omp simd
                  for (int64_t o2 = a; o2 < b; ++o2) {
                    const double v = (double)sluice_load(row[o2 * g.s[2] + base]);
                    const bool take = v > acc[o2 - oc] || argmax[o2 - oc] < 0;
                    acc[o2 - oc] = take ? v : acc[o2 - oc];
                    argmax[o2 - oc] = 0;
                  }
                } else if (Kind == 0) {
                  for (int64_t o2 = a; o2 < b; ++o2) {
                    const int64_t i2 = o2 * g.s[2] + base;
                    const double v = (double)sluice_load(row[i2]);
                    if (v > acc[o2 - oc] || argmax[o2 - oc] < 0) {
                      acc[o2 - oc] = v;
                      argmax[o2 - oc] = columnMajor ? (i2 * g.in[1] + i1) * g.in[0] + i0
                                                    : (i0 * g.in[1] + i1) * g.in[2] + i2;
                    }
                  }
                } else if (Kind == 1) {
#pragma omp simd
                  for (int64_t o2 = a; o2 < b; ++o2)
                    acc[o2 - oc] += (double)sluice_load(row[o2 * g.s[2] + base]);
                } else {
                  for (int64_t o2 = a; o2 < b; ++o2)
                    acc[o2 - oc] += pow(fabs((double)sluice_load(row[o2 * g.s[2] + base])), p);
                }
              }
            }
          }
          for (int64_t j = 0; j < cnt; ++j) {
            const int64_t o2 = oc + j;
            double value = acc[j];
            if (Kind == 1) {
              const int64_t s2 = o2 * g.s[2] - g.pb[2];
              int64_t lo2, hi2;
              if (countIncludePad) {
                sluice_tap_range(s2, g.k[2], g.d[2], -g.pb[2], g.in[2] + g.pe[2], &lo2, &hi2);
                value = acc[j] / (double)((phi0 - plo0) * (phi1 - plo1) * (hi2 - lo2));
              } else {
                sluice_tap_range(s2, g.k[2], g.d[2], 0, g.in[2], &lo2, &hi2);
                value = acc[j] / (double)((hi0 - lo0) * (hi1 - lo1) * (hi2 - lo2));
              }
            } else if (Kind == 2) {
              value = pow(acc[j], 1.0 / p);
            }
            const int64_t oi = (o0 * g.out[1] + o1) * g.out[2] + o2;
            out[plane * outSize + oi] = SLUICE_STORE(T, value);
            if (indices)
              indices[plane * outSize + oi] = plane * inSize + argmax[j];
          }
        }
      }
}

/// The max of two values that skips a NaN unless both are: the folds of
/// sluice_max_pool_separable (a NaN other than a window's first tap never
/// wins in sluice_pool_impl; the first tap is checked on its own).
template <typename A> static inline A sluice_max_skip_nan(A acc, A v) {
  return v > acc || acc != acc ? v : acc;
}

/// The outputs [fa, fb) of a row of max pooling whose taps all lie in the
/// row, from the folded columns `col` (indexed by input column), taps
/// outermost so that the loop over outputs vectorizes (S: the stride when
/// it is 1 or 2, known at compile time; 0: g.s[2]). `first` is the
/// window's first row: a NaN first tap is the result, as in
/// sluice_pool_impl.
template <int S, typename A, typename T>
static inline void sluice_max_pool_columns(const sluice_window &g, const A *col, const T *first,
                                           int64_t fa, int64_t fb, T *op) {
  const int64_t s = S ? S : g.s[2];
  A acc[SLUICE_ROW_CHUNK];
  const A *c0 = col - g.pb[2];
#pragma omp simd
  for (int64_t o2 = fa; o2 < fb; ++o2)
    acc[o2 - fa] = c0[o2 * s];
  for (int64_t k2 = 1; k2 < g.k[2]; ++k2) {
    const A *cp = col + k2 * g.d[2] - g.pb[2];
#pragma omp simd
    for (int64_t o2 = fa; o2 < fb; ++o2)
      acc[o2 - fa] = sluice_max_skip_nan(acc[o2 - fa], cp[o2 * s]);
  }
  const T *f0 = first - g.pb[2];
#pragma omp simd
  for (int64_t o2 = fa; o2 < fb; ++o2) {
    const A head = (A)sluice_load(f0[o2 * s]);
    acc[o2 - fa] = head != head ? head : acc[o2 - fa];
  }
  for (int64_t o2 = fa; o2 < fb; ++o2)
    op[o2] = SLUICE_STORE(T, acc[o2 - fa]);
}

/// Max pooling without indices, separably: per output row, the taps of
/// each input column are folded first (the window's rows, in row-major
/// order, into a row buffer, contiguous and vectorized), then the columns'
/// taps per output. The value matches sluice_pool_impl's, where the first
/// in-bounds tap is taken and a later tap only when greater: the window's
/// first tap when it is NaN, else the max of its other values (the folds
/// skip NaNs, sluice_max_skip_nan); only which of two equal zeros wins may
/// differ. `A` is the value type (exact: float for f32 and the 16- and
/// 8-bit types, double for the others). False, with nothing written, when
/// a chunk's input span does not fit the row buffer (hostile strides or
/// kernels); sluice_pool_impl then runs.
template <typename T, typename A>
static inline bool sluice_max_pool_separable(int threads, const sluice_window &g, int64_t planes,
                                             const T *x, T *out) {
  constexpr int64_t kSpan = 4096;
  const int64_t reach = (g.k[2] - 1) * g.d[2];
  if ((SLUICE_ROW_CHUNK - 1) * g.s[2] + reach + 1 > kSpan)
    return false;
  const int64_t inSize = g.inSize(), outSize = g.outSize();
  // The outputs of a row whose taps all lie in it: [interiorLo, interiorHi).
  const int64_t interiorLo = (g.pb[2] + g.s[2] - 1) / g.s[2];
  const int64_t interiorHi =
      g.in[2] - 1 - reach + g.pb[2] < 0 ? 0 : (g.in[2] - 1 - reach + g.pb[2]) / g.s[2] + 1;
#pragma omp parallel for collapse(3) num_threads(threads) if (planes * outSize * g.kSize() > 32768)
  for (int64_t plane = 0; plane < planes; ++plane)
    for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
        const T *xp = x + plane * inSize;
        T *op = out + plane * outSize + (o0 * g.out[1] + o1) * g.out[2];
        const int64_t s0 = o0 * g.s[0] - g.pb[0], s1 = o1 * g.s[1] - g.pb[1];
        int64_t lo0, hi0, lo1, hi1;
        sluice_tap_range(s0, g.k[0], g.d[0], 0, g.in[0], &lo0, &hi0);
        sluice_tap_range(s1, g.k[1], g.d[1], 0, g.in[1], &lo1, &hi1);
        if (lo0 == hi0 || lo1 == hi1) {
          for (int64_t o2 = 0; o2 < g.out[2]; ++o2)
            op[o2] = SLUICE_STORE(T, (double)-INFINITY);
          continue;
        }
        const T *firstRow = xp + ((s0 + lo0 * g.d[0]) * g.in[1] + s1 + lo1 * g.d[1]) * g.in[2];
        A col[kSpan];
        for (int64_t oc = 0; oc < g.out[2]; oc += SLUICE_ROW_CHUNK) {
          const int64_t cnt = g.out[2] - oc < SLUICE_ROW_CHUNK ? g.out[2] - oc : SLUICE_ROW_CHUNK;
          // The input columns this chunk reads, clamped to the row.
          int64_t c0 = oc * g.s[2] - g.pb[2];
          int64_t c1 = (oc + cnt - 1) * g.s[2] - g.pb[2] + reach + 1;
          c0 = c0 < 0 ? 0 : c0;
          c1 = c1 > g.in[2] ? g.in[2] : c1;
#pragma omp simd
          for (int64_t i = c0; i < c1; ++i)
            col[i - c0] = (A)sluice_load(firstRow[i]);
          for (int64_t k0 = lo0; k0 < hi0; ++k0)
            for (int64_t k1 = k0 == lo0 ? lo1 + 1 : lo1; k1 < hi1; ++k1) {
              const T *row = xp + ((s0 + k0 * g.d[0]) * g.in[1] + s1 + k1 * g.d[1]) * g.in[2];
#pragma omp simd
              for (int64_t i = c0; i < c1; ++i)
                col[i - c0] = sluice_max_skip_nan(col[i - c0], (A)sluice_load(row[i]));
            }
          // This chunk's interior outputs [fa, fb) vectorized; the rest clip.
          const int64_t fa = interiorLo < oc ? oc : interiorLo > oc + cnt ? oc + cnt : interiorLo;
          const int64_t fb = interiorHi < fa ? fa : interiorHi > oc + cnt ? oc + cnt : interiorHi;
          if (g.s[2] == 1)
            sluice_max_pool_columns<1>(g, col - c0, firstRow, fa, fb, op);
          else if (g.s[2] == 2)
            sluice_max_pool_columns<2>(g, col - c0, firstRow, fa, fb, op);
          else
            sluice_max_pool_columns<0>(g, col - c0, firstRow, fa, fb, op);
          const auto edge = [&](int64_t o2) {
            const int64_t s2 = o2 * g.s[2] - g.pb[2];
            int64_t lo2, hi2;
            sluice_tap_range(s2, g.k[2], g.d[2], 0, g.in[2], &lo2, &hi2);
            if (lo2 == hi2) {
              op[o2] = SLUICE_STORE(T, (double)-INFINITY);
              return;
            }
            const A *cp = col + s2 - c0;
            A acc = cp[lo2 * g.d[2]];
            for (int64_t k2 = lo2 + 1; k2 < hi2; ++k2)
              acc = sluice_max_skip_nan(acc, cp[k2 * g.d[2]]);
            const A head = (A)sluice_load(firstRow[s2 + lo2 * g.d[2]]);
            op[o2] = SLUICE_STORE(T, head != head ? head : acc);
          };
          for (int64_t o2 = oc; o2 < fa; ++o2)
            edge(o2);
          for (int64_t o2 = fb; o2 < oc + cnt; ++o2)
            edge(o2);
        }
      }
  return true;
}

template <typename T>
static inline void sluice_pool(int threads, const sluice_window &g, int64_t planes, int kind,
                               bool countIncludePad, double p, bool columnMajor,
                               int64_t spatial, const T *x, T *out, int64_t *indices) {
  (void)spatial;
  // Exact for every T: float holds f32 and all 16- and 8-bit types.
  using MaxT = typename std::conditional<std::is_same<T, float>::value || sizeof(T) <= 2, float,
                                         double>::type;
  if (kind == 0 && !indices && sluice_max_pool_separable<T, MaxT>(threads, g, planes, x, out))
    return;
  if (kind == 0)
    sluice_pool_impl<0>(threads, g, planes, countIncludePad, p, columnMajor, x, out, indices);
  else if (kind == 1)
    sluice_pool_impl<1>(threads, g, planes, countIncludePad, p, columnMajor, x, out, indices);
  else
    sluice_pool_impl<2>(threads, g, planes, countIncludePad, p, columnMajor, x, out, indices);
}

//===----------------------------------------------------------------------===//
// Quantization
//===----------------------------------------------------------------------===//

/// Round to nearest, ties to even (as the evaluator's roundHalfEven).
static inline double sluice_round_half_even(double v) {
  double r = round(v);
  if (fabs(v - trunc(v)) == 0.5)
    r = 2.0 * round(v / 2.0);
  return r;
}

/// y = clamp(round_half_even(x / scale) + zero, lo, hi); parameters are
/// per tensor (params == 1) or per index (i / inner) % params. `single`:
/// divide in fp32 like the ONNX reference.
template <typename X, typename S, typename Z, typename O>
static inline void sluice_quantize(int threads, int64_t count, int64_t inner, int64_t params,
                                   bool single, const X *x, const S *scale, const Z *zero,
                                   double lo, double hi, O *out) {
#pragma omp parallel for num_threads(threads) if (count > 32768)
  for (int64_t i = 0; i < count; ++i) {
    const int64_t p = params == 1 ? 0 : (i / inner) % params;
    const double xv = (double)sluice_load(x[i]), s = (double)sluice_load(scale[p]);
    const double v = single ? (double)((float)xv / (float)s) : xv / s;
    double r = sluice_round_half_even(v) + (zero ? (double)zero[p] : 0.0);
    r = r < lo ? lo : r > hi ? hi : r;
    out[i] = SLUICE_STORE(O, v != v ? (int64_t)0 : (int64_t)r);
  }
}

/// y = (x - zero) * scale, parameters as in sluice_quantize.
template <typename X, typename S, typename Z, typename O>
static inline void sluice_dequantize(int threads, int64_t count, int64_t inner, int64_t params,
                                     const X *x, const S *scale, const Z *zero, O *out) {
#pragma omp parallel for num_threads(threads) if (count > 32768)
  for (int64_t i = 0; i < count; ++i) {
    const int64_t p = params == 1 ? 0 : (i / inner) % params;
    const int64_t z = zero ? (int64_t)zero[p] : 0;
    out[i] = SLUICE_STORE(O, (double)((int64_t)x[i] - z) * (double)sluice_load(scale[p]));
  }
}

/// fp8 (E4M3FN) results: x / scale in fp32 (+ the zero point, 0), rounded
/// to the nearest E4M3 value; beyond 448 saturated, or NaN unless
/// `saturate` (the evaluator's quantize_linear to f8E4M3FN).
template <typename X, typename S>
static inline void sluice_quantize_f8(int threads, int64_t count, int64_t inner, int64_t params,
                                      bool saturate, const X *x, const S *scale,
                                      const sluice_f8e4m3 *zero, sluice_f8e4m3 *out) {
#pragma omp parallel for num_threads(threads) if (count > 32768)
  for (int64_t i = 0; i < count; ++i) {
    const int64_t p = params == 1 ? 0 : (i / inner) % params;
    float v = (float)sluice_load(x[i]) / (float)sluice_load(scale[p]);
    if (zero)
      v += sluice_load(zero[p]);
    out[i] = sluice_to_f8e4m3(v, saturate);
  }
}

/// y = (x - zero) * scale in fp32 for fp8 (E4M3FN) inputs.
template <typename S, typename O>
static inline void sluice_dequantize_f8(int threads, int64_t count, int64_t inner, int64_t params,
                                        const sluice_f8e4m3 *x, const S *scale,
                                        const sluice_f8e4m3 *zero, O *out) {
#pragma omp parallel for num_threads(threads) if (count > 32768)
  for (int64_t i = 0; i < count; ++i) {
    const int64_t p = params == 1 ? 0 : (i / inner) % params;
    const float z = zero ? sluice_load(zero[p]) : 0.0f;
    out[i] = SLUICE_STORE(O, (sluice_load(x[i]) - z) * (float)sluice_load(scale[p]));
  }
}

//===----------------------------------------------------------------------===//
// Integer matmul, determinant, einsum, max unpooling
//===----------------------------------------------------------------------===//

/// Batched (a - aZero[row]) x (b - bZero[col]) in int64, wrapped on store.
/// Zero point counts: 0 none, 1 shared, else one per row / column.
template <typename A, typename B, typename ZA, typename ZB, typename O>
static inline void sluice_matmul_integer(int threads, int64_t batches, int64_t m, int64_t n,
                                         int64_t k, const A *a, const int64_t *aOff,
                                         const B *b, const int64_t *bOff, const ZA *aZero,
                                         int64_t aZeroCount, const ZB *bZero,
                                         int64_t bZeroCount, O *out) {
#pragma omp parallel for collapse(2) num_threads(threads) if (batches * m * n * k > 65536)
  for (int64_t bi = 0; bi < batches; ++bi)
    for (int64_t i = 0; i < m; ++i) {
      const int64_t za = aZeroCount == 0 ? 0 : aZeroCount == 1 ? (int64_t)aZero[0] : (int64_t)aZero[i];
      for (int64_t j = 0; j < n; ++j) {
        const int64_t zb = bZeroCount == 0 ? 0 : bZeroCount == 1 ? (int64_t)bZero[0] : (int64_t)bZero[j];
        int64_t sum = 0;
        for (int64_t p = 0; p < k; ++p)
          sum += ((int64_t)a[aOff[bi] + i * k + p] - za) * ((int64_t)b[bOff[bi] + p * n + j] - zb);
        out[(bi * m + i) * n + j] = SLUICE_STORE(O, sum);
      }
    }
}

/// Determinants of `batches` n x n matrices: LU with partial pivoting in
/// double. `work` holds n * n doubles.
template <typename T>
static inline void sluice_det(int64_t batches, int64_t n, const T *x, T *out, double *work) {
  for (int64_t bi = 0; bi < batches; ++bi) {
    double *a = work;
    for (int64_t i = 0; i < n * n; ++i)
      a[i] = (double)sluice_load(x[bi * n * n + i]);
    double det = 1.0;
    for (int64_t c = 0; c < n && det != 0.0; ++c) {
      int64_t pivot = c;
      for (int64_t r = c + 1; r < n; ++r)
        if (fabs(a[r * n + c]) > fabs(a[pivot * n + c]))
          pivot = r;
      if (a[pivot * n + c] == 0.0) {
        det = 0.0;
        break;
      }
      if (pivot != c) {
        for (int64_t j = 0; j < n; ++j) {
          double t = a[c * n + j];
          a[c * n + j] = a[pivot * n + j];
          a[pivot * n + j] = t;
        }
        det = -det;
      }
      det *= a[c * n + c];
      for (int64_t r = c + 1; r < n; ++r) {
        double f = a[r * n + c] / a[c * n + c];
        for (int64_t j = c; j < n; ++j)
          a[r * n + j] -= f * a[c * n + j];
      }
    }
    out[bi] = SLUICE_STORE(T, det);
  }
}

/// Einsum over `labels` label positions (output labels first, `outLabels`
/// of them): out[o] = sum over the summed labels of prod_k x_k[offset_k],
/// offset_k = sum_d index[d] * strides[k * labels + d]. Double arithmetic.
template <typename T, typename O>
static inline void sluice_einsum(int threads, int64_t operands, const T *const *x,
                                 int64_t labels, int64_t outLabels, const int64_t *extents,
                                 const int64_t *strides, bool integer, O *out) {
  int64_t outCount = 1, sumCount = 1;
  for (int64_t d = 0; d < labels; ++d)
    (d < outLabels ? outCount : sumCount) *= extents[d];
#pragma omp parallel for num_threads(threads) if (outCount * sumCount > 65536)
  for (int64_t o = 0; o < outCount; ++o) {
    int64_t index[64];
    int64_t rest = o;
    for (int64_t d = outLabels - 1; d >= 0; --d) {
      index[d] = rest % extents[d];
      rest /= extents[d];
    }
    double acc = 0.0;
    for (int64_t s = 0; s < sumCount; ++s) {
      rest = s;
      for (int64_t d = labels - 1; d >= outLabels; --d) {
        index[d] = rest % extents[d];
        rest /= extents[d];
      }
      double term = 1.0;
      for (int64_t k = 0; k < operands; ++k) {
        int64_t offset = 0;
        for (int64_t d = 0; d < labels; ++d)
          offset += index[d] * strides[k * labels + d];
        term *= (double)sluice_load(x[k][offset]);
      }
      acc += term;
    }
    out[o] = integer ? SLUICE_STORE(O, (int64_t)acc) : SLUICE_STORE(O, acc);
  }
}

/// Scatters x[i] to the flat index indices[i] of the natural output (rank
/// `rank`, sizes `natural`), placed at the origin of the real output
/// (`outShape`, zero elsewhere). Returns 1 for an index out of range.
template <typename T>
static inline int32_t sluice_max_unpool(int64_t count, int64_t rank, const int64_t *natural,
                                        const int64_t *outShape, const T *x,
                                        const int64_t *indices, T *out) {
  int64_t naturalCount = 1, outCount = 1;
  for (int64_t d = 0; d < rank; ++d) {
    naturalCount *= natural[d];
    outCount *= outShape[d];
  }
  memset((void *)out, 0, (size_t)outCount * sizeof(T));
  for (int64_t i = 0; i < count; ++i) {
    int64_t index = indices[i];
    if (index < 0 || index >= naturalCount)
      return 1;
    int64_t target = 0, stride = 1;
    for (int64_t d = rank - 1; d >= 0; --d) {
      target += (index % natural[d]) * stride;
      index /= natural[d];
      stride *= outShape[d];
    }
    out[target] = x[i];
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// Resize
//===----------------------------------------------------------------------===//

/// One axis of a separable resize on double data viewed as (outer, in,
/// inner) -> (outer, out, inner): dst[o, y, i] = sum_t weights[y, t] *
/// src[o, taps[y, t], i] (zero weights skipped, in tap order as the
/// evaluator adds them), or `extrapolation` where extrapolate[y].
static inline void sluice_resize_axis(int threads, int64_t outer, int64_t in, int64_t out,
                                      int64_t inner, int64_t ntaps, const int64_t *taps,
                                      const double *weights, const unsigned char *extrapolate,
                                      double extrapolation, const double *src, double *dst) {
#pragma omp parallel for collapse(2) num_threads(threads) if (outer * out * inner * ntaps > 32768)
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t y = 0; y < out; ++y) {
      double *d = dst + (o * out + y) * inner;
      if (extrapolate[y]) {
        for (int64_t i = 0; i < inner; ++i)
          d[i] = extrapolation;
        continue;
      }
      for (int64_t i = 0; i < inner; ++i)
        d[i] = 0.0;
      for (int64_t t = 0; t < ntaps; ++t) {
        const double w = weights[y * ntaps + t];
        if (w == 0)
          continue;
        const double *sp = src + (o * in + taps[y * ntaps + t]) * inner;
        for (int64_t i = 0; i < inner; ++i)
          d[i] += w * sp[i];
      }
    }
}

/// Loads `count` elements into doubles.
template <typename T>
static inline void sluice_to_double(int64_t count, const T *x, double *d) {
  for (int64_t i = 0; i < count; ++i)
    d[i] = (double)sluice_load(x[i]);
}

/// Stores doubles; integers round half to even and saturate to [lo, hi].
template <typename T>
static inline void sluice_from_double(int64_t count, const double *d, bool integer, double lo,
                                      double hi, T *out) {
  for (int64_t i = 0; i < count; ++i) {
    if (integer) {
      double v = nearbyint(d[i]);
      v = v < lo ? lo : v > hi ? hi : v;
      out[i] = SLUICE_STORE(T, (int64_t)v);
    } else {
      out[i] = SLUICE_STORE(T, d[i]);
    }
  }
}

//===----------------------------------------------------------------------===//
// RoiAlign, GridSample
//===----------------------------------------------------------------------===//

struct sluice_roi_tap {
  int64_t pos[4];
  double w[4];
};

/// RoiAlign as the evaluator's evalRoiAlign: bilinear taps per sample point
/// (shared by the channels), then the average or max over each bin.
/// Returns 1 for a batch index out of range or a non-finite roi, 2 when out
/// of memory.
template <typename T, typename R>
static inline int32_t sluice_roi_align(int threads, int64_t batches, int64_t channels,
                                       int64_t height, int64_t width, int64_t numRois,
                                       int64_t pooledH, int64_t pooledW, int64_t samplingRatio,
                                       double spatialScale, bool halfPixel, bool maxMode,
                                       const T *x, const R *rois, const int64_t *batchIndices,
                                       T *out) {
  for (int64_t n = 0; n < numRois; ++n) {
    const int64_t batch = batchIndices[n];
    if (batch < 0 || batch >= batches)
      return 1;
    const double offset = halfPixel ? 0.5 : 0.0;
    const double startW = (double)sluice_load(rois[n * 4 + 0]) * spatialScale - offset;
    const double startH = (double)sluice_load(rois[n * 4 + 1]) * spatialScale - offset;
    const double endW = (double)sluice_load(rois[n * 4 + 2]) * spatialScale - offset;
    const double endH = (double)sluice_load(rois[n * 4 + 3]) * spatialScale - offset;
    double roiW = endW - startW, roiH = endH - startH;
    if (!halfPixel) {
      roiW = roiW > 1.0 ? roiW : 1.0;
      roiH = roiH > 1.0 ? roiH : 1.0;
    }
    if (!isfinite(roiW) || !isfinite(roiH))
      return 1;
    const double binH = roiH / pooledH, binW = roiW / pooledW;
    const int64_t gridH = samplingRatio > 0 ? samplingRatio : (int64_t)ceil(roiH / pooledH);
    const int64_t gridW = samplingRatio > 0 ? samplingRatio : (int64_t)ceil(roiW / pooledW);
    const int64_t count = gridH * gridW > 1 ? gridH * gridW : 1;
    const int64_t ntaps = pooledH * pooledW * gridH * gridW;
    sluice_roi_tap *taps = (sluice_roi_tap *)malloc((size_t)(ntaps > 0 ? ntaps : 1) * sizeof(sluice_roi_tap));
    if (!taps)
      return 2;
    int64_t t = 0;
    for (int64_t ph = 0; ph < pooledH; ++ph)
      for (int64_t pw = 0; pw < pooledW; ++pw)
        for (int64_t iy = 0; iy < gridH; ++iy)
          for (int64_t ix = 0; ix < gridW; ++ix, ++t) {
            double y = startH + ph * binH + (iy + 0.5) * binH / gridH;
            double xx = startW + pw * binW + (ix + 0.5) * binW / gridW;
            sluice_roi_tap &tap = taps[t];
            for (int k = 0; k < 4; ++k) {
              tap.pos[k] = 0;
              tap.w[k] = 0;
            }
            if (y < -1.0 || y > height || xx < -1.0 || xx > width)
              continue;
            y = y > 0.0 ? y : 0.0;
            xx = xx > 0.0 ? xx : 0.0;
            int64_t yLow = (int64_t)y, xLow = (int64_t)xx, yHigh, xHigh;
            if (yLow >= height - 1) {
              yHigh = yLow = height - 1;
              y = (double)yLow;
            } else {
              yHigh = yLow + 1;
            }
            if (xLow >= width - 1) {
              xHigh = xLow = width - 1;
              xx = (double)xLow;
            } else {
              xHigh = xLow + 1;
            }
            const double ly = y - yLow, lx = xx - xLow, hy = 1 - ly, hx = 1 - lx;
            tap.pos[0] = yLow * width + xLow;
            tap.pos[1] = yLow * width + xHigh;
            tap.pos[2] = yHigh * width + xLow;
            tap.pos[3] = yHigh * width + xHigh;
            tap.w[0] = hy * hx;
            tap.w[1] = hy * lx;
            tap.w[2] = ly * hx;
            tap.w[3] = ly * lx;
          }
#pragma omp parallel for num_threads(threads) if (channels * ntaps > 32768)
    for (int64_t c = 0; c < channels; ++c) {
      const T *base = x + (batch * channels + c) * height * width;
      int64_t ti = 0;
      for (int64_t ph = 0; ph < pooledH; ++ph)
        for (int64_t pw = 0; pw < pooledW; ++pw) {
          double value = 0;
          bool first = true;
          for (int64_t sIdx = 0; sIdx < gridH * gridW; ++sIdx, ++ti) {
            const sluice_roi_tap &tap = taps[ti];
            if (maxMode) {
              double v = -INFINITY;
              for (int k = 0; k < 4; ++k) {
                const double c2 = tap.w[k] * (double)sluice_load(base[tap.pos[k]]);
                v = v < c2 ? c2 : v;
              }
              value = first ? v : (value < v ? v : value);
              first = false;
            } else {
              for (int k = 0; k < 4; ++k)
                value += tap.w[k] * (double)sluice_load(base[tap.pos[k]]);
            }
          }
          if (!maxMode)
            value /= count;
          out[((n * channels + c) * pooledH + ph) * pooledW + pw] = SLUICE_STORE(T, value);
        }
    }
    free(taps);
  }
  return 0;
}

/// Reflects `x` into [lo, hi] by bouncing off the nearer border.
static inline double sluice_reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0)
    return lo;
  if (x < lo) {
    const double dx = lo - x, n = floor(dx / range), r = dx - n * range;
    return fmod(n, 2.0) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi, n = floor(dx / range), r = dx - n * range;
    return fmod(n, 2.0) == 0 ? hi - r : lo + r;
  }
  return x;
}

/// Keys' cubic weights (a = -0.75) of the 4 taps around fractional offset t.
static inline void sluice_cubic_weights(double t, double a, double *w) {
  w[0] = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a;
  w[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  w[2] = ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1;
  w[3] = ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a;
}

/// GridSample as the evaluator's evalGridSample. mode: 0 bilinear,
/// 1 nearest, 2 bicubic; padding: 0 zeros, 1 border, 2 reflection.
template <typename T, typename G>
static inline void sluice_grid_sample(int threads, int64_t batches, int64_t channels,
                                      int64_t height, int64_t width, int64_t outH,
                                      int64_t outW, int mode, int padding, bool alignCorners,
                                      const T *x, const G *grid, T *out) {
  const double minX = alignCorners ? 0.0 : -0.5, maxX = alignCorners ? width - 1.0 : width - 0.5;
  const double minY = alignCorners ? 0.0 : -0.5, maxY = alignCorners ? height - 1.0 : height - 0.5;
#pragma omp parallel for collapse(2) num_threads(threads) if (batches * channels * outH * outW > 32768)
  for (int64_t n = 0; n < batches; ++n)
    for (int64_t c = 0; c < channels; ++c) {
      const T *base = x + (n * channels + c) * height * width;
      auto pixel = [&](int64_t row, int64_t col) -> double {
        if (padding == 0) {
          if (row < 0 || row >= height || col < 0 || col >= width)
            return 0.0;
        } else if (padding == 1) {
          row = row < 0 ? 0 : row > height - 1 ? height - 1 : row;
          col = col < 0 ? 0 : col > width - 1 ? width - 1 : col;
        } else {
          row = (int64_t)sluice_reflect((double)row, minY, maxY);
          col = (int64_t)sluice_reflect((double)col, minX, maxX);
          row = row < 0 ? 0 : row > height - 1 ? height - 1 : row;
          col = col < 0 ? 0 : col > width - 1 ? width - 1 : col;
        }
        return (double)sluice_load(base[row * width + col]);
      };
      auto denormalize = [&](double v, int64_t length) {
        return (double)(float)(alignCorners ? (v + 1) / 2.0 * (length - 1)
                                            : ((v + 1) * length - 1) / 2.0);
      };
      for (int64_t oy = 0; oy < outH; ++oy)
        for (int64_t ox = 0; ox < outW; ++ox) {
          const int64_t g = ((n * outH + oy) * outW + ox) * 2;
          double px = denormalize((double)sluice_load(grid[g]), width);
          double py = denormalize((double)sluice_load(grid[g + 1]), height);
          T *dst = out + ((n * channels + c) * outH + oy) * outW + ox;
          if (!isfinite(px) || !isfinite(py)) {
            *dst = SLUICE_STORE(T, NAN);
            continue;
          }
          if (padding == 0) {
            px = px < -8.0 ? -8.0 : px > width + 8.0 ? width + 8.0 : px;
            py = py < -8.0 ? -8.0 : py > height + 8.0 ? height + 8.0 : py;
          }
          if (mode == 1) {
            px = nearbyint(px);
            py = nearbyint(py);
          }
          if (px < minX || px > maxX) {
            if (padding == 1)
              px = px < 0.0 ? 0.0 : px > width - 1.0 ? width - 1.0 : px;
            else if (padding == 2)
              px = sluice_reflect(px, minX, maxX);
          }
          if (py < minY || py > maxY) {
            if (padding == 1)
              py = py < 0.0 ? 0.0 : py > height - 1.0 ? height - 1.0 : py;
            else if (padding == 2)
              py = sluice_reflect(py, minY, maxY);
          }
          double value;
          if (mode == 1) {
            value = pixel((int64_t)py, (int64_t)px);
          } else if (mode == 0) {
            const int64_t x0 = (int64_t)floor(px), y0 = (int64_t)floor(py);
            const double fx = px - x0, fy = py - y0;
            const double top = (1 - fx) * pixel(y0, x0) + fx * pixel(y0, x0 + 1);
            const double bottom = (1 - fx) * pixel(y0 + 1, x0) + fx * pixel(y0 + 1, x0 + 1);
            value = (1 - fy) * top + fy * bottom;
          } else {
            const int64_t x0 = (int64_t)floor(px), y0 = (int64_t)floor(py);
            double wx[4], wy[4];
            sluice_cubic_weights(px - x0, -0.75, wx);
            sluice_cubic_weights(py - y0, -0.75, wy);
            value = 0;
            for (int i = 0; i < 4; ++i) {
              double row = 0;
              for (int j = 0; j < 4; ++j)
                row += wx[j] * pixel(y0 - 1 + i, x0 - 1 + j);
              value += wy[i] * row;
            }
          }
          *dst = SLUICE_STORE(T, value);
        }
    }
}

//===----------------------------------------------------------------------===//
// Recurrent (RNN, GRU, LSTM)
//===----------------------------------------------------------------------===//

/// kind: 0 Sigmoid, 1 Tanh, 2 Relu, 3 Affine, 4 LeakyRelu, 5 ThresholdedRelu,
/// 6 ScaledTanh, 7 HardSigmoid, 8 Elu, 9 Softsign, 10 Softplus.
struct sluice_act {
  int kind;
  double alpha, beta;
};

static inline double sluice_act_apply(const sluice_act &a, double x) {
  switch (a.kind) {
  case 0: return 1.0 / (1.0 + exp(-x));
  case 1: return tanh(x);
  case 2: return x > 0.0 ? x : 0.0;
  case 3: return a.alpha * x + a.beta;
  case 4: return x < 0 ? a.alpha * x : x;
  case 5: return x > a.alpha ? x : 0.0;
  case 6: return a.alpha * tanh(a.beta * x);
  case 7: {
    double v = a.alpha * x + a.beta;
    return v < 0.0 ? 0.0 : v > 1.0 ? 1.0 : v;
  }
  case 8: return x < 0 ? a.alpha * (exp(x) - 1.0) : x;
  case 9: return x / (1.0 + fabs(x));
  default: return log1p(exp(x));
  }
}

/// The evaluator's evalRnn: cell 0 rnn, 1 gru (gates z, r, h), 2 lstm
/// (gates i, o, f, c; peepholes i, o, f). Every (direction, sample) runs its
/// own time loop in double. `acts` holds the activations of every direction
/// in order. Returns 1 for a sequence length outside [0, seq], 2 when out of
/// memory.
template <typename T, typename L>
static inline int32_t sluice_rnn(int threads, int cell, int64_t dirs, bool reverseOnly,
                                 int64_t seq, int64_t batch, int64_t features, int64_t hidden,
                                 const sluice_act *acts, bool hasClip, double clip,
                                 bool linearBeforeReset, bool inputForget, const T *x,
                                 const T *w, const T *r, const T *bias, const L *lens,
                                 const T *h0, const T *c0, const T *peep, T *y, T *yh, T *yc) {
  const int64_t gates = cell == 2 ? 4 : cell == 1 ? 3 : 1;
  const int64_t perDir = cell == 2 ? 3 : cell == 1 ? 2 : 1;
  const int64_t gh = gates * hidden;
  for (int64_t n = 0; n < batch; ++n)
    if ((int64_t)lens[n] < 0 || (int64_t)lens[n] > seq)
      return 1;
  const int64_t scratch = 2 * gh + 5 * hidden;
  double *work = (double *)malloc((size_t)(dirs * batch * scratch + 1) * sizeof(double));
  if (!work)
    return 2;
  for (int64_t i = 0; i < seq * dirs * batch * hidden; ++i)
    y[i] = SLUICE_STORE(T, 0.0);
  auto clipped = [&](double v) { return hasClip ? (v < -clip ? -clip : v > clip ? clip : v) : v; };
#pragma omp parallel for collapse(2) num_threads(threads) if (dirs * batch > 1 && seq * gh * (features + hidden) > 32768)
  for (int64_t d = 0; d < dirs; ++d)
    for (int64_t n = 0; n < batch; ++n) {
      const bool reverse = reverseOnly || d == 1;
      const sluice_act *f = acts + d * perDir;
      const T *wd = w + d * gh * features;
      const T *rd = r + d * gh * hidden;
      const T *wb = bias + d * 2 * gh, *rb = wb + gh;
      double *xw = work + (d * batch + n) * scratch, *hr = xw + gh, *h = hr + gh,
             *c = h + hidden, *next = c + hidden, *z = next + hidden, *reset = z + hidden;
      for (int64_t i = 0; i < hidden; ++i) {
        h[i] = (double)sluice_load(h0[(d * batch + n) * hidden + i]);
        c[i] = cell == 2 ? (double)sluice_load(c0[(d * batch + n) * hidden + i]) : 0.0;
      }
      const int64_t len = (int64_t)lens[n];
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = reverse ? len - 1 - step : step;
        const T *xt = x + (t * batch + n) * features;
        for (int64_t g = 0; g < gh; ++g) {
          double a = 0.0, b = 0.0;
          for (int64_t i = 0; i < features; ++i)
            a += (double)sluice_load(xt[i]) * (double)sluice_load(wd[g * features + i]);
          for (int64_t i = 0; i < hidden; ++i)
            b += h[i] * (double)sluice_load(rd[g * hidden + i]);
          xw[g] = a + (double)sluice_load(wb[g]);
          hr[g] = b + (double)sluice_load(rb[g]);
        }
        if (cell == 0) {
          for (int64_t i = 0; i < hidden; ++i)
            next[i] = sluice_act_apply(f[0], clipped(xw[i] + hr[i]));
        } else if (cell == 1) {
          for (int64_t i = 0; i < hidden; ++i) {
            z[i] = sluice_act_apply(f[0], clipped(xw[i] + hr[i]));
            reset[i] = sluice_act_apply(f[0], clipped(xw[hidden + i] + hr[hidden + i]));
          }
          for (int64_t i = 0; i < hidden; ++i) {
            double recurrent;
            if (linearBeforeReset) {
              recurrent = reset[i] * hr[2 * hidden + i];
            } else {
              double sum = 0.0;
              for (int64_t j = 0; j < hidden; ++j)
                sum += reset[j] * h[j] * (double)sluice_load(rd[(2 * hidden + i) * hidden + j]);
              recurrent = sum + (double)sluice_load(rb[2 * hidden + i]);
            }
            const double cand = sluice_act_apply(f[1], clipped(xw[2 * hidden + i] + recurrent));
            next[i] = (1.0 - z[i]) * cand + z[i] * h[i];
          }
        } else {
          const T *p = peep + d * 3 * hidden;
          for (int64_t i = 0; i < hidden; ++i) {
            const double in = sluice_act_apply(
                f[0], clipped(xw[i] + hr[i] + (double)sluice_load(p[i]) * c[i]));
            const double forget =
                inputForget ? 1.0 - in
                            : sluice_act_apply(f[0], clipped(xw[2 * hidden + i] + hr[2 * hidden + i] +
                                                             (double)sluice_load(p[2 * hidden + i]) * c[i]));
            const double cand =
                sluice_act_apply(f[1], clipped(xw[3 * hidden + i] + hr[3 * hidden + i]));
            c[i] = forget * c[i] + in * cand;
            const double out = sluice_act_apply(
                f[0], clipped(xw[hidden + i] + hr[hidden + i] +
                              (double)sluice_load(p[hidden + i]) * c[i]));
            next[i] = out * sluice_act_apply(f[2], c[i]);
          }
        }
        for (int64_t i = 0; i < hidden; ++i) {
          h[i] = next[i];
          y[((t * dirs + d) * batch + n) * hidden + i] = SLUICE_STORE(T, h[i]);
        }
      }
      for (int64_t i = 0; i < hidden; ++i) {
        yh[(d * batch + n) * hidden + i] = SLUICE_STORE(T, h[i]);
        if (yc)
          yc[(d * batch + n) * hidden + i] = SLUICE_STORE(T, c[i]);
      }
    }
  free(work);
  return 0;
}

#endif // SLUICE_GEN_CPU_NN_H
