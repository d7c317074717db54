//===- sluice_gen/cuda_quant.cuh - quantized GEMMs of cuda bundles -*- CUDA -*-===//
//
// The host side of the cuda target's quantized launches (docs/quantization.md; the
// device templates are in cuda_quant_kernels.cuh):
//
// int8 GEMM (Form I8, "compute": "int8"): sluice_int8_gemm computes
//   acc[b][i][j] = sum_k (A[b](i, k) - zA) * B[b](k, j)        (int32, exact)
// and hands every acc to an epilogue functor (the generated one: cast, the
// scale mul, the bias add, further elementwise ops, a requantization).
// The product runs on cuBLASLt's IMMA kernels (CUBLAS_COMPUTE_32I, CUDA_R_8I
// operands, CUDA_R_32I result) when the problem meets their rules, which
// are the same on Ampere and Hopper with the plain (row/column-major)
// ordering: "TN" (cuBLASLt's A transposed, B not: our B stored [N, K] with
// K contiguous, which the compiler gives constant weights, and our A
// row-major [M, K]), K, N and the leading dimensions multiples of 4,
// 4-byte aligned pointers. (The COL32 / COL4_4R2_8C orderings of Turing
// and Ampere would need a transform of every activation and are not
// supported on Hopper; they are not used.) IMMA multiplies s8 by s8, so a
// u8 activation goes in as a - 128 (one shift pass into scratch, or written
// so by its quantize kernel: sluice_quantize with shift) and the epilogue
// subtracts (zA - 128) * colsum[j] (colsum: B's column sums, computed once
// by the compiler for a constant B, else by a small kernel per run).
// The int32 product goes to scratch and one epilogue kernel reads it:
// cuBLASLt's own int8 epilogues cannot do this one (an alpha vector needs
// the CUDA_R_32F scale type, which IMMA allows only with an s8 D, and the
// zero-point term comes before the scale). The extra pass costs 4 bytes
// read per output against K multiply-adds.
// Anything else (K or N not a multiple of 4, B stored [K, N] as an
// activation of an attention matmul, an unaligned view, no cuBLASLt
// algorithm, too little workspace) takes sluice_int8_tile_body on CUDA
// cores: exact, any layout, calls the epilogue itself.
//
// Weight-only GEMM (Form W, "compute": "int8w" / "int4w"):
// sluice_wonly_gemm computes y(i, j) = sum_k A(i, k) * dequant(B)(k, j),
// A f32/f16/bf16, B int8 or ONNX-packed int4 [K, N] with f16 scales per
// block of `group` rows, f32 sums, and calls epi(i, j, y).
//   M <= 16 (LLM decoding): sluice_wonly_block, a GEMV-like kernel that
//     reads B once with 128-bit loads and dequantizes in registers (split
//     over K when the columns alone give too few blocks).
//   M > 16: B is dequantized into scratch (A's type) and cuBLASLt runs the
//     GEMM on tensor cores with an f32 result, then the epilogue kernel.
//     Why not a fused tensor-core kernel: at M > 16 the GEMM's arithmetic
//     (M multiply-adds per weight; the H100 does about 10 f32 FMAs per
//     byte of memory bandwidth on CUDA cores, ~30x that on tensor cores)
//     outgrows the one read of B that weight-only saves, so the dequantize
//     pass (K x N writes and reads of f16) costs little next to the GEMM,
//     and cuBLASLt's tuned kernels beat a hand-written mma kernel that no
//     GPU has checked yet. Without the workspace or an algorithm the GEMV
//     kernel runs over chunks of 16 rows (B read ceil(M / 16) times).
// The bundle stores only the int8 / packed int4 bytes and the f16 scales;
// the float copy exists in scratch during the launch alone.
//
// Plans (descriptors, algorithm or "none") are cached per problem and
// alignment in SluiceCudaState::algorithms, like cuda_blas.h's, and made
// on the first run (host-only cuBLASLt calls: a run under stream capture
// may make them).
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CUDA_QUANT_CUH
#define SLUICE_GEN_CUDA_QUANT_CUH

#include "sluice_gen/cuda.h"
#include "sluice_gen/cuda_blas.h"
#include "sluice_gen/cuda_quant_kernels.cuh"

//===----------------------------------------------------------------------===//
// cuBLASLt with mixed types (int8, fp8, f16/bf16 x f32 result)
//===----------------------------------------------------------------------===//

/// One matmul in Sluice's row-major frame, D(i, j) = sum_p A(i, p) B(p, j)
/// (+ bias(j)), as the column-major cuBLASLt product D^T = B^T A^T (see
/// cuda_blas.h's header): cuBLASLt's A slot holds our B, its B slot our A.
/// Our A is row-major [M, K] (row stride lda); our B is [N, K] with K
/// contiguous when bTransposed (cuBLASLt's "TN", required by IMMA and fp8),
/// else [K, N]; D is row-major [M, N] (row stride ldd).
struct SluiceQuantLtProblem {
  cudaDataType_t aType, bType, cType, dType, scaleType, biasType;
  cublasComputeType_t compute;
  int32_t bTransposed;
  int64_t m, n, k, lda, ldb, ldd;
  int64_t batch, strideA, strideB, strideD;
  int32_t bias;      ///< CUBLASLT_EPILOGUE_BIAS with a biasType vector over N
  int32_t fp8Scales; ///< A and B scale pointers (fp8)
  int32_t dScale;    ///< a D scale pointer (fp8 D)
  int32_t amax;      ///< an amax-of-D pointer (fp8 D)
};

