//===- sluice_gen/cpu_wonly.h - weight-only quantized GEMM -*- C++ -*-===//
//
// The GEMM of --quantize=w8a16 / w4a16 on the cpu target (Form W of
// docs/quantization.md):
//
//   C[m][n] = epilogue( sum_k A[m][k] * q[k][n] * s[k / G][n] )
//
// A is the activation (f32, or f16 / bf16 widened to f32), q the weight,
// quantized at compile time and stored as it is in the bundle:
//   bits 8: int8 [K, N] row-major;
//   bits 4: signed int4 [K, N] packed two per byte in row-major element
//           order (element i = k N + n in byte i / 2, the low nibble first),
//           as ONNX stores INT4.
// s holds one scale per column and block of G rows of K ([ceil(K / G), N],
// f16 as --quantize writes it, or f32 / bf16 as ONNX QDQ models bring it);
// int8 per column is G = K. --quantize writes symmetric signed weights (no
// zero point); ONNX QDQ models may bring unsigned weights (UINT8 / UINT4)
// with zero points per block, stored like q: w = (q - zero) * s.
//
// The weight is dequantized inside the GEMM, a few rows or one panel at a
// time, never as a whole float copy:
//   - small M (M <= 8, LLM decoding: memory bound): a GEMV that streams B
//     once. Each thread owns 64-column blocks of C; per row k of B it
//     dequantizes 64 columns (q * s, the group's scales converted to f32 once
//     per group) and adds x[m][k] times them into up to 4 rows of
//     accumulators that stay in registers (AVX-512: 4 x 4 zmm; AVX2: the
//     same loop over ymm; portable: omp simd loops over a 64-float row).
//   - larger M: each thread dequantizes a panel of 64 columns over the whole
//     K into a per-thread f32 buffer (K x 64 floats, L2-sized) and runs the
//     f32 GEMM of cpu_blas.h (the AVX-512 micro-kernel of cpu_gemm.h, or
//     OpenBLAS) on it: the dequantization costs K x 64 conversions per panel,
//     amortized over the M rows.
// `epi(r0, rows, c0, cols)` runs on each finished block of C (f32, ldc) on
// the thread that computed it, like cpu_int8.h's epilogue: bias, activation
// and residual add cost no second pass over C.
//
// Paths, chosen from the compiler's macros (bundles build with
// -march=native) or forced with SLUICE_WONLY_ISA (tests):
//   AVX512  zmm loads, vpmovsxbd + vcvtdq2ps per 16 weights   (__AVX512F__ && __AVX512BW__)
//   AVX2    ymm, vpmovsxbd + vcvtdq2ps per 8 weights           (__AVX2__ && __FMA__)
//   SCALAR  plain loops the compiler vectorizes (omp simd)
// Unsigned or zero-pointed weights, and an int4 row whose first element is
// not byte aligned (odd N), are decoded by the portable loops in every path.
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CPU_WONLY_H
#define SLUICE_GEN_CPU_WONLY_H

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "sluice_gen/cpu_blas.h"
#include "sluice_gen/scalar.h"

#define SLUICE_WONLY_SCALAR 0
#define SLUICE_WONLY_AVX2 1
#define SLUICE_WONLY_AVX512 2

#ifndef SLUICE_WONLY_ISA
#if defined(__AVX512F__) && defined(__AVX512BW__)
#define SLUICE_WONLY_ISA SLUICE_WONLY_AVX512
#elif defined(__AVX2__) && defined(__FMA__)
#define SLUICE_WONLY_ISA SLUICE_WONLY_AVX2
#else
#define SLUICE_WONLY_ISA SLUICE_WONLY_SCALAR
#endif
#endif

#if SLUICE_WONLY_ISA != SLUICE_WONLY_SCALAR
#include <immintrin.h>
#endif

/// The name of the path this build selected ("avx512", "avx2", "scalar").
static inline const char *sluice_wonly_isa_name() {
  return SLUICE_WONLY_ISA == SLUICE_WONLY_AVX512 ? "avx512"
         : SLUICE_WONLY_ISA == SLUICE_WONLY_AVX2 ? "avx2"
                                                 : "scalar";
}

