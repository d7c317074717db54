//===- sluice_gen/cuda_conv.h - cuDNN convolutions of cuda bundles -*- C++ -*-===//
//
// sluice.conv and sluice.conv_transpose (codegen/cuda/ops/Conv.cpp) through
// cuDNN 9's legacy convolution API: NCHW / NCDHW tensors, grouped, with
// pads, strides and dilations. 1-D convolutions run as 2-D ones with a unit
// height. A transposed convolution is cuDNN's backward-data convolution:
// the ONNX input plays dy, its weight (C, M/group, K...) the forward filter,
// and the ONNX output dx. cuDNN takes one pad per dim: asymmetric pads
// (SAME_UPPER/LOWER, output_shape) cost one extra pass, a zero-padded copy
// of the input in workspace scratch (forward) or the crop of the full
// output (transposed; also for negative pads and output_padding >= stride).
//
// Precision: f32 runs with CUDNN_FMA_MATH (no TF32: fp32 results must match
// the evaluator), f16/bf16 with tensor-op math and fp32 accumulation, f64
// with double accumulation.
//
// The algorithm comes from cuDNN's heuristics
// (cudnnGet*Algorithm_v7: host only, no trial runs, so the first run may be
// captured into a CUDA graph) and is cached per problem in
// SluiceCudaState::algorithms with its descriptors; a candidate cuDNN
// rejects at enqueue is replaced by the next one. The bias is added by a
// small kernel of this header after the convolution (or by the crop).
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CUDA_CONV_H
#define SLUICE_GEN_CUDA_CONV_H

#include "sluice_gen/cuda.h"

#if !SLUICE_WITH_CUDNN
#error "cuda_conv.h needs cuDNN: define SLUICE_WITH_CUDNN 1 before including sluice_gen/cuda.h"
#endif

enum SluiceConvType {
  SLUICE_CONV_F32 = 0,
  SLUICE_CONV_F64 = 1,
  SLUICE_CONV_F16 = 2,
  SLUICE_CONV_BF16 = 3
};

/// One convolution. Forward: x [n, c, in...], w [k, c / group, kernel...],
/// y [n, k, out...]. Transposed: x [n, c, in...], w [c, k / group,
/// kernel...], y [n, k, out...] (y is the gradient of a forward convolution
/// from y's shape to x's). `spatial` is 1, 2 or 3. `pad` holds the begin
/// pads, `pad_end` the end pads (ONNX order); a transposed convolution's
/// pads crop its full output (negative: extend it with bias-only values).
struct SluiceConvShape {
  int32_t type;
  int32_t transpose;
  int32_t spatial;
  int64_t n, c, k, group;
  int64_t in[3], kernel[3], out[3];
  int64_t pad[3], stride[3], dilation[3];
  int64_t pad_end[3], output_padding[3];
};

/// Whether cuDNN runs `s` as it is: one non-negative pad per dim and, when
/// transposed, an output cuDNN's backward data can fit (output_padding <
/// stride). Otherwise sluice_conv pads the input (forward) or crops a full
/// output (transposed) in workspace scratch.
static inline bool sluice_conv_direct(const SluiceConvShape &s) {
  for (int d = 0; d < s.spatial; ++d) {
    if (s.pad[d] != s.pad_end[d] || s.pad[d] < 0)
      return false;
    if (s.transpose && (s.output_padding[d] < 0 || s.output_padding[d] >= s.stride[d]))
      return false;
  }
  return true;
}

/// Scratch bytes (after the cuDNN workspace, 256-byte aligned) that
/// sluice_conv needs for `s` with elements of `elementBytes`: the padded
/// input, or the uncropped transposed output.
static inline int64_t sluice_conv_scratch_bytes(const SluiceConvShape &s, int64_t elementBytes) {
  if (sluice_conv_direct(s))
    return 0;
  int64_t count = s.n * (s.transpose ? s.k : s.c);
  for (int d = 0; d < s.spatial; ++d)
    count *= s.transpose ? s.stride[d] * (s.in[d] - 1) + (s.kernel[d] - 1) * s.dilation[d] + 1
                         : s.in[d] + s.pad[d] + s.pad_end[d];
  return (count * elementBytes + 255) / 256 * 256;
}

/// Descriptors and algorithm candidates of one cached convolution.
struct SluiceConvPlan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  std::vector<int> algos; ///< cudnnConvolutionFwdAlgo_t / BwdDataAlgo_t
  std::vector<int> maths; ///< cudnnMathType_t of each candidate
  size_t current = 0;     ///< the candidate in use
  ~SluiceConvPlan() {
    if (x)
      cudnnDestroyTensorDescriptor(x);
    if (y)
      cudnnDestroyTensorDescriptor(y);
    if (bias)
      cudnnDestroyTensorDescriptor(bias);
    if (w)
      cudnnDestroyFilterDescriptor(w);
    if (conv)
      cudnnDestroyConvolutionDescriptor(conv);
  }
};

