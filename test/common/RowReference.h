//===- RowReference.h - host reference for the cuda row kernel tests ------===//
//
// The inputs and the double-precision reference that the row kernel tests
// (test/gpu/row_test.cu on a device, test/unit/CudaRowEmulationTest.cpp
// under host emulation) check sluice_gen/cuda_reduce.h against. Both write
// the load/store lambdas as codegen/cuda/groups/Row.cpp generates them: a
// prologue x + bias[j] in the compute type, scale[j] in the norms'
// epilogue, eps 1e-5; the reduces double x in their prologue.
//
// Compiles under nvcc and the host compiler; include it after
// sluice_gen/cuda_reduce.h (and, on the host, CudaRowEmulation.h).
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_TEST_COMMON_ROWREFERENCE_H
#define SLUICE_TEST_COMMON_ROWREFERENCE_H

#include "sluice_gen/cuda_reduce.h"

#include <math.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

// `#pragma unroll` where nvcc compiles for the device; the host passes
// (nvcc's and the emulation's) would warn on it.
#ifdef __CUDA_ARCH__
#define SLUICE_TEST_UNROLL _Pragma("unroll")
#else
#define SLUICE_TEST_UNROLL
#endif

namespace sluice_row_test {

/// A storage type's value from a double (integers rounded to nearest).
template <typename T> SLUICE_HD T toStorage(double v) { return (T)v; }
template <> SLUICE_HD sluice_f16 toStorage<sluice_f16>(double v) { return sluice_to_f16((float)v); }
template <> SLUICE_HD sluice_bf16 toStorage<sluice_bf16>(double v) {
  return sluice_to_bf16((float)v);
}
template <> SLUICE_HD int64_t toStorage<int64_t>(double v) { return (int64_t)::llround(v); }

/// The compute type of a storage type (as the cuda row emitter picks it).
template <typename T> struct Compute { typedef float type; };
template <> struct Compute<double> { typedef double type; };
template <> struct Compute<int64_t> { typedef int64_t type; };

/// Tolerance (relative to |reference| + the row's unit) of a storage type.
template <typename T> double tolerance() { return 1e-5; }
template <> inline double tolerance<double>() { return 1e-12; }
template <> inline double tolerance<sluice_f16>() { return 2e-3; }
template <> inline double tolerance<sluice_bf16>() { return 1.6e-2; }

/// The loads and stores of the tests' row kernels as codegen/cuda/groups/
/// Row.cpp writes them: the prologue x + bias[j] over V consecutive
/// elements (one 16-byte sluice_vec when `vector`), the norms' epilogue
/// y * scale[j], the compute type C.
template <int K, int V, typename T, typename C> struct RowAccess {
  const T *in;
  const float *bias, *scale;
  T *out;
  int64_t len;
  bool vector;

  SLUICE_HD void load(int64_t row, int64_t j0, C (&x_)[V]) const {
    const int64_t b0 = row * len;
    if (vector) {
      const sluice_vec<T, V> l = *(const sluice_vec<T, V> *)(in + b0 + j0);
SLUICE_TEST_UNROLL
      for (int k_ = 0; k_ < V; ++k_)
        x_[k_] = (C)(sluice_load(l.v[k_]) + bias[j0 + k_]);
    } else {
SLUICE_TEST_UNROLL
      for (int k_ = 0; k_ < V; ++k_)
        x_[k_] = (C)(sluice_load(in[b0 + j0 + k_]) + bias[j0 + k_]);
    }
  }

  SLUICE_HD void store(int64_t row, int64_t j0, const C (&y0_)[V]) const {
    const int64_t e0 = row * len;
    sluice_vec<T, V> w;
SLUICE_TEST_UNROLL
    for (int k_ = 0; k_ < V; ++k_) {
      const C y = (K == SLUICE_ROW_LAYER_NORM || K == SLUICE_ROW_RMS_NORM)
                      ? y0_[k_] * (C)scale[j0 + k_]
                      : y0_[k_];
      if (vector)
        w.v[k_] = toStorage<T>(y);
      else
        out[e0 + j0 + k_] = toStorage<T>(y);
    }
    if (vector)
      *(sluice_vec<T, V> *)(out + e0 + j0) = w;
  }
};

/// The reduce tests' prologue: V consecutive elements of a row, doubled, in
/// the accumulator type A.
template <int V, typename T, typename A>
SLUICE_HD void reduceLoad(const T *in, int64_t len, int64_t row, int64_t j0, A (&x_)[V]) {
SLUICE_TEST_UNROLL
  for (int k_ = 0; k_ < V; ++k_)
    x_[k_] = (A)sluice_load(in[row * len + j0 + k_]) * (A)2;
}

/// The random inputs of a row test: rows x len values around `offset`, a
/// per-column bias (prologue) and scale (epilogue).
template <typename T> struct RowInputs {
  std::vector<T> in;
  std::vector<float> bias, scale;
};

template <typename T>
RowInputs<T> rowInputs(int64_t rows, int64_t len, double offset, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-3.0, 3.0);
  RowInputs<T> r;
  r.in.resize(rows * len);
  r.bias.resize(len);
  r.scale.resize(len);
  for (auto &v : r.in)
    v = toStorage<T>(offset + dist(rng));
  for (int64_t j = 0; j < len; ++j) {
    r.bias[j] = (float)(0.25 * dist(rng));
    r.scale[j] = (float)(1.0 + 0.1 * dist(rng));
  }
  return r;
}

