//===- sluice_gen/cpu_int8.h - int8 GEMM of quantized cpu bundles -*- C++ -*-===//
//
// The real int8 GEMM of --quantize=int8 on the cpu target (docs/quantization.md):
//
//   C[m][n] = epilogue( sum_k (A[m][k] - zA) * B[k][n] )      (int32 sums)
//
// A (the activation) is u8 with a per-tensor zero point zA (or s8, see
// below), quantized by sluice_int8_quantize; B (the weight) is s8, symmetric
// per output column, quantized and packed once at compile time by
// sluice_int8_quantize_weights and sluice_int8_pack_b (portable C++ in
// sluice_gen/layout/cpu_int8_pack.h, which the compiler includes: it needs
// no OpenMP or ISA flag). The epilogue
// dequantizes acc * (scaleA * scaleB[n]) + bias[n] to f32, or requantizes
// that value to u8/s8 for a following quantized op, or returns the raw
// int32 sums (MatMulInteger). Leading batch dimensions of A are flattened
// into M.
//
// Why u8 x s8: the VNNI instruction vpdpbusd (and AMX's tdpbusd) multiplies
// unsigned bytes of its first operand by signed bytes of its second and
// adds four products into each int32 lane, without saturation. The zero
// point comes out of the sum after the GEMM:
//   sum_k (a - zA) b = sum_k a b  -  zA * colsum[n],   colsum[n] = sum_k B[k][n]
// colsum is exact int32, computed at packing time and stored with the
// panels; the micro-kernels start their sums at -zA * colsum[n], so the
// correction costs nothing per element. An s8 activation (TensorRT-style
// symmetric, or ONNX QDQ with int8 activations) is a u8 one shifted by
// 128: the kernels flip its sign bits (a ^ 0x80 = a + 128) as they
// broadcast it and compensate with (zA + 128) * colsum. Sums wrap modulo
// 2^32 in every path, so the result is exact whenever the true value fits
// int32 (always for K <= 65793).
//
// Packed B layout (sluice_int8_pack_b; the same bytes for every ISA path,
// so the compiler need not know which one the bundle's build selects):
//   P = ceil(N / 64) panels of 64 columns, K4 = ceil(K / 4) groups of 4 rows
//   bytes [0, 256 P):         int32 colsum[64 P] (0 on padding columns)
//   then panel p, group g:    256 bytes at 256 P + (p K4 + g) * 256, holding
//                             B[4g + t][64p + c] at byte 4c + t (c < 64, t < 4),
//                             0 outside K x N
// Each 64-byte run (16 columns x 4 rows) is one vpdpbusd operand and one
// row of an AMX B tile; a panel's groups are contiguous, so a slice of K is
// a contiguous range of a panel.
//
// ISA paths, chosen at compile time from the compiler's macros (bundles
// build with -march=native) or forced with SLUICE_INT8_ISA (tests):
//   AVX512_VNNI  zmm vpdpbusd, 6 x 64 register tile        (__AVX512VNNI__)
//   AVX512_BW    zmm vpmaddwd on even/odd bytes, 4 x 64      (__AVX512BW__)
//   AVX_VNNI     ymm vpdpbusd, 6 x 16                        (__AVXVNNI__)
//   AVX2         ymm vpmaddwd on even/odd bytes, 4 x 16      (__AVX2__)
//   SCALAR       plain C++ loops the compiler vectorizes (omp simd), 4 x 32
//   AMX          tdpbusd on 32 x 32 tile blocks, opt-in with SLUICE_INT8_AMX
//                (needs __AMX_INT8__); NEVER RUN on AMX hardware: checked
//                only in emulation (test/unit/Int8GemmTest.cpp), so it is
//                not selected by default. Falls back to AVX512_VNNI when the
//                kernel refuses the tile permission.
// Without VNNI the products are not formed with vpmaddubsw: it adds two
// u8 x s8 products into a saturating int16, and 255 * 127 * 2 > 32767, so
// results would be wrong for large activations (the reason for PyTorch's
// reduce_range). Splitting each group's bytes into even and odd int16
// lanes (vpmaddwd: int16 x int16 pairs into int32, exact) costs four
// instructions per 32 products against vpmaddubsw's three, and is exact.
//
// Threading: sluice_int8_gemm spreads column panels (then rows) over the
// run's OpenMP threads; each tile is a single-threaded blocked GEMM whose
// micro-kernel keeps the whole K depth in registers and hands its finished
// tile (at most 6 x 64 int32, in L1) to the epilogue: there is no int32 C
// matrix and no second pass over C. Measured on a Zen 4 core (AVX512_VNNI,
// BERT-base shapes, bench/cpu/int8_gemm_bench.cpp): 440-460 GOP/s per
// thread, the vpdpbusd peak, 4.3-5.0x the f32 GEMM and on par with oneDNN.
//
// Rounding is the same in every path (ONNX QuantizeLinear): y / scale
// rounded half to even, plus the zero point, clamped; dequantization is
// one fused multiply-add, fma((float)acc, scaleA * scaleB[n], bias[n]).
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CPU_INT8_H
#define SLUICE_GEN_CPU_INT8_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

// Packing, weight quantization, scalar reference arithmetic.
#include "sluice_gen/layout/cpu_int8_pack.h"

//===----------------------------------------------------------------------===//
// ISA selection
//===----------------------------------------------------------------------===//

#define SLUICE_INT8_ISA_SCALAR 0
#define SLUICE_INT8_ISA_AVX2 1
#define SLUICE_INT8_ISA_AVX_VNNI 2
#define SLUICE_INT8_ISA_AVX512_BW 3
#define SLUICE_INT8_ISA_AVX512_VNNI 4
#define SLUICE_INT8_ISA_AMX 5

#ifndef SLUICE_INT8_ISA
#if defined(SLUICE_INT8_AMX) && defined(__AMX_INT8__) && defined(__AMX_TILE__) &&                  \
    defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define SLUICE_INT8_ISA SLUICE_INT8_ISA_AMX
