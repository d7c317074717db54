//===- sluice_gen/layout/cuda_quant_layout.h - cuda quantized GEMM plans -*- C++ -*-===//
//
// The host arithmetic of the cuda target's quantized GEMMs (Forms I8 and W
// of docs/quantization.md; the kernels are sluice_gen/cuda_quant_kernels.cuh,
// launched by sluice_gen/cuda_quant.cuh): int4 packing in ONNX order, the
// column sums and zero-point correction of the int8 GEMM, the packing of
// constant int8 weights for cuBLASLt's IMMA kernels ([colsum | B^T]), the
// weight-only split plan, the problem shapes and the workspace sizes. The
// compiler packs weights and sizes workspaces with it
// (codegen/cuda/groups/QuantGemm.cpp) and the bundle's wrappers plan their
// launches with it, so both sides agree by construction.
//
// Dependency-free: portable C++ and the C standard library only (no CUDA,
// no other sluice_gen header), so that the compiler can include it.
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_LAYOUT_CUDA_QUANT_LAYOUT_H
#define SLUICE_GEN_LAYOUT_CUDA_QUANT_LAYOUT_H

#include <stdint.h>
#include <string.h>

/// Packs `count` 4-bit values (int4 in [-8, 7] or uint4 in [0, 15], one per
/// int8_t) in ONNX order into (count + 1) / 2 bytes; an odd count leaves
/// the last high nibble 0.
static inline void sluice_int4_pack(const int8_t *values, int64_t count, uint8_t *packed) {
  for (int64_t i = 0; i < (count + 1) / 2; ++i) {
    const uint32_t lo = (uint32_t)values[2 * i] & 15u;
    const uint32_t hi = 2 * i + 1 < count ? (uint32_t)values[2 * i + 1] & 15u : 0u;
    packed[i] = (uint8_t)(lo | hi << 4);
  }
}

/// colsum[j] = sum_k B(k, j) of an s8 K x N matrix whose (k, j) is at
/// b[k * strideK + j * strideN]: the zero-point correction of the int8 GEMM
/// (sum_k (a - z) b = sum_k a b - z * colsum). Exact: |colsum| < 2^31 for
/// K < 2^24. The compiler runs it once per constant weight.
static inline void sluice_int8_colsums(int64_t k, int64_t n, const int8_t *b, int64_t strideK,
                                       int64_t strideN, int32_t *colsum) {
  for (int64_t j = 0; j < n; ++j) {
    int32_t s = 0;
    for (int64_t p = 0; p < k; ++p)
      s += b[p * strideK + j * strideN];
    colsum[j] = s;
  }
}

/// The zero point the int8 epilogue subtracts, zc, for an activation with
/// zero point `zA`: an s8 activation as it is (zc = zA); a u8 one enters
/// IMMA as the s8 byte a ^ 0x80 = a - 128, so
///   sum_k (a - zA) b = sum_k (a - 128) b - (zA - 128) colsum
/// and zc = zA - 128.
static inline int32_t sluice_int8_zero_correction(bool aUnsigned, int32_t zA) {
  return aUnsigned ? zA - 128 : zA;
}

/// Bytes of a constant int8 weight packed for the IMMA path
/// (sluice_int8_pack_nk): the column sums, then B transposed.
static inline int64_t sluice_int8_nk_colsum_bytes(int64_t n) { return (4 * n + 255) / 256 * 256; }
static inline int64_t sluice_int8_nk_bytes(int64_t k, int64_t n) {
  return sluice_int8_nk_colsum_bytes(n) + n * k;
}

/// Packs the s8 weight B (K x N, (k, j) at b[k * strideK + j * strideN])
/// as the IMMA path reads a constant weight: int32 colsum[N] (padded to
/// 256 bytes), then B^T as [N][K] (K contiguous: cuBLASLt's "TN" operand).
/// Run by the compiler; the bundle stores these bytes instead of B's.
static inline void sluice_int8_pack_nk(int64_t k, int64_t n, const int8_t *b, int64_t strideK,
                                       int64_t strideN, void *packed) {
  unsigned char *out = (unsigned char *)packed;
  const int64_t head = sluice_int8_nk_colsum_bytes(n);
  memset(out, 0, (size_t)head);
  for (int64_t j = 0; j < n; ++j) {
    int32_t s = 0;
    for (int64_t p = 0; p < k; ++p) {
      const int8_t v = b[p * strideK + j * strideN];
      s += v;
      out[head + j * k + p] = (unsigned char)v;
    }
    memcpy(out + 4 * j, &s, 4);
  }
}

/// Threads of a weight-only block, the columns it owns, the B bytes it
/// moves per stage (two 16-byte loads per thread) and the largest M the
/// GEMV kernel takes.
#define SLUICE_WONLY_THREADS 256
#define SLUICE_WONLY_COLS 128
#define SLUICE_WONLY_STAGE_BYTES 8192
#define SLUICE_WONLY_MAX_M 16