/// A cached plan: `found` false records that cuBLASLt has no algorithm
/// (the caller takes its fallback without asking again).
struct SluiceQuantLtPlan {
  SluiceLtPlan lt;
  bool found = false;
};

/// Per-call pointers that live on the descriptor.
struct SluiceQuantLtPointers {
  const void *bias = nullptr;
  const float *aScale = nullptr, *bScale = nullptr, *dScale = nullptr;
  float *amax = nullptr;
};

static inline int32_t sluice_quant_lt_set_pointers(const SluiceRunArgs *args, const char *kernel,
                                                   const SluiceQuantLtProblem &g,
                                                   cublasLtMatmulDesc_t op,
                                                   const SluiceQuantLtPointers &ptr) {
  if (g.bias)
    SLUICE_CUBLAS(kernel, cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                         &ptr.bias, sizeof(ptr.bias)));
  if (g.fp8Scales) {
    SLUICE_CUBLAS(kernel, cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                                         &ptr.aScale, sizeof(ptr.aScale)));
    SLUICE_CUBLAS(kernel, cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                                         &ptr.bScale, sizeof(ptr.bScale)));
  }
  if (g.dScale)
    SLUICE_CUBLAS(kernel, cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER,
                                                         &ptr.dScale, sizeof(ptr.dScale)));
  if (g.amax)
    SLUICE_CUBLAS(kernel, cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER,
                                                         &ptr.amax, sizeof(ptr.amax)));
  return 0;
}

/// Makes the descriptors of `g` and asks the heuristic for an algorithm
/// that fits `workspace` bytes; plan->found says whether one did. Called
/// under state->mutex.
static inline int32_t sluice_quant_lt_make(const SluiceRunArgs *args, SluiceCudaState *state,
                                           const char *kernel, const SluiceQuantLtProblem &g,
                                           const uint32_t align[4], size_t workspace,
                                           const SluiceQuantLtPointers &ptr,
                                           SluiceQuantLtPlan *plan) {
  SluiceLtPlan &p = plan->lt;
  SLUICE_CUBLAS(kernel, cublasLtMatmulDescCreate(&p.op, g.compute, g.scaleType));
  const cublasOperation_t opSlotA = g.bTransposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opSlotB = CUBLAS_OP_N;
  SLUICE_CUBLAS(kernel, cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &opSlotA,
                                                       sizeof(opSlotA)));
  SLUICE_CUBLAS(kernel, cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &opSlotB,
                                                       sizeof(opSlotB)));
  if (g.bias) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    const int32_t biasType = (int32_t)g.biasType;
    const int64_t biasStride = 0;
    SLUICE_CUBLAS(kernel, cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                         &epilogue, sizeof(epilogue)));
    SLUICE_CUBLAS(kernel, cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                         &biasType, sizeof(biasType)));
    SLUICE_CUBLAS(kernel,
                  cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE,
                                                 &biasStride, sizeof(biasStride)));
  }
  // The heuristic may look at the pointers (the bias's alignment).
  if (int32_t status = sluice_quant_lt_set_pointers(args, kernel, g, p.op, ptr))
    return status;
  if (g.bTransposed)
    SLUICE_CUBLAS(kernel, sluice_lt_layout(&p.a, g.bType, g.k, g.n, g.ldb, g.batch, g.strideB));
  else
    SLUICE_CUBLAS(kernel, sluice_lt_layout(&p.a, g.bType, g.n, g.k, g.ldb, g.batch, g.strideB));
  SLUICE_CUBLAS(kernel, sluice_lt_layout(&p.b, g.aType, g.k, g.m, g.lda, g.batch, g.strideA));
  SLUICE_CUBLAS(kernel, sluice_lt_layout(&p.c, g.cType, g.n, g.m, g.ldd, g.batch, g.strideD));
  SLUICE_CUBLAS(kernel, sluice_lt_layout(&p.d, g.dType, g.n, g.m, g.ldd, g.batch, g.strideD));

  cublasLtMatmulPreference_t pref = nullptr;
  SLUICE_CUBLAS(kernel, cublasLtMatmulPreferenceCreate(&pref));
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, cublasStatus_t (*)(cublasLtMatmulPreference_t)>
      prefGuard(pref, cublasLtMatmulPreferenceDestroy);
  const uint64_t maxWorkspace = workspace;
  SLUICE_CUBLAS(kernel,
                cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                     &maxWorkspace, sizeof(maxWorkspace)));
  // align[]: our A, B, C, D; cuBLASLt's A slot is our B.
  const cublasLtMatmulPreferenceAttributes_t alignAttr[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i)
    SLUICE_CUBLAS(kernel, cublasLtMatmulPreferenceSetAttribute(pref, alignAttr[i], &align[i],
                                                               sizeof(align[i])));
  cublasLtMatmulHeuristicResult_t results[8];
  int returned = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(state->lt, p.op, p.a, p.b, p.c, p.d,
                                                           pref, 8, results, &returned);
  // NOT_SUPPORTED / INVALID_VALUE: no kernel for these types, layouts or
  // this GPU (fp8 before sm_89, IMMA rules): the caller's fallback.
  if (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE)
    return 0;
  SLUICE_CUBLAS(kernel, st);
  for (int i = 0; i < returned; ++i) {
    if (results[i].state == CUBLAS_STATUS_SUCCESS && results[i].workspaceSize <= workspace) {
      p.algo = results[i].algo;
      p.workspace = results[i].workspaceSize;
      plan->found = true;
      return 0;
    }
  }
  return 0;
}