/// The quantized B operand: `q` int8 [K, N] or packed int4 (see above),
/// `scales` [ceil(K / group), N] of S (sluice_f16, sluice_bf16 or float).
template <typename S> struct sluice_wonly_b {
  const void *q;
  const S *scales;
  int bits;      ///< 8 or 4
  int64_t group; ///< rows of K per scale (K for int8 per column)
  /// Unsigned weights (ONNX UINT8 / UINT4): q and zero hold 0..255 / 0..15.
  int is_unsigned = 0;
  /// Zero points [ceil(K / group), N] stored like q (bytes or packed
  /// nibbles); null: symmetric. w = (q - zero) * scale.
  const void *zero = nullptr;
};

/// Bytes the quantized weight of a K x N matrix takes.
static inline int64_t sluice_wonly_weight_bytes(int bits, int64_t k, int64_t n) {
  return bits == 4 ? (k * n + 1) / 2 : k * n;
}

/// The signed value of nibble `i` of packed int4 data.
static inline int sluice_wonly_nibble(const uint8_t *packed, int64_t i) {
  const int v = (packed[i >> 1] >> ((i & 1) * 4)) & 0xF;
  return v >= 8 ? v - 16 : v;
}

/// Element `i` of quantized data stored as `b` stores q (and zero points).
template <typename S>
static inline int sluice_wonly_value(const sluice_wonly_b<S> &b, const void *data, int64_t i) {
  if (b.bits == 8)
    return b.is_unsigned ? ((const uint8_t *)data)[i] : ((const int8_t *)data)[i];
  const int v = (((const uint8_t *)data)[i >> 1] >> ((i & 1) * 4)) & 0xF;
  return !b.is_unsigned && v >= 8 ? v - 16 : v;
}

/// Columns per block of C, the unit of work of both paths.
static const int64_t SLUICE_WONLY_NB = 64;

/// w[j] = q[k][j0 + j] * scale[j] - offset[j] for j < cols (cols <= 64),
/// portable (offset: zero point times scale, see sluice_wonly_scales).
template <typename S>
static inline void sluice_wonly_decode_scalar(const sluice_wonly_b<S> &b, int64_t n, int64_t k,
                                              int64_t j0, int64_t cols, const float *scale,
                                              const float *offset, float *w) {
  if (b.is_unsigned || b.zero) {
    for (int64_t j = 0; j < cols; ++j)
      w[j] = (float)sluice_wonly_value(b, b.q, k * n + j0 + j) * scale[j] - offset[j];
    return;
  }
  if (b.bits == 8) {
    const int8_t *row = (const int8_t *)b.q + k * n + j0;
#pragma omp simd
    for (int64_t j = 0; j < cols; ++j)
      w[j] = (float)row[j] * scale[j];
    return;
  }
  const uint8_t *packed = (const uint8_t *)b.q;
  const int64_t first = k * n + j0;
  if ((first & 1) == 0) {
    // Byte aligned: pairs of columns per byte, which the compiler vectorizes.
    const uint8_t *row = packed + first / 2;
#pragma omp simd
    for (int64_t p = 0; p < cols / 2; ++p) {
      const int lo = row[p] & 0xF, hi = row[p] >> 4;
      w[2 * p] = (float)(lo >= 8 ? lo - 16 : lo) * scale[2 * p];
      w[2 * p + 1] = (float)(hi >= 8 ? hi - 16 : hi) * scale[2 * p + 1];
    }
    if (cols & 1)
      w[cols - 1] = (float)sluice_wonly_nibble(packed, first + cols - 1) * scale[cols - 1];
    return;
  }
  for (int64_t j = 0; j < cols; ++j)
    w[j] = (float)sluice_wonly_nibble(packed, first + j) * scale[j];
}

/// scale[j] = s[g][j0 + j] as float and offset[j] = zero[g][j0 + j] *
/// scale[j] (0 without zero points), for j < cols; 0 beyond.
template <typename S>
static inline void sluice_wonly_scales(const sluice_wonly_b<S> &b, int64_t n, int64_t g, int64_t j0,
                                       int64_t cols, float *scale, float *offset) {
  const S *row = b.scales + g * n + j0;
  for (int64_t j = 0; j < cols; ++j) {
    scale[j] = (float)sluice_load(row[j]);
    offset[j] = b.zero ? (float)sluice_wonly_value(b, b.zero, g * n + j0 + j) * scale[j] : 0.0f;
  }
  for (int64_t j = cols; j < SLUICE_WONLY_NB; ++j)
    scale[j] = offset[j] = 0.0f;
}

