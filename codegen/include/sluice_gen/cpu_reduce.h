//===- sluice_gen/cpu_reduce.h - reductions and normalizations (cpu) -*- C++ -*-===//
//
// Kernel templates of the cpu target for the reduction family (reduce,
// softmax, argmax/argmin, topk, cumsum) and the normalizations (layer,
// instance, group and batch norm, LRN). Semantics follow the reference
// evaluator (lib/reference/Reduction.cpp and Linalg.cpp). Every op works on
// an "outer x extent x inner" view of its input, with the emitter folding
// the shape into those three sizes at compile time.
//
// Numerics: reductions of f32 accumulate in double as the evaluator does;
// softmax and layer norm (the transformer hot path) compute rows in float,
// softmax with a polynomial exp that vectorizes; both stay well inside the
// conformance tolerance (rtol 1e-4) for rows of thousands of elements.
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CPU_REDUCE_H
#define SLUICE_GEN_CPU_REDUCE_H

#include "sluice_gen/cpu_scratch.h"
#include "sluice_gen/scalar.h"

#include <stdint.h>
#include <stdlib.h>

/// Accumulator of a reduction over elements of storage type T: double for
/// every floating type (as the evaluator), int64_t for integers.
template <typename T> struct sluice_acc { typedef int64_t type; };
template <> struct sluice_acc<float> { typedef double type; };
template <> struct sluice_acc<double> { typedef double type; };
template <> struct sluice_acc<sluice_f16> { typedef double type; };
template <> struct sluice_acc<sluice_bf16> { typedef double type; };

/// Arithmetic type of row-wise float kernels (softmax, norms): double for
/// f64, float otherwise.
template <typename T> struct sluice_rowc { typedef float type; };
template <> struct sluice_rowc<double> { typedef double type; };

/// Sixteen floats as a GCC/Clang vector: the f32 softmax and max/min paths
/// use them directly because generated code builds at -O2, whose vectorizer
/// neither if-converts float compares (trapping math: exp's clamps, NaN-aware
/// selects) nor accepts loops needing an epilogue; explicit vectors depend on
/// neither. (Compare masks are combined with `|`, which Clang accepts too.)
typedef float sluice_v16f __attribute__((vector_size(64)));
typedef int32_t sluice_v16i __attribute__((vector_size(64)));

inline sluice_v16f sluice_v16_load(const float *p) {
  sluice_v16f v;
  memcpy(&v, p, sizeof(v));
  return v;
}
inline void sluice_v16_store(float *p, sluice_v16f v) { memcpy(p, &v, sizeof(v)); }
inline sluice_v16f sluice_v16_splat(float f) { return sluice_v16f{} + f; }
inline float sluice_v16_max(sluice_v16f v) {
  float m = v[0];
  for (int l = 1; l < 16; ++l)
    m = v[l] > m ? v[l] : m;
  return m;
}
inline float sluice_v16_sum(sluice_v16f v) {
  float s = 0;
  for (int l = 0; l < 16; ++l)
    s += v[l];
  return s;
}

template <typename T> struct sluice_is_f32 { static const bool value = false; };
template <> struct sluice_is_f32<float> { static const bool value = true; };

/// Tile width of the "inner > 1" loops: accumulators for this many
/// neighbouring columns live on the stack while the extent is walked.
#define SLUICE_RED_TILE 256

//===----------------------------------------------------------------------===//
// reduce (kind: 0 sum, 1 prod, 2 max, 3 min, 4 mean, as sluice::ReduceKind)
//===----------------------------------------------------------------------===//

template <typename A> struct sluice_acc_is_int { static const bool value = false; };
template <> struct sluice_acc_is_int<int64_t> { static const bool value = true; };

template <int K, typename A> inline A sluice_red_identity() {
  if (K == 1)
    return (A)1;
  if (K == 2)
    return sluice_acc_is_int<A>::value ? (A)INT64_MIN : (A)-INFINITY;
  if (K == 3)
    return sluice_acc_is_int<A>::value ? (A)INT64_MAX : (A)INFINITY;
  return (A)0;
}

/// One combining step; max/min propagate NaN (the first NaN sticks).
template <int K, typename A> inline void sluice_red_step(A &a, A v) {
  if (K == 0 || K == 4)
    a += v;
  else if (K == 1)
    a *= v;
  else if (K == 2)
    a = (sl_isnan(v) || v > a) ? v : a;
  else
    a = (sl_isnan(v) || v < a) ? v : a;
}

/// The stored result of an accumulator over `count` elements.
template <int K, typename O, typename A> inline O sluice_red_finish(A a, int64_t count) {
  if (K == 4) {
    if (sluice_acc_is_int<A>::value)
      a = count ? a / (A)count : (A)0;
    else
      a = count ? a / (A)count : (A)NAN;
  }
  return SLUICE_STORE(O, a);
}

