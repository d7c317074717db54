//===- blas_conv_test.cu - the cuda target's library wrappers vs doubles --===//
//
// Runs sluice_gemm (sluice_gen/cuda_blas.h) and sluice_conv
// (sluice_gen/cuda_conv.h) as a generated bundle would, on random data, and
// compares every result with a host reference computed in double from the
// same (rounded) inputs: relative L2 error at most 1e-5 for f32 (so a
// TF32 path would fail), 1e-12 for f64 and 1e-2 for f16/bf16. Covers
// transposed and padded-row operands, strided batches with a broadcast
// operand, M-stacked batches, every epilogue (bias, relu, tanh-gelu, a
// residual through beta, alpha) and convolutions with groups, strides,
// dilations, pads, 1-D/2-D/3-D, bias, and transposed convolutions with
// output padding. Exits 77 (skipped) without a GPU.
//
//===----------------------------------------------------------------------===//

#define SLUICE_WITH_CUDNN 1
#include "sluice_gen/cuda_blas.h"
#include "sluice_gen/cuda_conv.h"

#include "GpuTest.h"

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace {

int failures = 0;

/// Host values of each element type, through the same bit containers the
/// bundles use.
template <typename T> T toStorage(double v) { return SLUICE_STORE(T, v); }
template <typename T> double fromStorage(T v) { return (double)sluice_load(v); }

template <typename T> int32_t gemmType();
template <> int32_t gemmType<float>() { return SLUICE_GEMM_F32; }
template <> int32_t gemmType<double>() { return SLUICE_GEMM_F64; }
template <> int32_t gemmType<sluice_f16>() { return SLUICE_GEMM_F16; }
template <> int32_t gemmType<sluice_bf16>() { return SLUICE_GEMM_BF16; }

template <typename T> double tolerance() {
  return sizeof(T) == 8 ? 1e-12 : sizeof(T) == 4 ? 1e-5 : 1e-2;
}
template <typename T> const char *typeName() {
  return gemmType<T>() == SLUICE_GEMM_F32   ? "f32"
         : gemmType<T>() == SLUICE_GEMM_F64 ? "f64"
         : gemmType<T>() == SLUICE_GEMM_F16 ? "f16"
                                            : "bf16";
}

using sluice_gpu_test::DeviceBuffer;

/// Random values rounded to T; `rounded` receives them as doubles.
template <typename T>
std::vector<T> randomData(std::mt19937 &rng, size_t n, std::vector<double> &rounded) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<T> v(n);
  rounded.resize(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = toStorage<T>(dist(rng));
    rounded[i] = fromStorage(v[i]);
  }
  return v;
}

void report(const char *what, double err, double tol) {
  bool ok = err <= tol && std::isfinite(err);
  printf("%-70s rel L2 %.3g (tol %.0e) %s\n", what, err, tol, ok ? "ok" : "FAILED");
  if (!ok)
    ++failures;
}