/// The cached plan of `g` for these pointers' alignments, made on first
/// use; *out is null when cuBLASLt has no algorithm for it. Enqueues
/// nothing: the caller may launch what the matmul reads first.
static inline int32_t sluice_quant_lt_find(const SluiceRunArgs *args, SluiceCudaState *state,
                                           const char *kernel, const SluiceQuantLtProblem &g,
                                           const void *a, const void *b, const void *d,
                                           const SluiceQuantLtPointers &ptr, size_t workspace,
                                           SluiceQuantLtPlan **out) {
  *out = nullptr;
  const uint32_t align[4] = {sluice_alignment(a), sluice_alignment(b), sluice_alignment(d),
                             sluice_alignment(d)};
  char key[384];
  snprintf(key, sizeof(key),
           "qlt:%d:%d:%d:%d:%d:%d:%d:%d:%lld:%lld:%lld:%lld:%lld:%lld:%lld:%lld:%lld:%lld:%d:%d:"
           "%d:%d:%u:%u:%u:%u:%u:%zu",
           (int)g.aType, (int)g.bType, (int)g.cType, (int)g.dType, (int)g.scaleType,
           (int)g.biasType, (int)g.compute, (int)g.bTransposed, (long long)g.m, (long long)g.n,
           (long long)g.k, (long long)g.lda, (long long)g.ldb, (long long)g.ldd, (long long)g.batch,
           (long long)g.strideA, (long long)g.strideB, (long long)g.strideD, (int)g.bias,
           (int)g.fp8Scales, (int)g.dScale, (int)g.amax, align[0], align[1], align[2], align[3],
           g.bias ? sluice_alignment(ptr.bias) : 0u, workspace);
  std::lock_guard<std::mutex> lock(state->mutex);
  SluiceQuantLtPlan *plan = nullptr;
  auto it = state->algorithms.find(key);
  if (it != state->algorithms.end()) {
    plan = (SluiceQuantLtPlan *)it->second.get();
  } else {
    std::unique_ptr<SluiceQuantLtPlan> fresh(new SluiceQuantLtPlan());
    if (int32_t status =
            sluice_quant_lt_make(args, state, kernel, g, align, workspace, ptr, fresh.get()))
      return status;
    plan = fresh.get();
    // Plans stay in the map for the state's lifetime: the pointer outlives
    // the lock.
    state->algorithms[key] =
        std::shared_ptr<void>(fresh.release(), [](void *p) { delete (SluiceQuantLtPlan *)p; });
  }
  *out = plan->found ? plan : nullptr;
  return 0;
}

/// Enqueues `plan` (from sluice_quant_lt_find) on `stream`: D = A B with
/// alpha 1, beta 0 (C unread). `wsPtr`: cuBLASLt's part of the
/// state's workspace.
static inline int32_t sluice_quant_lt_enqueue(const SluiceRunArgs *args, SluiceCudaState *state,
                                              const char *kernel, const SluiceQuantLtProblem &g,
                                              SluiceQuantLtPlan *plan, const void *a, const void *b,
                                              void *d, const SluiceQuantLtPointers &ptr,
                                              void *wsPtr, cudaStream_t stream) {
  // One lock over the descriptor's pointers and the enqueue (plans are
  // shared between steps of the same problem).
  std::lock_guard<std::mutex> lock(state->mutex);
  if (int32_t status = sluice_quant_lt_set_pointers(args, kernel, g, plan->lt.op, ptr))
    return status;
  const int32_t one32 = 1, zero32 = 0;
  const float one = 1.0f, zero = 0.0f;
  const bool intScale = g.scaleType == CUDA_R_32I;
  const void *alpha = intScale ? (const void *)&one32 : (const void *)&one;
  const void *beta = intScale ? (const void *)&zero32 : (const void *)&zero;
  // C is D (in place) when their types agree; otherwise (an E4M3 D with a
  // bf16 C) cuBLASLt refuses C == D with differing descriptors, and C,
  // unread at beta 0, is null.
  const void *c = g.cType == g.dType ? d : nullptr;
  SLUICE_CUBLAS(kernel,
                cublasLtMatmul(state->lt, plan->lt.op, alpha, b, plan->lt.a, a, plan->lt.b, beta, c,
                               plan->lt.c, d, plan->lt.d, &plan->lt.algo,
                               plan->lt.workspace ? wsPtr : nullptr, plan->lt.workspace, stream));
  return 0;
}

//===----------------------------------------------------------------------===//
// Per-tensor quantization
//===----------------------------------------------------------------------===//

template <typename TX, typename TQ>
__global__ void __launch_bounds__(256)
    sluice_quantize_kernel(const TX *x, TQ *q, int64_t n, float scale, int32_t zp, int32_t qmin,
                           int32_t qmax, bool shift) {
  sluice_quantize_body(x, q, n, scale, zp, qmin, qmax, shift);
}