#elif defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define SLUICE_INT8_ISA SLUICE_INT8_ISA_AVX512_VNNI
#elif defined(__AVX512BW__) && defined(__AVX512VL__)
#define SLUICE_INT8_ISA SLUICE_INT8_ISA_AVX512_BW
#elif defined(__AVXVNNI__)
#define SLUICE_INT8_ISA SLUICE_INT8_ISA_AVX_VNNI
#elif defined(__AVX2__)
#define SLUICE_INT8_ISA SLUICE_INT8_ISA_AVX2
#else
#define SLUICE_INT8_ISA SLUICE_INT8_ISA_SCALAR
#endif
#endif

#if SLUICE_INT8_ISA != SLUICE_INT8_ISA_SCALAR
#include <immintrin.h>
#endif
#if SLUICE_INT8_ISA == SLUICE_INT8_ISA_AMX
#include "sluice_gen/cpu_scratch.h"
#include <cstdlib>
#include <sys/syscall.h>
#include <unistd.h>
#endif

// The epilogue's vector width: zmm with masks for the AVX-512 paths, ymm
// with a scalar tail for the AVX2 ones.
#if SLUICE_INT8_ISA >= SLUICE_INT8_ISA_AVX512_BW
#if !(defined(__AVX512BW__) && defined(__AVX512VL__))
#error "SLUICE_INT8_ISA: the AVX-512 paths need -mavx512bw -mavx512vl"
#endif
#define SLUICE_INT8_EPILOGUE_512 1
#elif SLUICE_INT8_ISA >= SLUICE_INT8_ISA_AVX2
#if !defined(__AVX2__)
#error "SLUICE_INT8_ISA: the 256-bit paths need -mavx2"
#endif
#define SLUICE_INT8_EPILOGUE_256 1
#endif
#if SLUICE_INT8_ISA == SLUICE_INT8_ISA_AVX512_VNNI && !defined(__AVX512VNNI__)
#error "SLUICE_INT8_ISA_AVX512_VNNI needs -mavx512vnni"
#endif
#if SLUICE_INT8_ISA == SLUICE_INT8_ISA_AVX_VNNI &&                                                 \
    !(defined(__AVXVNNI__) || (defined(__AVX512VNNI__) && defined(__AVX512VL__)))
#error "SLUICE_INT8_ISA_AVX_VNNI needs -mavxvnni (or -mavx512vnni -mavx512vl)"
#endif

/// The selected path's name (benchmarks and test logs print it).
static inline const char *sluice_int8_isa_name() {
#if SLUICE_INT8_ISA == SLUICE_INT8_ISA_AMX
  return "amx";
#elif SLUICE_INT8_ISA == SLUICE_INT8_ISA_AVX512_VNNI
  return "avx512-vnni";
#elif SLUICE_INT8_ISA == SLUICE_INT8_ISA_AVX512_BW
  return "avx512-bw";
#elif SLUICE_INT8_ISA == SLUICE_INT8_ISA_AVX_VNNI
  return "avx-vnni";
#elif SLUICE_INT8_ISA == SLUICE_INT8_ISA_AVX2
  return "avx2";
#else
  return "scalar";
#endif
}

namespace sluice_int8 {

//===----------------------------------------------------------------------===//
// Micro-kernel primitives per ISA
//===----------------------------------------------------------------------===//
// Each path supplies: W int32 lanes per vector, an MR x NV register tile
// (MR rows, NV vectors of W columns), and
//   vec  load(p), store(p, v) W int32
//   bvec load_b(p)            W columns x 4 rows of packed B (4W bytes)
//   avec bcast_a(word)        4 bytes of one A row (already u8), broadcast
//   vec  dot(acc, a, b)       acc[lane] += sum_t a[t] * b[lane][t]
// The micro-kernel template below is shared.

/// Plain C++ (no vector ISA): 16 columns per "vector", in loops the
/// compiler vectorizes for whatever the target has (omp simd).
struct isa_scalar {
  static constexpr int W = 16, MR = 4, NV = 2;
  struct vec {
    uint32_t v[16];
  };
  using bvec = const int8_t *;
  struct avec {
    int32_t t[4];
  };
  static vec load(const int32_t *p) {
    vec r;
    memcpy(r.v, p, 64);
    return r;
  }
  static bvec load_b(const int8_t *p) { return p; }
  static avec bcast_a(uint32_t w) {
    return {{(int32_t)(w & 0xFF), (int32_t)((w >> 8) & 0xFF), (int32_t)((w >> 16) & 0xFF),
             (int32_t)(w >> 24)}};
  }
  static vec dot(const vec &acc, const avec &a, bvec b) {
    vec r;
#pragma omp simd
    for (int c = 0; c < 16; ++c)
      r.v[c] = acc.v[c] + (uint32_t)(a.t[0] * b[4 * c] + a.t[1] * b[4 * c + 1] +
                                     a.t[2] * b[4 * c + 2] + a.t[3] * b[4 * c + 3]);
    return r;
  }
  static void store(int32_t *p, const vec &v) { memcpy(p, v.v, 64); }
};

#if SLUICE_INT8_ISA == SLUICE_INT8_ISA_AVX2 || SLUICE_INT8_ISA == SLUICE_INT8_ISA_AVX_VNNI
/// AVX2 without VNNI: the group's bytes split into even (rows 0, 2) and odd
/// (rows 1, 3) int16 lanes, each pair summed exactly into int32 by vpmaddwd.
/// 4 x 2 tile: 8 accumulators + 4 B halves + 2 A halves of the 16 ymm.
struct isa_avx2 {
  static constexpr int W = 8, MR = 4, NV = 2;
  using vec = __m256i;
  struct bvec {
    __m256i even, odd;
  };
  struct avec {
    __m256i even, odd;
  };
  static vec load(const int32_t *p) { return _mm256_loadu_si256((const __m256i *)p); }
  static bvec load_b(const int8_t *p) {
    const __m256i b = _mm256_loadu_si256((const __m256i *)p);
    return {_mm256_srai_epi16(_mm256_slli_epi16(b, 8), 8), _mm256_srai_epi16(b, 8)};
  }
  static avec bcast_a(uint32_t w) {
    const __m256i a = _mm256_set1_epi32((int)w);
    return {_mm256_and_si256(a, _mm256_set1_epi32(0x00FF00FF)), _mm256_srli_epi16(a, 8)};
  }
  static vec dot(vec acc, const avec &a, const bvec &b) {
    return _mm256_add_epi32(
        acc, _mm256_add_epi32(_mm256_madd_epi16(a.even, b.even), _mm256_madd_epi16(a.odd, b.odd)));
  }
  static void store(int32_t *p, vec v) { _mm256_storeu_si256((__m256i *)p, v); }
};
#endif

#if SLUICE_INT8_ISA == SLUICE_INT8_ISA_AVX_VNNI
/// AVX-VNNI (or its EVEX form under AVX512VL): ymm vpdpbusd. 6 x 2 tile:
/// 12 accumulators + 2 B + 1 broadcast of the 16 ymm.
struct isa_avx_vnni {
  static constexpr int W = 8, MR = 6, NV = 2;
  using vec = __m256i;
  using bvec = __m256i;
  using avec = __m256i;
  static vec load(const int32_t *p) { return _mm256_loadu_si256((const __m256i *)p); }
  static bvec load_b(const int8_t *p) { return _mm256_loadu_si256((const __m256i *)p); }
  static avec bcast_a(uint32_t w) { return _mm256_set1_epi32((int)w); }
  static vec dot(vec acc, avec a, bvec b) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(acc, a, b);
#else
    return _mm256_dpbusd_avx_epi32(acc, a, b);
#endif
  }
  static void store(int32_t *p, vec v) { _mm256_storeu_si256((__m256i *)p, v); }
};
#endif