double relL2(const std::vector<double> &got, const std::vector<double> &ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (got[i] - ref[i]) * (got[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / (den > 0 ? den : 1));
}

struct Context {
  SluiceCudaState state;
  SluiceRunArgs args;
  char error[512];
  Context() {
    CHECK_CUDA(cudaStreamCreate(&state.stream));
    if (cublasLtCreate(&state.lt) != CUBLAS_STATUS_SUCCESS) {
      fprintf(stderr, "cublasLtCreate failed\n");
      exit(1);
    }
    if (cudnnCreate(&state.cudnn) != CUDNN_STATUS_SUCCESS) {
      fprintf(stderr, "cudnnCreate failed\n");
      exit(1);
    }
    state.workspaceBytes = 96u << 20;
    CHECK_CUDA(cudaMalloc(&state.workspace, state.workspaceBytes));
    memset(&args, 0, sizeof(args));
    args.error = error;
    args.error_size = sizeof(error);
    args.stream = state.stream;
    args.device_state = &state;
    error[0] = 0;
  }
  ~Context() {
    state.algorithms.clear(); // descriptors before the handles
    cudaFree(state.workspace);
    cudnnDestroy(state.cudnn);
    cublasLtDestroy(state.lt);
    cudaStreamDestroy(state.stream);
  }
};

/// Runs `call` (a wrapper's enqueue, returning its status) on the context's
/// stream: directly, or captured into a CUDA graph that is then launched,
/// as the runtime captures whole runs (a plan made during the capture, the
/// first run's case, must not break it).
template <typename F> int32_t enqueue(Context &ctx, bool capture, F &&call) {
  if (!capture)
    return call();
  cudaStream_t stream = ctx.state.stream;
  CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  int32_t status = call();
  cudaGraph_t graph = nullptr;
  cudaError_t err = cudaStreamEndCapture(stream, &graph);
  if (status) {
    if (graph)
      cudaGraphDestroy(graph);
    return status;
  }
  cudaGraphExec_t exec = nullptr;
  if (err == cudaSuccess)
    err = cudaGraphInstantiate(&exec, graph, 0);
  if (err == cudaSuccess)
    err = cudaGraphLaunch(exec, stream);
  if (exec)
    cudaGraphExecDestroy(exec);
  if (graph)
    cudaGraphDestroy(graph);
  if (err != cudaSuccess) {
    snprintf(ctx.error, sizeof(ctx.error), "graph capture or launch failed: %s",
             cudaGetErrorString(err));
    cudaGetLastError();
    return 1;
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// GEMM
//===----------------------------------------------------------------------===//

struct GemmCase {
  const char *name;
  int64_t m, n, k, batch;
  bool transA, transB;
  int64_t padA, padB, padD; // extra elements per stored row (ld - row length)
  bool broadcastB;          // B's batch stride 0
  int epilogue;
  bool residual;
  double alpha;
};

double geluTanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

template <typename T>
void runGemm(Context &ctx, std::mt19937 &rng, const GemmCase &c, bool capture = false) {
  // Stored shapes: A is [m][k] rows (or [k][m] when transposed), B [k][n]
  // (or [n][k]); ld = stored row length + pad.
  int64_t aRows = c.transA ? c.k : c.m, aCols = c.transA ? c.m : c.k;
  int64_t bRows = c.transB ? c.n : c.k, bCols = c.transB ? c.k : c.n;
  int64_t lda = aCols + c.padA, ldb = bCols + c.padB, ldd = c.n + c.padD, ldc = c.n + 3;
  int64_t strideA = aRows * lda, strideB = c.broadcastB ? 0 : bRows * ldb;
  int64_t strideD = c.m * ldd, strideC = c.m * ldc;
  std::vector<double> ha, hb, hc, hbias;
  std::vector<T> a = randomData<T>(rng, strideA * c.batch, ha);
  std::vector<T> b = randomData<T>(rng, bRows * ldb * (c.broadcastB ? 1 : c.batch), hb);
  std::vector<T> cres = randomData<T>(rng, strideC * c.batch, hc);
  std::vector<T> bias = randomData<T>(rng, c.n, hbias);
  DeviceBuffer<T> da(a), db(b), dc(cres), dbias(bias), dd(strideD * c.batch);

  SluiceGemmShape g = {gemmType<T>(), c.transA, c.transB, c.m,        c.n,       c.k,
                       lda,           ldb,      ldc,      ldd,        c.batch,   strideA,
                       strideB,       strideC,  strideD,  c.epilogue, c.residual};
  bool hasBias = c.epilogue & 1;
  int32_t status = enqueue(ctx, capture, [&] {
    return sluice_gemm(&ctx.args, &ctx.state, "gemm_test", g, da.ptr, db.ptr,
                       c.residual ? dc.ptr : nullptr, dd.ptr, hasBias ? dbias.ptr : nullptr,
                       c.alpha, (size_t)32 << 20, ctx.state.stream);
  });
  char what[160];
  snprintf(what, sizeof(what), "gemm %s %s%s", typeName<T>(), c.name,
           capture ? " (graph-captured)" : "");
  if (status) {
    printf("%-70s FAILED: %s\n", what, ctx.error);
    ++failures;
    return;
  }
  CHECK_CUDA(cudaStreamSynchronize(ctx.state.stream));
  std::vector<T> out = dd.read();
  std::vector<double> got, ref;
  for (int64_t bi = 0; bi < c.batch; ++bi)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < c.k; ++p) {
          double av = c.transA ? ha[bi * strideA + p * lda + i] : ha[bi * strideA + i * lda + p];
          double bv = c.transB ? hb[bi * strideB + j * ldb + p] : hb[bi * strideB + p * ldb + j];
          acc += av * bv;
        }
        double v = c.alpha * acc;
        if (c.residual)
          v += hc[bi * strideC + i * ldc + j];
        if (hasBias)
          v += hbias[j];
        int act = c.epilogue & ~1;
        if (act == SLUICE_EPI_RELU)
          v = v > 0 ? v : 0;
        else if (act == SLUICE_EPI_GELU)
          v = geluTanh(v);
        ref.push_back(v);
        got.push_back(fromStorage(out[bi * strideD + i * ldd + j]));
      }
  report(what, relL2(got, ref), tolerance<T>());
}

/// The epilogue kernel sluice_gemm runs when cuBLASLt has no algorithm
/// with the epilogue fused (a padded, batched D).
template <typename T> void runEpilogueKernel(Context &ctx, std::mt19937 &rng, int epilogue) {
  const int64_t batch = 3, m = 17, n = 40, ldd = 43, strideD = m * ldd + 5;
  std::vector<double> hd, hbias;
  std::vector<T> d = randomData<T>(rng, batch * strideD, hd);
  std::vector<T> bias = randomData<T>(rng, n, hbias);
  DeviceBuffer<T> dd(d), dbias(bias);
  sluice_gemm_epilogue_kernel<T><<<sluice_grid(batch * m * n, 256), 256, 0, ctx.state.stream>>>(
      dd.ptr, dbias.ptr, epilogue, batch, m, n, ldd, strideD);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaStreamSynchronize(ctx.state.stream));
  std::vector<T> out = dd.read();
  std::vector<double> got, ref;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double v = hd[b * strideD + i * ldd + j];
        if (epilogue & SLUICE_EPI_BIAS)
          v += hbias[j];
        if ((epilogue & ~SLUICE_EPI_BIAS) == SLUICE_EPI_RELU)
          v = v > 0 ? v : 0;
        else if ((epilogue & ~SLUICE_EPI_BIAS) == SLUICE_EPI_GELU)
          v = geluTanh(v);
        ref.push_back(v);
        got.push_back(fromStorage(out[b * strideD + i * ldd + j]));
      }
  char what[160];
  snprintf(what, sizeof(what), "unfused gemm epilogue %s, epilogue %d", typeName<T>(), epilogue);
  report(what, relL2(got, ref), tolerance<T>());
}

