//===- sluice_gen/cpu_blas.h - OpenBLAS calls of cpu bundles -*- C++ -*-===//
//
// GEMMs of the cpu target are library calls into OpenBLAS (cblas). The
// thread count follows the run's; OpenBLAS keeps it globally, so it is set
// only when it changes.
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CPU_BLAS_H
#define SLUICE_GEN_CPU_BLAS_H

#include <cblas.h>

static inline void sluice_blas_threads(int threads) {
  static int current = -1;
  if (threads != current) {
    openblas_set_num_threads(threads);
    current = threads;
  }
}

/// C[batch] = A[batch] x B[batch], row-major, per-batch element offsets.
template <typename T> struct sluice_gemm;
template <> struct sluice_gemm<float> {
  static void run(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                  const float *b, int64_t ldb, float *c, int64_t ldc) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k,
                1.0f, a, (int)lda, b, (int)ldb, 0.0f, c, (int)ldc);
  }
};
template <> struct sluice_gemm<double> {
  static void run(int64_t m, int64_t n, int64_t k, const double *a, int64_t lda,
                  const double *b, int64_t ldb, double *c, int64_t ldc) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k,
                1.0, a, (int)lda, b, (int)ldb, 0.0, c, (int)ldc);
  }
};

/// Batched GEMM: batch i reads a + aOff[i], b + bOff[i], writes c + i*m*n.
template <typename T>
static inline void sluice_gemm_batched(int threads, int64_t batches, int64_t m, int64_t n,
                                       int64_t k, const T *a, const int64_t *aOff,
                                       const T *b, const int64_t *bOff, T *c) {
  sluice_blas_threads(threads);
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    for (int64_t i = 0; i < batches * m * n; ++i)
      c[i] = 0;
    return;
  }
  for (int64_t i = 0; i < batches; ++i)
    sluice_gemm<T>::run(m, n, k, a + aOff[i], k, b + bOff[i], n, c + i * m * n, n);
}

#endif // SLUICE_GEN_CPU_BLAS_H