static inline cudnnDataType_t sluice_conv_data_type(int32_t type) {
  switch (type) {
  case SLUICE_CONV_F64:
    return CUDNN_DATA_DOUBLE;
  case SLUICE_CONV_F16:
    return CUDNN_DATA_HALF;
  case SLUICE_CONV_BF16:
    return CUDNN_DATA_BFLOAT16;
  default:
    return CUDNN_DATA_FLOAT;
  }
}

/// The math type a convolution of `type` may use: FMA only for f32 (no
/// TF32), tensor ops for f16/bf16, the default (FMA) for f64.
static inline cudnnMathType_t sluice_conv_math(int32_t type) {
  if (type == SLUICE_CONV_F32)
    return CUDNN_FMA_MATH;
  if (type == SLUICE_CONV_F16 || type == SLUICE_CONV_BF16)
    return CUDNN_TENSOR_OP_MATH;
  return CUDNN_DEFAULT_MATH;
}

static inline bool sluice_conv_math_allowed(int32_t type, cudnnMathType_t math) {
  if (type != SLUICE_CONV_F32)
    return true;
  return math != CUDNN_TENSOR_OP_MATH && math != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

/// A packed NC... tensor descriptor of `dims` (nb >= 4).
static inline cudnnStatus_t sluice_conv_tensor(cudnnTensorDescriptor_t desc, cudnnDataType_t dt,
                                               int nb, const int *dims) {
  int strides[5];
  strides[nb - 1] = 1;
  for (int d = nb - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * dims[d + 1];
  return cudnnSetTensorNdDescriptor(desc, dt, nb, dims, strides);
}

/// Builds descriptors and algorithm candidates. Called under state->mutex.
static inline int32_t sluice_conv_plan(const SluiceRunArgs *args, SluiceCudaState *state,
                                       const char *kernel, const SluiceConvShape &s,
                                       size_t workspace, SluiceConvPlan *plan) {
  if (s.spatial < 1 || s.spatial > 3 || s.group < 1 || s.c % s.group || s.k % s.group)
    return sluice_fail(args, kernel, "unsupported convolution geometry");
  const cudnnDataType_t dt = sluice_conv_data_type(s.type);
  // 1-D as 2-D with a unit height.
  const int sp = s.spatial == 1 ? 2 : s.spatial;
  const int nb = sp + 2;
  int in[3], ker[3], out[3], pad[3], stride[3], dil[3];
  for (int d = 0, src = 0; d < sp; ++d) {
    bool unit = s.spatial == 1 && d == 0;
    in[d] = unit ? 1 : (int)s.in[src];
    ker[d] = unit ? 1 : (int)s.kernel[src];
    out[d] = unit ? 1 : (int)s.out[src];
    pad[d] = unit ? 0 : (int)s.pad[src];
    stride[d] = unit ? 1 : (int)s.stride[src];
    dil[d] = unit ? 1 : (int)s.dilation[src];
    if (!unit)
      ++src;
  }
  int xDims[5] = {(int)s.n, (int)s.c}, yDims[5] = {(int)s.n, (int)s.k}, wDims[5], bDims[5];
  // The filter in cuDNN's forward terms: [out channels, in channels / group].
  wDims[0] = s.transpose ? (int)s.c : (int)s.k;
  wDims[1] = s.transpose ? (int)(s.k / s.group) : (int)(s.c / s.group);
  bDims[0] = 1;
  bDims[1] = (int)s.k;
  for (int d = 0; d < sp; ++d) {
    xDims[2 + d] = in[d];
    yDims[2 + d] = out[d];
    wDims[2 + d] = ker[d];
    bDims[2 + d] = 1;
  }
  SLUICE_CUDNN(kernel, cudnnCreateTensorDescriptor(&plan->x));
  SLUICE_CUDNN(kernel, cudnnCreateTensorDescriptor(&plan->y));
  SLUICE_CUDNN(kernel, cudnnCreateTensorDescriptor(&plan->bias));
  SLUICE_CUDNN(kernel, cudnnCreateFilterDescriptor(&plan->w));
  SLUICE_CUDNN(kernel, cudnnCreateConvolutionDescriptor(&plan->conv));
  SLUICE_CUDNN(kernel, sluice_conv_tensor(plan->x, dt, nb, xDims));
  SLUICE_CUDNN(kernel, sluice_conv_tensor(plan->y, dt, nb, yDims));
  SLUICE_CUDNN(kernel, sluice_conv_tensor(plan->bias, dt, nb, bDims));
  SLUICE_CUDNN(kernel, cudnnSetFilterNdDescriptor(plan->w, dt, CUDNN_TENSOR_NCHW, nb, wDims));
  const cudnnDataType_t accumulate =
      s.type == SLUICE_CONV_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  SLUICE_CUDNN(kernel, cudnnSetConvolutionNdDescriptor(plan->conv, sp, pad, stride, dil,
                                                       CUDNN_CROSS_CORRELATION, accumulate));
  SLUICE_CUDNN(kernel, cudnnSetConvolutionGroupCount(plan->conv, (int)s.group));
  SLUICE_CUDNN(kernel, cudnnSetConvolutionMathType(plan->conv, sluice_conv_math(s.type)));

  // The forward convolution's output shape must be y's (x's when
  // transposed): a mismatch means the compiler's geometry and cuDNN's differ.
  int fwdOut[5];
  SLUICE_CUDNN(kernel, cudnnGetConvolutionNdForwardOutputDim(
                           plan->conv, s.transpose ? plan->y : plan->x, plan->w, nb, fwdOut));
  const int *expect = s.transpose ? xDims : yDims;
  for (int d = 0; d < nb; ++d)
    if (fwdOut[d] != expect[d])
      return sluice_fail(args, kernel,
                         "cuDNN's convolution output shape differs from the "
                         "graph's");

  if (!s.transpose) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = 0;
    SLUICE_CUDNN(kernel, cudnnGetConvolutionForwardAlgorithm_v7(
                             state->cudnn, plan->x, plan->w, plan->conv, plan->y,
                             CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf));
    for (int i = 0; i < returned; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS ||
          !sluice_conv_math_allowed(s.type, perf[i].mathType))
        continue;
      size_t bytes = 0;
      if (cudnnGetConvolutionForwardWorkspaceSize(state->cudnn, plan->x, plan->w, plan->conv,
                                                  plan->y, perf[i].algo,
                                                  &bytes) != CUDNN_STATUS_SUCCESS ||
          bytes > workspace)
        continue;
      plan->algos.push_back((int)perf[i].algo);
      plan->maths.push_back((int)perf[i].mathType);
    }
  } else {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int returned = 0;
    SLUICE_CUDNN(kernel, cudnnGetConvolutionBackwardDataAlgorithm_v7(
                             state->cudnn, plan->w, plan->x, plan->conv, plan->y,
                             CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perf));
    for (int i = 0; i < returned; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS ||
          !sluice_conv_math_allowed(s.type, perf[i].mathType))
        continue;
      size_t bytes = 0;
      if (cudnnGetConvolutionBackwardDataWorkspaceSize(state->cudnn, plan->w, plan->x, plan->conv,
                                                       plan->y, perf[i].algo,
                                                       &bytes) != CUDNN_STATUS_SUCCESS ||
          bytes > workspace)
        continue;
      plan->algos.push_back((int)perf[i].algo);
      plan->maths.push_back((int)perf[i].mathType);
    }
  }
  if (plan->algos.empty()) {
    char message[160];
    snprintf(message, sizeof(message),
             "cuDNN has no %s algorithm for this convolution within %zu workspace bytes",
             s.transpose ? "backward-data" : "forward", workspace);
    return sluice_fail(args, kernel, message);
  }
  return 0;
}

