//===- sluice_gen/cuda_quant_kernels.cuh - quantized device code -*- CUDA -*-===//
//
// The device templates of the cuda target's quantized launches (Forms I8
// and W of docs/quantization.md) and the host arithmetic
// around them: what sluice_gen/cuda_quant.cuh launches, and what the
// compiler (packing, column sums, plans, workspace sizes: defining
// SLUICE_QUANT_HOST_ONLY gives that part alone, plain C++) and the tests
// share. Like
// cuda_reduce.h this file needs only scalar.h, so the same source runs on
// the host under the test emulation (test/unit/CudaRowEmulation.h): every
// body reads threadIdx/blockIdx.x and takes 2-D block coordinates as
// arguments (the emulation's grids are 1-D).
//
//   sluice_quant_value          ONNX QuantizeLinear of one value (round half
//                               to even, saturate; the same order of
//                               operations as cpu_int8.h, so both targets
//                               give the same bytes)
//   sluice_quantize_body        per-tensor quantization f32/f16/bf16 -> u8/s8,
//                               optionally shifted by -128 (a u8 activation
//                               written as the s8 operand IMMA needs)
//   sluice_int8_epilogue_body   after cuBLASLt's int32 product: the zero-point
//                               correction acc - zc * colsum[n], then the
//                               generated epilogue functor
//   sluice_int8_tile_body       exact int8 GEMM on CUDA cores for what
//                               cuBLASLt's IMMA kernels do not take (K or N
//                               not a multiple of 4, B stored [K, N], a
//                               misaligned view)
//   sluice_wonly_block          the weight-only GEMM for small M (M <= 16):
//                               A f32/f16/bf16 [M, K] times B int8 or packed
//                               int4 [K, N] with f16 scales per block of G
//                               rows, dequantized in registers, f32 sums
//   sluice_wonly_dequant_body   B -> a float copy in scratch, for the large-M
//                               path (dequantize + cuBLASLt, see cuda_quant.cuh)
//
// Epilogue functors (the generated code's, or the ready-made ones in
// cuda_quant.cuh) are called as
//   int8:        epi(batch, row, col, int32_t acc)   acc = sum_k (A - zA) B, exact
//   weight-only: epi(row, col, float y)              y = sum_k A dequant(B)
// once per output element, by the thread that owns it.
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CUDA_QUANT_KERNELS_CUH
#define SLUICE_GEN_CUDA_QUANT_KERNELS_CUH

#include <math.h>
#include <stdint.h>
#include <string.h>

// The compiler's part needs no other header of sluice_gen (its include path
// does not have them).
#ifdef SLUICE_QUANT_HOST_ONLY
#ifndef SLUICE_HD
#define SLUICE_HD inline
#endif
#else
#include "sluice_gen/scalar.h"
#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif
#endif

//===----------------------------------------------------------------------===//
// Host and device arithmetic
//===----------------------------------------------------------------------===//

/// ONNX QuantizeLinear of one value: clamp(round_half_even(x / scale) + zp,
/// qmin, qmax), NaN to qmin. The division is IEEE (not the approximate one
/// -use_fast_math would give) and the operations run in cpu_int8.h's
/// order (sluice_int8_requant_value), so the targets agree byte for byte.
SLUICE_HD int32_t sluice_quant_value(float x, float scale, int32_t zp, int32_t qmin, int32_t qmax) {
#if defined(__CUDA_ARCH__)
  const float q = __fdiv_rn(x, scale);
#else
  const float q = x / scale;
#endif
  float r = rintf(q) + (float)zp;
  const float lo = (float)qmin, hi = (float)qmax;
  r = r > lo ? r : lo; // NaN -> lo
  r = r < hi ? r : hi;
  return (int32_t)r;
}

/// Element `e` of an ONNX-packed 4-bit tensor: two per byte, element 2i in
/// the low nibble of byte i; sign-extended when `isSigned` (int4), else
/// 0..15 (uint4). The flat index is what matters: with an odd row length
/// rows do not start on a byte.
SLUICE_HD int32_t sluice_int4_at(const uint8_t *packed, int64_t e, bool isSigned) {
  const uint32_t byte = packed[e >> 1];
  const uint32_t nibble = (e & 1) ? (byte >> 4) : (byte & 15u);
  return isSigned ? (int32_t)(nibble ^ 8u) - 8 : (int32_t)nibble;
}

