//===- sluice_gen/cuda_quant_kernels.cuh - quantized device code -*- CUDA -*-===//
//
// The device templates of the cuda target's quantized launches (Forms I8
// and W of docs/quantization.md) and the host arithmetic
// around them: what sluice_gen/cuda_quant.cuh launches. The host-only
// part the compiler shares (packing, column sums, plans, workspace sizes)
// is sluice_gen/layout/cuda_quant_layout.h, plain C++. Like
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

#include "sluice_gen/layout/cuda_quant_layout.h"
#include "sluice_gen/scalar.h"
#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
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

#endif // SLUICE_GEN_CUDA_QUANT_KERNELS_CUH
