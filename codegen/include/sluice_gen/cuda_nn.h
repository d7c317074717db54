//===- sluice_gen/cuda_nn.h - pooling and batch norm kernels (cuda) -*- C++ -*-===//
//
// One thread per output element; the arithmetic mirrors the cpu kernels of
// cpu_nn.h / cpu_reduce.h (and so the evaluator): taps inside the input,
// max ignores the padding, average divides by the in-bounds count (or the
// count including explicit pads), Lp pools |x|^p, the first maximum's index
// for return_indices (row- or column-major). Up to 3 spatial dims, leading
// dims padded with 1.
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CUDA_NN_H
#define SLUICE_GEN_CUDA_NN_H

#include "sluice_gen/cuda.h"

struct sluice_cuda_window {
  int64_t in[3], k[3], out[3], s[3], d[3], pb[3], pe[3];
};

/// Taps [lo, hi) of a window starting at `start` that land in [from, to).
__device__ __forceinline__ void sluice_dtap_range(int64_t start, int64_t k, int64_t d,
                                                  int64_t from, int64_t to, int64_t &lo,
                                                  int64_t &hi) {
  int64_t l = 0, h = k;
  if (start < from)
    l = (from - start + d - 1) / d;
  if (start + (k - 1) * d >= to)
    h = to - start <= 0 ? 0 : (to - start + d - 1) / d;
  if (h < l)
    h = l;
  lo = l;
  hi = h;
}

/// Kind: 0 max, 1 average, 2 Lp.
template <typename T, int Kind>
__global__ void __launch_bounds__(256)
sluice_pool_kernel(sluice_cuda_window g, int64_t planes, bool countIncludePad, double p,
                   bool columnMajor, const T *__restrict__ x, T *__restrict__ out,
                   int64_t *__restrict__ indices) {
  const int64_t outSize = g.out[0] * g.out[1] * g.out[2];
  const int64_t inSize = g.in[0] * g.in[1] * g.in[2];
  const int64_t total = planes * outSize;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t plane = e / outSize, oi = e % outSize;
    const int64_t o2 = oi % g.out[2], o1 = (oi / g.out[2]) % g.out[1],
                  o0 = oi / (g.out[2] * g.out[1]);
    const int64_t s0 = o0 * g.s[0] - g.pb[0], s1 = o1 * g.s[1] - g.pb[1],
                  s2 = o2 * g.s[2] - g.pb[2];
    int64_t lo0, hi0, lo1, hi1, lo2, hi2;
    sluice_dtap_range(s0, g.k[0], g.d[0], 0, g.in[0], lo0, hi0);
    sluice_dtap_range(s1, g.k[1], g.d[1], 0, g.in[1], lo1, hi1);
    sluice_dtap_range(s2, g.k[2], g.d[2], 0, g.in[2], lo2, hi2);
    const T *xp = x + plane * inSize;
    double acc = Kind == 0 ? -INFINITY : 0.0;
    int64_t argmax = -1;
    for (int64_t k0 = lo0; k0 < hi0; ++k0) {
      const int64_t i0 = s0 + k0 * g.d[0];
      for (int64_t k1 = lo1; k1 < hi1; ++k1) {
        const int64_t i1 = s1 + k1 * g.d[1];
        const T *row = xp + (i0 * g.in[1] + i1) * g.in[2];
        for (int64_t k2 = lo2; k2 < hi2; ++k2) {
          const int64_t i2 = s2 + k2 * g.d[2];
          const double v = (double)sluice_load(row[i2]);
          if (Kind == 0) {
            if (v > acc || argmax < 0) {
              acc = v;
              argmax = columnMajor ? (i2 * g.in[1] + i1) * g.in[0] + i0
                                   : (i0 * g.in[1] + i1) * g.in[2] + i2;
            }
          } else if (Kind == 1) {
            acc += v;
          } else {
            acc += pow(fabs(v), p);
          }
        }
      }
    }
    double value = acc;
    if (Kind == 1) {
      if (countIncludePad) {
        int64_t a0, b0, a1, b1, a2, b2;
        sluice_dtap_range(s0, g.k[0], g.d[0], -g.pb[0], g.in[0] + g.pe[0], a0, b0);
        sluice_dtap_range(s1, g.k[1], g.d[1], -g.pb[1], g.in[1] + g.pe[1], a1, b1);
        sluice_dtap_range(s2, g.k[2], g.d[2], -g.pb[2], g.in[2] + g.pe[2], a2, b2);
        value = acc / (double)((b0 - a0) * (b1 - a1) * (b2 - a2));
      } else {
        value = acc / (double)((hi0 - lo0) * (hi1 - lo1) * (hi2 - lo2));
      }
    } else if (Kind == 2) {
      value = pow(acc, 1.0 / p);
    }
    out[e] = SLUICE_STORE(T, value);
    if (indices)
      indices[e] = plane * inSize + argmax;
  }
}

/// y = (x - mean) * scale / sqrt(var + eps) + bias per channel, NC... layout.
template <typename T, typename P>
__global__ void __launch_bounds__(256)
sluice_batch_norm_kernel(const T *__restrict__ in, const P *__restrict__ scale,
                         const P *__restrict__ bias, const P *__restrict__ mean,
                         const P *__restrict__ var, T *__restrict__ out, int64_t batch,
                         int64_t channels, int64_t plane, float eps) {
  const int64_t total = batch * channels * plane;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x) {
    // The compute type of T (float for half types), as the cpu kernel.
    typedef decltype(sluice_load(in[0])) C;
    const int64_t c = (e / plane) % channels;
    const C k = (C)((double)sluice_load(scale[c]) / sqrt((double)sluice_load(var[c]) + (double)eps));
    const C m = (C)sluice_load(mean[c]), b = (C)sluice_load(bias[c]);
    out[e] = SLUICE_STORE(T, ((C)sluice_load(in[e]) - m) * k + b);
  }
}

#endif // SLUICE_GEN_CUDA_NN_H
