//===- sluice_gen/cuda_sparse.cuh - 2:4 GEMMs through cuSPARSELt -*- CUDA -*-===//
//
// The cuda target's 2:4 GEMMs (docs/pruning.md: a `sluice.matmul` the compress
// phase marked `sluice.sparsity_2_4`, emitted by codegen/cuda/groups/Gemm.cpp
// as sluice_sparse_gemm instead of sluice_gemm). cuSPARSELt runs them on the
// sparse tensor cores with the constant weight as the structured operand,
// compressed once (cusparseLtSpMMACompress) on the first run of a context.
//
// cuSPARSELt is optional twice over:
//   - at compile time, the generated source defines SLUICE_WITH_CUSPARSELT
//     and SLUICE_CUSPARSELT_HEADER (the absolute path of cusparseLt.h, from
//     the nvidia-cusparselt-cu13 pip package) when the compiler found the
//     header; without it every 2:4 GEMM is sluice_gemm (dense cuBLASLt) and
//     the compile said so in a remark;
//   - at run time the library is dlopen'ed (never linked): $SLUICE_CUSPARSELT_LIB,
//     then libcusparseLt.so.0 through the dynamic loader (the bundle's
//     rpath, LD_LIBRARY_PATH, the system), then the pip package's lib folder
//     the compile recorded (SLUICE_CUSPARSELT_LIBDIR). When none loads, the
//     GEMMs run dense and one line on stderr says why.
//
// Faster or not: on the first (eager, uncaptured) run the sparse and the
// dense GEMM of each problem are timed on the actual shape and pointers
// (a few repetitions each, CUDA events) and the faster is kept for every
// later run (and for the captured graph); SLUICE_SPARSE_LOG=1 prints each
// decision. A weight cuSPARSELt's own check does not find 2:4, a shape or
// alignment it rejects, or a workspace beyond the bundle's also keeps the
// GEMM dense.
//
// Layout (as cuda_blas.h, whose file header explains the transposition):
// D^T (N x M, column-major) = W^T (N x K) * A^T (K x M). The structured
// operand is cuSPARSELt's A = our weight W [K, N] read column-major (N x K,
// leading dimension ldb): each of its rows (an output column n) is 2:4
// along K, the pattern sluice-sparsify wrote. Only f16 and bf16 (fp32
// accumulation): cuSPARSELt's f32 GEMMs compute in TF32, which the cuda
// target never uses for f32 results (cuda_blas.h, "Precision"). The bias
// and activation epilogues run in sluice_gemm_epilogue_kernel after the
// matmul (alpha and the residual C, beta = 1, in cuSPARSELt itself).
//
// The plain C++ parts are headers of their own: the 2:4 check, which the
// compiler shares, in sluice_gen/layout/sparse_2_4.h, and the dlopen
// search in sluice_gen/cuda_sparse_load.h (both unit-tested on the host).
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CUDA_SPARSE_CUH
#define SLUICE_GEN_CUDA_SPARSE_CUH

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <string>
#include <vector>

#include "sluice_gen/cuda_sparse_load.h"
#include "sluice_gen/layout/sparse_2_4.h"
#include "sluice_gen/cuda_blas.h"

#if SLUICE_WITH_CUSPARSELT
#include SLUICE_CUSPARSELT_HEADER
#endif

#ifndef SLUICE_CUSPARSELT_LIBDIR
#define SLUICE_CUSPARSELT_LIBDIR ""
#endif

static inline bool sluice_sparse_log() {
  const char *v = getenv("SLUICE_SPARSE_LOG");
  return v && *v && strcmp(v, "0") != 0;
}

#if SLUICE_WITH_CUSPARSELT

// The cuSPARSELt entry points the bundle calls, resolved by dlsym.
#define SLUICE_CUSPARSELT_SYMBOLS(X)                                           \
  X(cusparseLtInit)                                                            \
  X(cusparseLtDestroy)                                                         \
  X(cusparseLtDenseDescriptorInit)                                             \
  X(cusparseLtStructuredDescriptorInit)                                        \
  X(cusparseLtMatDescriptorDestroy)                                            \
  X(cusparseLtMatmulDescriptorInit)                                            \
  X(cusparseLtMatmulAlgSelectionInit)                                          \
  X(cusparseLtMatmulAlgSelectionDestroy)                                       \
  X(cusparseLtMatmulPlanInit)                                                  \
  X(cusparseLtMatmulPlanDestroy)                                               \
  X(cusparseLtMatmulGetWorkspace)                                              \
  X(cusparseLtSpMMAPruneCheck)                                                 \
  X(cusparseLtSpMMACompressedSize)                                             \
  X(cusparseLtSpMMACompress)                                                   \
  X(cusparseLtMatmul)