//===----------------------------------------------------------------------===//
// Host: packing, column sums, plans (the compiler and the wrappers)
//===----------------------------------------------------------------------===//

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

// SLUICE_QUANT_HOST_ONLY: the part above alone, for the compiler (plain
// C++: packing, column sums, plans, workspace sizes; no device code).
#ifndef SLUICE_QUANT_HOST_ONLY

//===----------------------------------------------------------------------===//
// Loads and vectors
//===----------------------------------------------------------------------===//

/// A float of storage type T on host or device (f16/bf16 through the
/// hardware conversion on the device).
template <typename T> SLUICE_HD float sluice_quant_load(T v) { return (float)v; }
template <> SLUICE_HD float sluice_quant_load(sluice_f16 v) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(v.bits));
#else
  return sluice_load(v);
#endif
}
template <> SLUICE_HD float sluice_quant_load(sluice_bf16 v) {
#if defined(__CUDA_ARCH__)
  return __bfloat162float(__ushort_as_bfloat16(v.bits));
#else
  return sluice_load(v);
#endif
}

/// A dequantized weight as dequantize_linear gives it: rounded to the
/// scale's type (ONNX: the output type is the scale's), so f16 scales give
/// f16 weights, as the evaluator and ONNX Runtime compute them.
template <typename TS> SLUICE_HD float sluice_quant_round(float w) { return w; }
template <> SLUICE_HD float sluice_quant_round<sluice_f16>(float w) {
#if defined(__CUDA_ARCH__)
  return __half2float(__float2half_rn(w));
#else
  return sluice_load(sluice_to_f16(w));
#endif
}

/// 16 bytes moved as one 128-bit load or store.
struct alignas(16) sluice_q16 {
  uint32_t w[4];
};
/// Four floats read from shared memory as one 128-bit load.
struct alignas(16) sluice_qf4 {
  float x, y, z, w;
};

//===----------------------------------------------------------------------===//
// Per-tensor quantization
//===----------------------------------------------------------------------===//

/// q[i] = QuantizeLinear(x[i], scale, zp) for i in [0, n) (grid-stride),
/// into u8 (TQ = uint8_t) or s8; with `shift` the u8 result minus 128 is
/// stored as s8 (the operand IMMA reads; the GEMM then corrects with
/// zc = zp - 128).
template <typename TX, typename TQ>
__device__ __forceinline__ void sluice_quantize_body(const TX *x, TQ *q, int64_t n, float scale,
                                                     int32_t zp, int32_t qmin, int32_t qmax,
                                                     bool shift) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride) {
    const int32_t v = sluice_quant_value(sluice_quant_load(x[i]), scale, zp, qmin, qmax);
    q[i] = (TQ)(shift ? v - 128 : v);
  }
}

//===----------------------------------------------------------------------===//
// int8 GEMM: the epilogue after cuBLASLt, the CUDA-core fallback
//===----------------------------------------------------------------------===//

/// Calls epi(b, i, j, acc[b][i][j] - zc * colsum[b][j]) over batch x m x n
/// (grid-stride; acc row-major with row stride n, batches m * n apart, 16-byte
/// aligned; colsum rows `colsumStride` apart, 0 when B is shared). The
/// correction is int32 arithmetic modulo 2^32, exact whenever the true sum
/// fits. With n % 4 == 0 (always on the IMMA path) a thread takes four
/// columns through one 128-bit load: this pass reads 4 bytes per output,
/// which at BERT's K = 768 costs about as much as IMMA's arithmetic.
template <typename Epi>
__device__ __forceinline__ void
sluice_int8_epilogue_body(const int32_t *acc, const int32_t *colsum, int64_t colsumStride,
                          int32_t zc, int64_t batch, int64_t m, int64_t n, const Epi &epi) {
  const int64_t total = batch * m * n;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  const bool correct = colsum && zc;
  if (n % 4 == 0) {
    for (int64_t q = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; q < total / 4; q += stride) {
      const int64_t e = 4 * q, j = e % n, row = e / n;
      const int64_t i = row % m, b = row / m;
      const sluice_q16 v = *(const sluice_q16 *)(acc + e);
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        uint32_t r = v.w[u];
        if (correct)
          r -= (uint32_t)zc * (uint32_t)colsum[b * colsumStride + j + u];
        epi(b, i, j + u, (int32_t)r);
      }
    }
    return;
  }
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += stride) {
    const int64_t j = e % n, row = e / n;
    const int64_t i = row % m, b = row / m;
    uint32_t r = (uint32_t)acc[e];
    if (correct)
      r -= (uint32_t)zc * (uint32_t)colsum[b * colsumStride + j];
    epi(b, i, j, (int32_t)r);
  }
}