/// q = QuantizeLinear(x, scale, zp) over n elements, TQ uint8_t or int8_t
/// (full range). With `shift` (TQ int8_t, zp a u8 zero point) it is the u8
/// quantization stored as s8 bytes q - 128: the operand sluice_int8_gemm
/// takes with aUnsigned = 0 and aZeroPoint = zp - 128.
template <typename TX, typename TQ>
static inline int32_t sluice_quantize(const SluiceRunArgs *args, const char *kernel, const TX *x,
                                      TQ *q, int64_t n, float scale, int32_t zp, bool shift,
                                      cudaStream_t stream) {
  if (n <= 0)
    return 0;
  const bool u8 = shift || (TQ)-1 > (TQ)0;
  sluice_quantize_kernel<TX, TQ><<<sluice_grid(n, 256, 4), 256, 0, stream>>>(
      x, q, n, scale, zp, u8 ? 0 : -128, u8 ? 255 : 127, shift);
  SLUICE_LAUNCHED(kernel);
  return 0;
}

//===----------------------------------------------------------------------===//
// int8 GEMM
//===----------------------------------------------------------------------===//

template <typename Epi>
__global__ void __launch_bounds__(256)
    sluice_int8_epilogue_kernel(const int32_t *acc, const int32_t *colsum, int64_t colsumStride,
                                int32_t zc, int64_t batch, int64_t m, int64_t n, Epi epi) {
  sluice_int8_epilogue_body(acc, colsum, colsumStride, zc, batch, m, n, epi);
}

template <typename TA, typename Epi>
__global__ void __launch_bounds__(256)
    sluice_int8_tile_kernel(const TA *a, int64_t lda, int64_t strideA, const int8_t *b, int64_t sbk,
                            int64_t sbn, int64_t strideB, int32_t zA, int64_t m, int64_t n,
                            int64_t k, int64_t tilesM, int64_t tilesN, Epi epi) {
  const int64_t bid = blockIdx.x;
  const int64_t tileN = bid % tilesN, rest = bid / tilesN;
  sluice_int8_tile_body(a, lda, strideA, b, sbk, sbn, strideB, zA, m, n, k, rest % tilesM, tileN,
                        rest / tilesM, epi);
}

__global__ void __launch_bounds__(256)
    sluice_int8_colsum_kernel(const int8_t *b, int64_t sbk, int64_t sbn, int64_t strideB,
                              int64_t batch, int64_t k, int64_t n, int32_t *colsum) {
  sluice_int8_colsum_body(b, sbk, sbn, strideB, batch, k, n, colsum);
}

__global__ void __launch_bounds__(256)
    sluice_int8_shift_kernel(const uint8_t *src, int64_t lda, int64_t strideA, int64_t m,
                             int64_t rows, int64_t k, int8_t *dst) {
  sluice_int8_shift_body(src, lda, strideA, m, rows, k, dst);
}

/// The CUDA-core path of sluice_int8_gemm (also callable directly).
template <typename Epi>
static inline int32_t sluice_int8_gemm_tiles(const SluiceRunArgs *args, const char *kernel,
                                             const SluiceInt8GemmShape &g, const void *a,
                                             const int8_t *b, const Epi &epi, cudaStream_t stream) {
  const int64_t tilesM = (g.m + SLUICE_INT8_TILE - 1) / SLUICE_INT8_TILE;
  const int64_t tilesN = (g.n + SLUICE_INT8_TILE - 1) / SLUICE_INT8_TILE;
  const int64_t blocks = tilesM * tilesN * g.batch;
  if (blocks > 0x7fffffffLL)
    return sluice_fail(args, kernel, "int8 GEMM too large for one grid");
  const int64_t sbk = g.bLayout == SLUICE_INT8_B_NK ? 1 : g.ldb;
  const int64_t sbn = g.bLayout == SLUICE_INT8_B_NK ? g.ldb : 1;
  if (g.aUnsigned)
    sluice_int8_tile_kernel<uint8_t, Epi><<<(unsigned)blocks, 256, 0, stream>>>(
        (const uint8_t *)a, g.lda, g.strideA, b, sbk, sbn, g.strideB, g.aZeroPoint, g.m, g.n, g.k,
        tilesM, tilesN, epi);
  else
    sluice_int8_tile_kernel<int8_t, Epi><<<(unsigned)blocks, 256, 0, stream>>>(
        (const int8_t *)a, g.lda, g.strideA, b, sbk, sbn, g.strideB, g.aZeroPoint, g.m, g.n, g.k,
        tilesM, tilesN, epi);
  SLUICE_LAUNCHED(kernel);
  return 0;
}

/// Whether cuBLASLt's IMMA kernels can take `g` with these pointers (the
/// rules in the file header); the wrapper still falls back when the
/// heuristic finds nothing.
static inline bool sluice_int8_imma_eligible(const SluiceInt8GemmShape &g, const void *a,
                                             const void *b) {
  return g.bLayout == SLUICE_INT8_B_NK && g.k % 4 == 0 && g.n % 4 == 0 && g.ldb % 4 == 0 &&
         (g.batch <= 1 || g.strideB % 4 == 0) && sluice_alignment(b) >= 4 &&
         (g.aUnsigned ||
          (g.lda % 4 == 0 && (g.batch <= 1 || g.strideA % 4 == 0) && sluice_alignment(a) >= 4));
}