/// Reduces the middle dim of an [outer, extent, inner] view.
template <int K, typename T, typename O>
inline void sluice_reduce_3d(int threads, const T *in, O *out, int64_t outer,
                             int64_t extent, int64_t inner) {
  typedef typename sluice_acc<T>::type A;
  if (inner == 1) {
#pragma omp parallel for num_threads(threads) if (outer * extent > 32768)
    for (int64_t o = 0; o < outer; ++o) {
      const T *row = in + o * extent;
      A a = sluice_red_identity<K, A>();
      if (K == 0 || K == 4) {
#pragma omp simd reduction(+ : a)
        for (int64_t e = 0; e < extent; ++e)
          a += (A)sluice_load(row[e]);
      } else if (sluice_is_f32<T>::value && (K == 2 || K == 3)) {
        // Sixteen NaN-sticky lanes, then the lanes and the tail in order.
        const float *rowf = (const float *)(const void *)row;
        int64_t body = extent / 16 * 16;
        sluice_v16f lanes = sluice_v16_splat(K == 2 ? -INFINITY : INFINITY);
        for (int64_t e = 0; e < body; e += 16) {
          sluice_v16f v = sluice_v16_load(rowf + e);
          lanes = ((v != v) | (K == 2 ? v > lanes : v < lanes)) ? v : lanes;
        }
        for (int l = 0; l < 16; ++l)
          sluice_red_step<K, A>(a, (A)lanes[l]);
        for (int64_t e = body; e < extent; ++e)
          sluice_red_step<K, A>(a, (A)rowf[e]);
      } else {
        for (int64_t e = 0; e < extent; ++e)
          sluice_red_step<K, A>(a, (A)sluice_load(row[e]));
      }
      out[o] = sluice_red_finish<K, O, A>(a, extent);
    }
    return;
  }
  int64_t tiles = (inner + SLUICE_RED_TILE - 1) / SLUICE_RED_TILE;
#pragma omp parallel for collapse(2) num_threads(threads) if (outer * extent * inner > 32768)
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t t = 0; t < tiles; ++t) {
      A acc[SLUICE_RED_TILE];
      int64_t i0 = t * SLUICE_RED_TILE;
      int64_t n = inner - i0 < SLUICE_RED_TILE ? inner - i0 : SLUICE_RED_TILE;
      for (int64_t i = 0; i < n; ++i)
        acc[i] = sluice_red_identity<K, A>();
      for (int64_t e = 0; e < extent; ++e) {
        const T *p = in + (o * extent + e) * inner + i0;
#pragma omp simd
        for (int64_t i = 0; i < n; ++i)
          sluice_red_step<K, A>(acc[i], (A)sluice_load(p[i]));
      }
      for (int64_t i = 0; i < n; ++i)
        out[o * inner + i0 + i] = sluice_red_finish<K, O, A>(acc[i], extent);
    }
}

/// Reduces any set of dims: output element o sits at the kept dims'
/// row-major position; the reduced dims are walked with their input strides
/// (the last reduced dim innermost).
template <int K, typename T, typename O>
inline void sluice_reduce_strided(int threads, const T *in, O *out, int64_t outCount,
                                  int keptRank, const int64_t *keptDims,
                                  const int64_t *keptStrides, int redRank,
                                  const int64_t *redDims, const int64_t *redStrides) {
  typedef typename sluice_acc<T>::type A;
  int64_t redCount = 1;
  for (int d = 0; d < redRank; ++d)
    redCount *= redDims[d];
  int64_t last = redDims[redRank - 1], lastStride = redStrides[redRank - 1];
  int64_t outerRed = last ? redCount / last : 0;
#pragma omp parallel for num_threads(threads) if (outCount * redCount > 32768)
  for (int64_t o = 0; o < outCount; ++o) {
    int64_t base = 0, rest = o;
    for (int d = keptRank - 1; d >= 0; --d) {
      base += (rest % keptDims[d]) * keptStrides[d];
      rest /= keptDims[d];
    }
    A a = sluice_red_identity<K, A>();
    for (int64_t r = 0; r < outerRed; ++r) {
      int64_t off = base;
      rest = r;
      for (int d = redRank - 2; d >= 0; --d) {
        off += (rest % redDims[d]) * redStrides[d];
        rest /= redDims[d];
      }
      for (int64_t e = 0; e < last; ++e)
        sluice_red_step<K, A>(a, (A)sluice_load(in[off + e * lastStride]));
    }
    out[o] = sluice_red_finish<K, O, A>(a, redCount);
  }
}

//===----------------------------------------------------------------------===//
// softmax
//===----------------------------------------------------------------------===//