/// Tile of the CUDA-core int8 GEMM: 64 x 64 outputs per block of 256
/// threads (4 x 4 each, rows ty + 16 r and columns tx + 16 c so that a
/// warp's shared-memory reads are conflict-free), K in chunks of 16 staged
/// in shared memory as int32 (a - zA) and b. A(i, p) at a[i * lda + p] (TA
/// uint8_t or int8_t), B(p, j) at b[p * sbk + j * sbn]: any layout, so this
/// is the path for activation x activation products and for shapes IMMA
/// refuses. Sums are uint32 (wrap modulo 2^32 as IMMA's).
#define SLUICE_INT8_TILE 64
#define SLUICE_INT8_TILE_K 16
template <typename TA, typename Epi>
__device__ __forceinline__ void
sluice_int8_tile_body(const TA *a, int64_t lda, int64_t strideA, const int8_t *b, int64_t sbk,
                      int64_t sbn, int64_t strideB, int32_t zA, int64_t m, int64_t n, int64_t k,
                      int64_t tileM, int64_t tileN, int64_t batch, const Epi &epi) {
  __shared__ int32_t as[SLUICE_INT8_TILE_K][SLUICE_INT8_TILE];
  __shared__ int32_t bs[SLUICE_INT8_TILE_K][SLUICE_INT8_TILE];
  const unsigned t = threadIdx.x, tx = t % 16, ty = t / 16;
  const int64_t i0 = tileM * SLUICE_INT8_TILE, j0 = tileN * SLUICE_INT8_TILE;
  const TA *ab = a + batch * strideA;
  const int8_t *bb = b + batch * strideB;
  uint32_t acc[4][4] = {};
  for (int64_t k0 = 0; k0 < k; k0 += SLUICE_INT8_TILE_K) {
    for (unsigned e = t; e < SLUICE_INT8_TILE * SLUICE_INT8_TILE_K; e += 256) {
      // A: consecutive threads walk k (rows of A are contiguous in k).
      const unsigned ai = e / SLUICE_INT8_TILE_K, ak = e % SLUICE_INT8_TILE_K;
      const int64_t gi = i0 + ai, gk = k0 + ak;
      as[ak][ai] = gi < m && gk < k ? (int32_t)ab[gi * lda + gk] - zA : 0;
      // B: consecutive threads walk j.
      const unsigned bk = e / SLUICE_INT8_TILE, bj = e % SLUICE_INT8_TILE;
      const int64_t gj = j0 + bj, gk2 = k0 + bk;
      bs[bk][bj] = gj < n && gk2 < k ? (int32_t)bb[gk2 * sbk + gj * sbn] : 0;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < SLUICE_INT8_TILE_K; ++kk) {
      int32_t av[4], bv[4];
#pragma unroll
      for (int r = 0; r < 4; ++r)
        av[r] = as[kk][ty + 16 * r];
#pragma unroll
      for (int c = 0; c < 4; ++c)
        bv[c] = bs[kk][tx + 16 * c];
#pragma unroll
      for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int c = 0; c < 4; ++c)
          acc[r][c] += (uint32_t)(av[r] * bv[c]);
    }
    __syncthreads();
  }
  for (int r = 0; r < 4; ++r) {
    const int64_t i = i0 + ty + 16 * r;
    if (i >= m)
      continue;
    for (int c = 0; c < 4; ++c) {
      const int64_t j = j0 + tx + 16 * c;
      if (j < n)
        epi(batch, i, j, (int32_t)acc[r][c]);
    }
  }
}

/// colsum[b][j] = sum_k B_b(k, j) on the device, for a B that is not a
/// compile-time constant (grid-stride over batch x n; B(p, j) at
/// b[bi * strideB + p * sbk + j * sbn]).
__device__ __forceinline__ void sluice_int8_colsum_body(const int8_t *b, int64_t sbk, int64_t sbn,
                                                        int64_t strideB, int64_t batch, int64_t k,
                                                        int64_t n, int32_t *colsum) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < batch * n; e += stride) {
    const int64_t j = e % n, bi = e / n;
    const int8_t *col = b + bi * strideB + j * sbn;
    int32_t s = 0;
    for (int64_t p = 0; p < k; ++p)
      s += col[p * sbk];
    colsum[e] = s;
  }
}

