//===- sluice_gen/cpu_movement.h - data-movement kernels (cpu target) -*- C++ -*-===//
//
// Kernel templates for the shape and indexing ops of the cpu target
// (codegen/cpu/ops/Movement.cpp writes the calls). Movement never does
// arithmetic on the elements, so most templates are typed only to copy whole
// elements; shapes, strides and index tables are compile-time arrays the
// emitter writes next to the call. The semantics are those of the reference
// evaluator (lib/reference/Shape.cpp, Indexing.cpp).
//
// The workhorse is sluice_strided_copy: a contiguous destination read from an
// N-d view of the source with arbitrary (also negative or zero) strides, which
// is transpose, slice, expand and tile. The emitter collapses dims first, so
// the innermost loop is as long as it can be.
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CPU_MOVEMENT_H
#define SLUICE_GEN_CPU_MOVEMENT_H

#include "sluice_gen/cpu.h"

#include <stdint.h>
#include <string.h>

/// Below this many elements a kernel runs on one thread: thread start-up
/// costs more than the copy.
#define SLUICE_MOVE_PARALLEL 32768

/// dst (contiguous, `shape`) = src[offset + sum_d idx[d] * strides[d]].
/// `rank` >= 1. Rows of the last dim are the unit of work.
template <typename T>
static inline void sluice_strided_copy(int threads, int64_t rank, const int64_t *shape,
                                       const int64_t *strides, int64_t offset,
                                       const T *__restrict src, T *__restrict dst) {
  int64_t inner = shape[rank - 1], innerStride = strides[rank - 1], rows = 1;
  for (int64_t d = 0; d + 1 < rank; ++d)
    rows *= shape[d];
  int64_t total = rows * inner;
#pragma omp parallel for num_threads(threads) schedule(static) if (total > SLUICE_MOVE_PARALLEL)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t rest = r, from = offset;
    for (int64_t d = rank - 2; d >= 0; --d) {
      from += (rest % shape[d]) * strides[d];
      rest /= shape[d];
    }
    T *out = dst + r * inner;
    const T *in = src + from;
    if (innerStride == 1) {
      memcpy(out, in, (size_t)inner * sizeof(T));
    } else {
      for (int64_t i = 0; i < inner; ++i)
        out[i] = in[i * innerStride];
    }
  }
}

/// A transpose-like strided copy whose innermost output dim is not the
/// source's unit-stride dim: dim `p` of the view has source stride 1. The
/// (p, last) plane is copied in square tiles so that both the reads and the
/// writes stay in cache lines.
template <typename T>
static inline void sluice_tiled_copy(int threads, int64_t rank, const int64_t *shape,
                                     const int64_t *strides, int64_t offset, int64_t p,
                                     const T *__restrict src, T *__restrict dst) {
  const int64_t tile = 32;
  int64_t last = rank - 1, np = shape[p], nl = shape[last], sl = strides[last];
  // Output strides of dims p (the last dim's is 1).
  int64_t outP = 1;
  for (int64_t d = p + 1; d < rank; ++d)
    outP *= shape[d];
  int64_t outer = 1;
  for (int64_t d = 0; d < last; ++d)
    if (d != p)
      outer *= shape[d];
  int64_t tilesP = (np + tile - 1) / tile, tilesL = (nl + tile - 1) / tile;
  int64_t work = outer * tilesP * tilesL;
  int64_t total = outer * np * nl;
#pragma omp parallel for num_threads(threads) schedule(static) if (total > SLUICE_MOVE_PARALLEL)
  for (int64_t w = 0; w < work; ++w) {
    int64_t tl = w % tilesL, tp = (w / tilesL) % tilesP, rest = w / (tilesL * tilesP);
    int64_t from = offset, to = 0, outStride = nl;
    for (int64_t d = last - 1; d >= 0; --d) {
      if (d != p) {
        int64_t c = rest % shape[d];
        rest /= shape[d];
        from += c * strides[d];
        to += c * outStride;
      }
      outStride *= shape[d];
    }
    int64_t p0 = tp * tile, p1 = p0 + tile < np ? p0 + tile : np;
    int64_t l0 = tl * tile, l1 = l0 + tile < nl ? l0 + tile : nl;
    for (int64_t i = p0; i < p1; ++i) {
      T *out = dst + to + i * outP;
      const T *in = src + from + i;
      for (int64_t j = l0; j < l1; ++j)
        out[j] = in[j * sl];
    }
  }
}

