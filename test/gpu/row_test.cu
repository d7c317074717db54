//===- row_test.cu - the cuda target's row kernels on a GPU ---------------===//
//
// sluice_row_run / sluice_row_reduce_run (sluice_gen/cuda_reduce.h) with
// load/store lambdas as codegen/cuda/groups/Row.cpp generates them (a
// per-column bias prologue, scale in the epilogue, 16-byte vectors), run on
// the device against a double-precision host reference: every team size
// (sub-warp, warp, block), registers and the streamed two-pass path, vector
// and scalar accesses, f32 / f16 / bf16 / f64, layer_norm statistics and
// the reduce kinds. Exits 77 (skipped) without a GPU.
//
//===----------------------------------------------------------------------===//

#include "sluice_gen/cuda.h"
#include "sluice_gen/cuda_reduce.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <type_traits>
#include <vector>

namespace {

int failures = 0;

#define CHECK_CUDA(call)                                                                  \
  do {                                                                                    \
    cudaError_t err_ = (call);                                                            \
    if (err_ != cudaSuccess) {                                                            \
      printf("FAIL: %s: %s\n", #call, cudaGetErrorString(err_));                          \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

template <typename T> struct Compute { typedef float type; };
template <> struct Compute<double> { typedef double type; };
template <> struct Compute<int64_t> { typedef int64_t type; };

template <typename T> __host__ __device__ T toStorage(double v) { return (T)v; }
template <> __host__ __device__ sluice_f16 toStorage<sluice_f16>(double v) {
  return sluice_to_f16((float)v);
}
template <> __host__ __device__ sluice_bf16 toStorage<sluice_bf16>(double v) {
  return sluice_to_bf16((float)v);
}

template <typename T> double tolerance() { return 1e-5; }
template <> double tolerance<double>() { return 1e-12; }
template <> double tolerance<sluice_f16>() { return 2e-3; }
template <> double tolerance<sluice_bf16>() { return 1.6e-2; }

template <typename T> const char *typeName() {
  return std::is_same<T, float>::value        ? "f32"
         : std::is_same<T, double>::value     ? "f64"
         : std::is_same<T, sluice_f16>::value ? "f16"
         : std::is_same<T, int64_t>::value    ? "i64"
                                              : "bf16";
}

template <int K, int TEAM, int V, int PER, typename T>
__global__ void __launch_bounds__(TEAM > 128 ? TEAM : 128)
    rowKernel(const T *__restrict__ in, const float *__restrict__ bias,
              const float *__restrict__ scale, T *__restrict__ out, float *__restrict__ mean,
              float *__restrict__ inv, int64_t rows, int64_t len, bool vector) {
  typedef typename Compute<T>::type C;
  auto load_ = [&](int64_t row, int64_t j0, C (&x_)[V], bool) {
    const int64_t b0 = row * len;
    if (vector) {
      const sluice_vec<T, V> l = *(const sluice_vec<T, V> *)(in + b0 + j0);
#pragma unroll
      for (int k_ = 0; k_ < V; ++k_)
        x_[k_] = (C)(sluice_load(l.v[k_]) + bias[j0 + k_]);
    } else {
#pragma unroll
      for (int k_ = 0; k_ < V; ++k_)
        x_[k_] = (C)(sluice_load(in[b0 + j0 + k_]) + bias[j0 + k_]);
    }
  };
  auto store_ = [&](int64_t row, int64_t j0, const C (&y0_)[V]) {
    const int64_t e0 = row * len;
    sluice_vec<T, V> w;
#pragma unroll
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
  };
  auto stats_ = [&](int64_t row, C m, C i) {
    mean[row] = (float)m;
    inv[row] = (float)i;
  };
  sluice_row_run<K, TEAM, V, PER, C>(rows, len, (C)1e-5, load_, store_, stats_);
}

template <typename T> T *toDevice(const std::vector<T> &host) {
  T *p = nullptr;
  CHECK_CUDA(cudaMalloc((void **)&p, std::max<size_t>(1, host.size() * sizeof(T))));
  CHECK_CUDA(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return p;
}

template <int K, int TEAM, int V, int PER, typename T>
void checkRow(int64_t rows, int64_t len, unsigned grid, double offset = 0, bool vector = true) {
  typedef typename Compute<T>::type C;
  std::mt19937 rng(rows * 131 + len);
  std::uniform_real_distribution<double> dist(-3.0, 3.0);
  std::vector<T> in(rows * len), out(rows * len);
  std::vector<float> bias(len), scale(len), mean(rows, -1), inv(rows, -1);
  for (auto &v : in)
    v = toStorage<T>(offset + dist(rng));
  for (int64_t j = 0; j < len; ++j) {
    bias[j] = (float)(0.25 * dist(rng));
    scale[j] = (float)(1.0 + 0.1 * dist(rng));
  }
  T *dIn = toDevice(in), *dOut = toDevice(out);
  float *dBias = toDevice(bias), *dScale = toDevice(scale), *dMean = toDevice(mean),
        *dInv = toDevice(inv);
  rowKernel<K, TEAM, V, PER, T><<<grid, std::max(TEAM, 128)>>>(
      dIn, dBias, dScale, dOut, dMean, dInv, rows, len, vector && V > 1);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(out.data(), dOut, out.size() * sizeof(T), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(mean.data(), dMean, rows * 4, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(inv.data(), dInv, rows * 4, cudaMemcpyDeviceToHost));
  cudaFree(dIn); cudaFree(dOut); cudaFree(dBias); cudaFree(dScale); cudaFree(dMean); cudaFree(dInv);

  const double tol = tolerance<T>();
  int64_t bad = 0;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> x(len);
    for (int64_t j = 0; j < len; ++j)
      x[j] = (double)(C)(sluice_load(in[r * len + j]) + bias[j]);
    double a = 0, b = 0;
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
    for (int64_t j = 0; j < len; ++j) {
      double ref = K == SLUICE_ROW_SOFTMAX       ? std::exp(x[j] - a) / b
                   : K == SLUICE_ROW_LOG_SOFTMAX ? x[j] - a - std::log(b)
                                                 : (x[j] - a) * b * scale[j];
      double got = sluice_load(out[r * len + j]);
      double unit = K == SLUICE_ROW_SOFTMAX ? 0.1 : 1.0;
      if (!(std::fabs(got - ref) <= tol * (std::fabs(ref) + unit)) && bad++ < 3)
        printf("  row %lld element %lld: got %.9g, want %.9g\n", (long long)r, (long long)j, got,
               ref);
    }
    if (K == SLUICE_ROW_LAYER_NORM &&
        (std::fabs(mean[r] - a) > 1e-5 * (std::fabs(a) + 1) || std::fabs(inv[r] - b) > 1e-5 * b) &&
        bad++ < 3)
      printf("  row %lld: mean %.9g inv %.9g, want %.9g %.9g\n", (long long)r, mean[r], inv[r], a, b);
  }
  printf("%s: row op %d %s, %lld rows of %lld, team %d, V %d, PER %d\n", bad ? "FAIL" : "ok", K,
         typeName<T>(), (long long)rows, (long long)len, TEAM, V, PER);
  failures += bad != 0;
}

template <int K, int TEAM, int V, typename T>
__global__ void __launch_bounds__(TEAM > 128 ? TEAM : 128)
    reduceKernel(const T *__restrict__ in, typename Compute<T>::type *__restrict__ out, int64_t rows,
                 int64_t len) {
  typedef typename Compute<T>::type A;
  auto load_ = [&](int64_t row, int64_t j0, A (&x_)[V], bool) {
#pragma unroll
    for (int k_ = 0; k_ < V; ++k_)
      x_[k_] = (A)sluice_load(in[row * len + j0 + k_]) * (A)2;
  };
  auto store_ = [&](int64_t row, A y0_) { out[row] = y0_; };
  sluice_row_reduce_run<K, TEAM, V, A>(rows, len, load_, store_);
}

template <int K, int TEAM, int V, typename T>
void checkReduce(int64_t rows, int64_t len, unsigned grid) {
  typedef typename Compute<T>::type A;
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(-2.0, 2.0);
  std::vector<T> in(rows * len);
  for (auto &v : in)
    v = toStorage<T>(std::is_integral<T>::value ? std::round(50 * dist(rng)) : dist(rng));
  std::vector<A> out(rows);
  T *dIn = toDevice(in);
  A *dOut = toDevice(out);
  reduceKernel<K, TEAM, V, T><<<grid, std::max(TEAM, 128)>>>(dIn, dOut, rows, len);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(out.data(), dOut, rows * sizeof(A), cudaMemcpyDeviceToHost));
  cudaFree(dIn);
  cudaFree(dOut);
  int64_t bad = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double acc = K == 1 ? 1 : K == 2 ? -INFINITY : K == 3 ? INFINITY : 0;
    for (int64_t j = 0; j < len; ++j) {
      double v = 2.0 * (double)sluice_load(in[r * len + j]);
      acc = K == 0 || K == 4 ? acc + v : K == 1 ? acc * v : K == 2 ? std::max(acc, v)
                                                                  : std::min(acc, v);
    }
    if (K == 4)
      acc = std::is_integral<A>::value ? (double)((int64_t)acc / len) : acc / len;
    if (!(std::fabs((double)out[r] - acc) <= 1e-5 * std::fabs(acc) + 1e-5) && bad++ < 3)
      printf("  row %lld: got %.9g, want %.9g\n", (long long)r, (double)out[r], acc);
  }
  printf("%s: reduce %d %s, %lld rows of %lld, team %d, V %d\n", bad ? "FAIL" : "ok", K,
         typeName<T>(), (long long)rows, (long long)len, TEAM, V);
  failures += bad != 0;
}

} // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    printf("no CUDA device: skipped\n");
    return 77;
  }
  // Sub-warp teams, rows not a multiple of a block's, fewer blocks than rows.
  checkRow<SLUICE_ROW_SOFTMAX, 4, 4, 2, float>(1037, 32, 7);
  checkRow<SLUICE_ROW_SOFTMAX, 8, 1, 3, float>(450, 21, 5, 0, false);
  checkRow<SLUICE_ROW_LOG_SOFTMAX, 16, 4, 2, float>(200, 128, 3);
  // A warp a row.
  checkRow<SLUICE_ROW_LOG_SOFTMAX, 32, 4, 4, float>(99, 512, 8);
  checkRow<SLUICE_ROW_RMS_NORM, 32, 4, 3, float>(66, 300, 4);
  // A block a row (several teams a block for 64).
  checkRow<SLUICE_ROW_LAYER_NORM, 256, 4, 2, float>(40, 2048, 9);
  checkRow<SLUICE_ROW_LAYER_NORM, 64, 4, 4, float>(33, 1024, 5, 100.0);
  checkRow<SLUICE_ROW_SOFTMAX, 1024, 4, 8, float>(5, 32768, 3);
  // Streamed (rows over the registers).
  checkRow<SLUICE_ROW_SOFTMAX, 128, 1, 0, float>(7, 3001, 2, 0, false);
  checkRow<SLUICE_ROW_LAYER_NORM, 1024, 4, 0, float>(3, 100000, 2, 100.0);
  checkRow<SLUICE_ROW_LOG_SOFTMAX, 4, 4, 0, float>(111, 400, 6);
  checkRow<SLUICE_ROW_RMS_NORM, 32, 2, 0, double>(15, 1000, 4);
  // Half precision.
  checkRow<SLUICE_ROW_SOFTMAX, 16, 8, 1, sluice_f16>(190, 128, 4);
  checkRow<SLUICE_ROW_LAYER_NORM, 32, 8, 2, sluice_f16>(50, 512, 3, 10.0);
  checkRow<SLUICE_ROW_RMS_NORM, 64, 8, 8, sluice_f16>(16, 4096, 5);
  checkRow<SLUICE_ROW_RMS_NORM, 128, 8, 2, sluice_bf16>(30, 2048, 7);
  checkRow<SLUICE_ROW_LAYER_NORM, 64, 8, 0, sluice_f16>(6, 40960, 2);
  checkRow<SLUICE_ROW_SOFTMAX, 32, 2, 4, double>(40, 256, 3);
  // Reduce.
  checkReduce<0, 8, 4, float>(290, 48, 5);
  checkReduce<4, 32, 4, float>(70, 1000, 4);
  checkReduce<2, 256, 1, float>(9, 4099, 4);
  checkReduce<3, 16, 8, sluice_f16>(100, 256, 3);
  checkReduce<0, 64, 2, int64_t>(13, 1000, 3);
  checkReduce<4, 4, 2, int64_t>(90, 14, 2);
  if (failures)
    printf("%d checks FAILED\n", failures);
  return failures ? 1 : 0;
}