/// dst[r][p] = src[r][p] ^ 0x80 (u8 -> the s8 byte a - 128) for `rows` rows
/// of k bytes; source row r at src + (r / m) * strideA + (r % m) * lda,
/// destination rows contiguous (grid-stride over bytes).
__device__ __forceinline__ void sluice_int8_shift_body(const uint8_t *src, int64_t lda,
                                                       int64_t strideA, int64_t m, int64_t rows,
                                                       int64_t k, int8_t *dst) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < rows * k; e += stride) {
    const int64_t r = e / k, p = e % k;
    dst[e] = (int8_t)(src[(r / m) * strideA + (r % m) * lda + p] ^ 0x80u);
  }
}

/// im2col of group `group` for every image: dst[(n * OH * OW + p) * K +
/// (c * kh + i) * kw + j] = x[n][group * C/g + c][ih][iw], or the zero point
/// for taps in the padding (they contribute 0, as in the evaluator).
/// Grid-stride over images * OH * OW * K bytes.
template <typename TA>
__device__ __forceinline__ void sluice_int8_im2col_body(const TA *x, const SluiceInt8ConvShape &c,
                                                        int64_t group, TA *dst) {
  const int64_t cg = c.channels / c.groups, k = cg * c.kh * c.kw;
  const int64_t pixels = c.outH * c.outW, total = c.images * pixels * k;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += stride) {
    const int64_t col = e % k, row = e / k;
    const int64_t n = row / pixels, p = row % pixels;
    const int64_t j = col % c.kw, i = (col / c.kw) % c.kh, ch = col / (c.kw * c.kh);
    const int64_t ih = (p / c.outW) * c.strideH - c.padT + i * c.dilH;
    const int64_t iw = (p % c.outW) * c.strideW - c.padL + j * c.dilW;
    const bool inside = ih >= 0 && ih < c.height && iw >= 0 && iw < c.width;
    dst[e] = inside ? x[((n * c.channels + group * cg + ch) * c.height + ih) * c.width + iw]
                    : (TA)c.aZeroPoint;
  }
}

//===----------------------------------------------------------------------===//
// Weight-only GEMM, small M (GEMV-like, memory bound)
//===----------------------------------------------------------------------===//

/// The weight-only problem as the kernels see it. B is row-major [K, N]
/// (int8: one byte per element, rows `ldb` bytes apart; int4: ONNX-packed,
/// flat element index k * N + n), scale (f16) of element (k, n) at
/// scales[(k / group) * n + n]; `vec`: B's address is 16-byte aligned and
/// its rows are a multiple of 16 bytes (int8 ldb % 16 == 0, int4 N % 32
/// == 0), so full column tiles move through 128-bit loads.
struct SluiceWonlyArgs {
  int64_t m, n, k, lda, ldb, group, kPerSplit;
  int32_t zeroPoint;
  bool isSigned, vec;
};

