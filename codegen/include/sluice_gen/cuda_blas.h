//===- sluice_gen/cuda_blas.h - cuBLASLt GEMMs of cuda bundles -*- C++ -*-===//
//
// The GEMMs of form F2 (codegen/cuda/groups/Gemm.cpp) as cuBLASLt matmuls
// with fused epilogues (bias, ReLU, tanh-GELU, a residual through beta = 1,
// a scale through alpha). The generated epilogue kernels move contiguous
// runs through cuda.h's sluice_vec.
//
// Row-major onto column-major: Sluice tensors are row-major, cuBLASLt's
// default order is column-major. A row-major M x N matrix with row stride ld
// is, read column-major, its N x M transpose with leading dimension ld. So
// D = A B (row-major) is computed as the column-major product
//   D^T (N x M) = B^T (N x K) * A^T (K x M)
// with cuBLASLt's "A" slot holding our B and its "B" slot our A, and no
// copies: every layout is the buffer as it is. A transposed operand (a view
// whose rows are the contiguous dim) just flips that slot's TRANSA/TRANSB.
// The bias of a BIAS epilogue runs along the rows of cuBLASLt's D, which are
// our N: the ONNX bias over output features, broadcast over rows.
//
// Precision: f32 uses CUBLAS_COMPUTE_32F (never the fast-TF32 compute type:
// results must match the fp32 evaluator at rtol 1e-4); f16/bf16 keep f16/bf16
// tensors with fp32 accumulation and fp32 alpha/beta; f64 uses
// CUBLAS_COMPUTE_64F.
//
// Plans (descriptors and the chosen algorithm) are cached per problem and
// pointer alignment in SluiceCudaState::algorithms, under its mutex; a
// plan is made on the first run (cublasLtMatmulAlgoGetHeuristic is host
// only, so it may happen while the stream is being captured).
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CUDA_BLAS_H
#define SLUICE_GEN_CUDA_BLAS_H

#include "sluice_gen/cuda.h"

/// Element types of a GEMM (inputs, output, bias and residual alike).
enum SluiceGemmType {
  SLUICE_GEMM_F32 = 0,
  SLUICE_GEMM_F64 = 1,
  SLUICE_GEMM_F16 = 2,
  SLUICE_GEMM_BF16 = 3
};

/// cuBLASLt epilogues the compiler maps graph ops onto. GELU is cuBLASLt's
/// tanh approximation: only sluice.gelu {approximate = "tanh"} maps to it.
enum SluiceGemmEpilogue {
  SLUICE_EPI_NONE = 0,
  SLUICE_EPI_BIAS = 1,
  SLUICE_EPI_RELU = 2,
  SLUICE_EPI_RELU_BIAS = 3,
  SLUICE_EPI_GELU = 4,
  SLUICE_EPI_GELU_BIAS = 5
};

/// One (strided-batched) GEMM in the row-major frame:
///   D[b](i, j) = epilogue(alpha * sum_p A[b](i, p) B[b](p, j)
///                         + (has_c ? C[b](i, j) : 0) + bias(j))
/// A(i, p) is at A[b * stride_a + i * lda + p], or at p * lda + i when
/// trans_a (A stored K x M); B(p, j) at p * ldb + j, or j * ldb + p when
/// trans_b; C(i, j) at i * ldc + j, D(i, j) at i * ldd + j. A batch stride 0
/// broadcasts that operand over the batch.
struct SluiceGemmShape {
  int32_t type;
  int32_t trans_a, trans_b;
  int64_t m, n, k;
  int64_t lda, ldb, ldc, ldd;
  int64_t batch;
  int64_t stride_a, stride_b, stride_c, stride_d;
  int32_t epilogue;
  int32_t has_c;
};