struct SluiceCusparseLt {
#define SLUICE_LT_MEMBER(name) decltype(&::name) name = nullptr;
  SLUICE_CUSPARSELT_SYMBOLS(SLUICE_LT_MEMBER)
#undef SLUICE_LT_MEMBER
  void *library = nullptr;
  std::string why; ///< why it did not load
};

/// The process's cuSPARSELt (loaded once); null when it cannot be loaded,
/// after one line on stderr.
static inline const SluiceCusparseLt *sluice_cusparselt() {
  static SluiceCusparseLt *api = [] {
    SluiceCusparseLt *lt = new SluiceCusparseLt();
    static const char *const names[] = {
#define SLUICE_LT_NAME(name) #name,
        SLUICE_CUSPARSELT_SYMBOLS(SLUICE_LT_NAME)
#undef SLUICE_LT_NAME
    };
    const int count = (int)(sizeof(names) / sizeof(names[0]));
    void *fns[sizeof(names) / sizeof(names[0])] = {};
    lt->library = sluice_dlopen_first(sluice_cusparselt_paths(SLUICE_CUSPARSELT_LIBDIR), names,
                                      count, fns, lt->why);
    if (!lt->library) {
      fprintf(stderr,
              "sluice: cuSPARSELt is not available (%s): 2:4 GEMMs run dense (cuBLASLt); "
              "install the nvidia-cusparselt-cu13 package or set SLUICE_CUSPARSELT_LIB\n",
              lt->why.c_str());
      return lt;
    }
    int i = 0;
#define SLUICE_LT_ASSIGN(name) lt->name = (decltype(lt->name))fns[i++];
    SLUICE_CUSPARSELT_SYMBOLS(SLUICE_LT_ASSIGN)
#undef SLUICE_LT_ASSIGN
    return lt;
  }();
  return api->library ? api : nullptr;
}

/// One context's cuSPARSELt handle (kept in SluiceCudaState::algorithms).
struct SluiceSparseHandle {
  const SluiceCusparseLt *api = nullptr;
  cusparseLtHandle_t handle;
  bool ok = false;
  ~SluiceSparseHandle() {
    if (ok)
      api->cusparseLtDestroy(&handle);
  }
};

/// One 2:4 GEMM problem: its cuSPARSELt plan and compressed weight, and
/// whether it beat the dense GEMM.
struct SluiceSparsePlan {
  std::shared_ptr<void> handleOwner; ///< keeps the context's handle alive
  SluiceSparseHandle *h = nullptr;
  cusparseLtMatDescriptor_t sparse, dense, out;
  cusparseLtMatmulDescriptor_t matmul;
  cusparseLtMatmulAlgSelection_t selection;
  cusparseLtMatmulPlan_t plan;
  int made = 0; ///< how many of sparse, dense, out, selection, plan exist
  void *compressed = nullptr;
  size_t workspace = 0;
  bool useSparse = false;
  float sparseMs = 0, denseMs = 0;
  std::string why; ///< why it stays dense
  ~SluiceSparsePlan() {
    const SluiceCusparseLt *api = h ? h->api : nullptr;
    if (api && made >= 5)
      api->cusparseLtMatmulPlanDestroy(&plan);
    if (api && made >= 4)
      api->cusparseLtMatmulAlgSelectionDestroy(&selection);
    if (api && made >= 3)
      api->cusparseLtMatDescriptorDestroy(&out);
    if (api && made >= 2)
      api->cusparseLtMatDescriptorDestroy(&dense);
    if (api && made >= 1)
      api->cusparseLtMatDescriptorDestroy(&sparse);
    if (compressed)
      cudaFree(compressed);
  }
};

/// The sparse matmul of `plan` (no epilogue: the caller runs it).
static inline cusparseStatus_t sluice_sparse_matmul(SluiceSparsePlan *p, const SluiceGemmShape &g,
                                                    const void *a, const void *c, void *d,
                                                    double alpha, void *workspace,
                                                    cudaStream_t stream) {
  const float alpha32 = (float)alpha, beta32 = g.has_c ? 1.0f : 0.0f;
  cudaStream_t streams[1] = {stream};
  // Slot A = our (compressed) B, slot B = our A.
  return p->h->api->cusparseLtMatmul(&p->h->handle, &p->plan, &alpha32, p->compressed, a, &beta32,
                                     g.has_c ? c : d, d, workspace, streams, 1);
}