/// exp for float as a polynomial (Cephes' expf): plain arithmetic, so loops
/// calling it vectorize, within 2 ulp of expf over its range. Arguments
/// below -87.3 give 0; NaN stays NaN.
inline float sluice_exp_fast(float x0) {
  float x = x0 < 88.3762626647949f ? x0 : 88.3762626647949f;
  x = x > -88.3762626647949f ? x : -88.3762626647949f;
  // floor by truncation and a fix-up: floorf is a library call unless
  // -fno-trapping-math, which would keep the loop scalar.
  float t = x * 1.44269504088896341f + 0.5f;
  int32_t ti = (int32_t)t;
  ti -= t < (float)ti ? 1 : 0;
  float fx = (float)ti;
  x = x - fx * 0.693359375f;
  x = x + fx * 2.12194440e-4f;
  float z = x * x;
  float y = 1.9875691500E-4f;
  y = y * x + 1.3981999507E-3f;
  y = y * x + 8.3334519073E-3f;
  y = y * x + 4.1665795894E-2f;
  y = y * x + 1.6666665459E-1f;
  y = y * x + 5.0000001201E-1f;
  y = y * z + x + 1.0f;
  int32_t n = ti + 127;
  n = n < 0 ? 0 : n;
  float scale = __builtin_bit_cast(float, (uint32_t)n << 23);
  float r = y * scale;
  return x0 != x0 ? x0 : r;
}
inline double sluice_exp_fast(double x) { return exp(x); }

/// sluice_exp_fast on sixteen lanes.
inline sluice_v16f sluice_exp_v16(sluice_v16f x0) {
  const sluice_v16f hi = sluice_v16_splat(88.3762626647949f), lo = -hi;
  sluice_v16f x = x0 < hi ? x0 : hi;
  x = x > lo ? x : lo;
  sluice_v16f t = x * 1.44269504088896341f + 0.5f;
  sluice_v16i ti = __builtin_convertvector(t, sluice_v16i);
  ti += (t < __builtin_convertvector(ti, sluice_v16f)); // true is -1: floor
  sluice_v16f fx = __builtin_convertvector(ti, sluice_v16f);
  x = x - fx * 0.693359375f;
  x = x + fx * 2.12194440e-4f;
  sluice_v16f z = x * x;
  sluice_v16f y = sluice_v16_splat(1.9875691500E-4f);
  y = y * x + 1.3981999507E-3f;
  y = y * x + 8.3334519073E-3f;
  y = y * x + 4.1665795894E-2f;
  y = y * x + 1.6666665459E-1f;
  y = y * x + 5.0000001201E-1f;
  y = y * z + x + 1.0f;
  sluice_v16i n = ti + 127;
  n = n < 0 ? sluice_v16i{} : n;
  sluice_v16f r = y * (sluice_v16f)(n << 23);
  return x0 != x0 ? x0 : r;
}

/// max(x[0..n)), sixteen lanes at a time.
inline float sluice_row_max_f32(const float *x, int64_t n) {
  const int64_t body = n / 16 * 16;
  sluice_v16f mv = sluice_v16_splat(-INFINITY);
  for (int64_t e = 0; e < body; e += 16) {
    sluice_v16f v = sluice_v16_load(x + e);
    mv = v > mv ? v : mv;
  }
  float m = sluice_v16_max(mv);
  for (int64_t e = body; e < n; ++e)
    m = x[e] > m ? x[e] : m;
  return m;
}

/// Sum of exp(x[e] - m) over x[0..n), sixteen lanes at a time; with Store,
/// each exp also goes to y[e] (y may be x).
template <bool Store>
inline float sluice_row_expsum_f32(const float *x, int64_t n, float m, float *y) {
  const int64_t body = n / 16 * 16;
  sluice_v16f sv = sluice_v16f{};
  for (int64_t e = 0; e < body; e += 16) {
    sluice_v16f ex = sluice_exp_v16(sluice_v16_load(x + e) - m);
    if (Store)
      sluice_v16_store(y + e, ex);
    sv += ex;
  }
  float sum = sluice_v16_sum(sv);
  for (int64_t e = body; e < n; ++e) {
    float ex = sluice_exp_fast(x[e] - m);
    if (Store)
      y[e] = ex;
    sum += ex;
  }
  return sum;
}

/// Softmax (or log-softmax) of contiguous f32 rows, sixteen lanes at a time.
inline void sluice_softmax_rows_f32(int threads, const float *in, float *out, int64_t rows,
                                    int64_t extent, bool logSoftmax) {
  int64_t body = extent / 16 * 16;
#pragma omp parallel for num_threads(threads) if (rows * extent > 16384)
  for (int64_t r = 0; r < rows; ++r) {
    const float *x = in + r * extent;
    float *y = out + r * extent;
    float m = sluice_row_max_f32(x, extent);
    float sum = logSoftmax ? sluice_row_expsum_f32<false>(x, extent, m, nullptr)
                           : sluice_row_expsum_f32<true>(x, extent, m, y);
    if (logSoftmax) {
      float shift = m + logf(sum);
      for (int64_t e = 0; e < body; e += 16)
        sluice_v16_store(y + e, sluice_v16_load(x + e) - shift);
      for (int64_t e = body; e < extent; ++e)
        y[e] = x[e] - shift;
    } else {
      float inv = 1.0f / sum;
      for (int64_t e = 0; e < body; e += 16)
        sluice_v16_store(y + e, sluice_v16_load(y + e) * inv);
      for (int64_t e = body; e < extent; ++e)
        y[e] *= inv;
    }
  }
}