/// Descriptors and algorithm of one cached GEMM problem.
struct SluiceLtPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo;
  size_t workspace = 0;
  /// The epilogue (SLUICE_EPI_*) run by sluice_gemm_epilogue_kernel after
  /// the matmul, when cuBLASLt has no algorithm with it fused; else NONE.
  int32_t post = SLUICE_EPI_NONE;
  ~SluiceLtPlan() {
    if (op)
      cublasLtMatmulDescDestroy(op);
    if (a)
      cublasLtMatrixLayoutDestroy(a);
    if (b)
      cublasLtMatrixLayoutDestroy(b);
    if (c)
      cublasLtMatrixLayoutDestroy(c);
    if (d)
      cublasLtMatrixLayoutDestroy(d);
  }
};

/// The largest power of two up to 256 dividing the address (cuBLASLt's
/// heuristic assumes 256-byte aligned buffers unless told otherwise, and
/// views into the arena start anywhere).
static inline uint32_t sluice_alignment(const void *p) {
  uintptr_t a = (uintptr_t)p;
  uint32_t align = 256;
  while (align > 1 && (a % align) != 0)
    align >>= 1;
  return align;
}

static inline cudaDataType_t sluice_gemm_data_type(int32_t type) {
  switch (type) {
  case SLUICE_GEMM_F64:
    return CUDA_R_64F;
  case SLUICE_GEMM_F16:
    return CUDA_R_16F;
  case SLUICE_GEMM_BF16:
    return CUDA_R_16BF;
  default:
    return CUDA_R_32F;
  }
}

static inline size_t sluice_gemm_type_bytes(int32_t type) {
  return type == SLUICE_GEMM_F64 ? 8 : type == SLUICE_GEMM_F32 ? 4 : 2;
}

/// A layout of `rows` x `cols` (column-major, leading dimension `ld`) with
/// `batch` matrices `stride` elements apart.
static inline cublasStatus_t sluice_lt_layout(cublasLtMatrixLayout_t *layout, cudaDataType_t type,
                                              int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                                              int64_t stride) {
  cublasStatus_t st = cublasLtMatrixLayoutCreate(layout, type, (uint64_t)rows, (uint64_t)cols, ld);
  if (st != CUBLAS_STATUS_SUCCESS || batch <= 1)
    return st;
  int32_t count = (int32_t)batch;
  st = cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                        sizeof(count));
  if (st != CUBLAS_STATUS_SUCCESS)
    return st;
  return cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                          &stride, sizeof(stride));
}