/// Makes the plan of `g` (B the 2:4 weight at `b`), compresses the weight
/// and times sparse against dense; `plan->why` says why it stays dense.
/// Nonzero only for a failed CUDA call (the run fails).
static inline int32_t sluice_sparse_prepare(const SluiceRunArgs *args, SluiceCudaState *state,
                                            const char *kernel, const SluiceGemmShape &g,
                                            const void *a, const void *b, const void *c, void *d,
                                            const void *bias, double alpha, size_t workspace,
                                            cudaStream_t stream, SluiceSparsePlan *p) {
  const SluiceCusparseLt *api = sluice_cusparselt();
  if (!api) {
    p->why = "cuSPARSELt is not available";
    return 0;
  }
  if (g.type != SLUICE_GEMM_F16 && g.type != SLUICE_GEMM_BF16) {
    p->why = "not f16/bf16 (cuSPARSELt's f32 is TF32)";
    return 0;
  }
  if (g.batch != 1 || g.trans_b) {
    p->why = "a batched or transposed weight";
    return 0;
  }
  if (g.has_c && c == d) {
    p->why = "the residual is the result (timing would accumulate into it)";
    return 0;
  }
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    auto it = state->algorithms.find("cusparselt:handle");
    if (it == state->algorithms.end()) {
      SluiceSparseHandle *h = new SluiceSparseHandle();
      h->api = api;
      h->ok = api->cusparseLtInit(&h->handle) == CUSPARSE_STATUS_SUCCESS;
      it = state->algorithms
               .emplace("cusparselt:handle",
                        std::shared_ptr<void>(h, [](void *q) { delete (SluiceSparseHandle *)q; }))
               .first;
    }
    p->handleOwner = it->second;
    p->h = (SluiceSparseHandle *)it->second.get();
  }
  if (!p->h->ok) {
    p->why = "cusparseLtInit failed (no sparse tensor cores?)";
    return 0;
  }
  const cusparseLtHandle_t *handle = &p->h->handle;
  const cudaDataType_t dt = sluice_gemm_data_type(g.type);
  const uint32_t align = 16;