/// Rows of K per stage: 64 for int8, 128 for int4 (8 KiB of B either way).
static inline int64_t sluice_wonly_stage_rows(int bits) {
  return SLUICE_WONLY_STAGE_BYTES / (SLUICE_WONLY_COLS * bits / 8);
}

/// How a small-M weight-only GEMM is split: column tiles of
/// SLUICE_WONLY_COLS, and K cut into `splits` ranges of `kPerSplit` rows (a
/// multiple of the stage) so that about two blocks per SM run; with splits
/// > 1 each block writes f32 partial sums (splits x M x N, `partialBytes`
/// of scratch) that a second kernel adds in a fixed order (deterministic,
/// no atomics) before the epilogue. `maxPartialBytes` caps the splits to
/// the scratch there is (below two splits' worth: one split, no scratch).
struct SluiceWonlyPlan {
  int64_t colTiles = 0, splits = 1, kPerSplit = 0, partialBytes = 0;
};

static inline SluiceWonlyPlan sluice_wonly_plan(int64_t m, int64_t n, int64_t k, int bits, int sms,
                                                int64_t maxPartialBytes = INT64_MAX) {
  SluiceWonlyPlan p;
  const int64_t rows = sluice_wonly_stage_rows(bits);
  const int64_t stages = (k + rows - 1) / rows;
  p.colTiles = (n + SLUICE_WONLY_COLS - 1) / SLUICE_WONLY_COLS;
  const int64_t target = 2 * (int64_t)(sms > 0 ? sms : 1);
  int64_t splits = (target + p.colTiles - 1) / p.colTiles;
  // At least two stages per block: a block must overlap one stage's loads
  // with the previous stage's arithmetic.
  const int64_t maxSplits = stages / 2 > 1 ? stages / 2 : 1;
  splits = splits < 1 ? 1 : splits > maxSplits ? maxSplits : splits;
  const int64_t fitting = m * n > 0 ? maxPartialBytes / (m * n * 4) : 1;
  splits = splits > fitting ? (fitting > 1 ? fitting : 1) : splits;
  const int64_t stagesPerSplit = (stages + splits - 1) / splits;
  p.splits = stages ? (stages + stagesPerSplit - 1) / stagesPerSplit : 1;
  p.kPerSplit = (stagesPerSplit ? stagesPerSplit : 1) * rows;
  p.partialBytes = p.splits > 1 ? p.splits * m * n * 4 : 0;
  return p;
}

/// M rows handled by one GEMV instantiation: the next power of two.
static inline int sluice_wonly_m_tile(int64_t m) {
  return m <= 1 ? 1 : m <= 2 ? 2 : m <= 4 ? 4 : m <= 8 ? 8 : 16;
}

/// Bytes of the workspace cuBLASLt may use in a quantized GEMM (as the
/// float GEMMs: codegen/cuda/groups/Gemm.cpp's kLtWorkspace).
#define SLUICE_QUANT_LT_WORKSPACE (32ll << 20)

static inline int64_t sluice_quant_round256(int64_t bytes) { return (bytes + 255) / 256 * 256; }

/// How B is stored: [N, K] with K contiguous (constant weights: the
/// compiler transposes them; what IMMA takes) or [K, N] (row-major).
enum SluiceInt8BLayout { SLUICE_INT8_B_NK = 0, SLUICE_INT8_B_KN = 1 };

/// One (batched) int8 GEMM: A(i, p) at a[b * strideA + i * lda + p] (u8
/// when aUnsigned, else s8; zero point aZeroPoint), B(p, j) at
/// b[b * strideB + j * ldb + p] (NK) or b[b * strideB + p * ldb + j] (KN);
/// strideB 0 shares B across the batch.
struct SluiceInt8GemmShape {
  int64_t m, n, k;
  int64_t lda, ldb;
  int32_t bLayout;
  int32_t aUnsigned;
  int32_t aZeroPoint;
  int64_t batch, strideA, strideB;
};

/// Scratch of the IMMA path (at the start of the workspace: the int32
/// product, the shifted A, device column sums; then cuBLASLt's part).
struct SluiceInt8Scratch {
  int64_t acc = 0, shifted = 0, colsum = 0, total = 0;
};

static inline SluiceInt8Scratch sluice_int8_scratch(const SluiceInt8GemmShape &g, bool needColsum) {
  SluiceInt8Scratch s;
  const int64_t batch = g.batch > 0 ? g.batch : 1;
  s.acc = sluice_quant_round256(batch * g.m * g.n * 4);
  s.shifted = g.aUnsigned ? sluice_quant_round256(batch * g.m * g.k) : 0;
  s.colsum = needColsum ? sluice_quant_round256((g.strideB ? batch : 1) * g.n * 4) : 0;
  s.total = s.acc + s.shifted + s.colsum;
  return s;
}

