//===- sluice_gen/cuda_quant_fp8.cuh - fp8 GEMM of cuda bundles -*- CUDA -*-===//
//
// The fp8 (E4M3) GEMM of --quantize=fp8 on the cuda target (Form F8 of
// docs/quantization.md; codegen/cuda/groups/QuantGemm.cpp emits the calls):
// cuBLASLt on sm_89 and newer with per-tensor scales passed as device
// pointers,
//   D = [dScale *] (aScale * bScale * sum_k A(i, k) B(k, j) + bias(j))
//   amax = max |aScale * bScale * A B + bias|      (before dScale)
// A is E4M3 [M, K] row-major, B E4M3 stored [N, K] with K contiguous (the
// weight transposed by the compiler: cuBLASLt's fp8 kernels take only the
// "TN" form, as IMMA), D f32, f16, bf16 or E4M3 [M, N]. The scales are
// device pointers so that a scale computed on the device (the previous
// GEMM's amax, delayed scaling) needs no copy back; the amax feeds the next
// quantization's scale. Accumulation is f32 with cuBLASLt's periodic
// promotion (FAST_ACCUM stays off: its drift grows with K); between
// promotions Hopper's fp8 tensor cores keep about 14 mantissa bits, so an
// f32 result is within about 1e-4 relative of exact f32 sums (an H200
// measured 6.9e-5 at K = 64).
//
// Types as cuBLAS documents for fp8: C is D's type except for an E4M3 D,
// whose C (unread, beta = 0) is bf16; the bias vector is D's type for f16
// and bf16 outputs and bf16 for f32 and E4M3 outputs. When cuBLASLt has no
// algorithm with the bias fused, a non-fp8 output gets it from a small
// kernel after the matmul; the amax of a non-fp8 output is always that
// kernel's (cuBLASLt computes amax only for fp8 outputs). Shapes: K and N
// multiples of 16 and 16-byte aligned pointers are what the fp8 kernels
// need; anything else fails with cuBLASLt's "no algorithm", since there is
// no CUDA-core fp8 fallback. The scale and amax pointers must be 16-byte
// aligned too: on an H100 (cuBLASLt 13.1) a B scale 4 bytes after the A
// scale makes cublasLtMatmul answer NOT_SUPPORTED although the heuristic
// offered algorithms. Scalars that are not get staged through the last 256
// bytes of the state's workspace (a device-to-device copy on the stream, so
// the GEMM still captures into a graph).
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CUDA_QUANT_FP8_CUH
#define SLUICE_GEN_CUDA_QUANT_FP8_CUH

#include "sluice_gen/cuda_quant.cuh"

#include <cuda_fp8.h>

// SluiceFp8Out and SluiceFp8GemmShape: sluice_gen/cuda_quant_kernels.cuh
// (the compiler reads them too).

static inline cudaDataType_t sluice_fp8_out_type(int32_t out) {
  switch (out) {
  case SLUICE_FP8_OUT_F16:
    return CUDA_R_16F;
  case SLUICE_FP8_OUT_BF16:
    return CUDA_R_16BF;
  case SLUICE_FP8_OUT_E4M3:
    return CUDA_R_8F_E4M3;
  default:
    return CUDA_R_32F;
  }
}

/// The bias vector's element type for output `out`.
static inline cudaDataType_t sluice_fp8_bias_type(int32_t out) {
  return out == SLUICE_FP8_OUT_F16 ? CUDA_R_16F : CUDA_R_16BF;
}

/// Whether this device runs fp8 matmuls (compute capability 8.9 or newer).
static inline bool sluice_fp8_supported(int device) {
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess)
    return false;
  return major > 8 || (major == 8 && minor >= 9);
}

/// D(i, j) += bias(j) (bias of type TB), the bias when cuBLASLt did not fuse it.
template <typename T, typename TB>
__global__ void __launch_bounds__(256)
    sluice_fp8_bias_kernel(T *d, const TB *bias, int64_t m, int64_t n, int64_t ldd) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < m * n; e += stride) {
    T *p = d + (e / n) * ldd + e % n;
    *p = SLUICE_STORE(T, sluice_quant_load(*p) + sluice_quant_load(bias[e % n]));
  }
}