const GemmCase kGemmCases[] = {
    {"64x48x32 plain", 64, 48, 32, 1, false, false, 0, 0, 0, false, SLUICE_EPI_NONE, false, 1.0},
    {"odd 37x29x53, padded rows", 37, 29, 53, 1, false, false, 3, 5, 7, false, SLUICE_EPI_NONE,
     false, 1.0},
    {"A transposed", 33, 40, 24, 1, true, false, 1, 0, 0, false, SLUICE_EPI_NONE, false, 1.0},
    {"B transposed (x W^T)", 31, 64, 48, 1, false, true, 0, 2, 0, false, SLUICE_EPI_NONE, false,
     1.0},
    {"both transposed", 16, 24, 40, 1, true, true, 0, 0, 0, false, SLUICE_EPI_NONE, false, 1.0},
    {"batched 4", 20, 18, 22, 4, false, false, 0, 0, 0, false, SLUICE_EPI_NONE, false, 1.0},
    {"batched 3, broadcast B", 17, 33, 15, 3, false, false, 0, 0, 0, true, SLUICE_EPI_NONE, false,
     1.0},
    {"batched 5, transposed B (attention scores), alpha", 24, 24, 16, 5, false, true, 0, 0, 0,
     false, SLUICE_EPI_NONE, false, 0.25},
    {"bias", 64, 96, 80, 1, false, false, 0, 0, 0, false, SLUICE_EPI_BIAS, false, 1.0},
    {"bias + relu", 50, 72, 64, 1, false, false, 0, 0, 0, false, SLUICE_EPI_RELU_BIAS, false, 1.0},
    {"bias + gelu(tanh)", 40, 128, 64, 1, false, true, 0, 0, 0, false, SLUICE_EPI_GELU_BIAS, false,
     1.0},
    {"relu", 32, 32, 32, 1, false, false, 0, 0, 0, false, SLUICE_EPI_RELU, false, 1.0},
    {"gelu(tanh)", 32, 40, 24, 1, false, false, 0, 0, 0, false, SLUICE_EPI_GELU, false, 1.0},
    {"residual (beta = 1)", 48, 64, 32, 1, false, false, 0, 0, 0, false, SLUICE_EPI_NONE, true,
     1.0},
    {"bias + residual + relu, alpha 0.5", 48, 64, 32, 1, false, true, 0, 0, 0, false,
     SLUICE_EPI_RELU_BIAS, true, 0.5},
    {"batched 2, broadcast B, bias", 12, 64, 32, 2, false, false, 0, 0, 0, true, SLUICE_EPI_BIAS,
     false, 1.0},
    {"vector-matrix 1x50x70", 1, 50, 70, 1, false, false, 0, 0, 0, false, SLUICE_EPI_NONE, false,
     1.0},
    {"matrix-vector 50x1x70", 50, 1, 70, 1, false, false, 0, 0, 0, false, SLUICE_EPI_NONE, false,
     1.0},
};

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