/// y[n, k, s] += bias[k] over `spatial` positions per channel.
template <typename T>
__global__ void __launch_bounds__(256)
    sluice_conv_bias_kernel(T *y, const T *bias, int64_t total, int64_t channels, int64_t spatial) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t ch = (i / spatial) % channels;
    y[i] = SLUICE_STORE(T, sluice_dload(y[i]) + sluice_dload(bias[ch]));
  }
}

/// The cuDNN call of a direct convolution (sluice_conv_direct) and its bias.
template <typename T>
static inline int32_t sluice_conv_cudnn(const SluiceRunArgs *args, SluiceCudaState *state,
                                        const char *kernel, const SluiceConvShape &s, const T *x,
                                        const T *w, const T *bias, T *y, size_t workspace,
                                        cudaStream_t stream) {
  int64_t outCount = s.n * s.k, spatialOut = 1;
  for (int d = 0; d < s.spatial; ++d)
    spatialOut *= s.out[d];
  outCount *= spatialOut;
  if (outCount == 0)
    return 0;
  if (workspace > state->workspaceBytes)
    workspace = state->workspaceBytes;
  char key[400];
  int len = snprintf(key, sizeof(key), "cudnn:%d:%d:%d:%lld:%lld:%lld:%lld:%zu", (int)s.type,
                     (int)s.transpose, (int)s.spatial, (long long)s.n, (long long)s.c,
                     (long long)s.k, (long long)s.group, workspace);
  for (int d = 0; d < s.spatial && len > 0 && len < (int)sizeof(key); ++d)
    len += snprintf(key + len, sizeof(key) - len, ":%lld,%lld,%lld,%lld,%lld,%lld",
                    (long long)s.in[d], (long long)s.kernel[d], (long long)s.out[d],
                    (long long)s.pad[d], (long long)s.stride[d], (long long)s.dilation[d]);
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    SluiceConvPlan *plan = nullptr;
    auto it = state->algorithms.find(key);
    if (it != state->algorithms.end()) {
      plan = (SluiceConvPlan *)it->second.get();
    } else {
      std::unique_ptr<SluiceConvPlan> fresh(new SluiceConvPlan());
      SLUICE_CUDNN(kernel, cudnnSetStream(state->cudnn, stream));
      if (int32_t status = sluice_conv_plan(args, state, kernel, s, workspace, fresh.get()))
        return status;
      plan = fresh.get();
      state->algorithms[key] =
          std::shared_ptr<void>(fresh.release(), [](void *p) { delete (SluiceConvPlan *)p; });
    }
    SLUICE_CUDNN(kernel, cudnnSetStream(state->cudnn, stream));
    const float one32 = 1.0f, zero32 = 0.0f;
    const double one64 = 1.0, zero64 = 0.0;
    const bool f64 = s.type == SLUICE_CONV_F64;
    const void *one = f64 ? (const void *)&one64 : (const void *)&one32;
    const void *zero = f64 ? (const void *)&zero64 : (const void *)&zero32;
    void *ws = workspace ? state->workspace : nullptr;
    // Candidates in the heuristic's order; one cuDNN rejects when it is
    // enqueued (NOT_SUPPORTED for this geometry) gives way to the next.
    cudnnStatus_t st = CUDNN_STATUS_NOT_SUPPORTED;
    for (; plan->current < plan->algos.size(); ++plan->current) {
      size_t i = plan->current;
      cudnnMathType_t math = (cudnnMathType_t)plan->maths[i];
      if (s.type == SLUICE_CONV_F32)
        math = CUDNN_FMA_MATH;
      SLUICE_CUDNN(kernel, cudnnSetConvolutionMathType(plan->conv, math));
      if (!s.transpose)
        st = cudnnConvolutionForward(state->cudnn, one, plan->x, x, plan->w, w, plan->conv,
                                     (cudnnConvolutionFwdAlgo_t)plan->algos[i], ws, workspace, zero,
                                     plan->y, y);
      else
        st = cudnnConvolutionBackwardData(state->cudnn, one, plan->w, w, plan->x, x, plan->conv,
                                          (cudnnConvolutionBwdDataAlgo_t)plan->algos[i], ws,
                                          workspace, zero, plan->y, y);
      if (st != CUDNN_STATUS_NOT_SUPPORTED)
        break;
    }
    if (st != CUDNN_STATUS_SUCCESS) {
      char message[256];
      snprintf(message, sizeof(message), "%s failed: %s",
               s.transpose ? "cudnnConvolutionBackwardData" : "cudnnConvolutionForward",
               cudnnGetErrorString(st));
      return sluice_fail(args, kernel, message);
    }
  }
  if (bias) {
    sluice_conv_bias_kernel<T>
        <<<sluice_grid(outCount, 256), 256, 0, stream>>>(y, bias, outCount, s.k, spatialOut);
    SLUICE_LAUNCHED(kernel);
  }
  return 0;
}

