//===- sluice_gen/cuda_reduce.h - row ops of the cuda target ----*- C++ -*-===//
//
// Device templates of form F3 (row op + prologue + epilogue) on the cuda
// target. A "team" of TEAM threads owns one row at a time: 4-32 lanes of a
// warp (several rows per warp, shuffles only), a whole warp, or a whole block
// of 64-1024 threads (shuffles inside each warp, then shared memory across
// warps). The generated kernel supplies two functors:
//   load(row, j0, C (&x)[V], bool first)  the prologue for elements
//       [j0, j0 + V) of the row (one 16-byte vector per access where it can);
//       `first` is false on a second pass and for a register slot past the
//       row's end (which loads from a valid address and drops the values):
//       then the prologue's stores are skipped;
//   store(row, j0, const C (&y)[V])      the row op's value (before scale and
//       bias) for those elements; applies the epilogue and stores;
//   stats(row, mean, invstd)             layer_norm's statistics (lane 0).
// With PER > 0 the row lives in registers (PER vectors of V per lane): one
// read of the inputs, exact two-pass statistics over the registers. With
// PER == 0 (rows too long for the registers) statistics stream (online
// softmax, Welford) and a second pass recomputes the prologue.
//
// Statistics are in C: float for f32/f16/bf16, double for f64; reduce of
// integers in int64_t. The same source runs on the host under the test
// emulation (test/unit/CudaRowEmulation.h).
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CUDA_REDUCE_H
#define SLUICE_GEN_CUDA_REDUCE_H

#include "sluice_gen/scalar.h"

#include <math.h>
#include <stdint.h>
#include <type_traits>

/// The row op a sluice_row_run computes (the K template parameter).
enum {
  SLUICE_ROW_SOFTMAX = 0,
  SLUICE_ROW_LOG_SOFTMAX = 1,
  SLUICE_ROW_LAYER_NORM = 2,
  SLUICE_ROW_RMS_NORM = 3
};

__device__ __forceinline__ float sluice_dexp(float x) { return expf(x); }
__device__ __forceinline__ double sluice_dexp(double x) { return exp(x); }
__device__ __forceinline__ float sluice_dlog(float x) { return logf(x); }
__device__ __forceinline__ double sluice_dlog(double x) { return log(x); }
__device__ __forceinline__ float sluice_drsqrt(float x) { return 1.0f / sqrtf(x); }
__device__ __forceinline__ double sluice_drsqrt(double x) { return 1.0 / sqrt(x); }

/// Online softmax state: the running max and the sum of exp(x - m).
template <typename T> struct sluice_online {
  T m, s;
};
/// Welford state: count, mean and the sum of squared deviations.
template <typename T> struct sluice_welford {
  T n, mean, m2;
};
/// Two sums reduced together (one round of shuffles, one barrier pair):
/// each component is added in the same order as alone.
template <typename T> struct sluice_pair {
  T a, b;
};

template <typename T> __device__ __forceinline__ T sluice_shfl_xor(T v, int lanes) {
  return __shfl_xor_sync(0xffffffffu, v, lanes);
}
template <typename T>
__device__ __forceinline__ sluice_online<T> sluice_shfl_xor(sluice_online<T> v, int lanes) {
  return {sluice_shfl_xor(v.m, lanes), sluice_shfl_xor(v.s, lanes)};
}
template <typename T>
__device__ __forceinline__ sluice_pair<T> sluice_shfl_xor(sluice_pair<T> v, int lanes) {
  return {sluice_shfl_xor(v.a, lanes), sluice_shfl_xor(v.b, lanes)};
}
template <typename T>
__device__ __forceinline__ sluice_welford<T> sluice_shfl_xor(sluice_welford<T> v, int lanes) {
  return {sluice_shfl_xor(v.n, lanes), sluice_shfl_xor(v.mean, lanes),
          sluice_shfl_xor(v.m2, lanes)};
}

/// `op` over the values of the team's lanes; every lane gets the result.
/// Teams wider than a warp meet in shared memory (every thread of the
/// block must call it then; a block may hold several teams).
template <int TEAM, typename T, typename Op>
__device__ __forceinline__ T sluice_team_all(T v, Op op) {
  static_assert(TEAM >= 1 && (TEAM & (TEAM - 1)) == 0 && TEAM <= 1024, "team of 2^k <= 1024");
  constexpr int kWarp = TEAM < 32 ? TEAM : 32;
#pragma unroll
  for (int lanes = kWarp / 2; lanes > 0; lanes /= 2)
    v = op(v, sluice_shfl_xor(v, lanes));
  if constexpr (TEAM > 32) {
    // One slot per warp of the block; a team reads its own warps' slots.
    __shared__ T part[32];
    const int first = (int)(threadIdx.x / TEAM) * (TEAM / 32);
    if (threadIdx.x % 32 == 0)
      part[threadIdx.x / 32] = v;
    __syncthreads();
    v = part[first];
#pragma unroll
    for (int w = 1; w < TEAM / 32; ++w)
      v = op(v, part[first + w]);
    __syncthreads(); // part is reused by the next reduction
  }
  return v;
}