struct ConvCase {
  const char *name;
  bool transpose;
  int spatial;
  int64_t n, c, k, group;
  int64_t in[3], kernel[3], pad[3], stride[3], dilation[3], outputPadding[3];
  bool bias;
  bool asymmetric = false; ///< padEnd differs from pad (else padEnd = pad)
  int64_t padEnd[3] = {0, 0, 0};
};

template <typename T> int32_t convType() {
  return gemmType<T>() == SLUICE_GEMM_F32   ? SLUICE_CONV_F32
         : gemmType<T>() == SLUICE_GEMM_F64 ? SLUICE_CONV_F64
         : gemmType<T>() == SLUICE_GEMM_F16 ? SLUICE_CONV_F16
                                            : SLUICE_CONV_BF16;
}

template <typename T>
void runConv(Context &ctx, std::mt19937 &rng, const ConvCase &c, bool capture = false) {
  SluiceConvShape s = {};
  s.type = convType<T>();
  s.transpose = c.transpose;
  s.spatial = c.spatial;
  s.n = c.n;
  s.c = c.c;
  s.k = c.k;
  s.group = c.group;
  int64_t inCount = 1, outCount = 1, kerCount = 1;
  for (int d = 0; d < c.spatial; ++d) {
    s.in[d] = c.in[d];
    s.kernel[d] = c.kernel[d];
    s.pad[d] = c.pad[d];
    s.pad_end[d] = c.asymmetric ? c.padEnd[d] : c.pad[d];
    s.output_padding[d] = c.outputPadding[d];
    s.stride[d] = c.stride[d];
    s.dilation[d] = c.dilation[d];
    int64_t span = (c.kernel[d] - 1) * c.dilation[d] + 1;
    s.out[d] = c.transpose ? c.stride[d] * (c.in[d] - 1) + c.outputPadding[d] + span - s.pad[d] -
                                 s.pad_end[d]
                           : (c.in[d] + s.pad[d] + s.pad_end[d] - span) / c.stride[d] + 1;
    inCount *= s.in[d];
    outCount *= s.out[d];
    kerCount *= s.kernel[d];
  }
  // Weight: forward [k, c/group, K...]; transposed [c, k/group, K...].
  int64_t wOuter = c.transpose ? c.c : c.k, wInner = c.transpose ? c.k / c.group : c.c / c.group;
  std::vector<double> hx, hw, hb;
  std::vector<T> x = randomData<T>(rng, c.n * c.c * inCount, hx);
  std::vector<T> w = randomData<T>(rng, wOuter * wInner * kerCount, hw);
  std::vector<T> b = randomData<T>(rng, c.k, hb);
  DeviceBuffer<T> dx(x), dw(w), db(b), dy(c.n * c.k * outCount);
  int32_t status = enqueue(ctx, capture, [&] {
    return sluice_conv<T>(&ctx.args, &ctx.state, "conv_test", s, dx.ptr, dw.ptr,
                          c.bias ? db.ptr : nullptr, dy.ptr, (size_t)64 << 20, ctx.state.stream);
  });
  char what[160];
  snprintf(what, sizeof(what), "%s %s %s%s", c.transpose ? "conv_transpose" : "conv", typeName<T>(),
           c.name, capture ? " (graph-captured)" : "");
  if (status) {
    printf("%-70s FAILED: %s\n", what, ctx.error);
    ++failures;
    return;
  }
  CHECK_CUDA(cudaStreamSynchronize(ctx.state.stream));
  std::vector<T> out = dy.read();
  // Reference: scatter form for both (forward gathers the same sums).
  std::vector<double> ref(c.n * c.k * outCount, 0.0);
  int64_t inDims[3] = {1, 1, 1}, outDims[3] = {1, 1, 1}, kDims[3] = {1, 1, 1};
  int64_t st[3] = {1, 1, 1}, dil[3] = {1, 1, 1}, pad[3] = {0, 0, 0};
  for (int d = 0; d < c.spatial; ++d) {
    int e = 3 - c.spatial + d;
    inDims[e] = s.in[d];
    outDims[e] = s.out[d];
    kDims[e] = s.kernel[d];
    st[e] = s.stride[d];
    dil[e] = s.dilation[d];
    pad[e] = s.pad[d];
  }
  int64_t cg = c.c / c.group, kg = c.k / c.group;
  for (int64_t ni = 0; ni < c.n; ++ni)
    for (int64_t g = 0; g < c.group; ++g)
      for (int64_t ci = 0; ci < cg; ++ci)
        for (int64_t ko = 0; ko < kg; ++ko)
          for (int64_t kz = 0; kz < kDims[0]; ++kz)
            for (int64_t ky = 0; ky < kDims[1]; ++ky)
              for (int64_t kx = 0; kx < kDims[2]; ++kx) {
                int64_t cin = g * cg + ci, cout = g * kg + ko;
                double wv = c.transpose
                                ? hw[((cin * kg + ko) * kDims[0] + kz) * kDims[1] * kDims[2] +
                                     ky * kDims[2] + kx]
                                : hw[((cout * cg + ci) * kDims[0] + kz) * kDims[1] * kDims[2] +
                                     ky * kDims[2] + kx];
                if (!c.transpose) {
                  for (int64_t oz = 0; oz < outDims[0]; ++oz)
                    for (int64_t oy = 0; oy < outDims[1]; ++oy)
                      for (int64_t ox = 0; ox < outDims[2]; ++ox) {
                        int64_t iz = oz * st[0] - pad[0] + kz * dil[0];
                        int64_t iy = oy * st[1] - pad[1] + ky * dil[1];
                        int64_t ix = ox * st[2] - pad[2] + kx * dil[2];
                        if (iz < 0 || iz >= inDims[0] || iy < 0 || iy >= inDims[1] || ix < 0 ||
                            ix >= inDims[2])
                          continue;
                        ref[((ni * c.k + cout) * outDims[0] + oz) * outDims[1] * outDims[2] +
                            oy * outDims[2] + ox] +=
                            wv * hx[((ni * c.c + cin) * inDims[0] + iz) * inDims[1] * inDims[2] +
                                    iy * inDims[2] + ix];
                      }
                } else {
                  for (int64_t iz = 0; iz < inDims[0]; ++iz)
                    for (int64_t iy = 0; iy < inDims[1]; ++iy)
                      for (int64_t ix = 0; ix < inDims[2]; ++ix) {
                        int64_t oz = iz * st[0] - pad[0] + kz * dil[0];
                        int64_t oy = iy * st[1] - pad[1] + ky * dil[1];
                        int64_t ox = ix * st[2] - pad[2] + kx * dil[2];
                        if (oz < 0 || oz >= outDims[0] || oy < 0 || oy >= outDims[1] || ox < 0 ||
                            ox >= outDims[2])
                          continue;
                        ref[((ni * c.k + cout) * outDims[0] + oz) * outDims[1] * outDims[2] +
                            oy * outDims[2] + ox] +=
                            wv * hx[((ni * c.c + cin) * inDims[0] + iz) * inDims[1] * inDims[2] +
                                    iy * inDims[2] + ix];
                      }
                }
              }
  if (c.bias)
    for (int64_t ni = 0; ni < c.n; ++ni)
      for (int64_t ko = 0; ko < c.k; ++ko)
        for (int64_t sp = 0; sp < outCount; ++sp)
          ref[(ni * c.k + ko) * outCount + sp] += hb[ko];
  std::vector<double> got(out.size());
  for (size_t i = 0; i < out.size(); ++i)
    got[i] = fromStorage(out[i]);
  report(what, relL2(got, ref), tolerance<T>());
}