#if SLUICE_INT8_ISA >= SLUICE_INT8_ISA_AVX512_BW
/// AVX-512 without VNNI: the even/odd vpmaddwd split of isa_avx2 on zmm.
/// 4 x 4 tile: 16 accumulators + 8 B halves + 2 A halves of the 32 zmm.
struct isa_avx512_bw {
  static constexpr int W = 16, MR = 4, NV = 4;
  using vec = __m512i;
  struct bvec {
    __m512i even, odd;
  };
  struct avec {
    __m512i even, odd;
  };
  static vec load(const int32_t *p) { return _mm512_loadu_si512(p); }
  static bvec load_b(const int8_t *p) {
    const __m512i b = _mm512_loadu_si512(p);
    return {_mm512_srai_epi16(_mm512_slli_epi16(b, 8), 8), _mm512_srai_epi16(b, 8)};
  }
  static avec bcast_a(uint32_t w) {
    const __m512i a = _mm512_set1_epi32((int)w);
    return {_mm512_and_si512(a, _mm512_set1_epi32(0x00FF00FF)), _mm512_srli_epi16(a, 8)};
  }
  static vec dot(vec acc, const avec &a, const bvec &b) {
    return _mm512_add_epi32(
        acc, _mm512_add_epi32(_mm512_madd_epi16(a.even, b.even), _mm512_madd_epi16(a.odd, b.odd)));
  }
  static void store(int32_t *p, vec v) { _mm512_storeu_si512(p, v); }
};
#endif

#if SLUICE_INT8_ISA >= SLUICE_INT8_ISA_AVX512_VNNI
/// AVX-512 VNNI: zmm vpdpbusd, 64 products per instruction. 6 x 4 tile (a
/// whole 64-column panel): 24 accumulators + 4 B + 1 broadcast of the 32
/// zmm; per group 4 loads and 6 broadcasts feed 24 vpdpbusd.
struct isa_avx512_vnni {
  static constexpr int W = 16, MR = 6, NV = 4;
  using vec = __m512i;
  using bvec = __m512i;
  using avec = __m512i;
  static vec load(const int32_t *p) { return _mm512_loadu_si512(p); }
  static bvec load_b(const int8_t *p) { return _mm512_loadu_si512(p); }
  static avec bcast_a(uint32_t w) { return _mm512_set1_epi32((int)w); }
  static vec dot(vec acc, avec a, bvec b) { return _mm512_dpbusd_epi32(acc, a, b); }
  static void store(int32_t *p, vec v) { _mm512_storeu_si512(p, v); }
};
#endif

#if SLUICE_INT8_ISA == SLUICE_INT8_ISA_AMX
using isa = isa_avx512_vnni; // AMX's edges and its fallback
#elif SLUICE_INT8_ISA == SLUICE_INT8_ISA_AVX512_VNNI
using isa = isa_avx512_vnni;
#elif SLUICE_INT8_ISA == SLUICE_INT8_ISA_AVX512_BW
using isa = isa_avx512_bw;
#elif SLUICE_INT8_ISA == SLUICE_INT8_ISA_AVX_VNNI
using isa = isa_avx_vnni;
#elif SLUICE_INT8_ISA == SLUICE_INT8_ISA_AVX2
using isa = isa_avx2;
#else
using isa = isa_scalar;
#endif