template <typename T> __device__ __forceinline__ T sluice_dsum(T a, T b) { return a + b; }
template <typename T>
__device__ __forceinline__ sluice_pair<T> sluice_dsum2(sluice_pair<T> x, sluice_pair<T> y) {
  return {x.a + y.a, x.b + y.b};
}
/// max that propagates NaN (as the evaluator's max).
template <typename T> __device__ __forceinline__ T sluice_dmaxnan(T a, T b) {
  return (b != b || b > a) ? b : a;
}

template <typename T>
__device__ __forceinline__ sluice_online<T> sluice_online_merge(sluice_online<T> a,
                                                                sluice_online<T> b) {
  const T m = (a.m != a.m || b.m != b.m) ? (T)NAN : (a.m > b.m ? a.m : b.m);
  if (m == -(T)INFINITY) // both empty or all -inf so far
    return {m, a.s + b.s};
  return {m, a.s * sluice_dexp(a.m - m) + b.s * sluice_dexp(b.m - m)};
}

template <typename T>
__device__ __forceinline__ sluice_welford<T> sluice_welford_merge(sluice_welford<T> a,
                                                                  sluice_welford<T> b) {
  const T n = a.n + b.n;
  if (n == (T)0)
    return a;
  const T d = b.mean - a.mean, fb = b.n / n;
  return {n, a.mean + d * fb, a.m2 + b.m2 + d * d * a.n * fb};
}

/// One row op over `rows` rows of `len` elements (len % V == 0), the
/// statistics as above. Every thread of the block must call it (the loop
/// over rows is uniform across the block; lanes past the last row idle).
template <int K, int TEAM, int V, int PER, typename C, typename Load, typename Store,
          typename Stats>