/// One block of the small-M weight-only GEMM (scales TS: f16 as Form W
/// writes them, or f32 as ONNX Runtime's weight-only QDQ models of f32
/// models do): columns [128 tile, +128) and
/// K rows [split * kPerSplit, +kPerSplit). Thread t owns column t % 128 and
/// half of each stage's rows (slice t / 128, whole warps per slice), with
/// MT f32 sums (MT >= M, a power of two up to 16).
///
/// Per stage the block moves 8 KiB of B: in full tiles two 16-byte loads
/// per thread, issued one stage ahead (registers) so that they fly while
/// the previous stage is multiplied; then the bytes go to shared memory
/// where each thread reads its own column (consecutive lanes, consecutive
/// bytes: no bank conflicts) and dequantizes in registers,
/// w = (q - zeroPoint) * scale rounded to the scale's type (as
/// dequantize_linear gives it), scale reloaded only when k crosses a block
/// of `group` rows. A's stage sits in shared memory transposed, [k][MT]
/// floats, read by all lanes at once (a broadcast). The two slices add up
/// through shared memory at the end. With one split the block calls
/// epi(row, col, y); with several it stores partial sums at
/// partial[(split * M + row) * N + col] for sluice_wonly_reduce_body.
///
/// Why this shape: B is [K, N] (ONNX's layout, as the bundle stores it), so
/// a 16-byte load holds 16 (int8) or 32 (int4) columns of one row, and a
/// thread multiplying them directly would need M x 16-32 sums: too many
/// registers for M = 16. Staging through shared memory turns that into one
/// column per thread, M sums. A small M makes the kernel memory bound: one
/// read of B dominates (A and the scales are small and stay in L2).
template <int BITS, int MT, typename TA, typename TS, typename Epi>
__device__ __forceinline__ void sluice_wonly_block(const TA *a, const uint8_t *b, const TS *scales,
                                                   const SluiceWonlyArgs &p, float *partial,
                                                   int64_t colTile, int64_t split, const Epi &epi) {
  constexpr int kCols = SLUICE_WONLY_COLS;
  constexpr int kRowBytes = kCols * BITS / 8;                                   // 128 or 64
  constexpr int kRows = SLUICE_WONLY_STAGE_BYTES / kRowBytes;                   // 64 or 128
  constexpr int kPieces = SLUICE_WONLY_STAGE_BYTES / 16 / SLUICE_WONLY_THREADS; // 2
  constexpr int kPiecesPerRow = kRowBytes / 16;
  constexpr int kSliceRows = kRows / 2;
  __shared__ sluice_q16 bs16[SLUICE_WONLY_STAGE_BYTES / 16];
  __shared__ sluice_qf4 as4[(kRows * MT + 3) / 4];
  __shared__ float red[MT * kCols];
  uint8_t *bs = (uint8_t *)bs16;
  float *as = (float *)as4;

  const unsigned t = threadIdx.x;
  const int c = (int)(t % kCols), slice = (int)(t / kCols);
  const int64_t n = p.n, k = p.k;
  const int64_t col0 = colTile * kCols, col = col0 + c;
  const int64_t kBegin = split * p.kPerSplit;
  const int64_t kEnd = kBegin + p.kPerSplit < k ? kBegin + p.kPerSplit : k;
  const bool vecTile = p.vec && col0 + kCols <= n;
  // Bytes of B row `row` that hold this tile's columns (vector tiles).
  const int64_t rowBytes = BITS == 8 ? p.ldb : n / 2;
  const int64_t tileByte = BITS == 8 ? col0 : col0 / 2;

  float acc[MT];
#pragma unroll
  for (int r = 0; r < MT; ++r)
    acc[r] = 0.0f;

  sluice_q16 next[kPieces];
  auto loadStage = [&](int64_t kt) {
#pragma unroll
    for (int q = 0; q < kPieces; ++q) {
      const int piece = (int)t + q * SLUICE_WONLY_THREADS;
      const int64_t row = kt + piece / kPiecesPerRow;
      if (row < k) {
        next[q] =
            *(const sluice_q16 *)(b + row * rowBytes + tileByte + (piece % kPiecesPerRow) * 16);
      } else {
        next[q] = sluice_q16{{0u, 0u, 0u, 0u}};
      }
    }
  };
  if (vecTile && kBegin < kEnd)
    loadStage(kBegin);

  for (int64_t kt = kBegin; kt < kEnd; kt += kRows) {
    __syncthreads(); // the previous stage's readers are done
    if (vecTile) {
#pragma unroll
      for (int q = 0; q < kPieces; ++q)
        bs16[t + q * SLUICE_WONLY_THREADS] = next[q];
    } else {
      // Edge tiles and unaligned B: byte by byte, the same packed format.
      for (int e = (int)t; e < SLUICE_WONLY_STAGE_BYTES; e += SLUICE_WONLY_THREADS) {
        const int r = e / kRowBytes, cb = e % kRowBytes;
        const int64_t row = kt + r;
        uint32_t byte = 0;
        if (BITS == 8) {
          if (row < kEnd && col0 + cb < n)
            byte = b[row * p.ldb + col0 + cb];
        } else {
          for (int h = 0; h < 2; ++h) {
            const int64_t cc = col0 + 2 * cb + h;
            if (row < kEnd && cc < n)
              byte |= ((uint32_t)sluice_int4_at(b, row * n + cc, false) & 15u) << (4 * h);
          }
        }
        bs[e] = (uint8_t)byte;
      }
    }
    for (int e = (int)t; e < kRows * MT; e += SLUICE_WONLY_THREADS) {
      const int r = e / kRows, kk = e % kRows; // consecutive threads walk k
      const int64_t row = kt + kk;
      as[kk * MT + r] = r < p.m && row < kEnd ? sluice_quant_load(a[r * p.lda + row]) : 0.0f;
    }
    __syncthreads();
    if (vecTile && kt + kRows < kEnd)
      loadStage(kt + kRows); // in flight during the arithmetic below

    const int r0 = slice * kSliceRows;
    int64_t row = kt + r0;
    if (row < kEnd && col < n) {
      int64_t blockIndex = row / p.group;
      int64_t nextBlock = (blockIndex + 1) * p.group;
      float scale = sluice_quant_load(scales[blockIndex * n + col]);
      for (int r = r0; r < r0 + kSliceRows && row < kEnd; ++r, ++row) {
        if (row == nextBlock) {
          ++blockIndex;
          nextBlock += p.group;
          scale = sluice_quant_load(scales[blockIndex * n + col]);
        }
        int32_t q;
        if (BITS == 8) {
          const uint32_t byte = bs[r * kRowBytes + c];
          q = p.isSigned ? (int32_t)(int8_t)byte : (int32_t)byte;
        } else {
          const uint32_t byte = bs[r * kRowBytes + c / 2];
          const uint32_t nibble = (c & 1) ? byte >> 4 : byte & 15u;
          q = p.isSigned ? (int32_t)(nibble ^ 8u) - 8 : (int32_t)nibble;
        }
        const float w = sluice_quant_round<TS>((float)(q - p.zeroPoint) * scale);
        const float *ar = as + r * MT;
        if (MT >= 4) {
#pragma unroll
          for (int m4 = 0; m4 < MT / 4; ++m4) {
            const sluice_qf4 v = ((const sluice_qf4 *)ar)[m4];
            acc[4 * m4 + 0] = fmaf(v.x, w, acc[4 * m4 + 0]);
            acc[4 * m4 + 1] = fmaf(v.y, w, acc[4 * m4 + 1]);
            acc[4 * m4 + 2] = fmaf(v.z, w, acc[4 * m4 + 2]);
            acc[4 * m4 + 3] = fmaf(v.w, w, acc[4 * m4 + 3]);
          }
        } else {
#pragma unroll
          for (int mm = 0; mm < MT; ++mm)
            acc[mm] = fmaf(ar[mm], w, acc[mm]);
        }
      }
    }
  }

  // Slice 1 hands its sums to slice 0.
  __syncthreads();
  if (slice == 1) {
#pragma unroll
    for (int r = 0; r < MT; ++r)
      red[r * kCols + c] = acc[r];
  }
  __syncthreads();
  if (slice == 0 && col < n) {
    for (int r = 0; r < MT && r < p.m; ++r) {
      const float y = acc[r] + red[r * kCols + c];
      if (partial)
        partial[(split * p.m + r) * n + col] = y;
      else
        epi((int64_t)r, col, y);
    }
  }
}