#define SLUICE_LT_TRY(call, what)                                              \
  do {                                                                         \
    if ((call) != CUSPARSE_STATUS_SUCCESS) {                                   \
      p->why = what;                                                           \
      return 0;                                                                \
    }                                                                          \
  } while (0)
  // cuSPARSELt's A: our B read column-major, N x K; its B: our A, K x M
  // (M x K transposed when A is stored K x M); C and D: N x M.
  SLUICE_LT_TRY(api->cusparseLtStructuredDescriptorInit(handle, &p->sparse, g.n, g.k, g.ldb, align,
                                                        dt, CUSPARSE_ORDER_COL,
                                                        CUSPARSELT_SPARSITY_50_PERCENT),
                "cuSPARSELt rejects the weight's shape or leading dimension");
  p->made = 1;
  if (g.trans_a)
    SLUICE_LT_TRY(api->cusparseLtDenseDescriptorInit(handle, &p->dense, g.m, g.k, g.lda, align,
                                                     dt, CUSPARSE_ORDER_COL),
                  "cuSPARSELt rejects the activation's shape or leading dimension");
  else
    SLUICE_LT_TRY(api->cusparseLtDenseDescriptorInit(handle, &p->dense, g.k, g.m, g.lda, align,
                                                     dt, CUSPARSE_ORDER_COL),
                  "cuSPARSELt rejects the activation's shape or leading dimension");
  p->made = 2;
  SLUICE_LT_TRY(api->cusparseLtDenseDescriptorInit(handle, &p->out, g.n, g.m, g.ldd, align, dt,
                                                   CUSPARSE_ORDER_COL),
                "cuSPARSELt rejects the result's shape or leading dimension");
  p->made = 3;
  if (g.has_c && g.ldc != g.ldd) {
    p->why = "a residual with another leading dimension than the result";
    return 0;
  }
  SLUICE_LT_TRY(api->cusparseLtMatmulDescriptorInit(
                    handle, &p->matmul, CUSPARSE_OPERATION_NON_TRANSPOSE,
                    g.trans_a ? CUSPARSE_OPERATION_TRANSPOSE : CUSPARSE_OPERATION_NON_TRANSPOSE,
                    &p->sparse, &p->dense, &p->out, &p->out, CUSPARSE_COMPUTE_32F),
                "cuSPARSELt has no matmul of these types and layouts");
  SLUICE_LT_TRY(api->cusparseLtMatmulAlgSelectionInit(handle, &p->selection, &p->matmul,
                                                      CUSPARSELT_MATMUL_ALG_DEFAULT),
                "cuSPARSELt has no algorithm for the matmul");
  p->made = 4;
  SLUICE_LT_TRY(api->cusparseLtMatmulPlanInit(handle, &p->plan, &p->matmul, &p->selection),
                "cuSPARSELt cannot plan the matmul");
  p->made = 5;
  SLUICE_LT_TRY(api->cusparseLtMatmulGetWorkspace(handle, &p->plan, &p->workspace),
                "cuSPARSELt's workspace query failed");
  if (p->workspace > workspace) {
    p->why = "cuSPARSELt needs more workspace than the bundle declared";
    return 0;
  }
  // The weight as cuSPARSELt sees it must be 2:4 (it is what the compress
  // phase wrote; a mismatch in layout would show here, not as wrong sums).
  int *valid = nullptr;
  SLUICE_CUDA(kernel, cudaMalloc((void **)&valid, sizeof(int)));
  cusparseStatus_t checked = api->cusparseLtSpMMAPruneCheck(handle, &p->matmul, b, valid, stream);
  int isValid = 1;
  SLUICE_CUDA(kernel, cudaMemcpyAsync(&isValid, valid, sizeof(int), cudaMemcpyDeviceToHost, stream));
  SLUICE_CUDA(kernel, cudaStreamSynchronize(stream));
  cudaFree(valid);
  if (checked != CUSPARSE_STATUS_SUCCESS || isValid != 0) {
    p->why = "cuSPARSELt does not find the weight 2:4";
    return 0;
  }
  size_t compressedBytes = 0, bufferBytes = 0;
  SLUICE_LT_TRY(
      api->cusparseLtSpMMACompressedSize(handle, &p->plan, &compressedBytes, &bufferBytes),
      "cuSPARSELt's compressed size query failed");
  void *buffer = nullptr;
  SLUICE_CUDA(kernel, cudaMalloc(&p->compressed, compressedBytes));
  if (bufferBytes)
    SLUICE_CUDA(kernel, cudaMalloc(&buffer, bufferBytes));
  cusparseStatus_t compressed =
      api->cusparseLtSpMMACompress(handle, &p->plan, b, p->compressed, buffer, stream);
  SLUICE_CUDA(kernel, cudaStreamSynchronize(stream));
  if (buffer)
    cudaFree(buffer);
  if (compressed != CUSPARSE_STATUS_SUCCESS) {
    p->why = "cusparseLtSpMMACompress failed";
    return 0;
  }
#undef SLUICE_LT_TRY

  // Sparse against dense on this shape: one warm-up each, then the mean of
  // a few runs (C is never D, so repeating a GEMM changes nothing).
  constexpr int kRepeats = 10;
  cudaEvent_t start = nullptr, stop = nullptr;
  SLUICE_CUDA(kernel, cudaEventCreate(&start));
  SLUICE_CUDA(kernel, cudaEventCreate(&stop));
  float ms[2] = {0, 0};
  int32_t status = 0;
  for (int variant = 0; variant < 2 && !status; ++variant) {
    for (int r = 0; r <= kRepeats && !status; ++r) {
      if (r == 1 && cudaEventRecord(start, stream) != cudaSuccess)
        status = sluice_fail(args, kernel, "cudaEventRecord failed");
      if (variant == 0) {
        if (sluice_sparse_matmul(p, g, a, c, d, alpha, state->workspace, stream) !=
            CUSPARSE_STATUS_SUCCESS) {
          p->why = "cusparseLtMatmul failed";
          break;
        }
      } else {
        status = sluice_gemm(args, state, kernel, g, a, b, c, d, bias, alpha, workspace, stream);
      }
    }
    if (!p->why.empty())
      break;
    if (!status && cudaEventRecord(stop, stream) == cudaSuccess &&
        cudaEventSynchronize(stop) == cudaSuccess)
      cudaEventElapsedTime(&ms[variant], start, stop);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (status)
    return status;
  if (!p->why.empty())
    return 0;
  p->sparseMs = ms[0] / kRepeats;
  p->denseMs = ms[1] / kRepeats;
  p->useSparse = p->sparseMs < p->denseMs;
  if (!p->useSparse)
    p->why = "not faster than dense on this shape";
  return 0;
}