/// Enqueues the int8 GEMM `g` and its epilogue: epi(b, i, j, acc) with acc
/// = sum_k (A - zA) B for every output. `colsum` (int32 [N], or [batch][N]
/// when B is not shared) may be null: it is then computed on the device
/// when the IMMA path needs it. `workspace`: bytes of the state's workspace
/// this call may use (sluice_int8_gemm_workspace(g) for the IMMA path).
template <typename Epi>
static inline int32_t sluice_int8_gemm(const SluiceRunArgs *args, SluiceCudaState *state,
                                       const char *kernel, const SluiceInt8GemmShape &shape,
                                       const void *a, const int8_t *b, const int32_t *colsum,
                                       const Epi &epi, size_t workspace, cudaStream_t stream) {
  SluiceInt8GemmShape g = shape;
  if (g.batch < 1)
    g.batch = 1;
  if (g.m <= 0 || g.n <= 0)
    return 0;
  if (workspace > state->workspaceBytes)
    workspace = state->workspaceBytes;
  const int32_t zc = sluice_int8_zero_correction(g.aUnsigned != 0, g.aZeroPoint);
  const bool needColsum = zc != 0 && !colsum && g.k > 0;
  const SluiceInt8Scratch s = sluice_int8_scratch(g, needColsum);
  if (g.k > 0 && sluice_int8_imma_eligible(g, a, b) && (int64_t)workspace >= s.total) {
    unsigned char *ws = (unsigned char *)state->workspace;
    int32_t *acc = (int32_t *)ws;
    int8_t *shifted = (int8_t *)(ws + s.acc);
    int32_t *deviceColsum = (int32_t *)(ws + s.acc + s.shifted);
    // A for IMMA: s8, rows contiguous when shifted (then the batch folds).
    const void *aImma = a;
    int64_t lda = g.lda, strideA = g.strideA;
    if (g.aUnsigned) {
      aImma = shifted;
      lda = g.k;
      strideA = g.m * g.k;
    }
    SluiceQuantLtProblem p;
    memset(&p, 0, sizeof(p));
    p.aType = p.bType = CUDA_R_8I;
    p.cType = p.dType = CUDA_R_32I;
    p.scaleType = CUDA_R_32I;
    p.biasType = CUDA_R_32I;
    p.compute = CUBLAS_COMPUTE_32I;
    p.bTransposed = 1;
    p.n = g.n;
    p.k = g.k;
    p.ldb = g.ldb;
    p.ldd = g.n;
    // A shared B with batches of A one after another: one GEMM of M x batch rows.
    if (g.batch == 1 || (g.strideB == 0 && strideA == g.m * lda)) {
      p.m = g.m * g.batch;
      p.lda = lda;
      p.batch = 1;
    } else {
      p.m = g.m;
      p.lda = lda;
      p.batch = g.batch;
      p.strideA = strideA;
      p.strideB = g.strideB;
      p.strideD = g.m * g.n;
    }
    const size_t ltBytes =
        (size_t)std::min<int64_t>((int64_t)workspace - s.total, SLUICE_QUANT_LT_WORKSPACE);
    SluiceQuantLtPlan *plan = nullptr;
    if (int32_t status = sluice_quant_lt_find(args, state, kernel, p, aImma, b, acc,
                                              SluiceQuantLtPointers(), ltBytes, &plan))
      return status;
    if (plan) {
      if (g.aUnsigned) {
        const int64_t bytes = g.batch * g.m * g.k;
        sluice_int8_shift_kernel<<<sluice_grid(bytes, 256, 4), 256, 0, stream>>>(
            (const uint8_t *)a, g.lda, g.strideA, g.m, g.batch * g.m, g.k, shifted);
        SLUICE_LAUNCHED(kernel);
      }
      const int64_t colsumRows = g.strideB ? g.batch : 1;
      if (needColsum) {
        sluice_int8_colsum_kernel<<<sluice_grid(colsumRows * g.n, 256), 256, 0, stream>>>(
            b, 1, g.ldb, g.strideB, colsumRows, g.k, g.n, deviceColsum);
        SLUICE_LAUNCHED(kernel);
        colsum = deviceColsum;
      }
      if (int32_t status = sluice_quant_lt_enqueue(args, state, kernel, p, plan, aImma, b, acc,
                                                   SluiceQuantLtPointers(), ws + s.total, stream))
        return status;
      const int64_t total = g.batch * g.m * g.n;
      sluice_int8_epilogue_kernel<Epi><<<sluice_grid(total / 4, 256, 2), 256, 0, stream>>>(
          acc, colsum, g.strideB ? g.n : 0, zc, g.batch, g.m, g.n, epi);
      SLUICE_LAUNCHED(kernel);
      return 0;
    }
  }
  return sluice_int8_gemm_tiles(args, kernel, g, a, b, epi, stream);
}

template <typename TA>
__global__ void __launch_bounds__(256)
    sluice_int8_im2col_kernel(const TA *x, SluiceInt8ConvShape c, int64_t group, TA *dst) {
  sluice_int8_im2col_body(x, c, group, dst);
}

/// The epilogue of group `group` of a convolution: epi(group, row, channel
/// in the group, acc), row = image * OH * OW + output pixel.
template <typename Epi> struct SluiceInt8ConvGroup {
  Epi epi;
  int64_t group;
  __device__ __forceinline__ void operator()(int64_t, int64_t i, int64_t j, int32_t acc) const {
    epi(group, i, j, acc);
  }
};