#if defined(SLUICE_INT8_EPILOGUE_512)
// Full-mask maskz forms of the epilogue's AVX-512 conversions: the plain
// forms' undefined pass-through operand (`__Y = __Y` in GCC 12's headers)
// is reported as used uninitialized at -Wall (GCC PR 105593), and bundles'
// tests build with -Werror. Same instructions, same results.
constexpr __mmask16 ALL16 = (__mmask16)0xFFFF;
/// Round half to even (the default MXCSR mode, as std::nearbyint).
static inline __m512 round_even(__m512 x) {
  return _mm512_maskz_roundscale_ps(ALL16, x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
/// max(x, lo) then min(., hi), NaN -> lo (vmaxps returns its second
/// operand when either is NaN).
static inline __m512 clamp(__m512 x, __m512 lo, __m512 hi) {
  return _mm512_maskz_min_ps(ALL16, _mm512_maskz_max_ps(ALL16, x, lo), hi);
}
static inline __m512 to_float(__m512i x) { return _mm512_maskz_cvtepi32_ps(ALL16, x); }
/// Integral floats in [-128, 255] to their 16 low bytes.
static inline __m128i to_bytes(__m512 x) {
  return _mm512_maskz_cvtepi32_epi8(ALL16, _mm512_maskz_cvtps_epi32(ALL16, x));
}
#endif

/// Bytes of one packed group (64 columns x 4 rows).
constexpr int64_t GROUP_BYTES = 4 * SLUICE_INT8_PANEL;

/// Four bytes of A at p as one word; `Signed`: s8 bytes shifted to u8.
template <bool Signed> static inline uint32_t a_word(const uint8_t *p) {
  uint32_t w;
  memcpy(&w, p, 4);
  return Signed ? w ^ 0x80808080u : w;
}
/// The last, partial group: `bytes` < 4 valid bytes, the rest zero (their
/// B rows are zero too; reading past the row could leave the buffer).
template <bool Signed> static inline uint32_t a_tail_word(const uint8_t *p, int bytes) {
  uint32_t w = p[0];
  if (bytes > 1)
    w |= (uint32_t)p[1] << 8;
  if (bytes > 2)
    w |= (uint32_t)p[2] << 16;
  return Signed ? w ^ 0x80808080u : w;
}

/// Micro-kernel: tile[i][q] = init[q] + the sum over the whole depth of A
/// row i times column q of the strip, for R rows and NV vectors (NV*W
/// columns) of B read at b (a strip inside a panel: groups GROUP_BYTES
/// apart). init is the zero-point term -zA * colsum, so the tile holds the
/// finished int32 result. The sums stay in registers for all of K: at
/// BERT's depths (768, 3072) the B strip streams from L2 fast enough, and
/// K slices would add an int32 round trip of the tile per slice.
template <class V, int R, int NV, bool Signed>
static inline void kernel(int64_t groups, int tail, const uint8_t *a, int64_t lda, const int8_t *b,
                          const int32_t *init, int32_t *tile, int64_t ldt) {
  typename V::vec acc[R][NV];
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v)
      acc[i][v] = V::load(init + V::W * v);
  const uint8_t *arow[R];
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
    arow[i] = a + i * lda;
  for (int64_t g = 0; g < groups; ++g) {
    typename V::bvec bv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v)
      bv[v] = V::load_b(b + g * GROUP_BYTES + 4 * V::W * v);
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      const typename V::avec av = V::bcast_a(a_word<Signed>(arow[i] + 4 * g));
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v)
        acc[i][v] = V::dot(acc[i][v], av, bv[v]);
    }
  }
  if (tail) {
    typename V::bvec bv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v)
      bv[v] = V::load_b(b + groups * GROUP_BYTES + 4 * V::W * v);
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      const typename V::avec av = V::bcast_a(a_tail_word<Signed>(arow[i] + 4 * groups, tail));
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v)
        acc[i][v] = V::dot(acc[i][v], av, bv[v]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v)
      V::store(tile + i * ldt + V::W * v, acc[i][v]);
}

/// kernel<V, R, NV> for nv <= V::NV vectors (the right edge of N: no work
/// on columns past it).
template <class V, int R, int NV, bool Signed>
static inline void kernel_cols(int nv, int64_t groups, int tail, const uint8_t *a, int64_t lda,
                               const int8_t *b, const int32_t *init, int32_t *tile, int64_t ldt) {
  if constexpr (NV > 1) {
    if (nv < NV)
      return kernel_cols<V, R, NV - 1, Signed>(nv, groups, tail, a, lda, b, init, tile, ldt);
  }
  kernel<V, R, NV, Signed>(groups, tail, a, lda, b, init, tile, ldt);
}

/// kernel for rows <= V::MR rows (short edge panels do no wasted work).
template <class V, int R, bool Signed>
static inline void kernel_rows(int rows, int nv, int64_t groups, int tail, const uint8_t *a,
                               int64_t lda, const int8_t *b, const int32_t *init, int32_t *tile,
                               int64_t ldt) {
  if constexpr (R > 1) {
    if (rows < R)
      return kernel_rows<V, R - 1, Signed>(rows, nv, groups, tail, a, lda, b, init, tile, ldt);
  }
  kernel_cols<V, R, V::NV, Signed>(nv, groups, tail, a, lda, b, init, tile, ldt);
}

//===----------------------------------------------------------------------===//
// Epilogue
//===----------------------------------------------------------------------===//

/// What the epilogue of one call needs, per output type.
struct output_params {
  int32_t zeroA;          // the effective u8 zero point (s8 A: zA + 128)
  const int32_t *colsum;  // packed colsum (padded to whole panels)
  float scaleA;           // f32/8-bit outputs
  const float *scaleB;    // per column, N entries
  const float *bias;      // per column or null
  sluice_int8_requant rq; // 8-bit outputs
};

/// Per-strip column factors, for c < cols (zero past them: the vector
/// code loads whole vectors): init[c] = -zA * colsum[n0 + c] (wrapping, as
/// the vector lanes), the micro-kernel's starting sums; scale[c] = scaleA *
/// scaleB[n0 + c] and bias[c] (0 without bias) for the f32 and 8-bit
/// outputs.
struct strip_factors {
  alignas(64) int32_t init[SLUICE_INT8_PANEL];
  alignas(64) float scale[SLUICE_INT8_PANEL];
  alignas(64) float bias[SLUICE_INT8_PANEL];
  void fill(const output_params &p, int64_t n0, int cols, bool scales) {
    for (int c = 0; c < SLUICE_INT8_PANEL; ++c)
      init[c] = c < cols ? (int32_t)(0u - (uint32_t)p.zeroA * (uint32_t)p.colsum[n0 + c]) : 0;
    if (!scales)
      return;
    for (int c = 0; c < SLUICE_INT8_PANEL; ++c) {
      scale[c] = c < cols ? p.scaleA * p.scaleB[n0 + c] : 0.0f;
      bias[c] = c < cols && p.bias ? p.bias[n0 + c] : 0.0f;
    }
  }
};

/// One output element from the scalar reference arithmetic (scalar path,
/// and the tails of the ymm path).
template <typename TC>
static inline void store_one(int32_t x, const output_params &p, const strip_factors &f, int c,
                             TC *out) {
  if constexpr (std::is_same<TC, int32_t>::value)
    *out = x;
  else if constexpr (std::is_same<TC, float>::value)
    *out = sluice_int8_dequant_value(x, f.scale[c], f.bias[c]);
  else
    *out = (TC)sluice_int8_requant_value(sluice_int8_dequant_value(x, f.scale[c], f.bias[c]), p.rq);
}