/// xp = x zero-padded by `begin`/`end` on the spatial dims (each padded to
/// three with leading unit dims): [planes, p0, p1, p2] from [planes, i0,
/// i1, i2].
template <typename T>
__global__ void __launch_bounds__(256)
    sluice_conv_pad_kernel(const T *x, T *xp, int64_t total, int64_t p0, int64_t p1, int64_t p2,
                           int64_t i0, int64_t i1, int64_t i2, int64_t b0, int64_t b1, int64_t b2) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x) {
    int64_t rest = e;
    const int64_t c2 = rest % p2 - b2;
    rest /= p2;
    const int64_t c1 = rest % p1 - b1;
    rest /= p1;
    const int64_t c0 = rest % p0 - b0;
    const int64_t plane = rest / p0;
    const bool inside = c0 >= 0 && c0 < i0 && c1 >= 0 && c1 < i1 && c2 >= 0 && c2 < i2;
    xp[e] = inside ? x[((plane * i0 + c0) * i1 + c1) * i2 + c2] : SLUICE_STORE(T, 0.0f);
  }
}

/// y = full[.., o + begin] (+ bias per channel): the crop of a transposed
/// convolution's full output; positions outside it (negative pads, output
/// padding past the last input's reach) hold the bias alone.
template <typename T>
__global__ void __launch_bounds__(256)
    sluice_conv_crop_kernel(const T *full, T *y, const T *bias, int64_t total, int64_t channels,
                            int64_t o0, int64_t o1, int64_t o2, int64_t f0, int64_t f1, int64_t f2,
                            int64_t b0, int64_t b1, int64_t b2) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x) {
    int64_t rest = e;
    const int64_t c2 = rest % o2 + b2;
    rest /= o2;
    const int64_t c1 = rest % o1 + b1;
    rest /= o1;
    const int64_t c0 = rest % o0 + b0;
    const int64_t plane = rest / o0;
    const bool inside = c0 >= 0 && c0 < f0 && c1 >= 0 && c1 < f1 && c2 >= 0 && c2 < f2;
    auto v = inside ? sluice_dload(full[((plane * f0 + c0) * f1 + c1) * f2 + c2])
                    : decltype(sluice_dload(full[0]))(0);
    if (bias)
      v += sluice_dload(bias[plane % channels]);
    y[e] = SLUICE_STORE(T, v);
  }
}

