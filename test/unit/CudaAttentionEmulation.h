//===- CudaAttentionEmulation.h - cuda attention kernels on the host -*- C++ -*-===//
//
// sluice_gen/cuda_attention.h compiled for the host on the fiber emulation
// of CudaRowEmulation.h, plus what the attention kernels use beyond it:
// __align__, uint4, __shfl_sync and mma.sync m16n8k16. The mma emulation
// has the warp's lanes deposit their fragments between two warp barriers;
// each lane reads back its accumulators, the fragments decoded as the PTX
// ISA lays them out (groupID g = lane / 4, threadID_in_group t = lane % 4;
// A: rows g and g + 8, columns 2t, 2t + 1 and + 8; B: rows 2t, 2t + 1 and
// + 8 of column g; C: rows g and g + 8, columns 2t, 2t + 1), multiplied in
// fp32. attn_emu::shuffledMma switches to the kernel header's own pre-sm_80
// path (mma through warp shuffles) instead.
//
// Used by CudaAttentionEmuTest.cpp and by the harness of
// cuda_attention_emulate.py (generated model.cu steps).
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_TEST_UNIT_CUDAATTENTIONEMULATION_H
#define SLUICE_TEST_UNIT_CUDAATTENTIONEMULATION_H

#include "CudaRowEmulation.h"

#include <cstdint>
#include <cstring>

#include "sluice_gen/scalar.h"

#define __align__(n) __attribute__((aligned(n)))

struct uint4 {
  uint32_t x, y, z, w;
};

template <typename T> T __shfl_sync(unsigned mask, T v, int source) {
  return sluice_emu::shuffle(mask, v, (unsigned)source);
}

namespace attn_emu {

/// mma.sync through the kernel header's shuffle fallback (pre-sm_80)
/// instead of the fragment model.
inline bool shuffledMma = false;

/// One lane's fragments, exchanged through the emulation's lane slots.
struct Fragments {
  uint32_t a[4], b[2];
  float c[4];
};
static_assert(sizeof(Fragments) <= 64, "lane slots hold 64 bytes");

inline float halfBits(bool bf16, uint32_t bits) {
  return bf16 ? sluice_load(sluice_bf16{(uint16_t)bits}) : sluice_load(sluice_f16{(uint16_t)bits});
}

} // namespace attn_emu

inline void sluice_attn_emu_mma(bool bf16, float c[4], const uint32_t a[4],
                                const uint32_t b[2]);

#define SLUICE_ATTN_EMU 1
#include "sluice_gen/cuda_attention.h"

/// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}: the whole warp's
/// fragments assembled into A (16x16), B (16x8), C (16x8); D = A B + C.
inline void sluice_attn_emu_mma(bool bf16, float c[4], const uint32_t a[4],
                                const uint32_t b[2]) {
  if (attn_emu::shuffledMma) {
    if (bf16)
      sluice_attn_mma_shuffled<sluice_bf16>(c, a, b);
    else
      sluice_attn_mma_shuffled<sluice_f16>(c, a, b);
    return;
  }
  sluice_emu::Machine &m = *sluice_emu::machine;
  const unsigned tid = threadIdx.x, base = tid / 32 * 32, lane = tid % 32;
  attn_emu::Fragments mine;
  std::memcpy(mine.a, a, sizeof(mine.a));
  std::memcpy(mine.b, b, sizeof(mine.b));
  std::memcpy(mine.c, c, sizeof(mine.c));
  std::memcpy(m.slots[tid].data(), &mine, sizeof(mine));
  sluice_emu::warpBarrier();
  float A[16][16], B[16][8], C[16][8];
  for (unsigned l = 0; l < 32; ++l) {
    attn_emu::Fragments f;
    std::memcpy(&f, m.slots[base + l].data(), sizeof(f));
    const unsigned g = l / 4, t = l % 4;
    auto lo = [&](uint32_t r) { return attn_emu::halfBits(bf16, r & 0xffffu); };
    auto hi = [&](uint32_t r) { return attn_emu::halfBits(bf16, r >> 16); };
    A[g][2 * t] = lo(f.a[0]);
    A[g][2 * t + 1] = hi(f.a[0]);
    A[g + 8][2 * t] = lo(f.a[1]);
    A[g + 8][2 * t + 1] = hi(f.a[1]);
    A[g][2 * t + 8] = lo(f.a[2]);
    A[g][2 * t + 9] = hi(f.a[2]);
    A[g + 8][2 * t + 8] = lo(f.a[3]);
    A[g + 8][2 * t + 9] = hi(f.a[3]);
    B[2 * t][g] = lo(f.b[0]);
    B[2 * t + 1][g] = hi(f.b[0]);
    B[2 * t + 8][g] = lo(f.b[1]);
    B[2 * t + 9][g] = hi(f.b[1]);
    C[g][2 * t] = f.c[0];
    C[g][2 * t + 1] = f.c[1];
    C[g + 8][2 * t] = f.c[2];
    C[g + 8][2 * t + 1] = f.c[3];
  }
  const unsigned g = lane / 4, t = lane % 4;
  auto dot = [&](unsigned r, unsigned col) {
    float acc = C[r][col];
    for (int k = 0; k < 16; ++k)
      acc += A[r][k] * B[k][col];
    return acc;
  };
  const float d0 = dot(g, 2 * t), d1 = dot(g, 2 * t + 1), d2 = dot(g + 8, 2 * t),
              d3 = dot(g + 8, 2 * t + 1);
  sluice_emu::warpBarrier(); // every lane has read the warp's fragments
  c[0] = d0;
  c[1] = d1;
  c[2] = d2;
  c[3] = d3;
}

#endif // SLUICE_TEST_UNIT_CUDAATTENTIONEMULATION_H