/// Writes rows x cols of a finished int32 tile (row stride ldt) into C
/// through the epilogue (f: the strip's factors).
template <typename TC>
static inline void store_tile(const int32_t *tile, int64_t ldt, int rows, int cols,
                              const output_params &p, const strip_factors &f, TC *c, int64_t ldc) {
#if defined(SLUICE_INT8_EPILOGUE_512)
  const __m512 rqScale = _mm512_set1_ps(p.rq.scale),
               rqZero = _mm512_set1_ps((float)p.rq.zero_point);
  const __m512 lo = _mm512_set1_ps((float)p.rq.qmin), hi = _mm512_set1_ps((float)p.rq.qmax);
  for (int i = 0; i < rows; ++i)
    for (int c0 = 0; c0 < cols; c0 += 16) {
      const __mmask16 mask = (__mmask16)(cols - c0 >= 16 ? 0xFFFF : (1u << (cols - c0)) - 1);
      const __m512i x = _mm512_loadu_si512(tile + i * ldt + c0);
      TC *out = c + i * ldc + c0;
      if constexpr (std::is_same<TC, int32_t>::value) {
        _mm512_mask_storeu_epi32(out, mask, x);
      } else {
        const __m512 y =
            _mm512_fmadd_ps(to_float(x), _mm512_load_ps(f.scale + c0), _mm512_load_ps(f.bias + c0));
        if constexpr (std::is_same<TC, float>::value) {
          _mm512_mask_storeu_ps(out, mask, y);
        } else {
          const __m512 r = round_even(_mm512_div_ps(y, rqScale));
          _mm_mask_storeu_epi8(out, mask, to_bytes(clamp(_mm512_add_ps(r, rqZero), lo, hi)));
        }
      }
    }
#elif defined(SLUICE_INT8_EPILOGUE_256)
  for (int i = 0; i < rows; ++i) {
    int c0 = 0;
    if constexpr (!std::is_same<TC, uint8_t>::value && !std::is_same<TC, int8_t>::value) {
      for (; c0 + 8 <= cols; c0 += 8) {
        const __m256i x = _mm256_loadu_si256((const __m256i *)(tile + i * ldt + c0));
        TC *out = c + i * ldc + c0;
        if constexpr (std::is_same<TC, int32_t>::value)
          _mm256_storeu_si256((__m256i *)out, x);
        else
          _mm256_storeu_ps(out, _mm256_fmadd_ps(_mm256_cvtepi32_ps(x), _mm256_load_ps(f.scale + c0),
                                                _mm256_load_ps(f.bias + c0)));
      }
    }
    // 8-bit outputs (their epilogue is a small part of the GEMM) and tails.
    for (; c0 < cols; ++c0)
      store_one(tile[i * ldt + c0], p, f, c0, c + i * ldc + c0);
  }
#else
  for (int i = 0; i < rows; ++i)
    for (int c0 = 0; c0 < cols; ++c0)
      store_one(tile[i * ldt + c0], p, f, c0, c + i * ldc + c0);
#endif
}

//===----------------------------------------------------------------------===//
// Blocked single-threaded GEMM
//===----------------------------------------------------------------------===//

/// Rows of A per block: the block (rows x K bytes, at most 512 KiB) stays
/// in L2 while every panel of the tile passes over it; each panel (K x 64
/// bytes, 192 KiB at K = 3072) is read from memory once per block.
static inline int64_t row_block(int64_t k) {
  const int64_t rows = (int64_t(1) << 19) / (k > 0 ? k : 1);
  return rows < 48 ? 48 : rows;
}

/// C rows [r0, r1), panels [p0, p1) through the micro-kernel of path V;
/// `epi(r, rows, c, cols)` after each finished block of C.
template <class V, bool Signed, typename TC, typename Epilogue>
static inline void gemm_block(int64_t r0, int64_t r1, int64_t p0, int64_t p1, int64_t n, int64_t k,
                              const uint8_t *a, int64_t lda, const uint8_t *packed,
                              const output_params &p, TC *c, int64_t ldc, const Epilogue &epi) {
  constexpr int STRIP = V::W * V::NV; // columns per micro-kernel call
  const int64_t panels = (n + SLUICE_INT8_PANEL - 1) / SLUICE_INT8_PANEL;
  const int64_t groups = k / 4, allGroups = (k + 3) / 4;
  const int tail = (int)(k % 4);
  const int8_t *data = (const int8_t *)(packed + GROUP_BYTES * panels);
  const int64_t mc = row_block(k);
  alignas(64) int32_t tile[V::MR * STRIP];
  strip_factors f;
  for (int64_t ic = r0; ic < r1; ic += mc) {
    const int64_t rowsBlock = r1 - ic < mc ? r1 - ic : mc;
    // Row panels of near-equal height (128 rows: 6 x 18 + 5 x 4, not
    // 6 x 21 + 2): short panels waste the multiply pipes.
    const int64_t rowPanels = (rowsBlock + V::MR - 1) / V::MR;
    const int64_t base = rowsBlock / rowPanels, extra = rowsBlock % rowPanels;
    for (int64_t panel = p0; panel < p1; ++panel) {
      for (int64_t s0 = 0; s0 < SLUICE_INT8_PANEL; s0 += STRIP) {
        const int64_t n0 = panel * SLUICE_INT8_PANEL + s0;
        if (n0 >= n)
          break;
        const int cols = (int)(n - n0 < STRIP ? n - n0 : STRIP);
        const int nv = (cols + V::W - 1) / V::W;
        f.fill(p, n0, cols, !std::is_same<TC, int32_t>::value);
        const int8_t *strip = data + panel * allGroups * GROUP_BYTES + 4 * s0;
        for (int64_t r = 0, ir = ic; r < rowPanels; ++r) {
          const int rows = (int)(base + (r < extra ? 1 : 0));
          kernel_rows<V, V::MR, Signed>(rows, nv, groups, tail, a + ir * lda, lda, strip, f.init,
                                        tile, STRIP);
          store_tile(tile, STRIP, rows, cols, p, f, c + ir * ldc + n0, ldc);
          epi(ir, (int64_t)rows, n0, (int64_t)cols);
          ir += rows;
        }
      }
    }
  }
}

