//===- sluice_gen/cuda.h - scaffolding of generated cuda kernels -*- C++ -*-===//
//
// Included first by every cuda-target bundle source (model.cu, built by
// nvcc): the bundle ABI, the scalar helpers shared with the cpu target, the
// per-context device state (library handles, workspace, algorithm caches,
// the asynchronous error slot), the checked-call macros that name the kernel
// at fault, and the step macro of the run function.
//
// Every launch and library call of a run goes to args->stream and nothing
// synchronizes, so a whole run can be captured into one CUDA graph.
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CUDA_H
#define SLUICE_GEN_CUDA_H

#include "sluice/bundle_abi.h"
#include "sluice_gen/scalar.h"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
// cuDNN only for bundles with convolutions (the emitter defines
// SLUICE_WITH_CUDNN): a machine without cuDNN still builds the rest.
#if SLUICE_WITH_CUDNN
#include <cudnn.h>
#else
typedef struct cudnnContext *cudnnHandle_t;
#endif

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <string>
#include <tuple>
#include <vector>

// Host steps (ops with no cuda kernel run on the host, ONNX Runtime's
// fallback): their inputs are copied to args->host_arena, the cpu kernel runs
// in a host function enqueued on the stream (capturable into a graph), and
// the results are copied back. The host function's failure is recorded in
// the state and surfaces at sluice_model_check.
struct SluiceHostStep {
  int32_t (*fn)(void *const *, const SluiceRunArgs *);
  const char *kernel;
  std::vector<void *> buffers;
  /// Host copies of the dims of the graph outputs it shapes (data-dependent
  /// dims): args.output_dims points here, the step copies them to the
  /// device's after the host function.
  std::vector<int64_t *> outputDims;
  SluiceRunArgs args;
  char error[384];
};

/// One runtime context's device state (sluice_model_init creates it).
struct SluiceCudaState {
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  cudnnHandle_t cudnn = nullptr;
  /// cuBLASLt / cuDNN workspace (device memory), grown at init to the
  /// largest need the bundle declared.
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
  /// Algorithm choices per problem key (cuda_blas.h, cuda_conv.h).
  std::map<std::string, std::shared_ptr<void>> algorithms;
  std::mutex mutex;
  /// Device word where kernels report a bad input (an index out of range):
  /// 1 + the step index of the first kernel that found one; names for the
  /// message in stepNames.
  int *deviceError = nullptr;
  const char *const *stepNames = nullptr;
  int numSteps = 0;
  /// Device addresses of the bundle's `__device__` constant arrays,
  /// resolved once at init (host code cannot take them during a run).
  std::vector<void *> symbols;
  /// Host steps by step index, made at their first run and kept (a
  /// captured graph calls them by address on every replay).
  std::map<int32_t, std::unique_ptr<SluiceHostStep>> hostSteps;
  /// The first asynchronous failure (host steps, device asserts), read by
  /// sluice_model_check after the caller synchronized.
  std::atomic<int> failed{0};
  char message[512] = {0};

  void fail(const char *kernel, const char *what) {
    int expected = 0;
    if (failed.compare_exchange_strong(expected, 1))
      snprintf(message, sizeof(message), "%s: %s", kernel, what);
  }
};

static inline SluiceCudaState *sluice_state(const SluiceRunArgs *args) {
  return (SluiceCudaState *)args->device_state;
}

/// Writes "<kernel>: <message>" into the run's error buffer; returns 1.
static inline int32_t sluice_fail(const SluiceRunArgs *args, const char *kernel,
                                  const char *message) {
  if (args->error && args->error_size)
    snprintf(args->error, args->error_size, "%s: %s", kernel, message);
  return 1;
}

/// A CUDA runtime call in kernel `kernel`; on failure the run fails with
/// "<kernel>: <call>: <cuda error string>".
#define SLUICE_CUDA(kernel, call)                                              \
  do {                                                                         \
    cudaError_t sluice_err = (call);                                           \
    if (sluice_err != cudaSuccess) {                                           \
      char sluice_msg[384];                                                    \
      snprintf(sluice_msg, sizeof(sluice_msg), "%s failed: %s (%s)", #call,    \
               cudaGetErrorString(sluice_err), cudaGetErrorName(sluice_err));  \
      return sluice_fail(args, kernel, sluice_msg);                            \
    }                                                                          \
  } while (0)

/// After a launch: a bad configuration (too much shared memory, a missing
/// architecture) fails the run naming the kernel.
#define SLUICE_LAUNCHED(kernel) SLUICE_CUDA(kernel, cudaGetLastError())