// clang-format off
const ConvCase kConvCases[] = {
    // name, transpose, spatial, n, c, k, group, in, kernel, pad (begin), stride, dilation,
    // output padding, bias[, asymmetric, pad end]
    {"2-D 3x3 pad 1", false, 2, 2, 8, 16, 1, {17, 19}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {}, true},
    {"2-D stride 2, dilation 2", false, 2, 1, 6, 10, 1, {21, 18}, {3, 3}, {2, 2}, {2, 2}, {2, 2}, {}, false},
    {"2-D groups 4, 5x3", false, 2, 2, 16, 8, 4, {12, 15}, {5, 3}, {2, 1}, {1, 2}, {1, 1}, {}, true},
    {"2-D depthwise", false, 2, 1, 12, 12, 12, {14, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {}, true},
    {"2-D 1x1", false, 2, 3, 32, 24, 1, {7, 9}, {1, 1}, {0, 0}, {1, 1}, {1, 1}, {}, true},
    {"1-D k5 stride 2", false, 1, 2, 4, 6, 1, {40}, {5}, {2}, {2}, {1}, {}, true},
    {"1-D grouped dilated", false, 1, 1, 8, 8, 2, {33}, {3}, {2}, {1}, {2}, {}, false},
    {"3-D 3x3x3", false, 3, 1, 4, 6, 1, {6, 7, 8}, {3, 3, 3}, {1, 1, 1}, {1, 2, 1}, {1, 1, 1}, {}, true},
    {"2-D SAME_UPPER stride 2 (pads 0,1 / 1,2)", false, 2, 2, 6, 8, 1, {16, 15}, {3, 4}, {0, 1}, {2, 2}, {1, 1}, {}, true, true, {1, 2}},
    {"1-D asymmetric grouped", false, 1, 1, 8, 4, 2, {21}, {4}, {2}, {1}, {1}, {}, false, true, {1}},
    {"2-D stride 2, output padding 1", true, 2, 2, 8, 6, 1, {7, 9}, {3, 3}, {1, 1}, {2, 2}, {1, 1}, {1, 1}, true},
    {"2-D groups 2", true, 2, 1, 8, 4, 2, {6, 6}, {4, 4}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, false},
    {"1-D stride 3, dilation 2", true, 1, 2, 5, 7, 1, {11}, {3}, {0}, {3}, {2}, {2}, true},
    {"2-D asymmetric pads (output_shape)", true, 2, 2, 4, 6, 1, {8, 7}, {3, 3}, {0, 1}, {2, 2}, {1, 1}, {1, 0}, true, true, {1, 2}},
    {"1-D negative pads (bias-only border)", true, 1, 1, 3, 5, 1, {9}, {3}, {-1}, {2}, {1}, {0}, true, true, {-2}},
    {"2-D output padding >= stride (dilation 3)", true, 2, 1, 4, 4, 1, {5, 6}, {3, 2}, {1, 0}, {1, 2}, {3, 3}, {2, 1}, true},
};
// clang-format on

} // namespace