/// Enqueues the 2-D int8 convolution `c` of x (NCHW, u8 or s8 with its zero
/// point) by the s8 weight w ([M, C / groups, kh, kw], contiguous): per
/// group, the im2col of every image into scratch (after the GEMM's part of
/// the workspace), then sluice_int8_gemm with the group's weight rows as B
/// (the column sums on the device when the zero point needs them); the
/// epilogue receives epi(group, image * OH * OW + pixel, channel in the
/// group, acc). `workspace`: sluice_int8_conv_workspace(c) for the IMMA
/// path; with only room for the im2col rows the GEMMs take the CUDA-core
/// path.
template <typename Epi>
static inline int32_t sluice_int8_conv(const SluiceRunArgs *args, SluiceCudaState *state,
                                       const char *kernel, const SluiceInt8ConvShape &c,
                                       const void *x, const int8_t *w, const Epi &epi,
                                       size_t workspace, cudaStream_t stream) {
  const SluiceInt8GemmShape g = sluice_int8_conv_gemm(c);
  if (g.m <= 0 || g.n <= 0)
    return 0;
  if (workspace > state->workspaceBytes)
    workspace = state->workspaceBytes;
  const int64_t rows = sluice_quant_round256(g.m * g.k);
  int64_t gemmBytes = sluice_int8_gemm_workspace(g);
  if ((int64_t)workspace < gemmBytes + rows)
    gemmBytes = 0; // the im2col rows first; the GEMMs without scratch
  if ((int64_t)workspace < gemmBytes + rows)
    return sluice_fail(args, kernel, "the device workspace is smaller than the int8 "
                                     "convolution's im2col rows");
  unsigned char *im2col = (unsigned char *)state->workspace + gemmBytes;
  for (int64_t group = 0; group < c.groups; ++group) {
    if (c.aUnsigned)
      sluice_int8_im2col_kernel<uint8_t><<<sluice_grid(g.m * g.k, 256, 4), 256, 0, stream>>>(
          (const uint8_t *)x, c, group, (uint8_t *)im2col);
    else
      sluice_int8_im2col_kernel<int8_t><<<sluice_grid(g.m * g.k, 256, 4), 256, 0, stream>>>(
          (const int8_t *)x, c, group, (int8_t *)im2col);
    SLUICE_LAUNCHED(kernel);
    if (int32_t status = sluice_int8_gemm(args, state, kernel, g, im2col, w + group * g.n * g.k,
                                          nullptr, SluiceInt8ConvGroup<Epi>{epi, group},
                                          (size_t)gemmBytes, stream))
      return status;
  }
  return 0;
}

/// Ready-made int8 epilogue: D(b, i, j) = act(acc * scale * colScale[j] *
/// rowScale[b * m + i] + bias[j]) as T (f32, f16, bf16), each vector
/// optional (null); the multiply-add is one fmaf as in cpu_int8.h. `relu`
/// clamps at 0. D(b, i, j) at d[b * strideD + i * ldd + j].
template <typename T> struct SluiceInt8Dequant {
  T *d;
  int64_t ldd, strideD, m;
  float scale;
  const float *colScale, *rowScale, *bias;
  bool relu;
  __device__ __forceinline__ void operator()(int64_t b, int64_t i, int64_t j, int32_t acc) const {
    float s = colScale ? scale * colScale[j] : scale;
    if (rowScale)
      s *= rowScale[b * m + i];
    float y = fmaf((float)acc, s, bias ? bias[j] : 0.0f);
    if (relu)
      y = y > 0.0f ? y : 0.0f;
    d[b * strideD + i * ldd + j] = SLUICE_STORE(T, y);
  }
};

/// Ready-made int8 epilogue that requantizes for the next quantized op:
/// y as SluiceInt8Dequant, then QuantizeLinear(y, outScale, outZeroPoint)
/// into TQ (uint8_t or int8_t) between qmin and qmax (a fused ReLU raises
/// qmin to the zero point).
template <typename TQ> struct SluiceInt8Requant {
  TQ *d;
  int64_t ldd, strideD;
  float scale;
  const float *colScale, *bias;
  float outScale;
  int32_t outZeroPoint, qmin, qmax;
  __device__ __forceinline__ void operator()(int64_t b, int64_t i, int64_t j, int32_t acc) const {
    const float s = colScale ? scale * colScale[j] : scale;
    const float y = fmaf((float)acc, s, bias ? bias[j] : 0.0f);
    d[b * strideD + i * ldd + j] = (TQ)sluice_quant_value(y, outScale, outZeroPoint, qmin, qmax);
  }
};

/// Ready-made int8 epilogue of a bare MatMulInteger: the int32 sums.
struct SluiceInt8Store {
  int32_t *d;
  int64_t ldd, strideD;
  __device__ __forceinline__ void operator()(int64_t b, int64_t i, int64_t j, int32_t acc) const {
    d[b * strideD + i * ldd + j] = acc;
  }
};

//===----------------------------------------------------------------------===//
// Weight-only GEMM
//===----------------------------------------------------------------------===//

/// Ready-made weight-only epilogue: D(i, j) = act(y + bias[j]) as T.
template <typename T> struct SluiceWonlyStore {
  T *d;
  int64_t ldd;
  const float *bias;
  bool relu;
  __device__ __forceinline__ void operator()(int64_t i, int64_t j, float y) const {
    if (bias)
      y += bias[j];
    if (relu)
      y = y > 0.0f ? y : 0.0f;
    d[i * ldd + j] = SLUICE_STORE(T, y);
  }
};

