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

#include "GpuTest.h"
#include "common/RowReference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <type_traits>
#include <vector>

namespace {

using namespace sluice_row_test;
using sluice_gpu_test::DeviceBuffer;

int failures = 0;

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
  const RowAccess<K, V, T, C> io{in, bias, scale, out, len, vector};
  auto load_ = [&](int64_t row, int64_t j0, C (&x_)[V], bool) { io.load(row, j0, x_); };
  auto store_ = [&](int64_t row, int64_t j0, const C (&y0_)[V]) { io.store(row, j0, y0_); };
  auto stats_ = [&](int64_t row, C m, C i) {
    mean[row] = (float)m;
    inv[row] = (float)i;
  };
  sluice_row_run<K, TEAM, V, PER, C>(rows, len, (C)1e-5, load_, store_, stats_);
}

template <int K, int TEAM, int V, int PER, typename T>
void checkRow(int64_t rows, int64_t len, unsigned grid, double offset = 0, bool vector = true) {
  typedef typename Compute<T>::type C;
  const RowInputs<T> inputs = rowInputs<T>(rows, len, offset, rows * 131 + len);
  std::vector<T> out(rows * len);
  std::vector<float> mean(rows, -1), inv(rows, -1);
  DeviceBuffer<T> dIn(inputs.in), dOut(out);
  DeviceBuffer<float> dBias(inputs.bias), dScale(inputs.scale), dMean(mean), dInv(inv);
  rowKernel<K, TEAM, V, PER, T><<<grid, std::max(TEAM, 128)>>>(
      dIn.ptr, dBias.ptr, dScale.ptr, dOut.ptr, dMean.ptr, dInv.ptr, rows, len, vector && V > 1);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  out = dOut.read();
  mean = dMean.read();
  inv = dInv.read();

  const double tol = tolerance<T>();
  int64_t bad = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const RowExpected e = rowReference<K, C>(inputs, r, len);
    for (int64_t j = 0; j < len; ++j) {
      const double ref = e.values[j], got = sluice_load(out[r * len + j]);
      if (!rowValueClose<K>(got, ref, tol) && bad++ < 3)
        printf("  row %lld element %lld: got %.9g, want %.9g\n", (long long)r, (long long)j, got,
               ref);
    }
    if (K == SLUICE_ROW_LAYER_NORM &&
        (std::fabs(mean[r] - e.a) > 1e-5 * (std::fabs(e.a) + 1) ||
         std::fabs(inv[r] - e.b) > 1e-5 * e.b) &&
        bad++ < 3)
      printf("  row %lld: mean %.9g inv %.9g, want %.9g %.9g\n", (long long)r, mean[r], inv[r], e.a,
             e.b);
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
    reduceLoad<V>(in, len, row, j0, x_);
  };
  auto store_ = [&](int64_t row, A y0_) { out[row] = y0_; };
  sluice_row_reduce_run<K, TEAM, V, A>(rows, len, load_, store_);
}

template <int K, int TEAM, int V, typename T>
void checkReduce(int64_t rows, int64_t len, unsigned grid) {
  typedef typename Compute<T>::type A;
  const std::vector<T> in = reduceInputs<T>(rows, len);
  DeviceBuffer<T> dIn(in);
  DeviceBuffer<A> dOut(rows);
  reduceKernel<K, TEAM, V, T><<<grid, std::max(TEAM, 128)>>>(dIn.ptr, dOut.ptr, rows, len);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  const std::vector<A> out = dOut.read();
  int64_t bad = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const double acc = reduceReference<K, A>(in, r, len).value;
    if (!(std::fabs((double)out[r] - acc) <= 1e-5 * std::fabs(acc) + 1e-5) && bad++ < 3)
      printf("  row %lld: got %.9g, want %.9g\n", (long long)r, (double)out[r], acc);
  }
  printf("%s: reduce %d %s, %lld rows of %lld, team %d, V %d\n", bad ? "FAIL" : "ok", K,
         typeName<T>(), (long long)rows, (long long)len, TEAM, V);
  failures += bad != 0;
}

} // namespace

int main() {
  if (sluice_gpu_test::noDevice())
    return sluice_gpu_test::kSkipped;
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