/// One row of row op K in double: its statistics and its values.
struct RowExpected {
  double a = 0; ///< max (softmax, log_softmax), mean (layer_norm) or 0 (rms_norm)
  double b = 0; ///< sum of exp(x - max) (softmax, log_softmax) or 1 / stddev
  std::vector<double> values;
};

/// Row `r` of row op K on `inputs`, the prologue rounded to the compute
/// type C as the kernel computes it.
template <int K, typename C, typename T>
RowExpected rowReference(const RowInputs<T> &inputs, int64_t r, int64_t len) {
  std::vector<double> x(len);
  for (int64_t j = 0; j < len; ++j)
    x[j] = (double)(C)(sluice_load(inputs.in[r * len + j]) + inputs.bias[j]);
  RowExpected e;
  double &a = e.a, &b = e.b;
  if (K == SLUICE_ROW_SOFTMAX || K == SLUICE_ROW_LOG_SOFTMAX) {
    a = *std::max_element(x.begin(), x.end());
    for (double v : x)
      b += std::exp(v - a);
  } else {
    double s = 0, q = 0;
    for (double v : x)
      s += v;
    a = K == SLUICE_ROW_LAYER_NORM ? s / len : 0.0;
    for (double v : x)
      q += (v - a) * (v - a);
    b = 1.0 / std::sqrt(q / len + 1e-5);
  }
  e.values.resize(len);
  for (int64_t j = 0; j < len; ++j)
    e.values[j] = K == SLUICE_ROW_SOFTMAX       ? std::exp(x[j] - a) / b
                  : K == SLUICE_ROW_LOG_SOFTMAX ? x[j] - a - std::log(b)
                                                : (x[j] - a) * b * inputs.scale[j];
  return e;
}

/// Whether `got` is within `tol` of `ref` for row op K: relative to |ref|
/// plus the row's unit (0.1 for softmax's probabilities, 1 otherwise).
template <int K> bool rowValueClose(double got, double ref, double tol) {
  const double unit = K == SLUICE_ROW_SOFTMAX ? 0.1 : 1.0;
  return std::fabs(got - ref) <= tol * (std::fabs(ref) + unit);
}

/// The random rows of a reduce test (integers for integer storage).
template <typename T> std::vector<T> reduceInputs(int64_t rows, int64_t len) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(-2.0, 2.0);
  std::vector<T> in(rows * len);
  for (auto &v : in)
    v = toStorage<T>(std::is_integral<T>::value ? std::round(50 * dist(rng)) : dist(rng));
  return in;
}

/// Reduce kind K (0 sum, 1 prod, 2 max, 3 min, 4 mean, in the accumulator
/// type A) of row `r` after the prologue 2 x, in double.
struct ReduceExpected {
  double value = 0;
  bool nan = false; ///< the row holds a NaN
};

template <int K, typename A, typename T>
ReduceExpected reduceReference(const std::vector<T> &in, int64_t r, int64_t len) {
  ReduceExpected e;
  double &acc = e.value;
  acc = K == 1 ? 1 : K == 2 ? -INFINITY : K == 3 ? INFINITY : 0;
  for (int64_t j = 0; j < len; ++j) {
    double v = 2.0 * (double)sluice_load(in[r * len + j]);
    e.nan |= std::isnan(v);
    acc = K == 0 || K == 4 ? acc + v : K == 1 ? acc * v : K == 2 ? std::max(acc, v)
                                                                : std::min(acc, v);
  }
  if (K == 4)
    acc = std::is_integral<A>::value ? (double)((int64_t)acc / len) : acc / len;
  return e;
}

} // namespace sluice_row_test

#endif // SLUICE_TEST_COMMON_ROWREFERENCE_H