#endif // SLUICE_WITH_CUSPARSELT

/// A 2:4 GEMM: as sluice_gemm (same arguments, B the constant 2:4 weight),
/// through cuSPARSELt when it is available and faster (file header), else
/// sluice_gemm itself.
static inline int32_t sluice_sparse_gemm(const SluiceRunArgs *args, SluiceCudaState *state,
                                         const char *kernel, const SluiceGemmShape &g,
                                         const void *a, const void *b, const void *c, void *d,
                                         const void *bias, double alpha, size_t workspace,
                                         cudaStream_t stream) {
#if SLUICE_WITH_CUSPARSELT
  if (workspace > state->workspaceBytes)
    workspace = state->workspaceBytes;
  // One plan per step and weight: activation and result pointers may change
  // between runs (inputs, outputs), the plan does not depend on them.
  char key[160];
  snprintf(key, sizeof(key), "sparse:%s:%p", kernel, b);
  // The descriptors promise 16-byte aligned operands; a view that is not
  // runs dense this time.
  const bool aligned = ((uintptr_t)a % 16) == 0 && ((uintptr_t)d % 16) == 0 &&
                       (!g.has_c || ((uintptr_t)c % 16) == 0);
  if (!aligned)
    return sluice_gemm(args, state, kernel, g, a, b, c, d, bias, alpha, workspace, stream);
  SluiceSparsePlan *plan = nullptr;
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    auto it = state->algorithms.find(key);
    if (it != state->algorithms.end())
      plan = (SluiceSparsePlan *)it->second.get();
  }
  if (!plan) {
    // Decided on an eager run only: timing synchronizes the stream, which a
    // capture forbids (the runtime's first run is eager).
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess ||
        capture != cudaStreamCaptureStatusNone)
      return sluice_gemm(args, state, kernel, g, a, b, c, d, bias, alpha, workspace, stream);
    std::unique_ptr<SluiceSparsePlan> fresh(new SluiceSparsePlan());
    if (int32_t status = sluice_sparse_prepare(args, state, kernel, g, a, b, c, d, bias, alpha,
                                               workspace, stream, fresh.get()))
      return status;
    if (sluice_sparse_log())
      fprintf(stderr, "sluice: %s: 2:4 GEMM m %lld n %lld k %lld: %s (sparse %.4f ms, dense %.4f ms)\n",
              kernel, (long long)g.m, (long long)g.n, (long long)g.k,
              fresh->useSparse ? "cuSPARSELt" : ("dense: " + fresh->why).c_str(),
              fresh->sparseMs, fresh->denseMs);
    plan = fresh.get();
    std::lock_guard<std::mutex> lock(state->mutex);
    state->algorithms[key] =
        std::shared_ptr<void>(fresh.release(), [](void *q) { delete (SluiceSparsePlan *)q; });
  }
  if (!plan->useSparse)
    return sluice_gemm(args, state, kernel, g, a, b, c, d, bias, alpha, workspace, stream);
  if (sluice_sparse_matmul(plan, g, a, c, d, alpha, state->workspace, stream) !=
      CUSPARSE_STATUS_SUCCESS)
    return sluice_fail(args, kernel, "cusparseLtMatmul failed");
  if (g.epilogue != SLUICE_EPI_NONE) {
    const int64_t total = g.m * g.n;
    if (g.type == SLUICE_GEMM_F16)
      sluice_gemm_epilogue_kernel<sluice_f16><<<sluice_grid(total, 256), 256, 0, stream>>>(
          (sluice_f16 *)d, (const sluice_f16 *)bias, g.epilogue, 1, g.m, g.n, g.ldd, 0);
    else
      sluice_gemm_epilogue_kernel<sluice_bf16><<<sluice_grid(total, 256), 256, 0, stream>>>(
          (sluice_bf16 *)d, (const sluice_bf16 *)bias, g.epilogue, 1, g.m, g.n, g.ldd, 0);
    SLUICE_LAUNCHED(kernel);
  }
  return 0;
#else
  return sluice_gemm(args, state, kernel, g, a, b, c, d, bias, alpha, workspace, stream);
#endif
}

#endif // SLUICE_GEN_CUDA_SPARSE_CUH