/// Rows of a chunk of M: the GEMV kernel's rows are chunk-relative.
template <typename Epi> struct SluiceWonlyRows {
  Epi epi;
  int64_t row0;
  __device__ __forceinline__ void operator()(int64_t i, int64_t j, float y) const {
    epi(i + row0, j, y);
  }
};

template <int BITS, int MT, typename TA, typename TS, typename Epi>
__global__ void __launch_bounds__(SLUICE_WONLY_THREADS)
    sluice_wonly_kernel(const TA *a, const uint8_t *b, const TS *scales, SluiceWonlyArgs p,
                        float *partial, int64_t colTiles, Epi epi) {
  const int64_t bid = blockIdx.x;
  sluice_wonly_block<BITS, MT, TA, TS, Epi>(a, b, scales, p, partial, bid % colTiles,
                                            bid / colTiles, epi);
}

template <typename Epi>
__global__ void __launch_bounds__(256)
    sluice_wonly_reduce_kernel(const float *partial, int64_t splits, int64_t m, int64_t n,
                               Epi epi) {
  sluice_wonly_reduce_body(partial, splits, m, n, epi);
}

template <int BITS, typename TW, typename TS>
__global__ void __launch_bounds__(256)
    sluice_wonly_dequant_kernel(const uint8_t *b, const TS *scales, SluiceWonlyArgs p, TW *w) {
  sluice_wonly_dequant_body<BITS, TW, TS>(b, scales, p, w);
}

template <typename Epi>
__global__ void __launch_bounds__(256)
    sluice_wonly_store_kernel(const float *d, int64_t m, int64_t n, Epi epi) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < m * n; e += stride)
    epi(e / n, e % n, d[e]);
}

template <typename TA> static inline cudaDataType_t sluice_quant_float_type() {
  return sizeof(TA) == 4                        ? CUDA_R_32F
         : std::is_same<TA, sluice_bf16>::value ? CUDA_R_16BF
                                                : CUDA_R_16F;
}

template <int BITS, int MT, typename TA, typename TS, typename Epi>
static inline int32_t sluice_wonly_launch(const SluiceRunArgs *args, const char *kernel,
                                          const TA *a, const uint8_t *b, const TS *scales,
                                          const SluiceWonlyArgs &p, const SluiceWonlyPlan &plan,
                                          float *partial, const Epi &epi, cudaStream_t stream) {
  const int64_t blocks = plan.colTiles * plan.splits;
  sluice_wonly_kernel<BITS, MT, TA, TS, Epi><<<(unsigned)blocks, SLUICE_WONLY_THREADS, 0, stream>>>(
      a, b, scales, p, plan.splits > 1 ? partial : nullptr, plan.colTiles, epi);
  SLUICE_LAUNCHED(kernel);
  if (plan.splits > 1) {
    sluice_wonly_reduce_kernel<Epi>
        <<<sluice_grid(p.m * p.n, 256), 256, 0, stream>>>(partial, plan.splits, p.m, p.n, epi);
    SLUICE_LAUNCHED(kernel);
  }
  return 0;
}

/// The GEMV path over rows [row0, row0 + m) of A (m <= 16).
template <int BITS, typename TA, typename TS, typename Epi>
static inline int32_t sluice_wonly_rows(const SluiceRunArgs *args, const char *kernel,
                                        const SluiceWonlyShape &g, int64_t row0, int64_t m,
                                        const TA *a, const uint8_t *b, const TS *scales,
                                        const Epi &epi, float *scratch, int64_t scratchBytes,
                                        int sms, cudaStream_t stream) {
  // Fewer splits when the partial sums do not fit the workspace.
  const SluiceWonlyPlan plan = sluice_wonly_plan(m, g.n, g.k, BITS, sms, scratchBytes);
  SluiceWonlyArgs p;
  p.m = m;
  p.n = g.n;
  p.k = g.k;
  p.lda = g.lda;
  p.ldb = BITS == 8 ? g.ldb : g.n;
  p.group = g.group > 0 ? g.group : g.k;
  p.kPerSplit = plan.kPerSplit;
  p.zeroPoint = g.zeroPoint;
  p.isSigned = g.isSigned != 0;
  p.vec = sluice_alignment(b) >= 16 && (BITS == 8 ? g.ldb % 16 == 0 : g.n % 32 == 0);
  const SluiceWonlyRows<Epi> rows{epi, row0};
  const TA *ar = a + row0 * g.lda;
  switch (sluice_wonly_m_tile(m)) {
  case 1:
    return sluice_wonly_launch<BITS, 1>(args, kernel, ar, b, scales, p, plan, scratch, rows,
                                        stream);
  case 2:
    return sluice_wonly_launch<BITS, 2>(args, kernel, ar, b, scales, p, plan, scratch, rows,
                                        stream);
  case 4:
    return sluice_wonly_launch<BITS, 4>(args, kernel, ar, b, scales, p, plan, scratch, rows,
                                        stream);
  case 8:
    return sluice_wonly_launch<BITS, 8>(args, kernel, ar, b, scales, p, plan, scratch, rows,
                                        stream);
  default:
    return sluice_wonly_launch<BITS, 16>(args, kernel, ar, b, scales, p, plan, scratch, rows,
                                         stream);
  }
}