/// `outer` rows of `n` elements from src (rows `srcRow` apart) to dst (rows
/// `dstRow` apart): one input of a concat, one piece of a split.
template <typename T>
static inline void sluice_copy_rows(int threads, int64_t outer, int64_t n, const T *src,
                                    int64_t srcRow, T *dst, int64_t dstRow) {
#pragma omp parallel for num_threads(threads) schedule(static) if (outer * n > SLUICE_MOVE_PARALLEL && outer > 1)
  for (int64_t o = 0; o < outer; ++o)
    memcpy(dst + o * dstRow, src + o * srcRow, (size_t)n * sizeof(T));
}

/// Fills `n` elements with `value`.
template <typename T>
static inline void sluice_fill(int threads, int64_t n, T value, T *dst) {
#pragma omp parallel for num_threads(threads) schedule(static) if (n > SLUICE_MOVE_PARALLEL)
  for (int64_t i = 0; i < n; ++i)
    dst[i] = value;
}

/// dst (contiguous, `shape`) from per-dim tables: the element at idx is
/// src[sum_d table[tableStart[d] + idx[d]]], or `fill` where any of those
/// table entries is negative (pad in every mode: each dim's table holds the
/// source offset of each output position, -1 outside the input). Positions
/// [runBegin, runEnd) of the innermost dim read consecutive source elements
/// (the unpadded interior) and are copied with memcpy.
template <typename T>
static inline void sluice_table_gather(int threads, int64_t rank, const int64_t *shape,
                                       const int64_t *tableStart, const int64_t *table,
                                       int64_t runBegin, int64_t runEnd, T fill,
                                       const T *__restrict src, T *__restrict dst) {
  int64_t inner = shape[rank - 1], rows = 1;
  for (int64_t d = 0; d + 1 < rank; ++d)
    rows *= shape[d];
  const int64_t *innerTable = table + tableStart[rank - 1];
  int64_t total = rows * inner;
#pragma omp parallel for num_threads(threads) schedule(static) if (total > SLUICE_MOVE_PARALLEL)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t rest = r, from = 0;
    bool outside = false;
    for (int64_t d = rank - 2; d >= 0; --d) {
      int64_t t = table[tableStart[d] + rest % shape[d]];
      rest /= shape[d];
      outside |= t < 0;
      from += t;
    }
    T *out = dst + r * inner;
    if (outside) {
      for (int64_t i = 0; i < inner; ++i)
        out[i] = fill;
      continue;
    }
    const T *in = src + from;
    for (int64_t i = 0; i < runBegin; ++i) {
      int64_t t = innerTable[i];
      out[i] = t < 0 ? fill : in[t];
    }
    if (runEnd > runBegin)
      memcpy(out + runBegin, in + innerTable[runBegin], (size_t)(runEnd - runBegin) * sizeof(T));
    for (int64_t i = runEnd; i < inner; ++i) {
      int64_t t = innerTable[i];
      out[i] = t < 0 ? fill : in[t];
    }
  }
}

/// Trilu over `batches` matrices of rows x cols: keeps j - i >= k (upper)
/// or j - i <= k (lower), zero elsewhere.
template <typename T>
static inline void sluice_trilu(int threads, int64_t batches, int64_t rows, int64_t cols,
                                int64_t k, bool upper, const T *__restrict src,
                                T *__restrict dst) {
  T zero = SLUICE_STORE(T, 0);
  int64_t total = batches * rows * cols;
#pragma omp parallel for num_threads(threads) schedule(static) if (total > SLUICE_MOVE_PARALLEL)
  for (int64_t r = 0; r < batches * rows; ++r) {
    int64_t i = r % rows;
    const T *in = src + r * cols;
    T *out = dst + r * cols;
    for (int64_t j = 0; j < cols; ++j) {
      bool keep = upper ? j - i >= k : j - i <= k;
      out[j] = keep ? in[j] : zero;
    }
  }
}

/// ReverseSequence: the first lens[b] steps along the time axis of batch b
/// reversed. Fails (returns 1) on a length outside [0, time dim].
template <typename T, typename L>
static inline int32_t sluice_reverse_sequence(const SluiceRunArgs *args, const char *kernel,
                                              int64_t rank, const int64_t *shape,
                                              int64_t batchAxis, int64_t timeAxis,
                                              const L *lens, const T *__restrict src,
                                              T *__restrict dst) {
  for (int64_t b = 0; b < shape[batchAxis]; ++b)
    if (lens[b] < 0 || (int64_t)lens[b] > shape[timeAxis])
      return sluice_fail(args, kernel, "sequence length out of range");
  int64_t total = 1;
  for (int64_t d = 0; d < rank; ++d)
    total *= shape[d];
  for (int64_t e = 0; e < total; ++e) {
    int64_t rest = e, from = 0, stride = 1, b = 0, t = 0, tStride = 0;
    for (int64_t d = rank - 1; d >= 0; --d) {
      int64_t c = rest % shape[d];
      rest /= shape[d];
      if (d == batchAxis)
        b = c;
      if (d == timeAxis) {
        t = c;
        tStride = stride;
      }
      from += c * stride;
      stride *= shape[d];
    }
    int64_t len = (int64_t)lens[b];
    if (t < len)
      from += (len - 1 - 2 * t) * tStride;
    dst[e] = src[from];
  }
  return 0;
}