/// Makes the descriptors of `g` with `epilogue` fused (the bias pointer is
/// set on the descriptor first: the heuristic reads its alignment) and asks
/// cuBLASLt's heuristic for an algorithm. Returns nonzero on a failed call;
/// `found` says whether an algorithm fits. Called under state->mutex.
static inline int32_t sluice_lt_try(const SluiceRunArgs *args, SluiceCudaState *state,
                                    const char *kernel, const SluiceGemmShape &g,
                                    int32_t epilogueKind, const uint32_t align[4], const void *bias,
                                    size_t workspace, SluiceLtPlan *plan, bool *found) {
  *found = false;
  const cudaDataType_t dt = sluice_gemm_data_type(g.type);
  const bool f64 = g.type == SLUICE_GEMM_F64;
  SLUICE_CUBLAS(kernel,
                cublasLtMatmulDescCreate(&plan->op, f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F,
                                         f64 ? CUDA_R_64F : CUDA_R_32F));
  // cuBLASLt's A slot is our B, its B slot our A (see the file header).
  cublasOperation_t opSlotA = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opSlotB = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  SLUICE_CUBLAS(kernel, cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA,
                                                       &opSlotA, sizeof(opSlotA)));
  SLUICE_CUBLAS(kernel, cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB,
                                                       &opSlotB, sizeof(opSlotB)));
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  switch (epilogueKind) {
  case SLUICE_EPI_BIAS:
    epilogue = CUBLASLT_EPILOGUE_BIAS;
    break;
  case SLUICE_EPI_RELU:
    epilogue = CUBLASLT_EPILOGUE_RELU;
    break;
  case SLUICE_EPI_RELU_BIAS:
    epilogue = CUBLASLT_EPILOGUE_RELU_BIAS;
    break;
  case SLUICE_EPI_GELU:
    epilogue = CUBLASLT_EPILOGUE_GELU;
    break;
  case SLUICE_EPI_GELU_BIAS:
    epilogue = CUBLASLT_EPILOGUE_GELU_BIAS;
    break;
  default:
    break;
  }
  SLUICE_CUBLAS(kernel, cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                       &epilogue, sizeof(epilogue)));
  if (epilogueKind & SLUICE_EPI_BIAS) {
    int32_t biasType = (int32_t)dt;
    int64_t biasStride = 0; // one bias vector for every batch
    SLUICE_CUBLAS(kernel,
                  cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                 &biasType, sizeof(biasType)));
    SLUICE_CUBLAS(kernel,
                  cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE,
                                                 &biasStride, sizeof(biasStride)));
    SLUICE_CUBLAS(kernel, cublasLtMatmulDescSetAttribute(
                              plan->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  }
  // Layouts in cuBLASLt's column-major frame.
  if (g.trans_b)
    SLUICE_CUBLAS(kernel, sluice_lt_layout(&plan->a, dt, g.k, g.n, g.ldb, g.batch, g.stride_b));
  else
    SLUICE_CUBLAS(kernel, sluice_lt_layout(&plan->a, dt, g.n, g.k, g.ldb, g.batch, g.stride_b));
  if (g.trans_a)
    SLUICE_CUBLAS(kernel, sluice_lt_layout(&plan->b, dt, g.m, g.k, g.lda, g.batch, g.stride_a));
  else
    SLUICE_CUBLAS(kernel, sluice_lt_layout(&plan->b, dt, g.k, g.m, g.lda, g.batch, g.stride_a));
  SLUICE_CUBLAS(kernel, sluice_lt_layout(&plan->d, dt, g.n, g.m, g.ldd, g.batch, g.stride_d));
  if (g.has_c)
    SLUICE_CUBLAS(kernel, sluice_lt_layout(&plan->c, dt, g.n, g.m, g.ldc, g.batch, g.stride_c));

  cublasLtMatmulPreference_t pref = nullptr;
  SLUICE_CUBLAS(kernel, cublasLtMatmulPreferenceCreate(&pref));
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, cublasStatus_t (*)(cublasLtMatmulPreference_t)>
      prefGuard(pref, cublasLtMatmulPreferenceDestroy);
  uint64_t maxWorkspace = workspace;
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
  cublasLtMatrixLayout_t cLayout = g.has_c ? plan->c : plan->d;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(state->lt, plan->op, plan->a, plan->b, cLayout,
                                                     plan->d, pref, 8, results, &returned);
  // NOT_SUPPORTED: no algorithm for this configuration (the caller may
  // retry without the fused epilogue).
  if (st == CUBLAS_STATUS_NOT_SUPPORTED)
    return 0;
  SLUICE_CUBLAS(kernel, st);
  for (int i = 0; i < returned; ++i) {
    if (results[i].state == CUBLAS_STATUS_SUCCESS && results[i].workspaceSize <= workspace) {
      plan->algo = results[i].algo;
      plan->workspace = results[i].workspaceSize;
      *found = true;
      return 0;
    }
  }
  return 0;
}