#if SLUICE_WONLY_ISA == SLUICE_WONLY_AVX512
/// 16 bytes as 16 floats. The masked forms with a zero source: GCC 12
/// warns (maybe-uninitialized) about the unmasked forms' undefined source
/// once they are inlined into a loop.
static inline __m512 sluice_wonly_bytes_to_ps(__m128i v) {
  const __m512i wide = _mm512_maskz_cvtepi8_epi32((__mmask16)0xFFFF, v);
  return _mm512_mask_cvtepi32_ps(_mm512_setzero_ps(), (__mmask16)0xFFFF, wide);
}
/// 16 int8 weights as floats.
static inline __m512 sluice_wonly_i8x16(const int8_t *p) {
  return sluice_wonly_bytes_to_ps(_mm_loadu_si128((const __m128i *)p));
}
/// 64 int4 weights (32 bytes, byte aligned) as four vectors of 16 floats.
/// Per 32 bytes: the low and high nibbles masked out, mapped to signed
/// bytes by a table lookup (vpshufb), interleaved back into element order
/// (per 128-bit lane: unpacklo gives elements 0-15 / 32-47, unpackhi 16-31
/// / 48-63), then widened 16 at a time: about half the instructions of
/// decoding 8 bytes at a time.
static inline void sluice_wonly_i4x64(const uint8_t *p, __m512 out[4]) {
  const __m256i mask = _mm256_set1_epi8(0x0F);
  const __m256i table = _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1, 0,
                                         1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1);
  const __m256i bytes = _mm256_loadu_si256((const __m256i *)p);
  const __m256i lo = _mm256_shuffle_epi8(table, _mm256_and_si256(bytes, mask));
  const __m256i hi =
      _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(bytes, 4), mask));
  const __m256i first = _mm256_unpacklo_epi8(lo, hi), second = _mm256_unpackhi_epi8(lo, hi);
  out[0] = sluice_wonly_bytes_to_ps(_mm256_castsi256_si128(first));
  out[1] = sluice_wonly_bytes_to_ps(_mm256_castsi256_si128(second));
  out[2] = sluice_wonly_bytes_to_ps(_mm256_extracti128_si256(first, 1));
  out[3] = sluice_wonly_bytes_to_ps(_mm256_extracti128_si256(second, 1));
}
#elif SLUICE_WONLY_ISA == SLUICE_WONLY_AVX2
/// 8 int8 weights as floats.
static inline __m256 sluice_wonly_i8x8(const int8_t *p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)));
}
/// 8 int4 weights (4 bytes, byte aligned) as floats.
static inline __m256 sluice_wonly_i4x8(const uint8_t *p) {
  const __m128i mask = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
  int32_t word;
  std::memcpy(&word, p, 4);
  const __m128i bytes = _mm_cvtsi32_si128(word);
  const __m128i lo = _mm_and_si128(bytes, mask);
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), mask);
  __m128i v = _mm_unpacklo_epi8(lo, hi);
  v = _mm_sub_epi8(_mm_xor_si128(v, eight), eight);
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v));
}
#endif

/// w[j] = q[k][j0 + j] * scale[j] - offset[j] (the panel path's decode):
/// vector loads for full 64-column blocks of symmetric signed weights, the
/// portable decode for the rest.
template <typename S>
static inline void sluice_wonly_decode(const sluice_wonly_b<S> &b, int64_t n, int64_t k, int64_t j0,
                                       int64_t cols, const float *scale, const float *offset,
                                       float *w) {
#if SLUICE_WONLY_ISA == SLUICE_WONLY_AVX512
  if (cols == SLUICE_WONLY_NB && !b.is_unsigned && !b.zero &&
      (b.bits == 8 || ((k * n + j0) & 1) == 0)) {
    __m512 q[4];
    if (b.bits == 8)
      for (int64_t v = 0; v < 4; ++v)
        q[v] = sluice_wonly_i8x16((const int8_t *)b.q + k * n + j0 + 16 * v);
    else
      sluice_wonly_i4x64((const uint8_t *)b.q + (k * n + j0) / 2, q);
    for (int64_t v = 0; v < 4; ++v)
      _mm512_storeu_ps(w + 16 * v, _mm512_mul_ps(q[v], _mm512_loadu_ps(scale + 16 * v)));
    return;
  }
#elif SLUICE_WONLY_ISA == SLUICE_WONLY_AVX2
  if (cols == SLUICE_WONLY_NB && !b.is_unsigned && !b.zero &&
      (b.bits == 8 || ((k * n + j0) & 1) == 0)) {
    for (int64_t v = 0; v < 8; ++v) {
      const __m256 q = b.bits == 8
                           ? sluice_wonly_i8x8((const int8_t *)b.q + k * n + j0 + 8 * v)
                           : sluice_wonly_i4x8((const uint8_t *)b.q + (k * n + j0) / 2 + 4 * v);
      _mm256_storeu_ps(w + 8 * v, _mm256_mul_ps(q, _mm256_loadu_ps(scale + 8 * v)));
    }
    return;
  }
#endif
  sluice_wonly_decode_scalar(b, n, k, j0, cols, scale, offset, w);
}