#if SLUICE_INT8_ISA == SLUICE_INT8_ISA_AMX
//===----------------------------------------------------------------------===//
// AMX (opt-in, never run on AMX hardware; see the header comment)
//===----------------------------------------------------------------------===//
// Eight 16 x 64-byte tiles: C0..C3 (tmm0-3) a 32 x 32 int32 block, A0/A1
// (tmm4-5) 32 rows x 64 bytes of A, B0/B1 (tmm6-7) 16 groups x 16 columns
// each, loaded straight from a panel with a 256-byte stride. A is copied
// per row block into a buffer padded to 32 rows and to a multiple of 64 in
// K (s8 already shifted), so every A tile is whole; the last partial chunk
// of K of each panel is copied into a zero-padded buffer, so no B tile
// reads past the packed weight. Tile configuration is one shape for all
// tiles: loading a configuration zeroes the tiles, so it cannot change
// between the K chunks of one accumulation.
//
// With SLUICE_INT8_AMX_EMULATE the tile operations are plain C++ with the
// instructions' semantics (the test's only way to run this code here).

struct alignas(64) amx_config {
  uint8_t palette;
  uint8_t startRow;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

#if defined(SLUICE_INT8_AMX_EMULATE)
namespace amx_emulation {
struct tiles {
  uint8_t data[8][16][64];
  uint16_t colsb[8];
  uint8_t rows[8];
};
static inline tiles &state() {
  static thread_local tiles t;
  return t;
}
static inline void config(const amx_config *c) {
  tiles &t = state();
  memset(t.data, 0, sizeof(t.data)); // ldtilecfg zeroes every tile
  for (int i = 0; i < 8; ++i) {
    t.colsb[i] = c->colsb[i];
    t.rows[i] = c->rows[i];
  }
}
static inline void load(int tile, const void *base, long stride) {
  tiles &t = state();
  for (int r = 0; r < t.rows[tile]; ++r)
    memcpy(t.data[tile][r], (const uint8_t *)base + r * stride, t.colsb[tile]);
}
static inline void store(int tile, void *base, long stride) {
  tiles &t = state();
  for (int r = 0; r < t.rows[tile]; ++r)
    memcpy((uint8_t *)base + r * stride, t.data[tile][r], t.colsb[tile]);
}
/// tdpbusd: C[m][n] += sum over K/4 groups of u8 A[m][4k + t] * s8 B[k][4n + t].
static inline void dpbusd(int c, int a, int b) {
  tiles &t = state();
  for (int m = 0; m < t.rows[c]; ++m)
    for (int n = 0; n < t.colsb[c] / 4; ++n) {
      uint32_t acc;
      memcpy(&acc, &t.data[c][m][4 * n], 4);
      for (int k = 0; k < t.colsb[a] / 4; ++k)
        for (int q = 0; q < 4; ++q)
          acc += (uint32_t)((int32_t)t.data[a][m][4 * k + q] *
                            (int32_t)(int8_t)t.data[b][k][4 * n + q]);
      memcpy(&t.data[c][m][4 * n], &acc, 4);
    }
}
} // namespace amx_emulation
#define SLUICE_AMX_CONFIG(cfg) amx_emulation::config(cfg)
#define SLUICE_AMX_RELEASE() ((void)0)
#define SLUICE_AMX_LOAD(t, base, stride) amx_emulation::load(t, base, stride)
#define SLUICE_AMX_STORE(t, base, stride) amx_emulation::store(t, base, stride)
#define SLUICE_AMX_DPBUSD(c, a, b) amx_emulation::dpbusd(c, a, b)
#else
#if !(defined(__AMX_INT8__) && defined(__AMX_TILE__))
#error "SLUICE_INT8_ISA_AMX needs -mamx-int8 -mamx-tile (or SLUICE_INT8_AMX_EMULATE)"
#endif
#define SLUICE_AMX_CONFIG(cfg) _tile_loadconfig(cfg)
#define SLUICE_AMX_RELEASE() _tile_release()
#define SLUICE_AMX_LOAD(t, base, stride) _tile_loadd(t, base, stride)
#define SLUICE_AMX_STORE(t, base, stride) _tile_stored(t, base, stride)
#define SLUICE_AMX_DPBUSD(c, a, b) _tile_dpbusd(c, a, b)
#endif

/// Whether this process may use the tile registers: Linux hands out the
/// AMX state only on request (arch_prctl ARCH_REQ_XCOMP_PERM for
/// XFEATURE_XTILEDATA, kernel 5.16 and newer); asked once.
static inline bool amx_permitted() {
#if defined(SLUICE_INT8_AMX_EMULATE)
  return true;
#else
  static const bool permitted =
      syscall(SYS_arch_prctl, 0x1023 /*ARCH_REQ_XCOMP_PERM*/, 18 /*XFEATURE_XTILEDATA*/) == 0;
  return permitted;
#endif
}

/// A per-thread byte buffer of at least `bytes`, 64-byte aligned; grown as
/// needed, freed with the model or when the thread ends (cpu_scratch.h).
/// Null when it cannot be had.
static inline uint8_t *amx_scratch(int64_t bytes) {
  static thread_local sluice_scratch_buffer buffer;
  return (uint8_t *)buffer.get((size_t)(bytes > 0 ? bytes : 0));
}

/// gemm_block with AMX tiles; false (nothing done) when the process may
/// not use them or the buffer cannot be had, and the caller falls back.
template <bool Signed, typename TC, typename Epilogue>
static inline bool amx_gemm_block(int64_t r0, int64_t r1, int64_t p0, int64_t p1, int64_t n,
                                  int64_t k, const uint8_t *a, int64_t lda, const uint8_t *packed,
                                  const output_params &p, TC *c, int64_t ldc, const Epilogue &epi) {
  if (!amx_permitted())
    return false;
  const int64_t panels = (n + SLUICE_INT8_PANEL - 1) / SLUICE_INT8_PANEL;
  const int64_t allGroups = (k + 3) / 4;
  const int64_t chunks = (k + 63) / 64, kp = 64 * chunks;
  const int64_t mc = (row_block(k) + 31) / 32 * 32;
  const int64_t fullChunks = allGroups / 16; // chunks whose 16 groups all exist
  uint8_t *abuf = amx_scratch(mc * kp + 16 * GROUP_BYTES);
  if (!abuf)
    return false;
  uint8_t *btail = abuf + mc * kp; // the last partial chunk of one panel
  const int8_t *data = (const int8_t *)(packed + GROUP_BYTES * panels);
  amx_config cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.palette = 1;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  SLUICE_AMX_CONFIG(&cfg);
  alignas(64) int32_t block[32 * 32];
  strip_factors f;
  for (int64_t ic = r0; ic < r1; ic += mc) {
    const int64_t rowsBlock = r1 - ic < mc ? r1 - ic : mc;
    const int64_t rowsPadded = (rowsBlock + 31) / 32 * 32;
    for (int64_t i = 0; i < rowsPadded; ++i) {
      uint8_t *dst = abuf + i * kp;
      int64_t copied = 0;
      if (i < rowsBlock) {
        const uint8_t *src = a + (ic + i) * lda;
        for (; copied < k; ++copied)
          dst[copied] = Signed ? (uint8_t)(src[copied] ^ 0x80) : src[copied];
      }
      memset(dst + copied, 0, (size_t)(kp - copied));
    }
    for (int64_t panel = p0; panel < p1; ++panel) {
      const int8_t *pdata = data + panel * allGroups * GROUP_BYTES;
      if (fullChunks < chunks) {
        const int64_t have = allGroups - 16 * fullChunks;
        memcpy(btail, pdata + 16 * fullChunks * GROUP_BYTES, (size_t)(have * GROUP_BYTES));
        memset(btail + have * GROUP_BYTES, 0, (size_t)((16 - have) * GROUP_BYTES));
      }
      for (int64_t s0 = 0; s0 < SLUICE_INT8_PANEL; s0 += 32) {
        const int64_t n0 = panel * SLUICE_INT8_PANEL + s0;
        if (n0 >= n)
          break;
        const int cols = (int)(n - n0 < 32 ? n - n0 : 32);
        f.fill(p, n0, cols, !std::is_same<TC, int32_t>::value);
        // The buffers above are read by tile loads the compiler cannot see.
        __asm__ volatile("" ::: "memory");
        for (int64_t ir = 0; ir < rowsBlock; ir += 32) {
          const int rows = (int)(rowsBlock - ir < 32 ? rowsBlock - ir : 32);
          // Every row of a C tile starts at the zero-point term (stride 0).
          SLUICE_AMX_LOAD(0, f.init, 0);
          SLUICE_AMX_LOAD(1, f.init + 16, 0);
          SLUICE_AMX_LOAD(2, f.init, 0);
          SLUICE_AMX_LOAD(3, f.init + 16, 0);
          const uint8_t *arow = abuf + ir * kp;
          for (int64_t ch = 0; ch < chunks; ++ch) {
            const int8_t *b = ch < fullChunks ? pdata + ch * 16 * GROUP_BYTES + 4 * s0
                                              : (const int8_t *)btail + 4 * s0;
            SLUICE_AMX_LOAD(4, arow + ch * 64, kp);
            SLUICE_AMX_LOAD(5, arow + 16 * kp + ch * 64, kp);
            SLUICE_AMX_LOAD(6, b, GROUP_BYTES);
            SLUICE_AMX_LOAD(7, b + 64, GROUP_BYTES);
            SLUICE_AMX_DPBUSD(0, 4, 6);
            SLUICE_AMX_DPBUSD(1, 4, 7);
            SLUICE_AMX_DPBUSD(2, 5, 6);
            SLUICE_AMX_DPBUSD(3, 5, 7);
          }
          SLUICE_AMX_STORE(0, block, 128);
          SLUICE_AMX_STORE(1, block + 16, 128);
          SLUICE_AMX_STORE(2, block + 16 * 32, 128);
          SLUICE_AMX_STORE(3, block + 16 * 32 + 16, 128);
          store_tile(block, 32, rows, cols, p, f, c + (ic + ir) * ldc + n0, ldc);
          epi(ic + ir, (int64_t)rows, n0, (int64_t)cols);
        }
      }
    }
  }
  SLUICE_AMX_RELEASE();
  return true;
}
#endif // SLUICE_INT8_ISA == SLUICE_INT8_ISA_AMX

/// The single-threaded GEMM of one tile with the selected path.
template <bool Signed, typename TC, typename Epilogue>
static inline void gemm_tile(int64_t r0, int64_t r1, int64_t p0, int64_t p1, int64_t n, int64_t k,
                             const uint8_t *a, int64_t lda, const uint8_t *packed,
                             const output_params &p, TC *c, int64_t ldc, const Epilogue &epi) {
#if SLUICE_INT8_ISA == SLUICE_INT8_ISA_AMX
  if (amx_gemm_block<Signed>(r0, r1, p0, p1, n, k, a, lda, packed, p, c, ldc, epi))
    return;
#endif
  gemm_block<isa, Signed>(r0, r1, p0, p1, n, k, a, lda, packed, p, c, ldc, epi);
}

} // namespace sluice_int8