/// *amax = max |D| (amax zeroed first; NaN wins: its bits order above
/// every finite value's and infinity's).
template <typename T>
__global__ void __launch_bounds__(256)
    sluice_fp8_amax_kernel(const T *d, int64_t m, int64_t n, int64_t ldd, float *amax) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  unsigned peak = 0;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < m * n; e += stride) {
    const unsigned bits = __float_as_uint(fabsf(sluice_quant_load(d[(e / n) * ldd + e % n])));
    peak = bits > peak ? bits : peak;
  }
  for (int lanes = 16; lanes > 0; lanes /= 2) {
    const unsigned other = __shfl_xor_sync(0xffffffffu, peak, lanes);
    peak = other > peak ? other : peak;
  }
  if ((threadIdx.x & 31) == 0)
    atomicMax((unsigned *)amax, peak);
}

template <typename T>
static inline int32_t sluice_fp8_post(const SluiceRunArgs *args, const char *kernel,
                                      const SluiceFp8GemmShape &g, T *d, const void *bias,
                                      float *amax, cudaStream_t stream) {
  const int64_t total = g.m * g.n;
  if (bias) {
    if (g.out == SLUICE_FP8_OUT_F16)
      sluice_fp8_bias_kernel<T, sluice_f16><<<sluice_grid(total, 256, 4), 256, 0, stream>>>(
          d, (const sluice_f16 *)bias, g.m, g.n, g.ldd);
    else
      sluice_fp8_bias_kernel<T, sluice_bf16><<<sluice_grid(total, 256, 4), 256, 0, stream>>>(
          d, (const sluice_bf16 *)bias, g.m, g.n, g.ldd);
    SLUICE_LAUNCHED(kernel);
  }
  if (amax) {
    SLUICE_CUDA(kernel, cudaMemsetAsync(amax, 0, sizeof(float), stream));
    sluice_fp8_amax_kernel<T>
        <<<sluice_grid(total, 256, 8), 256, 0, stream>>>(d, g.m, g.n, g.ldd, amax);
    SLUICE_LAUNCHED(kernel);
  }
  return 0;
}

/// Workspace bytes a bundle declares for sluice_fp8_gemm (cuBLASLt's part).
static inline int64_t sluice_fp8_gemm_workspace() { return SLUICE_QUANT_LT_WORKSPACE; }