/// Builds the plan of `g`: with its epilogue fused when cuBLASLt has an
/// algorithm for that, else a plain matmul followed by
/// sluice_gemm_epilogue_kernel. Called under state->mutex.
static inline int32_t sluice_lt_plan(const SluiceRunArgs *args, SluiceCudaState *state,
                                     const char *kernel, const SluiceGemmShape &g,
                                     const uint32_t align[4], const void *bias, size_t workspace,
                                     std::unique_ptr<SluiceLtPlan> &plan) {
  bool found = false;
  if (int32_t status = sluice_lt_try(args, state, kernel, g, g.epilogue, align, bias, workspace,
                                     plan.get(), &found))
    return status;
  if (!found && g.epilogue != SLUICE_EPI_NONE) {
    plan.reset(new SluiceLtPlan());
    if (int32_t status = sluice_lt_try(args, state, kernel, g, SLUICE_EPI_NONE, align, nullptr,
                                       workspace, plan.get(), &found))
      return status;
    plan->post = g.epilogue;
  }
  if (found)
    return 0;
  char message[256];
  snprintf(message, sizeof(message),
           "cuBLASLt has no algorithm for the GEMM (type %d, m %lld, n %lld, k %lld, batch %lld, "
           "epilogue %d, workspace %zu bytes)",
           (int)g.type, (long long)g.m, (long long)g.n, (long long)g.k, (long long)g.batch,
           (int)g.epilogue, workspace);
  return sluice_fail(args, kernel, message);
}

/// D(b, i, j) = act(D(b, i, j) + bias(j)): the epilogue of `epilogue` when
/// cuBLASLt could not fuse it (same order as cuBLASLt: bias, then the
/// activation; GELU is the tanh approximation).
template <typename T>
__global__ void __launch_bounds__(256)
    sluice_gemm_epilogue_kernel(T *d, const T *bias, int32_t epilogue, int64_t batch, int64_t m,
                                int64_t n, int64_t ldd, int64_t strideD) {
  const int64_t total = batch * m * n;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t j = e % n, row = e / n;
    const int64_t i = row % m, b = row / m;
    T *p = d + b * strideD + i * ldd + j;
    auto v = sluice_load(*p);
    if (epilogue & SLUICE_EPI_BIAS)
      v += sluice_load(bias[j]);
    if ((epilogue & ~SLUICE_EPI_BIAS) == SLUICE_EPI_RELU)
      v = v > 0 ? v : decltype(v)(0);
    else if ((epilogue & ~SLUICE_EPI_BIAS) == SLUICE_EPI_GELU)
      v = sl_gelu_tanh(v);
    *p = SLUICE_STORE(T, v);
  }
}