/// The split-K sums of sluice_wonly_block, added in split order (grid-stride
/// over M x N), then epi(row, col, y).
template <typename Epi>
__device__ __forceinline__ void sluice_wonly_reduce_body(const float *partial, int64_t splits,
                                                         int64_t m, int64_t n, const Epi &epi) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < m * n; e += stride) {
    float y = 0.0f;
    for (int64_t s = 0; s < splits; ++s)
      y += partial[s * m * n + e];
    epi(e / n, e % n, y);
  }
}

/// w[k][n] = (q(k, n) - zeroPoint) * scale(k, n), rounded to the scale's
/// type, as TW (the large-M path's copy of B in scratch; grid-stride over
/// K x N).
template <int BITS, typename TW, typename TS>
__device__ __forceinline__ void sluice_wonly_dequant_body(const uint8_t *b, const TS *scales,
                                                          const SluiceWonlyArgs &p, TW *w) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < p.k * p.n; e += stride) {
    const int64_t row = e / p.n, col = e % p.n;
    int32_t q;
    if (BITS == 8) {
      const uint32_t byte = b[row * p.ldb + col];
      q = p.isSigned ? (int32_t)(int8_t)byte : (int32_t)byte;
    } else {
      q = sluice_int4_at(b, e, p.isSigned);
    }
    const float scale = sluice_quant_load(scales[(row / p.group) * p.n + col]);
    w[e] = SLUICE_STORE(TW, sluice_quant_round<TS>((float)(q - p.zeroPoint) * scale));
  }
}

#endif // SLUICE_QUANT_HOST_ONLY

#endif // SLUICE_GEN_CUDA_QUANT_KERNELS_CUH