/// Softmax (or log-softmax) of contiguous rows (inner == 1) of any float type.
template <typename T>
inline void sluice_softmax_rows(int threads, const T *in, T *out, int64_t rows,
                                int64_t extent, bool logSoftmax) {
  typedef typename sluice_rowc<T>::type C;
#pragma omp parallel for num_threads(threads) if (rows * extent > 16384)
  for (int64_t r = 0; r < rows; ++r) {
    const T *x = in + r * extent;
    T *y = out + r * extent;
    C m = (C)-INFINITY;
    for (int64_t e = 0; e < extent; ++e) {
      C v = (C)sluice_load(x[e]);
      m = v > m ? v : m;
    }
    C sum = 0;
    for (int64_t e = 0; e < extent; ++e)
      sum += sluice_exp_fast((C)sluice_load(x[e]) - m);
    C shift = m + (C)sl_log(sum), inv = (C)1 / sum;
    for (int64_t e = 0; e < extent; ++e) {
      C v = (C)sluice_load(x[e]);
      y[e] = SLUICE_STORE(T, logSoftmax ? v - shift : sluice_exp_fast(v - m) * inv);
    }
  }
}
inline void sluice_softmax_rows(int threads, const float *in, float *out, int64_t rows,
                                int64_t extent, bool logSoftmax) {
  sluice_softmax_rows_f32(threads, in, out, rows, extent, logSoftmax);
}

/// Softmax of f32 along a strided dim (inner >= 16): sixteen neighbouring
/// columns per vector, the last partial group overlapping the one before.
inline void sluice_softmax_cols_f32(int threads, const float *in, float *out, int64_t outer,
                                    int64_t extent, int64_t inner, bool logSoftmax) {
  int64_t groups = (inner + 15) / 16;
#pragma omp parallel for collapse(2) num_threads(threads) if (outer * extent * inner > 16384)
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t g = 0; g < groups; ++g) {
      int64_t i0 = g * 16 + 16 <= inner ? g * 16 : inner - 16;
      const float *x = in + o * extent * inner + i0;
      float *y = out + o * extent * inner + i0;
      sluice_v16f m = sluice_v16_splat(-INFINITY), s = sluice_v16f{};
      for (int64_t e = 0; e < extent; ++e) {
        sluice_v16f v = sluice_v16_load(x + e * inner);
        m = v > m ? v : m;
      }
      for (int64_t e = 0; e < extent; ++e)
        s += sluice_exp_v16(sluice_v16_load(x + e * inner) - m);
      if (logSoftmax) {
        sluice_v16f logs;
        for (int l = 0; l < 16; ++l)
          logs[l] = logf(s[l]);
        m += logs;
        for (int64_t e = 0; e < extent; ++e)
          sluice_v16_store(y + e * inner, sluice_v16_load(x + e * inner) - m);
      } else {
        sluice_v16f inv = 1.0f / s;
        for (int64_t e = 0; e < extent; ++e)
          sluice_v16_store(y + e * inner,
                           sluice_exp_v16(sluice_v16_load(x + e * inner) - m) * inv);
      }
    }
}