#define SLUICE_CUBLAS(kernel, call)                                            \
  do {                                                                         \
    cublasStatus_t sluice_st = (call);                                         \
    if (sluice_st != CUBLAS_STATUS_SUCCESS) {                                  \
      char sluice_msg[384];                                                    \
      snprintf(sluice_msg, sizeof(sluice_msg), "%s failed: cuBLAS status %d", \
               #call, (int)sluice_st);                                         \
      return sluice_fail(args, kernel, sluice_msg);                            \
    }                                                                          \
  } while (0)

#if SLUICE_WITH_CUDNN
#define SLUICE_CUDNN(kernel, call)                                             \
  do {                                                                         \
    cudnnStatus_t sluice_st = (call);                                          \
    if (sluice_st != CUDNN_STATUS_SUCCESS) {                                   \
      char sluice_msg[384];                                                    \
      snprintf(sluice_msg, sizeof(sluice_msg), "%s failed: %s", #call,         \
               cudnnGetErrorString(sluice_st));                                \
      return sluice_fail(args, kernel, sluice_msg);                            \
    }                                                                          \
  } while (0)
#endif

#define SLUICE_STEP(index, call)                                               \
  do {                                                                         \
    if (args->trace)                                                           \
      args->trace->begin(args->trace->user, index);                            \
    int32_t sluice_status = (call);                                            \
    if (args->trace)                                                           \
      args->trace->end(args->trace->user, index);                              \
    if (sluice_status)                                                         \
      return sluice_status;                                                    \
  } while (0)

// Runtime control flow (if / loop steps, docs/architecture.md): the run
// function branches on host copies of device scalars.

/// Copies `bytes` from the device scalar at `ptr` to host `out` once the
/// steps before it are done. A synchronizing read cannot be captured in a
/// CUDA graph: under capture it fails, and the runtime runs the bundle
/// eagerly instead (its graph note says why).
static inline int32_t sluice_read_device(const SluiceRunArgs *args, const void *ptr, void *out,
                                         size_t bytes) {
  cudaStream_t stream = (cudaStream_t)args->stream;
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capturing) == cudaSuccess &&
      capturing != cudaStreamCaptureStatusNone)
    return sluice_fail(args, "control flow",
                       "reads a condition or trip count from the device, which a CUDA graph "
                       "cannot capture");
  SLUICE_CUDA("control flow", cudaMemcpyAsync(out, ptr, bytes, cudaMemcpyDeviceToHost, stream));
  SLUICE_CUDA("control flow", cudaStreamSynchronize(stream));
  return 0;
}

/// Stores a loop's iteration number or condition on the device, in stream
/// order (a one-thread kernel: no host buffer has to outlive the call).
static __global__ void sluice_store_i64_kernel(int64_t *ptr, int64_t value) { *ptr = value; }
static __global__ void sluice_store_u8_kernel(unsigned char *ptr, unsigned char value) {
  *ptr = value;
}

/// Grid size for `n` work items of `block` threads each handling `per`
/// items, capped so that grid-stride loops cover the rest.
static inline unsigned sluice_grid(int64_t n, int block, int per = 1) {
  int64_t blocks = (n + (int64_t)block * per - 1) / ((int64_t)block * per);
  if (blocks < 1)
    blocks = 1;
  if (blocks > 65535LL * 32)
    blocks = 65535LL * 32;
  return (unsigned)blocks;
}

// Device-side storage conversions: the scalar helpers of scalar.h spell
// half types as sluice_f16/sluice_bf16 (bit containers); on the device the
// hardware converts.
__device__ __forceinline__ float sluice_dload(sluice_f16 v) {
  return __half2float(__ushort_as_half(v.bits));
}
__device__ __forceinline__ float sluice_dload(sluice_bf16 v) {
  return __bfloat162float(__ushort_as_bfloat16(v.bits));
}
template <typename T> __device__ __forceinline__ T sluice_dload(T v) { return v; }

static void CUDART_CB sluice_host_step_trampoline(void *data) {
  SluiceHostStep *step = (SluiceHostStep *)data;
  SluiceCudaState *state = (SluiceCudaState *)step->args.device_state;
  if (state->failed.load())
    return;
  step->args.error = step->error;
  step->args.error_size = sizeof(step->error);
  step->args.trace = nullptr;
  if (step->fn(step->buffers.data(), &step->args)) {
    // The cpu kernel wrote "<kernel>: <message>".
    int expected = 0;
    if (state->failed.compare_exchange_strong(expected, 1))
      snprintf(state->message, sizeof(state->message), "%s", step->error);
  }
}

/// Reports a bad input from device code (the first one wins).
__device__ __forceinline__ void sluice_device_fail(int *word, int step) {
  if (word)
    atomicCAS(word, 0, step + 1);
}