__device__ __forceinline__ void sluice_row_run(int64_t rows, int64_t len, C eps, Load load,
                                               Store store, Stats stats) {
  const int lane = (int)(threadIdx.x % TEAM);
  const int64_t perBlock = blockDim.x / TEAM;
  const C n = (C)len;
  for (int64_t first = (int64_t)blockIdx.x * perBlock; first < rows;
       first += (int64_t)gridDim.x * perBlock) {
    const int64_t row = first + threadIdx.x / TEAM;
    const bool live = row < rows;
    C a = 0, b = 0;
    if constexpr (PER > 0) {
      // The row in registers: lane's vectors p * TEAM + lane. No branch
      // separates the loads, so that they are all in flight before the
      // first is used. A lane that holds every slot of a live row (all
      // lanes but those of a row's last partial round) loads them with
      // `first` a constant true: the prologue's stores need no branch
      // either. Otherwise every slot still loads: one past the row's end
      // (or of a lane past the last row) reads a valid address (j0 = 0 of
      // its row, or of the block's first row), stores nothing (`first`
      // false) and then holds `idle`: -inf for softmax (no effect on the
      // max, exp gives an exact 0 to the sum), 0 for the norms (no effect
      // on the sum; the squares select it out). The loops below need no
      // branch either.
      constexpr C idle =
          K == SLUICE_ROW_SOFTMAX || K == SLUICE_ROW_LOG_SOFTMAX ? -(C)INFINITY : (C)0;
      C x[PER][V];
      bool has[PER];
#pragma unroll
      for (int p = 0; p < PER; ++p)
        has[p] = live && ((int64_t)p * TEAM + lane) * V < len;
      const bool all = has[PER - 1]; // the slots fill in order
      if (all) {
#pragma unroll
        for (int p = 0; p < PER; ++p)
          load(row, ((int64_t)p * TEAM + lane) * V, x[p], true);
      } else {
        const int64_t safe = live ? row : first;
#pragma unroll
        for (int p = 0; p < PER; ++p) {
          load(safe, has[p] ? ((int64_t)p * TEAM + lane) * V : 0, x[p], has[p]);
#pragma unroll
          for (int k = 0; k < V; ++k)
            x[p][k] = has[p] ? x[p][k] : idle;
        }
      }
      if constexpr (K == SLUICE_ROW_SOFTMAX || K == SLUICE_ROW_LOG_SOFTMAX) {
        C m = -(C)INFINITY;
#pragma unroll
        for (int p = 0; p < PER; ++p)
#pragma unroll
          for (int k = 0; k < V; ++k)
            m = sluice_dmaxnan(m, x[p][k]);
        m = sluice_team_all<TEAM>(m, sluice_dmaxnan<C>);
        C s = 0;
#pragma unroll
        for (int p = 0; p < PER; ++p)
#pragma unroll
          for (int k = 0; k < V; ++k) {
            // An idle slot takes exp(-inf) = 0 exactly whatever m is (a row
            // of -inf has m = -inf: x - m would be NaN there). The select is
            // on the argument so that every exp runs, without a branch.
            const C e = sluice_dexp(has[p] ? x[p][k] - m : -(C)INFINITY);
            if (K == SLUICE_ROW_SOFTMAX)
              x[p][k] = e;
            s += e;
          }
        s = sluice_team_all<TEAM>(s, sluice_dsum<C>);
        a = m;
        b = K == SLUICE_ROW_SOFTMAX ? (C)1 / s : sluice_dlog(s);
      } else {
        C mean = 0;
        if constexpr (K == SLUICE_ROW_LAYER_NORM) {
          C s = 0;
#pragma unroll
          for (int p = 0; p < PER; ++p)
#pragma unroll
            for (int k = 0; k < V; ++k)
              s += x[p][k]; // idle slots hold 0
          mean = sluice_team_all<TEAM>(s, sluice_dsum<C>) / n;
        }
        // Squares around the mean; layer_norm corrects the mean by the
        // deviations' sum (the corrected two-pass algorithm).
        C q = 0, c = 0;
#pragma unroll
        for (int p = 0; p < PER; ++p)
#pragma unroll
          for (int k = 0; k < V; ++k) {
            const C d = has[p] ? x[p][k] - mean : (C)0;
            q += d * d;
            c += d;
          }
        if constexpr (K == SLUICE_ROW_LAYER_NORM) {
          // Both sums in one reduction.
          const sluice_pair<C> qc =
              sluice_team_all<TEAM>(sluice_pair<C>{q, c}, sluice_dsum2<C>);
          q = qc.a / n;
          c = qc.b / n;
          mean += c;
          q -= c * c;
          q = q > (C)0 ? q : (C)0;
        } else {
          q = sluice_team_all<TEAM>(q, sluice_dsum<C>) / n;
        }
        a = mean;
        b = sluice_drsqrt(q + eps);
      }
      auto finish = [&](int p) {
        C y[V];
#pragma unroll
        for (int k = 0; k < V; ++k) {
          if (K == SLUICE_ROW_SOFTMAX)
            y[k] = x[p][k] * b;
          else if (K == SLUICE_ROW_LOG_SOFTMAX)
            y[k] = x[p][k] - a - b;
          else
            y[k] = (x[p][k] - a) * b;
        }
        store(row, ((int64_t)p * TEAM + lane) * V, y);
      };
      if (all) {
        // One branch around every slot's store: the epilogue's loads (scale,
        // bias, residuals) of all slots can issue together.
#pragma unroll
        for (int p = 0; p < PER; ++p)
          finish(p);
      } else {
#pragma unroll
        for (int p = 0; p < PER; ++p)
          if (has[p])
            finish(p);
      }
    } else {
      // Streaming: statistics in one pass, the values in a second.
      C x[V];
      if constexpr (K == SLUICE_ROW_SOFTMAX || K == SLUICE_ROW_LOG_SOFTMAX) {
        sluice_online<C> st = {-(C)INFINITY, (C)0};
        if (live)
          for (int64_t j0 = (int64_t)lane * V; j0 < len; j0 += (int64_t)TEAM * V) {
            load(row, j0, x, true);
#pragma unroll
            for (int k = 0; k < V; ++k)
              st = sluice_online_merge(st, sluice_online<C>{x[k], (C)1});
          }
        st = sluice_team_all<TEAM>(st, sluice_online_merge<C>);
        a = st.m;
        b = K == SLUICE_ROW_SOFTMAX ? (C)1 / st.s : sluice_dlog(st.s);
      } else if constexpr (K == SLUICE_ROW_LAYER_NORM) {
        // Welford over x - pivot (the row's first element, the same in
        // every lane): the running mean stays small, so f32 keeps digits
        // when the row's mean is large against its spread.
        sluice_welford<C> st = {(C)0, (C)0, (C)0};
        C pivot = 0;
        if (live) {
          load(row, 0, x, false);
          pivot = x[0];
          for (int64_t j0 = (int64_t)lane * V; j0 < len; j0 += (int64_t)TEAM * V) {
            load(row, j0, x, true);
#pragma unroll
            for (int k = 0; k < V; ++k) {
              const C v = x[k] - pivot;
              st.n += (C)1;
              const C d = v - st.mean;
              st.mean += d / st.n;
              st.m2 += d * (v - st.mean);
            }
          }
        }
        st = sluice_team_all<TEAM>(st, sluice_welford_merge<C>);
        a = pivot + st.mean;
        b = sluice_drsqrt(st.m2 / n + eps);
      } else {
        C q = 0;
        if (live)
          for (int64_t j0 = (int64_t)lane * V; j0 < len; j0 += (int64_t)TEAM * V) {
            load(row, j0, x, true);
#pragma unroll
            for (int k = 0; k < V; ++k)
              q += x[k] * x[k];
          }
        q = sluice_team_all<TEAM>(q, sluice_dsum<C>);
        b = sluice_drsqrt(q / n + eps);
      }
      if (live)
        for (int64_t j0 = (int64_t)lane * V; j0 < len; j0 += (int64_t)TEAM * V) {
          load(row, j0, x, false);
          C y[V];
#pragma unroll
          for (int k = 0; k < V; ++k) {
            if (K == SLUICE_ROW_SOFTMAX)
              y[k] = sluice_dexp(x[k] - a) * b;
            else if (K == SLUICE_ROW_LOG_SOFTMAX)
              y[k] = x[k] - a - b;
            else
              y[k] = (x[k] - a) * b;
          }
          store(row, j0, y);
        }
    }
    if (K == SLUICE_ROW_LAYER_NORM && live && lane == 0)
      stats(row, a, b);
  }
}