/// Softmax along the middle dim of an [outer, extent, inner] view.
template <typename T>
inline void sluice_softmax(int threads, const T *in, T *out, int64_t outer, int64_t extent,
                           int64_t inner, bool logSoftmax) {
  if (inner == 1) {
    sluice_softmax_rows(threads, in, out, outer, extent, logSoftmax);
    return;
  }
  if (sluice_is_f32<T>::value && inner >= 16) {
    sluice_softmax_cols_f32(threads, (const float *)(const void *)in, (float *)(void *)out,
                            outer, extent, inner, logSoftmax);
    return;
  }
  typedef typename sluice_rowc<T>::type C;
  int64_t tiles = (inner + SLUICE_RED_TILE - 1) / SLUICE_RED_TILE;
#pragma omp parallel for collapse(2) num_threads(threads) if (outer * extent * inner > 16384)
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t t = 0; t < tiles; ++t) {
      C m[SLUICE_RED_TILE], s[SLUICE_RED_TILE];
      int64_t i0 = t * SLUICE_RED_TILE;
      int64_t n = inner - i0 < SLUICE_RED_TILE ? inner - i0 : SLUICE_RED_TILE;
      const T *x = in + o * extent * inner + i0;
      T *y = out + o * extent * inner + i0;
      for (int64_t i = 0; i < n; ++i) {
        m[i] = (C)-INFINITY;
        s[i] = 0;
      }
      for (int64_t e = 0; e < extent; ++e)
#pragma omp simd
        for (int64_t i = 0; i < n; ++i) {
          C v = (C)sluice_load(x[e * inner + i]);
          m[i] = v > m[i] ? v : m[i];
        }
      for (int64_t e = 0; e < extent; ++e)
#pragma omp simd
        for (int64_t i = 0; i < n; ++i)
          s[i] += sluice_exp_fast((C)sluice_load(x[e * inner + i]) - m[i]);
      if (logSoftmax) {
        for (int64_t i = 0; i < n; ++i)
          m[i] += (C)sl_log(s[i]);
        for (int64_t e = 0; e < extent; ++e)
          for (int64_t i = 0; i < n; ++i)
            y[e * inner + i] = SLUICE_STORE(T, (C)sluice_load(x[e * inner + i]) - m[i]);
      } else {
        for (int64_t i = 0; i < n; ++i)
          s[i] = (C)1 / s[i];
        for (int64_t e = 0; e < extent; ++e)
          for (int64_t i = 0; i < n; ++i)
            y[e * inner + i] = SLUICE_STORE(
                T, sluice_exp_fast((C)sluice_load(x[e * inner + i]) - m[i]) * s[i]);
      }
    }
}

//===----------------------------------------------------------------------===//
// argmax / argmin, topk
//===----------------------------------------------------------------------===//

/// NaN-aware order: NaN sorts above every number (argmax and largest-k pick
/// it first), as the evaluator's lessWithNaN.
template <typename C> inline bool sluice_less_nan(C a, C b) {
  if (sl_isnan(a))
    return false;
  return sl_isnan(b) || a < b;
}

template <typename T> struct sluice_cmpc { typedef int64_t type; };
template <> struct sluice_cmpc<float> { typedef float type; };
template <> struct sluice_cmpc<double> { typedef double type; };
template <> struct sluice_cmpc<sluice_f16> { typedef float type; };
template <> struct sluice_cmpc<sluice_bf16> { typedef float type; };

template <bool isMax, typename T>
inline void sluice_arg_reduce(int threads, const T *in, int64_t *out, int64_t outer,
                              int64_t extent, int64_t inner, bool selectLast) {
  typedef typename sluice_cmpc<T>::type C;
#pragma omp parallel for collapse(2) num_threads(threads) if (outer * extent * inner > 32768)
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const T *x = in + o * extent * inner + i;
      int64_t best = 0;
      C bestValue = (C)sluice_load(x[0]);
      for (int64_t e = 1; e < extent; ++e) {
        C cur = (C)sluice_load(x[e * inner]);
        bool curLess = sluice_less_nan(cur, bestValue), bestLess = sluice_less_nan(bestValue, cur);
        bool better = isMax ? bestLess : curLess;
        if (better || (selectLast && !curLess && !bestLess)) {
          best = e;
          bestValue = cur;
        }
      }
      out[o * inner + i] = best;
    }
}

/// Stable merge sort of `order[0, n)` by `before(a, b)` (a strictly before
/// b), using `scratch` of n entries.
template <typename Before>
inline void sluice_stable_sort(int64_t *order, int64_t *scratch, int64_t n, Before before) {
  for (int64_t width = 1; width < n; width *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * width) {
      int64_t mid = lo + width < n ? lo + width : n;
      int64_t hi = lo + 2 * width < n ? lo + 2 * width : n;
      int64_t a = lo, b = mid, k = lo;
      while (a < mid && b < hi)
        scratch[k++] = before(order[b], order[a]) ? order[b++] : order[a++];
      while (a < mid)
        scratch[k++] = order[a++];
      while (b < hi)
        scratch[k++] = order[b++];
    }
    for (int64_t i = 0; i < n; ++i)
      order[i] = scratch[i];
  }
}

/// The k largest (or smallest) along the middle dim of [outer, extent,
/// inner], sorted, equal values in index order.
template <typename T>
inline void sluice_topk(int threads, const T *in, T *values, int64_t *indices, int64_t outer,
                        int64_t extent, int64_t inner, int64_t k, bool largest) {
  typedef typename sluice_cmpc<T>::type C;
#pragma omp parallel num_threads(threads) if (outer * extent * inner > 32768)
  {
    int64_t *order = (int64_t *)malloc(sizeof(int64_t) * (2 * extent + 1));
    int64_t *scratch = order + extent;
#pragma omp for collapse(2)
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T *x = in + o * extent * inner + i;
        for (int64_t e = 0; e < extent; ++e)
          order[e] = e;
        sluice_stable_sort(order, scratch, extent, [&](int64_t a, int64_t b) {
          C va = (C)sluice_load(x[a * inner]), vb = (C)sluice_load(x[b * inner]);
          return largest ? sluice_less_nan(vb, va) : sluice_less_nan(va, vb);
        });
        for (int64_t e = 0; e < k; ++e) {
          int64_t to = (o * k + e) * inner + i;
          values[to] = x[order[e] * inner];
          indices[to] = order[e];
        }
      }
    free(order);
  }
}