/// Vectors of N elements for 128-bit (or narrower) loads and stores.
template <typename T, int N> struct alignas(sizeof(T) * N) sluice_vec {
  T v[N];
};

static inline void sluice_cuda_release(void *p) {
  SluiceCudaState *state = (SluiceCudaState *)p;
  if (!state)
    return;
  if (state->workspace)
    cudaFree(state->workspace);
  if (state->deviceError)
    cudaFree(state->deviceError);
#if SLUICE_WITH_CUDNN
  if (state->cudnn)
    cudnnDestroy(state->cudnn);
#endif
  if (state->lt)
    cublasLtDestroy(state->lt);
  delete state;
}

/// Creates a context's device state: the stream, a cuBLASLt handle, a cuDNN
/// handle when the bundle has convolutions, the workspace.
static inline int32_t sluice_cuda_init(void **out, void *stream, size_t workspaceBytes,
                                       bool needsCudnn, char *error, size_t errorSize) {
  auto fail = [&](const char *what, const char *detail) {
    if (error && errorSize)
      snprintf(error, errorSize, "sluice_model_init: %s: %s", what, detail);
    return (int32_t)1;
  };
  std::unique_ptr<SluiceCudaState> state(new (std::nothrow) SluiceCudaState());
  if (!state)
    return fail("out of host memory", "SluiceCudaState");
  state->stream = (cudaStream_t)stream;
  cublasStatus_t st = cublasLtCreate(&state->lt);
  if (st != CUBLAS_STATUS_SUCCESS)
    return fail("cublasLtCreate failed", cublasLtGetStatusString(st));
  if (needsCudnn) {
#if !SLUICE_WITH_CUDNN
    cublasLtDestroy(state->lt);
    return fail("cuDNN", "this bundle was built without cuDNN");
#else
    cudnnStatus_t dst = cudnnCreate(&state->cudnn);
    if (dst != CUDNN_STATUS_SUCCESS) {
      cublasLtDestroy(state->lt);
      return fail("cudnnCreate failed", cudnnGetErrorString(dst));
    }
    dst = cudnnSetStream(state->cudnn, state->stream);
    if (dst != CUDNN_STATUS_SUCCESS) {
      cudnnDestroy(state->cudnn);
      cublasLtDestroy(state->lt);
      return fail("cudnnSetStream failed", cudnnGetErrorString(dst));
    }
#endif
  }
  {
    cudaError_t err = cudaMalloc((void **)&state->deviceError, sizeof(int));
    if (err == cudaSuccess)
      err = cudaMemset(state->deviceError, 0, sizeof(int));
    if (err != cudaSuccess) {
      sluice_cuda_release(state.release());
      return fail("cudaMalloc of the error word failed", cudaGetErrorString(err));
    }
  }
  if (workspaceBytes) {
    cudaError_t err = cudaMalloc(&state->workspace, workspaceBytes);
    if (err != cudaSuccess) {
      sluice_cuda_release(state.release());
      return fail("cudaMalloc of the library workspace failed", cudaGetErrorString(err));
    }
    state->workspaceBytes = workspaceBytes;
  }
  *out = state.release();
  return 0;
}

/// After the caller synchronized: a host step's failure, or a sticky device
/// error (an illegal address in a kernel).
static inline int32_t sluice_cuda_check(void *p, char *error, size_t errorSize) {
  SluiceCudaState *state = (SluiceCudaState *)p;
  if (state && state->failed.load()) {
    if (error && errorSize)
      snprintf(error, errorSize, "%s", state->message);
    // Reported once: the next run starts clean.
    state->message[0] = 0;
    state->failed.store(0);
    return 1;
  }
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    if (error && errorSize)
      snprintf(error, errorSize, "device error after the run: %s (%s)",
               cudaGetErrorString(err), cudaGetErrorName(err));
    return 1;
  }
  if (state && state->deviceError) {
    int word = 0;
    err = cudaMemcpy(&word, state->deviceError, sizeof(int), cudaMemcpyDeviceToHost);
    if (err != cudaSuccess) {
      if (error && errorSize)
        snprintf(error, errorSize, "reading the device error word failed: %s",
                 cudaGetErrorString(err));
      return 1;
    }
    if (word) {
      cudaMemset(state->deviceError, 0, sizeof(int));
      if (error && errorSize)
        snprintf(error, errorSize, "%s: an index is out of range",
                 word - 1 < state->numSteps ? state->stepNames[word - 1] : "a kernel");
      return 1;
    }
  }
  return 0;
}

#endif // SLUICE_GEN_CUDA_H