//===----------------------------------------------------------------------===//
// Public entry points
//===----------------------------------------------------------------------===//

/// The epilogue of a GEMM without a fused one: nothing.
struct sluice_int8_no_epilogue {
  void operator()(int64_t, int64_t, int64_t, int64_t) const {}
};

/// C[m x n] (row stride ldc) from A (TA = uint8_t with zero point zeroA,
/// or int8_t with its own zero point; m x k, row stride lda) times the
/// packed s8 weight (sluice_int8_pack_b of a k x n B):
///   TC = int32_t:           C = sum_k (A - zeroA) B             (scales unused)
///   TC = float:             C = fma(sum, scaleA * scaleB[n], bias[n] or 0)
///   TC = uint8_t / int8_t:  C = requant(that float, *requant) (required)
/// `epi(r0, rows, c0, cols)` runs on each block of C as soon as it holds
/// its final values (at most 6 x 64; 32 x 32 with AMX), on the thread that wrote it:
/// a fused elementwise epilogue reads C from cache. Column panels (then
/// rows) are spread over `threads` OpenMP threads.
template <typename TA, typename TC, typename Epilogue>
static inline void sluice_int8_gemm_ep(int threads, int64_t m, int64_t n, int64_t k, const TA *a,
                                       int64_t lda, int32_t zeroA, float scaleA,
                                       const void *packedB, const float *scaleB, const float *bias,
                                       const sluice_int8_requant *requant, TC *c, int64_t ldc,
                                       const Epilogue &epi) {
  static_assert(std::is_same<TA, uint8_t>::value || std::is_same<TA, int8_t>::value,
                "A is u8 or s8");
  static_assert(std::is_same<TC, float>::value || std::is_same<TC, int32_t>::value ||
                    std::is_same<TC, uint8_t>::value || std::is_same<TC, int8_t>::value,
                "C is f32, int32, u8 or s8");
  if (m <= 0 || n <= 0)
    return;
  constexpr bool Signed = std::is_same<TA, int8_t>::value;
  sluice_int8::output_params p;
  p.zeroA = Signed ? zeroA + 128 : zeroA;
  p.colsum = (const int32_t *)packedB;
  p.scaleA = scaleA;
  p.scaleB = scaleB;
  p.bias = bias;
  p.rq = requant ? *requant : sluice_int8_requant{1.0f, 0, 0, 0};
  const uint8_t *au = (const uint8_t *)a;
  const uint8_t *packed = (const uint8_t *)packedB;
  // Tiles: whole panels per thread first (each thread then reads only its
  // share of B, the larger operand at BERT shapes), rows when there are
  // fewer panels than threads.
  const int64_t panels = (n + SLUICE_INT8_PANEL - 1) / SLUICE_INT8_PANEL;
  int64_t colBlocks = 1, rowBlocks = 1;
  if (threads > 1 && 2.0 * (double)m * n * k > 2e6) {
    colBlocks = panels < threads ? panels : threads;
    rowBlocks = (threads + colBlocks - 1) / colBlocks;
    const int64_t maxRowBlocks = (m + 15) / 16;
    rowBlocks = rowBlocks < maxRowBlocks ? rowBlocks : maxRowBlocks;
  }
  const int64_t tiles = rowBlocks * colBlocks;
  const int64_t rowStep = (m + rowBlocks - 1) / rowBlocks;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && tiles > 1)
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t rb = t / colBlocks, cb = t % colBlocks;
    const int64_t r0 = rb * rowStep, r1 = r0 + rowStep < m ? r0 + rowStep : m;
    const int64_t p0 = cb * panels / colBlocks, p1 = (cb + 1) * panels / colBlocks;
    if (r0 >= r1 || p0 >= p1)
      continue;
    sluice_int8::gemm_tile<Signed>(r0, r1, p0, p1, n, k, au, lda, packed, p, c, ldc, epi);
  }
}