template <int BITS, typename TA, typename TS, typename Epi>
static inline int32_t
sluice_wonly_gemm_bits(const SluiceRunArgs *args, SluiceCudaState *state, const char *kernel,
                       const SluiceWonlyShape &g, const TA *a, const uint8_t *b, const TS *scales,
                       const Epi &epi, size_t workspace, cudaStream_t stream) {
  int device = 0, sms = 0;
  SLUICE_CUDA(kernel, cudaGetDevice(&device));
  SLUICE_CUDA(kernel, cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  unsigned char *ws = (unsigned char *)state->workspace;
  if (g.m > SLUICE_WONLY_MAX_M) {
    // Large M: dequantize B into scratch, cuBLASLt on tensor cores.
    const int64_t wBytes = sluice_quant_round256(g.k * g.n * (int64_t)sizeof(TA));
    const int64_t dBytes = sluice_quant_round256(g.m * g.n * 4);
    if ((int64_t)workspace > wBytes + dBytes) {
      TA *w = (TA *)ws;
      float *d = (float *)(ws + wBytes);
      SluiceQuantLtProblem p;
      memset(&p, 0, sizeof(p));
      p.aType = p.bType = sluice_quant_float_type<TA>();
      p.cType = p.dType = CUDA_R_32F;
      p.scaleType = p.biasType = CUDA_R_32F;
      // f32 stays f32 (no TF32): the evaluator's precision.
      p.compute = CUBLAS_COMPUTE_32F;
      p.bTransposed = 0;
      p.m = g.m;
      p.n = g.n;
      p.k = g.k;
      p.lda = g.lda;
      p.ldb = g.n;
      p.ldd = g.n;
      p.batch = 1;
      const size_t ltBytes = (size_t)std::min<int64_t>((int64_t)workspace - wBytes - dBytes,
                                                       SLUICE_QUANT_LT_WORKSPACE);
      SluiceQuantLtPlan *plan = nullptr;
      if (int32_t status = sluice_quant_lt_find(args, state, kernel, p, a, w, d,
                                                SluiceQuantLtPointers(), ltBytes, &plan))
        return status;
      if (plan) {
        SluiceWonlyArgs q;
        memset(&q, 0, sizeof(q));
        q.m = g.m;
        q.n = g.n;
        q.k = g.k;
        q.ldb = BITS == 8 ? g.ldb : g.n;
        q.group = g.group > 0 ? g.group : g.k;
        q.zeroPoint = g.zeroPoint;
        q.isSigned = g.isSigned != 0;
        sluice_wonly_dequant_kernel<BITS, TA, TS>
            <<<sluice_grid(g.k * g.n, 256, 4), 256, 0, stream>>>(b, scales, q, w);
        SLUICE_LAUNCHED(kernel);
        if (int32_t status =
                sluice_quant_lt_enqueue(args, state, kernel, p, plan, a, w, d,
                                        SluiceQuantLtPointers(), ws + wBytes + dBytes, stream))
          return status;
        sluice_wonly_store_kernel<Epi>
            <<<sluice_grid(g.m * g.n, 256, 4), 256, 0, stream>>>(d, g.m, g.n, epi);
        SLUICE_LAUNCHED(kernel);
        return 0;
      }
    }
  }
  // Small M (or no room / no algorithm for the large-M path): the GEMV
  // kernel over chunks of up to 16 rows.
  for (int64_t row0 = 0; row0 < g.m; row0 += SLUICE_WONLY_MAX_M) {
    const int64_t rows = std::min<int64_t>(SLUICE_WONLY_MAX_M, g.m - row0);
    if (int32_t status = sluice_wonly_rows<BITS>(args, kernel, g, row0, rows, a, b, scales, epi,
                                                 (float *)ws, (int64_t)workspace, sms, stream))
      return status;
  }
  return 0;
}

/// Enqueues the weight-only GEMM `g`: epi(i, j, y) with y = sum_k A(i, k)
/// dequant(B)(k, j) for every output (scales TS: sluice_f16 or float). `workspace`: bytes of the
/// state's workspace this call may use (sluice_wonly_workspace(g, sizeof(TA))).
template <typename TA, typename TS, typename Epi>
static inline int32_t sluice_wonly_gemm(const SluiceRunArgs *args, SluiceCudaState *state,
                                        const char *kernel, const SluiceWonlyShape &g, const TA *a,
                                        const void *b, const TS *scales, const Epi &epi,
                                        size_t workspace, cudaStream_t stream) {
  if (g.m <= 0 || g.n <= 0)
    return 0;
  if (g.bits != 8 && g.bits != 4)
    return sluice_fail(args, kernel, "weight-only GEMM with weights of neither 8 nor 4 bits");
  if (workspace > state->workspaceBytes)
    workspace = state->workspaceBytes;
  if (g.bits == 8)
    return sluice_wonly_gemm_bits<8>(args, state, kernel, g, a, (const uint8_t *)b, scales, epi,
                                     workspace, stream);
  return sluice_wonly_gemm_bits<4>(args, state, kernel, g, a, (const uint8_t *)b, scales, epi,
                                   workspace, stream);
}

#endif // SLUICE_GEN_CUDA_QUANT_CUH