/// The cuBLASLt call of `g` (see the file header). `slots`: 64 bytes of
/// 16-byte aligned device memory where scalars that are not aligned are
/// staged; `lt`, `ltBytes`: cuBLASLt's workspace. *ran is false when
/// cuBLASLt has no fp8 algorithm for it (nothing enqueued); *postBias true
/// when the bias was left to the caller (no algorithm with it fused).
static inline int32_t sluice_fp8_lt(const SluiceRunArgs *args, SluiceCudaState *state,
                                    const char *kernel, const SluiceFp8GemmShape &g,
                                    const void *a, const void *b, void *d, const void *bias,
                                    const float *aScale, const float *bScale,
                                    const float *dScale, float *amax, float *slots, void *lt,
                                    size_t ltBytes, bool *ran, bool *postBias,
                                    cudaStream_t stream) {
  *ran = false;
  *postBias = false;
  const bool fp8Out = g.out == SLUICE_FP8_OUT_E4M3;
  float *amaxOut = amax;
  const auto misaligned = [](const void *p) { return p && ((uintptr_t)p % 16) != 0; };
  const float **scalars[3] = {&aScale, &bScale, &dScale};
  for (int i = 0; i < 3; ++i) {
    if (misaligned(*scalars[i])) {
      SLUICE_CUDA(kernel, cudaMemcpyAsync(slots + 4 * i, *scalars[i], sizeof(float),
                                          cudaMemcpyDeviceToDevice, stream));
      *scalars[i] = slots + 4 * i;
    }
  }
  if (fp8Out && misaligned(amax))
    amax = slots + 12;
  SluiceQuantLtProblem p;
  memset(&p, 0, sizeof(p));
  p.aType = p.bType = CUDA_R_8F_E4M3;
  p.dType = sluice_fp8_out_type(g.out);
  p.cType = fp8Out ? CUDA_R_16BF : p.dType;
  p.scaleType = CUDA_R_32F;
  p.biasType = sluice_fp8_bias_type(g.out);
  p.compute = CUBLAS_COMPUTE_32F;
  p.bTransposed = 1;
  p.m = g.m;
  p.n = g.n;
  p.k = g.k;
  p.lda = g.lda;
  p.ldb = g.ldb;
  p.ldd = g.ldd;
  p.batch = 1;
  p.bias = g.hasBias;
  p.fp8Scales = 1;
  p.dScale = fp8Out && dScale;
  p.amax = fp8Out && amax;
  SluiceQuantLtPointers ptr;
  ptr.bias = bias;
  ptr.aScale = aScale;
  ptr.bScale = bScale;
  ptr.dScale = dScale;
  ptr.amax = amax;
  SluiceQuantLtPlan *plan = nullptr;
  if (int32_t status = sluice_quant_lt_find(args, state, kernel, p, a, b, d, ptr, ltBytes, &plan))
    return status;
  if (!plan && g.hasBias && !fp8Out) {
    // No algorithm with the bias fused: the plain product, then the bias kernel.
    p.bias = 0;
    if (int32_t status = sluice_quant_lt_find(args, state, kernel, p, a, b, d, ptr, ltBytes, &plan))
      return status;
    *postBias = plan != nullptr;
  }
  if (!plan)
    return 0;
  if (int32_t status = sluice_quant_lt_enqueue(args, state, kernel, p, plan, a, b, d, ptr, lt, stream))
    return status;
  if (amax != amaxOut)
    SLUICE_CUDA(kernel, cudaMemcpyAsync(amaxOut, amax, sizeof(float), cudaMemcpyDeviceToDevice,
                                        stream));
  *ran = true;
  return 0;
}

/// Enqueues the fp8 GEMM `g` (see the file header). aScale and bScale are
/// device f32 scalars (required); dScale (E4M3 outputs only, may be null:
/// 1) and amax (may be null) too. `workspace`: bytes of the state's
/// workspace cuBLASLt may use (the last 256 bytes of the state's workspace
/// stage scalars that are not 16-byte aligned).
static inline int32_t sluice_fp8_gemm(const SluiceRunArgs *args, SluiceCudaState *state,
                                      const char *kernel, const SluiceFp8GemmShape &g,
                                      const void *a, const void *b, void *d, const void *bias,
                                      const float *aScale, const float *bScale, const float *dScale,
                                      float *amax, size_t workspace, cudaStream_t stream) {
  if (g.m <= 0 || g.n <= 0)
    return 0;
  if (g.k <= 0)
    return sluice_fail(args, kernel, "fp8 GEMM with an empty contraction (k = 0)");
  if (!aScale || !bScale)
    return sluice_fail(args, kernel, "fp8 GEMM without its A and B scales");
  if (g.hasBias && !bias)
    return sluice_fail(args, kernel, "fp8 GEMM with a bias epilogue but no bias vector");
  int device = 0;
  SLUICE_CUDA(kernel, cudaGetDevice(&device));
  if (!sluice_fp8_supported(device))
    return sluice_fail(args, kernel,
                       "fp8 GEMMs need a GPU of compute capability 8.9 or newer (Ada, Hopper)");
  if (!state->workspace || state->workspaceBytes < 512)
    return sluice_fail(args, kernel, "fp8 GEMM without a workspace");
  const uintptr_t end = (uintptr_t)state->workspace + state->workspaceBytes;
  float *slots = (float *)((end - 256) & ~(uintptr_t)255);
  const size_t usable = (size_t)((uintptr_t)slots - (uintptr_t)state->workspace);
  if (workspace > usable)
    workspace = usable;
  bool ran = false, postBias = false;
  if (int32_t status = sluice_fp8_lt(args, state, kernel, g, a, b, d, bias, aScale, bScale, dScale,
                                     amax, slots, state->workspace, workspace, &ran, &postBias,
                                     stream))
    return status;
  if (!ran) {
    char message[320];
    snprintf(message, sizeof(message),
             "cuBLASLt has no fp8 algorithm for m %lld, n %lld, k %lld (lda %lld, ldb %lld, ldd "
             "%lld, output %d, bias %d): fp8 needs K and N multiples of 16 and 16-byte aligned "
             "operands",
             (long long)g.m, (long long)g.n, (long long)g.k, (long long)g.lda, (long long)g.ldb,
             (long long)g.ldd, (int)g.out, (int)g.hasBias);
    return sluice_fail(args, kernel, message);
  }
  if (g.out == SLUICE_FP8_OUT_E4M3)
    return 0;
  const void *lateBias = postBias ? bias : nullptr;
  switch (g.out) {
  case SLUICE_FP8_OUT_F16:
    return sluice_fp8_post(args, kernel, g, (sluice_f16 *)d, lateBias, amax, stream);
  case SLUICE_FP8_OUT_BF16:
    return sluice_fp8_post(args, kernel, g, (sluice_bf16 *)d, lateBias, amax, stream);
  default:
    return sluice_fp8_post(args, kernel, g, (float *)d, lateBias, amax, stream);
  }
}