/// The GEMV block: C[r0 .. r0 + R)[j0 .. j0 + cols) for R <= 4 rows and
/// cols <= 64, streaming rows k of B once for all R rows of A (R a
/// template parameter so that the accumulators stay in registers).
template <int R, typename TA, typename S>
static inline void sluice_wonly_gemv_block(int64_t n, int64_t k, const TA *a, int64_t lda,
                                           const sluice_wonly_b<S> &b, int64_t r0, int64_t j0,
                                           int64_t cols, float *c, int64_t ldc) {
  const int64_t rows = R;
  alignas(64) float scale[SLUICE_WONLY_NB], offset[SLUICE_WONLY_NB];
  alignas(64) float w[SLUICE_WONLY_NB];
  const int64_t groups = (k + b.group - 1) / b.group;
#if SLUICE_WONLY_ISA == SLUICE_WONLY_AVX512
  const bool vector = cols == SLUICE_WONLY_NB && !b.is_unsigned && !b.zero &&
                      (b.bits == 8 || (n & 1) == 0);
  if (vector) {
    __m512 acc[R][4];
    for (int r = 0; r < R; ++r)
      for (int v = 0; v < 4; ++v)
        acc[r][v] = _mm512_setzero_ps();
    for (int64_t g = 0; g < groups; ++g) {
      sluice_wonly_scales(b, n, g, j0, cols, scale, offset);
      const __m512 s0 = _mm512_load_ps(scale), s1 = _mm512_load_ps(scale + 16),
                   s2 = _mm512_load_ps(scale + 32), s3 = _mm512_load_ps(scale + 48);
      const int64_t kEnd = std::min(k, (g + 1) * b.group);
      for (int64_t p = g * b.group; p < kEnd; ++p) {
        __m512 q0, q1, q2, q3;
        if (b.bits == 8) {
          const int8_t *row = (const int8_t *)b.q + p * n + j0;
          q0 = sluice_wonly_i8x16(row);
          q1 = sluice_wonly_i8x16(row + 16);
          q2 = sluice_wonly_i8x16(row + 32);
          q3 = sluice_wonly_i8x16(row + 48);
        } else {
          __m512 q[4];
          sluice_wonly_i4x64((const uint8_t *)b.q + (p * n + j0) / 2, q);
          q0 = q[0];
          q1 = q[1];
          q2 = q[2];
          q3 = q[3];
        }
        // One group (int8 per column): the scale multiplies the sums once
        // at the end instead of every row of B.
        if (groups > 1) {
          q0 = _mm512_mul_ps(q0, s0);
          q1 = _mm512_mul_ps(q1, s1);
          q2 = _mm512_mul_ps(q2, s2);
          q3 = _mm512_mul_ps(q3, s3);
        }
        for (int r = 0; r < R; ++r) {
          const __m512 x = _mm512_set1_ps((float)sluice_load(a[(r0 + r) * lda + p]));
          acc[r][0] = _mm512_fmadd_ps(x, q0, acc[r][0]);
          acc[r][1] = _mm512_fmadd_ps(x, q1, acc[r][1]);
          acc[r][2] = _mm512_fmadd_ps(x, q2, acc[r][2]);
          acc[r][3] = _mm512_fmadd_ps(x, q3, acc[r][3]);
        }
      }
      if (groups == 1)
        for (int r = 0; r < R; ++r) {
          acc[r][0] = _mm512_mul_ps(acc[r][0], s0);
          acc[r][1] = _mm512_mul_ps(acc[r][1], s1);
          acc[r][2] = _mm512_mul_ps(acc[r][2], s2);
          acc[r][3] = _mm512_mul_ps(acc[r][3], s3);
        }
    }
    for (int64_t r = 0; r < rows; ++r)
      for (int v = 0; v < 4; ++v)
        _mm512_storeu_ps(c + (r0 + r) * ldc + j0 + 16 * v, acc[r][v]);
    return;
  }
#elif SLUICE_WONLY_ISA == SLUICE_WONLY_AVX2
  const bool vector = cols == SLUICE_WONLY_NB && !b.is_unsigned && !b.zero &&
                      (b.bits == 8 || (n & 1) == 0);
  if (vector) {
    // 64 columns x 4 rows would need 32 ymm accumulators: two halves of 32.
    for (int64_t half = 0; half < 2; ++half) {
      const int64_t h0 = j0 + 32 * half;
      __m256 acc[R][4];
      for (int r = 0; r < R; ++r)
        for (int v = 0; v < 4; ++v)
          acc[r][v] = _mm256_setzero_ps();
      for (int64_t g = 0; g < groups; ++g) {
        sluice_wonly_scales(b, n, g, j0, cols, scale, offset);
        const float *sh = scale + 32 * half;
        const __m256 s0 = _mm256_load_ps(sh), s1 = _mm256_load_ps(sh + 8),
                     s2 = _mm256_load_ps(sh + 16), s3 = _mm256_load_ps(sh + 24);
        const int64_t kEnd = std::min(k, (g + 1) * b.group);
        for (int64_t p = g * b.group; p < kEnd; ++p) {
          __m256 q0, q1, q2, q3;
          if (b.bits == 8) {
            const int8_t *row = (const int8_t *)b.q + p * n + h0;
            q0 = sluice_wonly_i8x8(row);
            q1 = sluice_wonly_i8x8(row + 8);
            q2 = sluice_wonly_i8x8(row + 16);
            q3 = sluice_wonly_i8x8(row + 24);
          } else {
            const uint8_t *row = (const uint8_t *)b.q + (p * n + h0) / 2;
            q0 = sluice_wonly_i4x8(row);
            q1 = sluice_wonly_i4x8(row + 4);
            q2 = sluice_wonly_i4x8(row + 8);
            q3 = sluice_wonly_i4x8(row + 12);
          }
          q0 = _mm256_mul_ps(q0, s0);
          q1 = _mm256_mul_ps(q1, s1);
          q2 = _mm256_mul_ps(q2, s2);
          q3 = _mm256_mul_ps(q3, s3);
          for (int r = 0; r < R; ++r) {
            const __m256 x = _mm256_set1_ps((float)sluice_load(a[(r0 + r) * lda + p]));
            acc[r][0] = _mm256_fmadd_ps(x, q0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(x, q1, acc[r][1]);
            acc[r][2] = _mm256_fmadd_ps(x, q2, acc[r][2]);
            acc[r][3] = _mm256_fmadd_ps(x, q3, acc[r][3]);
          }
        }
      }
      for (int64_t r = 0; r < rows; ++r)
        for (int v = 0; v < 4; ++v)
          _mm256_storeu_ps(c + (r0 + r) * ldc + h0 + 8 * v, acc[r][v]);
    }
    return;
  }
#endif
  // Portable (and partial blocks): dequantize the row into w, then one
  // omp simd loop per row of A.
  alignas(64) float acc[R][SLUICE_WONLY_NB];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < SLUICE_WONLY_NB; ++j)
      acc[r][j] = 0.0f;
  for (int64_t g = 0; g < groups; ++g) {
    sluice_wonly_scales(b, n, g, j0, cols, scale, offset);
    const int64_t kEnd = std::min(k, (g + 1) * b.group);
    for (int64_t p = g * b.group; p < kEnd; ++p) {
      sluice_wonly_decode_scalar(b, n, p, j0, cols, scale, offset, w);
      for (int64_t r = 0; r < rows; ++r) {
        const float x = (float)sluice_load(a[(r0 + r) * lda + p]);
        float *accRow = acc[r];
#pragma omp simd
        for (int64_t j = 0; j < cols; ++j)
          accRow[j] += x * w[j];
      }
    }
  }
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(c + (r0 + r) * ldc + j0, acc[r], (size_t)cols * sizeof(float));
}