/// Workspace bytes a bundle declares for sluice_int8_gemm of `g` (the IMMA
/// path's scratch, device column sums included, and cuBLASLt's part). With
/// less the GEMM still runs, on the CUDA-core path.
static inline int64_t sluice_int8_gemm_workspace(const SluiceInt8GemmShape &g) {
  return sluice_int8_scratch(g, true).total + SLUICE_QUANT_LT_WORKSPACE;
}

/// One weight-only GEMM: A(i, p) at a[i * lda + p] (TA f32, f16 or bf16),
/// B [K, N]: int8 rows ldb bytes apart (bits 8) or ONNX-packed int4 of N
/// per row (bits 4, ldb unused), signed or not, minus a scalar zero point
/// (0: the contract's symmetric weights); f16 scales [ceil(K / group)][N]
/// (group = K: one per column, as Form W's int8).
struct SluiceWonlyShape {
  int64_t m, n, k, lda, ldb;
  int32_t bits;
  int32_t isSigned;
  int32_t zeroPoint;
  int64_t group;
};

/// Workspace bytes a bundle declares for sluice_wonly_gemm of `g` with an
/// A of `aBytes`-byte elements: M <= 16, the split-K partial sums for a
/// GPU of up to 256 SMs; M > 16, the dequantized B, the f32 product and
/// cuBLASLt's part. With less the GEMM still runs (fewer splits; the GEMV
/// kernel over chunks of 16 rows).
static inline int64_t sluice_wonly_workspace(const SluiceWonlyShape &g, int64_t aBytes) {
  if (g.m <= SLUICE_WONLY_MAX_M)
    return sluice_quant_round256(sluice_wonly_plan(g.m, g.n, g.k, g.bits, 256).partialBytes);
  return sluice_quant_round256(g.k * g.n * aBytes) + sluice_quant_round256(g.m * g.n * 4) +
         SLUICE_QUANT_LT_WORKSPACE;
}

/// Output element types of the fp8 GEMM.
enum SluiceFp8Out {
  SLUICE_FP8_OUT_F32 = 0,
  SLUICE_FP8_OUT_F16 = 1,
  SLUICE_FP8_OUT_BF16 = 2,
  SLUICE_FP8_OUT_E4M3 = 3
};

/// One fp8 GEMM: A(i, p) at a[i * lda + p], B(p, j) at b[j * ldb + p],
/// D(i, j) at d[i * ldd + j].
struct SluiceFp8GemmShape {
  int64_t m, n, k, lda, ldb, ldd;
  int32_t out;     ///< SluiceFp8Out
  int32_t hasBias; ///< a bias vector over N, of sluice_fp8_bias_type(out)
};

/// Workspace bytes of sluice_fp8_gemm_epi (cuda_quant_fp8.cuh) for `g`:
/// the f32 result, 256 bytes of scalar slots, the f32 operands of its
/// fallback and cuBLASLt's part.
static inline int64_t sluice_fp8_gemm_epi_workspace(const SluiceFp8GemmShape &g) {
  return sluice_quant_round256(g.m * g.n * 4) + 256 + sluice_quant_round256(g.m * g.k * 4) +
         sluice_quant_round256(g.k * g.n * 4) + SLUICE_QUANT_LT_WORKSPACE;
}

/// A 2-D int8 convolution (NCHW, weight [M, C / groups, kh, kw]) as GEMMs:
/// per group, A = im2col of every image ([images * OH * OW, K], K =
/// C / groups * kh * kw) times B = the group's weight rows ([M / groups, K]:
/// already the [N, K] layout IMMA takes).
struct SluiceInt8ConvShape {
  int64_t images, channels, height, width;
  int64_t outChannels, kh, kw, outH, outW, groups;
  int64_t strideH, strideW, dilH, dilW, padT, padL;
  int32_t aUnsigned, aZeroPoint;
};

/// The GEMM of one group of `c`: M = images * OH * OW im2col rows, N = the
/// group's output channels, B its weight rows ([N, K], row stride K).
static inline SluiceInt8GemmShape sluice_int8_conv_gemm(const SluiceInt8ConvShape &c) {
  const int64_t k = c.channels / c.groups * c.kh * c.kw;
  SluiceInt8GemmShape g = {c.images * c.outH * c.outW,
                           c.outChannels / c.groups,
                           k,
                           k,
                           k,
                           SLUICE_INT8_B_NK,
                           c.aUnsigned,
                           c.aZeroPoint,
                           1,
                           0,
                           0};
  return g;
}

/// Workspace bytes of sluice_int8_conv: the GEMM's, then the im2col rows.
static inline int64_t sluice_int8_conv_workspace(const SluiceInt8ConvShape &c) {
  const SluiceInt8GemmShape g = sluice_int8_conv_gemm(c);
  return sluice_int8_gemm_workspace(g) + sluice_quant_round256(g.m * g.k);
}

#endif // SLUICE_GEN_LAYOUT_CUDA_QUANT_LAYOUT_H