//===----------------------------------------------------------------------===//
// cumsum
//===----------------------------------------------------------------------===//

template <typename T>
inline void sluice_cumsum(int threads, const T *in, T *out, int64_t outer, int64_t extent,
                          int64_t inner, bool exclusive, bool reverse) {
  typedef typename sluice_acc<T>::type A;
  int64_t tiles = (inner + SLUICE_RED_TILE - 1) / SLUICE_RED_TILE;
#pragma omp parallel for collapse(2) num_threads(threads) if (outer * extent * inner > 32768)
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t t = 0; t < tiles; ++t) {
      A acc[SLUICE_RED_TILE];
      int64_t i0 = t * SLUICE_RED_TILE;
      int64_t n = inner - i0 < SLUICE_RED_TILE ? inner - i0 : SLUICE_RED_TILE;
      for (int64_t i = 0; i < n; ++i)
        acc[i] = 0;
      for (int64_t step = 0; step < extent; ++step) {
        int64_t e = reverse ? extent - 1 - step : step;
        int64_t at = (o * extent + e) * inner + i0;
        for (int64_t i = 0; i < n; ++i) {
          A v = (A)sluice_load(in[at + i]);
          // Exclusive sums store the running total before adding the element.
          if (!exclusive)
            acc[i] += v;
          out[at + i] = SLUICE_STORE(T, acc[i]);
          if (exclusive)
            acc[i] += v;
        }
      }
    }
}

//===----------------------------------------------------------------------===//
// normalizations
//===----------------------------------------------------------------------===//

/// Fewest elements a normalization (layer_norm, rms_norm, and the fused row
/// groups of codegen/cpu/groups/Row.cpp) splits over threads. Below it the
/// pass is well under 0.1 ms on one core, and an OpenMP region costs more
/// than it saves wherever the cores are shared: a worker that is not
/// running when the region starts delays it by a scheduler time slice
/// (milliseconds). BERT-base's 25 layer norms of 128 x 768 went from 16% of
/// a 2-thread run to 1% on a loaded 2-core machine (docs/benchmarks.md).
#ifndef SLUICE_ROW_PARALLEL_MIN
#define SLUICE_ROW_PARALLEL_MIN (1 << 18)
#endif

/// Layer norm of `rows` contiguous rows of `count` elements; scale/bias
/// (bias may be null) hold `count` values, or are read at
/// scaleIndex[i]/biasIndex[i] when they broadcast. Mean and 1/stddev go to
/// meanOut/invOut (f32, may be null).
template <typename T, typename P>
inline void sluice_layer_norm(int threads, const T *in, const P *scale, const P *bias, T *out,
                              float *meanOut, float *invOut, int64_t rows, int64_t count,
                              float eps, const int64_t *scaleIndex = nullptr,
                              const int64_t *biasIndex = nullptr) {
  typedef typename sluice_rowc<T>::type C;
#pragma omp parallel for num_threads(threads) if (rows * count >= SLUICE_ROW_PARALLEL_MIN)
  for (int64_t r = 0; r < rows; ++r) {
    const T *x = in + r * count;
    T *y = out + r * count;
    C sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < count; ++i)
      sum += (C)sluice_load(x[i]);
    C mean = sum / (C)count;
    C var = 0;
#pragma omp simd reduction(+ : var)
    for (int64_t i = 0; i < count; ++i) {
      C d = (C)sluice_load(x[i]) - mean;
      var += d * d;
    }
    var /= (C)count;
    C inv = (C)1 / (C)sl_sqrt(var + (C)eps);
    if (scaleIndex || biasIndex) {
      for (int64_t i = 0; i < count; ++i) {
        C b = bias ? (C)sluice_load(bias[biasIndex ? biasIndex[i] : i]) : (C)0;
        y[i] = SLUICE_STORE(T, ((C)sluice_load(x[i]) - mean) * inv *
                                       (C)sluice_load(scale[scaleIndex ? scaleIndex[i] : i]) +
                                   b);
      }
    } else if (bias) {
#pragma omp simd
      for (int64_t i = 0; i < count; ++i)
        y[i] = SLUICE_STORE(T, ((C)sluice_load(x[i]) - mean) * inv * (C)sluice_load(scale[i]) +
                                   (C)sluice_load(bias[i]));
    } else {
#pragma omp simd
      for (int64_t i = 0; i < count; ++i)
        y[i] = SLUICE_STORE(T, ((C)sluice_load(x[i]) - mean) * inv * (C)sluice_load(scale[i]));
    }
    if (meanOut)
      meanOut[r] = (float)mean;
    if (invOut)
      invOut[r] = (float)inv;
  }
}