/// Enqueues one GEMM `g` on `stream`: D = epilogue(alpha * A B + [C] + [bias]).
/// `workspace` bytes at the start of the state's workspace are its scratch
/// (the bundle declared them, so init allocated at least that much).
static inline int32_t sluice_gemm(const SluiceRunArgs *args, SluiceCudaState *state,
                                  const char *kernel, const SluiceGemmShape &g, const void *a,
                                  const void *b, const void *c, void *d, const void *bias,
                                  double alpha, size_t workspace, cudaStream_t stream) {
  if (g.m <= 0 || g.n <= 0 || g.batch <= 0)
    return 0;
  if (workspace > state->workspaceBytes)
    workspace = state->workspaceBytes;
  const bool hasBias = g.epilogue == SLUICE_EPI_BIAS || g.epilogue == SLUICE_EPI_RELU_BIAS ||
                       g.epilogue == SLUICE_EPI_GELU_BIAS;
  if (hasBias && !bias)
    return sluice_fail(args, kernel, "a bias epilogue without a bias vector");
  if (g.k <= 0) {
    // An empty contraction is an all-zero product; cuBLASLt rejects k = 0.
    return sluice_fail(args, kernel, "GEMM with an empty contraction (k = 0)");
  }
  const uint32_t align[4] = {sluice_alignment(a), sluice_alignment(b),
                             sluice_alignment(g.has_c ? c : d), sluice_alignment(d)};
  char key[320];
  snprintf(key, sizeof(key),
           "lt:%d:%d:%d:%lld:%lld:%lld:%lld:%lld:%lld:%lld:%lld:%lld:%lld:%lld:%lld:%d:%d:"
           "%u:%u:%u:%u:%u:%zu",
           (int)g.type, (int)g.trans_a, (int)g.trans_b, (long long)g.m, (long long)g.n,
           (long long)g.k, (long long)g.lda, (long long)g.ldb, (long long)g.ldc, (long long)g.ldd,
           (long long)g.batch, (long long)g.stride_a, (long long)g.stride_b, (long long)g.stride_c,
           (long long)g.stride_d, (int)g.epilogue, (int)g.has_c, align[0], align[1], align[2],
           align[3], hasBias ? sluice_alignment(bias) : 0u, workspace);
  // One lock over lookup, the bias pointer and the enqueue: plans are shared
  // between kernels of the same problem, and the bias pointer lives on the
  // plan's descriptor.
  std::lock_guard<std::mutex> lock(state->mutex);
  SluiceLtPlan *plan = nullptr;
  auto it = state->algorithms.find(key);
  if (it != state->algorithms.end()) {
    plan = (SluiceLtPlan *)it->second.get();
  } else {
    std::unique_ptr<SluiceLtPlan> fresh(new SluiceLtPlan());
    if (int32_t status = sluice_lt_plan(args, state, kernel, g, align, hasBias ? bias : nullptr,
                                        workspace, fresh))
      return status;
    plan = fresh.get();
    state->algorithms[key] =
        std::shared_ptr<void>(fresh.release(), [](void *p) { delete (SluiceLtPlan *)p; });
  }
  if (hasBias && plan->post == SLUICE_EPI_NONE)
    SLUICE_CUBLAS(kernel, cublasLtMatmulDescSetAttribute(
                              plan->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  const float alpha32 = (float)alpha, beta32 = g.has_c ? 1.0f : 0.0f;
  const double alpha64 = alpha, beta64 = g.has_c ? 1.0 : 0.0;
  const bool f64 = g.type == SLUICE_GEMM_F64;
  const void *alphaPtr = f64 ? (const void *)&alpha64 : (const void *)&alpha32;
  const void *betaPtr = f64 ? (const void *)&beta64 : (const void *)&beta32;
  // Slot A = our B, slot B = our A.
  SLUICE_CUBLAS(kernel, cublasLtMatmul(
                            state->lt, plan->op, alphaPtr, b, plan->a, a, plan->b, betaPtr,
                            g.has_c ? c : d, g.has_c ? plan->c : plan->d, d, plan->d, &plan->algo,
                            plan->workspace ? state->workspace : nullptr, plan->workspace, stream));
  if (plan->post != SLUICE_EPI_NONE) {
    const int64_t total = g.batch * g.m * g.n;
    switch (g.type) {
    case SLUICE_GEMM_F64:
      sluice_gemm_epilogue_kernel<double><<<sluice_grid(total, 256), 256, 0, stream>>>(
          (double *)d, (const double *)bias, plan->post, g.batch, g.m, g.n, g.ldd, g.stride_d);
      break;
    case SLUICE_GEMM_F16:
      sluice_gemm_epilogue_kernel<sluice_f16><<<sluice_grid(total, 256), 256, 0, stream>>>(
          (sluice_f16 *)d, (const sluice_f16 *)bias, plan->post, g.batch, g.m, g.n, g.ldd,
          g.stride_d);
      break;
    case SLUICE_GEMM_BF16:
      sluice_gemm_epilogue_kernel<sluice_bf16><<<sluice_grid(total, 256), 256, 0, stream>>>(
          (sluice_bf16 *)d, (const sluice_bf16 *)bias, plan->post, g.batch, g.m, g.n, g.ldd,
          g.stride_d);
      break;
    default:
      sluice_gemm_epilogue_kernel<float><<<sluice_grid(total, 256), 256, 0, stream>>>(
          (float *)d, (const float *)bias, plan->post, g.batch, g.m, g.n, g.ldd, g.stride_d);
      break;
    }
    SLUICE_LAUNCHED(kernel);
  }
  return 0;
}

#endif // SLUICE_GEN_CUDA_BLAS_H