/// Per-thread f32 scratch of at least `floats` floats (64-byte aligned),
/// grown as needed, freed with the model (cpu_scratch.h); slot 0: B panels,
/// slot 1: widened A.
template <int Slot> static inline float *sluice_wonly_scratch(int64_t floats) {
  static thread_local sluice_scratch_buffer buffer;
  return (float *)buffer.get((size_t)(floats > 0 ? floats : 0) * sizeof(float));
}

/// The panel path for one 64-column block: dequantize B[:, j0 .. j0 + cols)
/// into `panel` (K x 64 floats, row stride 64), then the f32 GEMM of all M
/// rows of A (f32, lda) against it, epilogue per finished block.
template <typename S, typename Epilogue>
static inline void sluice_wonly_panel_block(int64_t m, int64_t n, int64_t k, const float *a,
                                            int64_t lda, const sluice_wonly_b<S> &b, int64_t j0,
                                            int64_t cols, float *c, int64_t ldc, float *panel,
                                            const Epilogue &epi) {
  alignas(64) float scale[SLUICE_WONLY_NB], offset[SLUICE_WONLY_NB];
  const int64_t groups = (k + b.group - 1) / b.group;
  for (int64_t g = 0; g < groups; ++g) {
    sluice_wonly_scales(b, n, g, j0, cols, scale, offset);
    const int64_t kEnd = std::min(k, (g + 1) * b.group);
    for (int64_t p = g * b.group; p < kEnd; ++p)
      sluice_wonly_decode(b, n, p, j0, cols, scale, offset, panel + p * SLUICE_WONLY_NB);
  }
  sluice_gemm<float>::run_ep(
      m, cols, k, a, lda, panel, SLUICE_WONLY_NB, c + j0, ldc,
      [&](int64_t r0, int64_t rows, int64_t c0, int64_t cs) { epi(r0, rows, j0 + c0, cs); });
}