/// Instance and group norm: each sample's channels split into `groups`
/// consecutive slices normalized on their own (statistics in double, as the
/// evaluator), then channel c gets scale[c / paramDiv], bias[c / paramDiv].
template <typename T, typename P>
inline void sluice_group_norm(int threads, const T *in, const P *scale, const P *bias, T *out,
                              int64_t batch, int64_t channels, int64_t plane, int64_t groups,
                              int64_t paramDiv, float eps) {
  int64_t perGroupChannels = channels / groups, perGroup = perGroupChannels * plane;
#pragma omp parallel for num_threads(threads) if (batch * channels * plane > 16384)
  for (int64_t s = 0; s < batch * groups; ++s) {
    const T *x = in + s * perGroup;
    T *y = out + s * perGroup;
    double mean = 0, var = 0;
#pragma omp simd reduction(+ : mean)
    for (int64_t i = 0; i < perGroup; ++i)
      mean += (double)sluice_load(x[i]);
    mean /= (double)perGroup;
#pragma omp simd reduction(+ : var)
    for (int64_t i = 0; i < perGroup; ++i) {
      double d = (double)sluice_load(x[i]) - mean;
      var += d * d;
    }
    var /= (double)perGroup;
    double inv = 1.0 / sqrt(var + (double)eps);
    for (int64_t cg = 0; cg < perGroupChannels; ++cg) {
      int64_t c = (s % groups) * perGroupChannels + cg;
      double k = inv * (double)sluice_load(scale[c / paramDiv]);
      double b = (double)sluice_load(bias[c / paramDiv]);
      const T *xc = x + cg * plane;
      T *yc = y + cg * plane;
#pragma omp simd
      for (int64_t i = 0; i < plane; ++i)
        yc[i] = SLUICE_STORE(T, ((double)sluice_load(xc[i]) - mean) * k + b);
    }
  }
}

/// Inference batch norm over dim 1 with running statistics.
template <typename T, typename P>
inline void sluice_batch_norm(int threads, const T *in, const P *scale, const P *bias,
                              const P *mean, const P *var, T *out, int64_t batch,
                              int64_t channels, int64_t plane, float eps) {
  typedef typename sluice_rowc<T>::type C;
#pragma omp parallel for collapse(2) num_threads(threads) if (batch * channels * plane > 32768)
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c) {
      C k = (C)((double)sluice_load(scale[c]) /
                sqrt((double)sluice_load(var[c]) + (double)eps));
      C m = (C)sluice_load(mean[c]), b = (C)sluice_load(bias[c]);
      const T *x = in + (n * channels + c) * plane;
      T *y = out + (n * channels + c) * plane;
#pragma omp simd
      for (int64_t i = 0; i < plane; ++i)
        y[i] = SLUICE_STORE(T, ((C)sluice_load(x[i]) - m) * k + b);
    }
}

/// Local response normalization across channels.
template <typename T>
inline void sluice_lrn(int threads, const T *in, T *out, int64_t batch, int64_t channels,
                       int64_t plane, int64_t size, float alpha, float beta, float bias) {
  int64_t before = (size - 1) / 2, after = size - 1 - before;
#pragma omp parallel for collapse(2) num_threads(threads) if (batch * channels * plane * size > 32768)
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c) {
      int64_t lo = c - before < 0 ? 0 : c - before;
      int64_t hi = c + after > channels - 1 ? channels - 1 : c + after;
      const T *x = in + n * channels * plane;
      for (int64_t i = 0; i < plane; ++i) {
        double sum = 0;
        for (int64_t j = lo; j <= hi; ++j) {
          double v = (double)sluice_load(x[j * plane + i]);
          sum += v * v;
        }
        double v = (double)sluice_load(x[c * plane + i]);
        out[(n * channels + c) * plane + i] = SLUICE_STORE(
            T, v / pow((double)bias + (double)alpha / (double)size * sum, (double)beta));
      }
    }
}


//===----------------------------------------------------------------------===//
// row functions of fused row groups (codegen/cpu/groups/Row.cpp)
//===----------------------------------------------------------------------===//
//
// A fused row group computes each row (prologue applied) into a thread-local
// buffer in the compute type C (float, or double for f64), calls one of the
// functions below for the row's statistics and then writes the row op's
// values with its epilogue in one more pass.