int main() {
  if (sluice_gpu_test::noDevice())
    return sluice_gpu_test::kSkipped;
  Context ctx;
  std::mt19937 rng(1234);
  for (const GemmCase &c : kGemmCases) {
    runGemm<float>(ctx, rng, c);
    runGemm<sluice_f16>(ctx, rng, c);
    runGemm<sluice_bf16>(ctx, rng, c);
    if (c.epilogue == SLUICE_EPI_NONE)
      runGemm<double>(ctx, rng, c); // f64 groups fuse alpha and residual only
  }
  for (int epilogue = SLUICE_EPI_BIAS; epilogue <= SLUICE_EPI_GELU_BIAS; ++epilogue) {
    runEpilogueKernel<float>(ctx, rng, epilogue);
    runEpilogueKernel<sluice_f16>(ctx, rng, epilogue);
    runEpilogueKernel<sluice_bf16>(ctx, rng, epilogue);
  }
  for (const ConvCase &c : kConvCases) {
    runConv<float>(ctx, rng, c);
    runConv<sluice_f16>(ctx, rng, c);
    runConv<sluice_bf16>(ctx, rng, c);
    runConv<double>(ctx, rng, c);
  }
  // A second run of one case hits the plan cache.
  runGemm<float>(ctx, rng, kGemmCases[9]);
  runConv<float>(ctx, rng, kConvCases[0]);
  // Problems first seen inside a stream capture: the plan (heuristics,
  // descriptors) is made while capturing, as on a captured first run.
  // clang-format off
  const GemmCase capturedGemm = {"72x88x56 bias + gelu(tanh) + residual", 72, 88, 56, 2, false, true, 0, 0, 0, true, SLUICE_EPI_GELU_BIAS, true, 1.0};
  const ConvCase capturedConv = {"2-D 5x5 stride 2, groups 2", false, 2, 2, 6, 10, 2, {23, 17}, {5, 5}, {2, 2}, {2, 2}, {1, 1}, {}, true};
  const ConvCase capturedPadded = {"2-D asymmetric pads", false, 2, 1, 4, 4, 1, {11, 13}, {2, 3}, {0, 1}, {1, 2}, {1, 1}, {}, true, true, {1, 0}};
  const ConvCase capturedCrop = {"transposed asymmetric pads", true, 2, 1, 4, 6, 1, {5, 6}, {3, 3}, {1, 0}, {2, 2}, {1, 1}, {0, 1}, true, true, {0, 2}};
  // clang-format on
  runGemm<float>(ctx, rng, capturedGemm, true);
  runGemm<sluice_f16>(ctx, rng, capturedGemm, true);
  runConv<float>(ctx, rng, capturedConv, true);
  runConv<sluice_bf16>(ctx, rng, capturedConv, true);
  runConv<float>(ctx, rng, capturedPadded, true);
  runConv<float>(ctx, rng, capturedCrop, true);
  if (failures)
    printf("%d case(s) FAILED\n", failures);
  else
    printf("all cases passed\n");
  return failures ? 1 : 0;
}
