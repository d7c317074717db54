//===- sluice_gen/layout/cpu_gemm_pack.h - f32 weights in sgemm panels -*- C++ -*-===//
//
// The layout of an f32 GEMM weight packed at compile time for
// sluice_sgemm::gemm_packed_ep (cpu_gemm.h). Dependency-free: the compiler
// includes it to write weights.bin (codegen/cpu/groups/Gemm.cpp), bundles
// through cpu_gemm.h, so both agree on the layout by construction.
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_LAYOUT_CPU_GEMM_PACK_H
#define SLUICE_GEN_LAYOUT_CPU_GEMM_PACK_H

#include <cstdint>

/// B packed ahead of time for sluice_sgemm::gemm_packed_ep (a weight, packed
/// at compile time: codegen/cpu/groups/Gemm.cpp stores it so in
/// weights.bin): columns in panels `nr` wide over the whole depth, column j
/// of row p at dst[(j / nr) * nr * k + p * nr + j % nr], columns past n
/// zero. Plain C++: the compiler packs with it, for the panel width of the
/// host's bundles (sluice_sgemm::NR: 32 on AVX-512, 16 on AVX2).
static inline int64_t sluice_sgemm_packed_floats(int64_t nr, int64_t k, int64_t n) {
  return (n + nr - 1) / nr * nr * k;
}
static inline void sluice_sgemm_pack_panels(int64_t nr, int64_t k, int64_t n, const float *b,
                                            int64_t ldb, float *dst) {
  for (int64_t j0 = 0; j0 < n; j0 += nr) {
    float *panel = dst + j0 * k;
    const int64_t cols = n - j0 < nr ? n - j0 : nr;
    for (int64_t p = 0; p < k; ++p)
      for (int64_t q = 0; q < nr; ++q)
        panel[p * nr + q] = q < cols ? b[p * ldb + j0 + q] : 0.0f;
  }
}

#endif // SLUICE_GEN_LAYOUT_CPU_GEMM_PACK_H