/// Gather along an axis: outer x extent x inner input, `count` indices.
template <typename T, typename I>
static inline int32_t sluice_gather(const SluiceRunArgs *args, const char *kernel,
                                    int64_t outer, int64_t extent, int64_t inner,
                                    int64_t count, const I *indices,
                                    const T *__restrict src, T *__restrict dst) {
  for (int64_t j = 0; j < count; ++j)
    if ((int64_t)indices[j] < -extent || (int64_t)indices[j] >= extent)
      return sluice_fail(args, kernel, "gather index out of range");
  int64_t work = outer * count, total = work * inner;
#pragma omp parallel for num_threads(args->num_threads) schedule(static) if (total > SLUICE_MOVE_PARALLEL)
  for (int64_t w = 0; w < work; ++w) {
    int64_t o = w / count, j = w % count, index = (int64_t)indices[j];
    if (index < 0)
      index += extent;
    const T *in = src + (o * extent + index) * inner;
    T *out = dst + w * inner;
    if (inner == 1)
      *out = *in;
    else
      memcpy(out, in, (size_t)inner * sizeof(T));
  }
  return 0;
}

/// The source offset of element `e` of an indices tensor of `shape` (rank
/// `rank`) read along `axis` at `index` of an input with `strides`.
static inline int64_t sluice_elements_offset(int64_t e, int64_t rank, const int64_t *shape,
                                             const int64_t *strides, int64_t axis,
                                             int64_t index) {
  int64_t offset = 0;
  for (int64_t d = rank - 1; d >= 0; --d) {
    int64_t c = e % shape[d];
    e /= shape[d];
    offset += (d == axis ? index : c) * strides[d];
  }
  return offset;
}

/// GatherElements: out has the indices' shape; inStrides are the input's.
template <typename T, typename I>
static inline int32_t sluice_gather_elements(const SluiceRunArgs *args, const char *kernel,
                                             int64_t rank, const int64_t *shape,
                                             const int64_t *inStrides, int64_t axis,
                                             int64_t extent, const I *indices,
                                             const T *__restrict src, T *__restrict dst) {
  int64_t total = 1;
  for (int64_t d = 0; d < rank; ++d)
    total *= shape[d];
  for (int64_t e = 0; e < total; ++e)
    if ((int64_t)indices[e] < -extent || (int64_t)indices[e] >= extent)
      return sluice_fail(args, kernel, "gather_elements index out of range");
#pragma omp parallel for num_threads(args->num_threads) schedule(static) if (total > SLUICE_MOVE_PARALLEL)
  for (int64_t e = 0; e < total; ++e) {
    int64_t index = (int64_t)indices[e];
    if (index < 0)
      index += extent;
    dst[e] = src[sluice_elements_offset(e, rank, shape, inStrides, axis, index)];
  }
  return 0;
}

/// Offsets (in slices) of the `tuples` index tuples of length k into dims
/// `dims`, written to `offsets`; fails on an index out of range.
template <typename I>
static inline int32_t sluice_tuple_offsets(const SluiceRunArgs *args, const char *kernel,
                                           int64_t tuples, int64_t k, const int64_t *dims,
                                           const I *indices, int64_t *offsets) {
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = 0;
    for (int64_t j = 0; j < k; ++j) {
      int64_t index = (int64_t)indices[t * k + j];
      if (index < -dims[j] || index >= dims[j])
        return sluice_fail(args, kernel, "index tuple out of range");
      if (index < 0)
        index += dims[j];
      offset = offset * dims[j] + index;
    }
    offsets[t] = offset;
  }
  return 0;
}

/// GatherND with `batches` leading batch dims, `tuples` index tuples of
/// length k per batch into dims `dims`, and slices of `slice` elements.
template <typename T, typename I>
static inline int32_t sluice_gather_nd(const SluiceRunArgs *args, const char *kernel,
                                       int64_t batches, int64_t tuples, int64_t k,
                                       const int64_t *dims, int64_t slice, int64_t perBatch,
                                       const I *indices, const T *__restrict src,
                                       T *__restrict dst) {
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t offset;
      if (int32_t s = sluice_tuple_offsets(args, kernel, 1, k, dims,
                                           indices + (b * tuples + t) * k, &offset))
        return s;
      memcpy(dst + (b * tuples + t) * slice, src + b * perBatch + offset * slice,
             (size_t)slice * sizeof(T));
    }
  return 0;
}

