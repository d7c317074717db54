//===- sluice_gen/cuda_movement.h - data movement kernels (cuda) -*- C++ -*-===//
//
// Gather and row copies (concat) move bytes: the emitter picks the widest
// chunk type (uint4, uint2, unsigned, unsigned short, unsigned char) that
// divides the bytes of a contiguous row and the row offsets, so that
// embedding lookups and concatenations run on 128-bit loads and stores.
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CUDA_MOVEMENT_H
#define SLUICE_GEN_CUDA_MOVEMENT_H

#include "sluice_gen/cuda.h"
#include "sluice_gen/cuda_move_kernels.cuh"

/// out[o][p][i] = in[o][idx[p]][i] in chunks C: `inner` chunks per slice,
/// `extent` slices along the gathered axis, `count` indices. Negative
/// indices count from the end; out-of-range ones are reported through the
/// error word (and write zeros).
template <typename C, typename I>
__global__ void __launch_bounds__(256)
sluice_gather_kernel(const C *__restrict__ in, const I *__restrict__ idx, C *__restrict__ out,
                     int64_t outer, int64_t extent, int64_t inner, int64_t count, int *error,
                     int step) {
  int64_t total = outer * count * inner;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x) {
    int64_t i = e % inner, r = e / inner;
    int64_t p = r % count, o = r / count;
    int64_t k = (int64_t)idx[p];
    if (k < 0)
      k += extent;
    if (k < 0 || k >= extent) {
      sluice_device_fail(error, step);
      out[e] = C();
      continue;
    }
    out[e] = in[(o * extent + k) * inner + i];
  }
}

/// dst[o * dstRow + i] = src[o * srcRow + i] for i < len, in chunks C.
template <typename C>
__global__ void __launch_bounds__(256)
sluice_copy_rows_kernel(const C *__restrict__ src, int64_t srcRow, C *__restrict__ dst,
                        int64_t dstRow, int64_t outer, int64_t len) {
  int64_t total = outer * len;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x) {
    int64_t o = e / len, i = e % len;
    dst[o * dstRow + i] = src[o * srcRow + i];
  }
}

/// CumSum along the middle axis of [outer, len, inner] (contiguous): one
/// thread per line, sequential along it, summing in sluice_load's type
/// (f32 for f16 / bf16, the type itself otherwise, as the evaluator);
/// `exclusive` leaves each element out of its own sum, `reverse` runs from
/// the end.
template <typename T>
__global__ void __launch_bounds__(256)
sluice_cumsum_kernel(const T *__restrict__ in, T *__restrict__ out, int64_t outer, int64_t len,
                     int64_t inner, bool exclusive, bool reverse) {
  using A = decltype(sluice_load(T()));
  for (int64_t line = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; line < outer * inner;
       line += (int64_t)gridDim.x * blockDim.x) {
    const int64_t base = (line / inner) * len * inner + line % inner;
    A acc = A(0);
    for (int64_t t = 0; t < len; ++t) {
      const int64_t at = base + (reverse ? len - 1 - t : t) * inner;
      const A v = sluice_load(in[at]);
      if (exclusive) {
        out[at] = SLUICE_STORE(T, acc);
        acc += v;
      } else {
        acc += v;
        out[at] = SLUICE_STORE(T, acc);
      }
    }
  }
}

#endif // SLUICE_GEN_CUDA_MOVEMENT_H
