//===- sluice_gen/cpu_nn.h - convolution and pooling kernels -*- C++ -*-===//
//
// Window ops of the cpu target. Every spatial form is normalized to 3-D by
// the emitter (missing leading dims have size 1, stride 1, dilation 1, no
// padding), so one loop nest serves 1-D, 2-D and 3-D. Float convolutions are
// im2col + OpenBLAS GEMM per group (transposed: GEMM + col2im), in
// sluice_gen/cpu_nn_blas.h; every other element type, and depthwise
// convolutions, run the direct loops here, accumulating in double (ints:
// int64) as the reference evaluator does.
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CPU_NN_H
#define SLUICE_GEN_CPU_NN_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/// Geometry of a (normalized 3-D) window op. `in`/`out` are spatial sizes,
/// `pb`/`pe` begin/end pads.
struct sluice_window {
  int64_t in[3], k[3], out[3], s[3], d[3], pb[3], pe[3];
  int64_t inSize() const { return in[0] * in[1] * in[2]; }
  int64_t kSize() const { return k[0] * k[1] * k[2]; }
  int64_t outSize() const { return out[0] * out[1] * out[2]; }
};

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
        for (int64_t o1 = 0; o1 < g.out[1]; ++o1)
          for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
            A acc = A(0);
            for (int64_t c = 0; c < cpg; ++c) {
              const X *xp = x + (n * channels + grp * cpg + c) * inSize;
              const W *wp = w + (m * cpg + c) * kSize;
              for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
                const int64_t i0 = o0 * g.s[0] - g.pb[0] + k0 * g.d[0];
                if (i0 < 0 || i0 >= g.in[0])
                  continue;
                for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
                  const int64_t i1 = o1 * g.s[1] - g.pb[1] + k1 * g.d[1];
                  if (i1 < 0 || i1 >= g.in[1])
                    continue;
                  const X *row = xp + (i0 * g.in[1] + i1) * g.in[2];
                  const W *wrow = wp + (k0 * g.k[1] + k1) * g.k[2];
                  for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
                    const int64_t i2 = o2 * g.s[2] - g.pb[2] + k2 * g.d[2];
                    if (i2 < 0 || i2 >= g.in[2])
                      continue;
                    acc += ((A)sluice_load(row[i2]) - xZero) * ((A)sluice_load(wrow[k2]) - wz);
                  }
                }
              }
            }
            if (bias)
              acc += (A)sluice_load(bias[m]);
            op[(o0 * g.out[1] + o1) * g.out[2] + o2] = SLUICE_STORE(O, acc);
          }
    }
}

//===----------------------------------------------------------------------===//
// im2col + GEMM convolution (f32, f64)
//===----------------------------------------------------------------------===//


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
/// column-major over the `spatial` real dims when `columnMajor`.
template <typename T>
static inline void sluice_pool(int threads, const sluice_window &g, int64_t planes, int kind,
                               bool countIncludePad, double p, bool columnMajor,
                               int64_t spatial, const T *x, T *out, int64_t *indices) {
  const int64_t inSize = g.inSize(), kSize = g.kSize(), outSize = g.outSize();
  (void)kSize;
  (void)spatial;
#pragma omp parallel for collapse(2) num_threads(threads) if (planes * outSize * kSize > 32768)
  for (int64_t plane = 0; plane < planes; ++plane)
    for (int64_t oi = 0; oi < outSize; ++oi) {
      const int64_t o0 = oi / (g.out[1] * g.out[2]), o1 = (oi / g.out[2]) % g.out[1],
                    o2 = oi % g.out[2];
      const T *xp = x + plane * inSize;
      double acc = kind == 0 ? -INFINITY : 0.0;
      int64_t argmax = -1, inBounds = 0, inPadded = 0;
      for (int64_t k0 = 0; k0 < g.k[0]; ++k0) {
        const int64_t i0 = o0 * g.s[0] - g.pb[0] + k0 * g.d[0];
        const bool in0 = i0 >= 0 && i0 < g.in[0];
        const bool pad0 = i0 >= -g.pb[0] && i0 < g.in[0] + g.pe[0];
        for (int64_t k1 = 0; k1 < g.k[1]; ++k1) {
          const int64_t i1 = o1 * g.s[1] - g.pb[1] + k1 * g.d[1];
          const bool in1 = in0 && i1 >= 0 && i1 < g.in[1];
          const bool pad1 = pad0 && i1 >= -g.pb[1] && i1 < g.in[1] + g.pe[1];
          for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
            const int64_t i2 = o2 * g.s[2] - g.pb[2] + k2 * g.d[2];
            const bool inside = in1 && i2 >= 0 && i2 < g.in[2];
            inPadded += pad1 && i2 >= -g.pb[2] && i2 < g.in[2] + g.pe[2];
            if (!inside)
              continue;
            ++inBounds;
            const int64_t offset = (i0 * g.in[1] + i1) * g.in[2] + i2;
            const double v = (double)sluice_load(xp[offset]);
            if (kind == 0) {
              if (v > acc || argmax < 0) {
                acc = v;
                argmax = columnMajor ? (i2 * g.in[1] + i1) * g.in[0] + i0 : offset;
              }
            } else if (kind == 1) {
              acc += v;
            } else {
              acc += pow(fabs(v), p);
            }
          }
        }
      }
      double value = acc;
      if (kind == 1)
        value = acc / (double)(countIncludePad ? inPadded : inBounds);
      else if (kind == 2)
        value = pow(acc, 1.0 / p);
      out[plane * outSize + oi] = SLUICE_STORE(T, value);
      if (indices)
        indices[plane * outSize + oi] = plane * inSize + argmax;
    }
}

#endif // SLUICE_GEN_CPU_NN_H
