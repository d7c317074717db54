//===- sluice_gen/layout/sparse_2_4.h - the 2:4 weight pattern -*- C++ -*-===//
//
// The 2:4 check of the cuda target's sparse GEMMs (sluice_gen/cuda_sparse.cuh,
// docs/pruning.md): the compiler emits a cuSPARSELt GEMM only for a weight
// this check accepts (codegen/cuda/groups/Gemm.cpp), the pattern
// cuSPARSELt's compression keeps exactly.
//
// Dependency-free: portable C++ and the C standard library only (no CUDA,
// no other sluice_gen header), so that the compiler can include it.
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_LAYOUT_SPARSE_2_4_H
#define SLUICE_GEN_LAYOUT_SPARSE_2_4_H

#include <stdint.h>
#include <string.h>

/// Whether the row-major K x N matrix `w` (row stride `ld` elements of
/// `elemBytes` bytes: 2 or 4) has at most two nonzeros in every group of
/// four consecutive rows of each column: the 2:4 pattern along K that
/// cuSPARSELt's compression keeps exactly. +0 and -0 are zero. K must be a
/// multiple of 4 (false otherwise).
static inline bool sluice_is_2_4(const void *w, int elemBytes, int64_t k, int64_t n, int64_t ld) {
  if (k % 4 != 0 || (elemBytes != 2 && elemBytes != 4))
    return false;
  const unsigned char *bytes = (const unsigned char *)w;
  for (int64_t g = 0; g < k; g += 4)
    for (int64_t j = 0; j < n; ++j) {
      int nonzero = 0;
      for (int64_t r = 0; r < 4; ++r) {
        const unsigned char *p = bytes + ((g + r) * ld + j) * elemBytes;
        uint32_t bits = 0;
        memcpy(&bits, p, elemBytes);
        const uint32_t magnitude = elemBytes == 2 ? 0x7fffu : 0x7fffffffu;
        nonzero += (bits & magnitude) != 0;
      }
      if (nonzero > 2)
        return false;
    }
  return true;
}

#endif // SLUICE_GEN_LAYOUT_SPARSE_2_4_H