/// Scatter reductions, as the evaluator combines: floats in double,
/// integers in int64 (wrapping), max/min as std::max/std::min.
enum { SLUICE_SCATTER_NONE = 0, SLUICE_SCATTER_ADD, SLUICE_SCATTER_MUL,
       SLUICE_SCATTER_MAX, SLUICE_SCATTER_MIN };

template <typename T> struct sluice_scatter_math { typedef int64_t type; };
template <> struct sluice_scatter_math<float> { typedef double type; };
template <> struct sluice_scatter_math<double> { typedef double type; };
template <> struct sluice_scatter_math<sluice_f16> { typedef double type; };
template <> struct sluice_scatter_math<sluice_bf16> { typedef double type; };

static inline double sluice_scatter_add(double a, double b) { return a + b; }
static inline int64_t sluice_scatter_add(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a + (uint64_t)b);
}
static inline double sluice_scatter_mul(double a, double b) { return a * b; }
static inline int64_t sluice_scatter_mul(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a * (uint64_t)b);
}

template <typename T>
static inline void sluice_scatter_one(int reduction, T *to, T update) {
  typedef typename sluice_scatter_math<T>::type M;
  if (reduction == SLUICE_SCATTER_NONE) {
    *to = update;
    return;
  }
  M a = (M)sluice_load(*to), b = (M)sluice_load(update), r = b;
  switch (reduction) {
  case SLUICE_SCATTER_ADD: r = sluice_scatter_add(a, b); break;
  case SLUICE_SCATTER_MUL: r = sluice_scatter_mul(a, b); break;
  case SLUICE_SCATTER_MAX: r = a < b ? b : a; break;
  case SLUICE_SCATTER_MIN: r = b < a ? b : a; break;
  }
  *to = SLUICE_STORE(T, r);
}

/// ScatterElements: out = input, then each update written along `axis`.
/// Sequential, so that the last of duplicate indices wins as in the evaluator.
template <typename T, typename I>
static inline int32_t sluice_scatter_elements(const SluiceRunArgs *args, const char *kernel,
                                              int64_t inputSize, int64_t rank,
                                              const int64_t *shape, const int64_t *outStrides,
                                              int64_t axis, int64_t extent, int reduction,
                                              const T *input, const I *indices,
                                              const T *updates, T *dst) {
  if (dst != input)
    memcpy(dst, input, (size_t)inputSize * sizeof(T));
  int64_t total = 1;
  for (int64_t d = 0; d < rank; ++d)
    total *= shape[d];
  for (int64_t e = 0; e < total; ++e) {
    int64_t index = (int64_t)indices[e];
    if (index < -extent || index >= extent)
      return sluice_fail(args, kernel, "scatter_elements index out of range");
    if (index < 0)
      index += extent;
    sluice_scatter_one(reduction, dst + sluice_elements_offset(e, rank, shape, outStrides,
                                                               axis, index),
                       updates[e]);
  }
  return 0;
}

/// ScatterND: out = input, then `tuples` update slices of `slice` elements.
template <typename T, typename I>
static inline int32_t sluice_scatter_nd(const SluiceRunArgs *args, const char *kernel,
                                        int64_t inputSize, int64_t tuples, int64_t k,
                                        const int64_t *dims, int64_t slice, int reduction,
                                        const T *input, const I *indices, const T *updates,
                                        T *dst) {
  if (dst != input)
    memcpy(dst, input, (size_t)inputSize * sizeof(T));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset;
    if (int32_t s = sluice_tuple_offsets(args, kernel, 1, k, dims, indices + t * k, &offset))
      return s;
    T *to = dst + offset * slice;
    const T *from = updates + t * slice;
    if (reduction == SLUICE_SCATTER_NONE)
      memcpy(to, from, (size_t)slice * sizeof(T));
    else
      for (int64_t e = 0; e < slice; ++e)
        sluice_scatter_one(reduction, to + e, from[e]);
  }
  return 0;
}

/// OneHot: out[o][d][i] = values[indices[o][i] (wrapped) == d].
template <typename T, typename I>
static inline void sluice_one_hot(int threads, int64_t outer, int64_t depth, int64_t inner,
                                  const I *indices, const T *values, T *__restrict dst) {
  T off = values[0], on = values[1];
  int64_t total = outer * depth * inner;
#pragma omp parallel for num_threads(threads) schedule(static) if (total > SLUICE_MOVE_PARALLEL)
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t d = 0; d < depth; ++d)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t index = (int64_t)indices[o * inner + i];
        if (index < 0)
          index += depth;
        dst[(o * depth + d) * inner + i] = index == d ? on : off;
      }
}

#endif // SLUICE_GEN_CPU_MOVEMENT_H