/// A per-thread buffer of at least n values of C (grown as needed, freed
/// with the model: cpu_scratch.h).
template <typename C> static inline C *sluice_row_buffer(int64_t n) {
  static thread_local sluice_scratch_buffer buffer;
  return (C *)buffer.get((size_t)(n > 0 ? n : 1) * sizeof(C));
}

/// x[i] = exp(x[i] - max(x)); returns 1 / sum of them (softmax = x * that).
inline float sluice_row_softmax_exp(float *x, int64_t n) {
  return 1.0f / sluice_row_expsum_f32<true>(x, n, sluice_row_max_f32(x, n), x);
}
inline double sluice_row_softmax_exp(double *x, int64_t n) {
  double m = -INFINITY, sum = 0;
  for (int64_t e = 0; e < n; ++e)
    m = x[e] > m ? x[e] : m;
  for (int64_t e = 0; e < n; ++e) {
    x[e] = exp(x[e] - m);
    sum += x[e];
  }
  return 1.0 / sum;
}

/// max(x) + log(sum(exp(x - max))): log-softmax = x - that.
inline float sluice_row_logsumexp(const float *x, int64_t n) {
  const float m = sluice_row_max_f32(x, n);
  return m + logf(sluice_row_expsum_f32<false>(x, n, m, nullptr));
}
inline double sluice_row_logsumexp(const double *x, int64_t n) {
  double m = -INFINITY, sum = 0;
  for (int64_t e = 0; e < n; ++e)
    m = x[e] > m ? x[e] : m;
  for (int64_t e = 0; e < n; ++e)
    sum += exp(x[e] - m);
  return m + log(sum);
}

/// 1 / sqrt(mean((x - center)^2) + eps) of a row: with Center, center is the
/// row's mean; without, it is 0 (rms_norm = x * that * scale).
template <bool Center, typename C> inline C sluice_row_inv_std(const C *x, int64_t n, C center, C eps) {
  C var = 0;
#pragma omp simd reduction(+ : var)
  for (int64_t i = 0; i < n; ++i) {
    const C d = Center ? x[i] - center : x[i];
    var += d * d;
  }
  return (C)1 / (C)sqrt((double)(var / (C)n + eps));
}

/// Mean and 1 / sqrt(variance + eps) of a row (as sluice_layer_norm).
template <typename C>
inline void sluice_row_moments(const C *x, int64_t n, C eps, C *meanOut, C *invOut) {
  C sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i)
    sum += x[i];
  const C mean = sum / (C)n;
  *meanOut = mean;
  *invOut = sluice_row_inv_std<true>(x, n, mean, eps);
}

/// 1 / sqrt(mean(x^2) + eps) of a row (rms_norm = x * that * scale).
template <typename C> inline C sluice_row_rms_inv(const C *x, int64_t n, C eps) {
  return sluice_row_inv_std<false>(x, n, (C)0, eps);
}

/// Reduce kind K (sum, prod, max, min, mean) of a row, accumulated as
/// sluice_reduce_3d does (double for floats).
template <int K, typename C> inline C sluice_row_reduce(const C *x, int64_t n) {
  typedef typename sluice_acc<C>::type A;
  A a = sluice_red_identity<K, A>();
  if (K == 0 || K == 4) {
#pragma omp simd reduction(+ : a)
    for (int64_t i = 0; i < n; ++i)
      a += (A)x[i];
  } else {
    for (int64_t i = 0; i < n; ++i)
      sluice_red_step<K, A>(a, (A)x[i]);
  }
  return sluice_red_finish<K, C, A>(a, n);
}

/// RMS norm of `rows` contiguous rows of `count` elements; scale holds
/// `count` values, or is read at scaleIndex[i] when it broadcasts.
template <typename T, typename P>
inline void sluice_rms_norm(int threads, const T *in, const P *scale, T *out, int64_t rows,
                            int64_t count, float eps, const int64_t *scaleIndex = nullptr) {
  typedef typename sluice_rowc<T>::type C;
#pragma omp parallel for num_threads(threads) if (rows * count >= SLUICE_ROW_PARALLEL_MIN)
  for (int64_t r = 0; r < rows; ++r) {
    const T *x = in + r * count;
    T *y = out + r * count;
    C sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < count; ++i) {
      const C v = (C)sluice_load(x[i]);
      sum += v * v;
    }
    const C inv = (C)1 / (C)sl_sqrt(sum / (C)count + (C)eps);
    if (scaleIndex) {
      for (int64_t i = 0; i < count; ++i)
        y[i] = SLUICE_STORE(T, (C)sluice_load(x[i]) * inv *
                                   (C)sluice_load(scale[scaleIndex[i]]));
    } else {
#pragma omp simd
      for (int64_t i = 0; i < count; ++i)
        y[i] = SLUICE_STORE(T, (C)sluice_load(x[i]) * inv * (C)sluice_load(scale[i]));
    }
  }
}

#endif // SLUICE_GEN_CPU_REDUCE_H