/// Enqueues convolution `s` (and its bias, when `bias` is not null) on
/// `stream`. The first `workspace` bytes of the state's workspace are
/// cuDNN's; a convolution that is not direct also uses
/// sluice_conv_scratch_bytes(s) after them (the bundle declared both).
template <typename T>
static inline int32_t sluice_conv(const SluiceRunArgs *args, SluiceCudaState *state,
                                  const char *kernel, const SluiceConvShape &s, const T *x,
                                  const T *w, const T *bias, T *y, size_t workspace,
                                  cudaStream_t stream) {
  if (sluice_conv_direct(s))
    return sluice_conv_cudnn<T>(args, state, kernel, s, x, w, bias, y, workspace, stream);
  const size_t offset = (workspace + 255) / 256 * 256;
  const int64_t scratch = sluice_conv_scratch_bytes(s, sizeof(T));
  if (state->workspaceBytes < offset + (size_t)scratch)
    return sluice_fail(args, kernel, "the device workspace is smaller than the bundle declared");
  T *buffer = (T *)((unsigned char *)state->workspace + offset);
  // Spatial dims padded to three at the front.
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, inner[3] = {1, 1, 1}, begin[3] = {0, 0, 0};
  SluiceConvShape direct = s;
  for (int d = 0; d < s.spatial; ++d) {
    const int e = 3 - s.spatial + d;
    in[e] = s.in[d];
    out[e] = s.out[d];
    begin[e] = s.pad[d];
    direct.pad[d] = direct.pad_end[d] = direct.output_padding[d] = 0;
    if (!s.transpose)
      direct.in[d] = inner[e] = s.in[d] + s.pad[d] + s.pad_end[d];
    else
      direct.out[d] = inner[e] =
          s.stride[d] * (s.in[d] - 1) + (s.kernel[d] - 1) * s.dilation[d] + 1;
  }
  if (!s.transpose) {
    const int64_t total = s.n * s.c * inner[0] * inner[1] * inner[2];
    sluice_conv_pad_kernel<T><<<sluice_grid(total, 256), 256, 0, stream>>>(
        x, buffer, total, inner[0], inner[1], inner[2], in[0], in[1], in[2], begin[0], begin[1],
        begin[2]);
    SLUICE_LAUNCHED(kernel);
    return sluice_conv_cudnn<T>(args, state, kernel, direct, buffer, w, bias, y, workspace, stream);
  }
  if (int32_t status = sluice_conv_cudnn<T>(args, state, kernel, direct, x, w, (const T *)nullptr,
                                            buffer, workspace, stream))
    return status;
  const int64_t total = s.n * s.k * out[0] * out[1] * out[2];
  sluice_conv_crop_kernel<T><<<sluice_grid(total, 256), 256, 0, stream>>>(
      buffer, y, bias, total, s.k, out[0], out[1], out[2], inner[0], inner[1], inner[2], begin[0],
      begin[1], begin[2]);
  SLUICE_LAUNCHED(kernel);
  return 0;
}

#endif // SLUICE_GEN_CUDA_CONV_H