/// C = A x dequant(B), then `epi(r0, rows, c0, cols)` on each finished
/// block of C (f32, row stride ldc). A: M x K of TA (float, sluice_f16,
/// sluice_bf16), row stride lda. Spreads 64-column blocks over `threads`
/// OpenMP threads.
template <typename TA, typename S, typename Epilogue>
static inline void sluice_wonly_gemm(int threads, int64_t m, int64_t n, int64_t k, const TA *a,
                                     int64_t lda, const sluice_wonly_b<S> &b, float *c, int64_t ldc,
                                     const Epilogue &epi) {
  if (m == 0 || n == 0)
    return;
  sluice_blas_threads(1);
  const int64_t blocks = (n + SLUICE_WONLY_NB - 1) / SLUICE_WONLY_NB;
  const int useThreads = (int)std::max<int64_t>(1, std::min<int64_t>(threads, blocks));
  if (m <= 8) {
    (void)useThreads;
#pragma omp parallel for num_threads(useThreads) schedule(static) if (useThreads > 1)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t j0 = blk * SLUICE_WONLY_NB, cols = std::min(SLUICE_WONLY_NB, n - j0);
      for (int64_t r0 = 0; r0 < m; r0 += 4) {
        const int64_t rows = std::min<int64_t>(4, m - r0);
        switch (rows) {
        case 1:
          sluice_wonly_gemv_block<1>(n, k, a, lda, b, r0, j0, cols, c, ldc);
          break;
        case 2:
          sluice_wonly_gemv_block<2>(n, k, a, lda, b, r0, j0, cols, c, ldc);
          break;
        case 3:
          sluice_wonly_gemv_block<3>(n, k, a, lda, b, r0, j0, cols, c, ldc);
          break;
        default:
          sluice_wonly_gemv_block<4>(n, k, a, lda, b, r0, j0, cols, c, ldc);
          break;
        }
        epi(r0, rows, j0, cols);
      }
    }
    return;
  }
  // The panel path multiplies f32 A: half activations are widened once.
  const float *a32 = nullptr;
  int64_t lda32 = lda;
  if constexpr (sizeof(TA) == sizeof(float)) {
    a32 = (const float *)a;
  } else {
    float *wide = sluice_wonly_scratch<1>(m * k);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t p = 0; p < k; ++p)
        wide[r * k + p] = (float)sluice_load(a[r * lda + p]);
    a32 = wide;
    lda32 = k;
  }
#pragma omp parallel for num_threads(useThreads) schedule(static) if (useThreads > 1)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t j0 = blk * SLUICE_WONLY_NB, cols = std::min(SLUICE_WONLY_NB, n - j0);
    float *panel = sluice_wonly_scratch<0>(k * SLUICE_WONLY_NB);
    sluice_wonly_panel_block(m, n, k, a32, lda32, b, j0, cols, c, ldc, panel, epi);
  }
}

#endif // SLUICE_GEN_CPU_WONLY_H