/// sluice_int8_gemm_ep without a fused epilogue.
template <typename TA, typename TC>
static inline void sluice_int8_gemm(int threads, int64_t m, int64_t n, int64_t k, const TA *a,
                                    int64_t lda, int32_t zeroA, float scaleA, const void *packedB,
                                    const float *scaleB, const float *bias,
                                    const sluice_int8_requant *requant, TC *c, int64_t ldc) {
  sluice_int8_gemm_ep(threads, m, n, k, a, lda, zeroA, scaleA, packedB, scaleB, bias, requant, c,
                      ldc, sluice_int8_no_epilogue());
}

namespace sluice_int8 {
/// sluice_int8_quantize of x[begin, end).
template <typename T>
static inline void quantize_span(const float *x, int64_t begin, int64_t end,
                                 const sluice_int8_requant &rq, T *q) {
  int64_t i = begin;
#if defined(SLUICE_INT8_EPILOGUE_512)
  const __m512 s = _mm512_set1_ps(rq.scale), z = _mm512_set1_ps((float)rq.zero_point);
  const __m512 lo = _mm512_set1_ps((float)rq.qmin), hi = _mm512_set1_ps((float)rq.qmax);
  for (; i < end; i += 16) {
    const __mmask16 mask = (__mmask16)(end - i >= 16 ? 0xFFFF : (1u << (end - i)) - 1);
    const __m512 r = round_even(_mm512_div_ps(_mm512_maskz_loadu_ps(mask, x + i), s));
    _mm_mask_storeu_epi8(q + i, mask, to_bytes(clamp(_mm512_add_ps(r, z), lo, hi)));
  }
#elif defined(SLUICE_INT8_EPILOGUE_256)
  const __m256 s = _mm256_set1_ps(rq.scale), z = _mm256_set1_ps((float)rq.zero_point);
  const __m256 lo = _mm256_set1_ps((float)rq.qmin), hi = _mm256_set1_ps((float)rq.qmax);
  const __m256i low2 = _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0);
  for (; i + 8 <= end; i += 8) {
    __m256 r = _mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(x + i), s),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(r, z), lo), hi);
    // Eight int32 in [-128, 255] to bytes: packs within each 128-bit half
    // (values are in range, nothing saturates), then the two halves' low
    // words side by side.
    const __m256i w = _mm256_cvtps_epi32(r);
    const __m256i h = _mm256_packs_epi32(w, w);
    const __m256i b =
        std::is_same<T, uint8_t>::value ? _mm256_packus_epi16(h, h) : _mm256_packs_epi16(h, h);
    _mm_storel_epi64((__m128i *)(q + i),
                     _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(b, low2)));
  }
#endif
  for (; i < end; ++i)
    q[i] = (T)sluice_int8_requant_value(x[i], rq);
}
} // namespace sluice_int8

/// q[i] = clamp(round_half_even(x[i] / scale) + zeroPoint) over `count`
/// values (ONNX QuantizeLinear), T = uint8_t (the GEMM's A; a symmetric s8
/// activation is the u8 one with zero point 128) or int8_t. Chunks spread
/// over `threads` when the tensor is large.
template <typename T>
static inline void sluice_int8_quantize(int threads, int64_t count, const float *x, float scale,
                                        int32_t zeroPoint, T *q) {
  const sluice_int8_requant rq = sluice_int8_requant_for<T>(scale, zeroPoint);
  const int64_t chunk = 16384;
  const int64_t chunks = (count + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && chunks > 4)
  for (int64_t ch = 0; ch < chunks; ++ch)
    sluice_int8::quantize_span(x, ch * chunk,
                               ch * chunk + chunk < count ? ch * chunk + chunk : count, rq, q);
}

#endif // SLUICE_GEN_CPU_INT8_H