//===----------------------------------------------------------------------===//
// Form F8 of compiled bundles: the fp8 GEMM with a generated epilogue
//===----------------------------------------------------------------------===//

/// out[r * cols + c] = scale * q[r * ld + c] (E4M3 to f32), rows x cols.
__global__ void __launch_bounds__(256)
    sluice_fp8_dequant_kernel(const uint8_t *q, int64_t rows, int64_t cols, int64_t ld,
                              const float *scale, float *out) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  const float s = *scale;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < rows * cols; e += stride)
    out[e] = sluice_load(sluice_f8e4m3{q[(e / cols) * ld + e % cols]}) * s;
}

/// The fp8 GEMM of a Form F8 group: y = aScale * bScale * sum_k A(i, k)
/// B(k, j) in f32, then epi(i, j, y) for every output (the group's
/// epilogue). A is E4M3 [M, K] (row stride lda); B is E4M3 [N, K] (bNK,
/// row stride ldb: the compiler's stored layout) or [K, N]. cuBLASLt's fp8
/// GEMM where the GPU has one (sm_89+) and B is [N, K]; otherwise, or when
/// cuBLASLt has no fp8 algorithm for the shape (K or N not a multiple of
/// 16), both operands are dequantized into the workspace and multiplied in
/// f32 (the same sums up to their order). g.out must be F32, g.hasBias 0
/// (the bias is in the epilogue).
template <typename Epi>
static inline int32_t sluice_fp8_gemm_epi(const SluiceRunArgs *args, SluiceCudaState *state,
                                          const char *kernel, const SluiceFp8GemmShape &g,
                                          int32_t bNK, const uint8_t *a, const uint8_t *b,
                                          const float *aScale, const float *bScale,
                                          const Epi &epi, size_t workspace, cudaStream_t stream) {
  if (g.m <= 0 || g.n <= 0)
    return 0;
  if (g.out != SLUICE_FP8_OUT_F32 || g.hasBias)
    return sluice_fail(args, kernel, "fp8 GEMM with an epilogue: f32 result, no bias");
  if (workspace > state->workspaceBytes)
    workspace = state->workspaceBytes;
  const int64_t dBytes = sluice_quant_round256(g.m * g.n * 4);
  if (!state->workspace || (int64_t)workspace < dBytes + 256 + 4096)
    return sluice_fail(args, kernel, "fp8 GEMM: the workspace is too small for its result");
  unsigned char *ws = (unsigned char *)state->workspace;
  float *d = (float *)ws;
  float *slots = (float *)(ws + dBytes);
  unsigned char *rest = ws + dBytes + 256;
  const int64_t restBytes = (int64_t)workspace - dBytes - 256;
  int device = 0;
  SLUICE_CUDA(kernel, cudaGetDevice(&device));
  bool ran = false, postBias = false;
  if (bNK && sluice_fp8_supported(device) && g.k > 0) {
    if (int32_t status = sluice_fp8_lt(
            args, state, kernel, g, a, b, d, nullptr, aScale, bScale, nullptr, nullptr, slots, rest,
            (size_t)std::min<int64_t>(restBytes, SLUICE_QUANT_LT_WORKSPACE), &ran, &postBias,
            stream))
      return status;
  }
  if (!ran) {
    // Fallback: E4M3 to f32 in the workspace, an f32 GEMM (no TF32).
    const int64_t aBytes = sluice_quant_round256(g.m * g.k * 4);
    const int64_t bBytes = sluice_quant_round256(g.k * g.n * 4);
    if (restBytes < aBytes + bBytes + 4096)
      return sluice_fail(args, kernel, "fp8 GEMM: the workspace is too small for its fallback");
    float *a32 = (float *)rest, *b32 = (float *)(rest + aBytes);
    if (g.k > 0) {
      sluice_fp8_dequant_kernel<<<sluice_grid(g.m * g.k, 256, 4), 256, 0, stream>>>(
          a, g.m, g.k, g.lda, aScale, a32);
      SLUICE_LAUNCHED(kernel);
      if (bNK)
        sluice_fp8_dequant_kernel<<<sluice_grid(g.k * g.n, 256, 4), 256, 0, stream>>>(
            b, g.n, g.k, g.ldb, bScale, b32);
      else
        sluice_fp8_dequant_kernel<<<sluice_grid(g.k * g.n, 256, 4), 256, 0, stream>>>(
            b, g.k, g.n, g.ldb, bScale, b32);
      SLUICE_LAUNCHED(kernel);
    }
    SluiceQuantLtProblem p;
    memset(&p, 0, sizeof(p));
    p.aType = p.bType = p.cType = p.dType = CUDA_R_32F;
    p.scaleType = p.biasType = CUDA_R_32F;
    p.compute = CUBLAS_COMPUTE_32F;
    p.bTransposed = bNK ? 1 : 0;
    p.m = g.m;
    p.n = g.n;
    p.k = g.k;
    p.lda = g.k;
    p.ldb = bNK ? g.k : g.n;
    p.ldd = g.n;
    p.batch = 1;
    unsigned char *lt = rest + aBytes + bBytes;
    const size_t ltBytes =
        (size_t)std::min<int64_t>(restBytes - aBytes - bBytes, SLUICE_QUANT_LT_WORKSPACE);
    SluiceQuantLtPlan *plan = nullptr;
    if (g.k > 0) {
      if (int32_t status = sluice_quant_lt_find(args, state, kernel, p, a32, b32, d,
                                                SluiceQuantLtPointers(), ltBytes, &plan))
        return status;
      if (!plan)
        return sluice_fail(args, kernel, "cuBLASLt has no f32 algorithm for the fp8 GEMM's fallback");
      if (int32_t status = sluice_quant_lt_enqueue(args, state, kernel, p, plan, a32, b32, d,
                                                   SluiceQuantLtPointers(), lt, stream))
        return status;
    } else {
      SLUICE_CUDA(kernel, cudaMemsetAsync(d, 0, (size_t)(g.m * g.n * 4), stream));
    }
  }
  sluice_wonly_store_kernel<Epi><<<sluice_grid(g.m * g.n, 256, 4), 256, 0, stream>>>(d, g.m, g.n, epi);
  SLUICE_LAUNCHED(kernel);
  return 0;
}

#endif // SLUICE_GEN_CUDA_QUANT_FP8_CUH