//===----------------------------------------------------------------------===//
// reduce (kind: 0 sum, 1 prod, 2 max, 3 min, 4 mean, as sluice::ReduceKind)
//===----------------------------------------------------------------------===//

template <int K, typename A> __device__ __forceinline__ A sluice_dred_identity() {
  if constexpr (K == 1)
    return (A)1;
  else if constexpr (K == 2 || K == 3) {
    if constexpr (std::is_integral<A>::value)
      return K == 2 ? (A)INT64_MIN : (A)INT64_MAX;
    else
      return K == 2 ? -(A)INFINITY : (A)INFINITY;
  } else
    return (A)0;
}

/// One combining step; max/min propagate NaN.
template <int K, typename A> __device__ __forceinline__ A sluice_dred(A a, A v) {
  if (K == 0 || K == 4)
    return a + v;
  if (K == 1)
    return a * v;
  if (K == 2)
    return (v != v || v > a) ? v : a;
  return (v != v || v < a) ? v : a;
}

/// Reduce kind K of each row into one value: store(row, value) by lane 0.
/// A: the accumulator (float for f32/f16/bf16, double, int64_t).
template <int K, int TEAM, int V, typename A, typename Load, typename Store>
__device__ __forceinline__ void sluice_row_reduce_run(int64_t rows, int64_t len, Load load,
                                                      Store store) {
  const int lane = (int)(threadIdx.x % TEAM);
  const int64_t perBlock = blockDim.x / TEAM;
  for (int64_t first = (int64_t)blockIdx.x * perBlock; first < rows;
       first += (int64_t)gridDim.x * perBlock) {
    const int64_t row = first + threadIdx.x / TEAM;
    const bool live = row < rows;
    A acc = sluice_dred_identity<K, A>();
    A x[V];
    if (live)
      for (int64_t j0 = (int64_t)lane * V; j0 < len; j0 += (int64_t)TEAM * V) {
        load(row, j0, x, true);
#pragma unroll
        for (int k = 0; k < V; ++k)
          acc = sluice_dred<K, A>(acc, x[k]);
      }
    acc = sluice_team_all<TEAM>(acc, sluice_dred<K, A>);
    if constexpr (K == 4) {
      if constexpr (std::is_integral<A>::value)
        acc = len ? acc / (A)len : (A)0;
      else
        acc = len ? acc / (A)len : (A)NAN;
    }
    if (live && lane == 0)
      store(row, acc);
  }
}

#endif // SLUICE_GEN_CUDA_REDUCE_H
