//===- quant_test.cu - the cuda target's quantized GEMMs vs the host -------===//
//
// Runs the quantized launches of sluice_gen/cuda_quant.cuh and
// cuda_quant_fp8.cuh as a generated bundle would, on random data, against
// the host reference of test/common/QuantReference.h:
//   - per-tensor quantization (f32/f16 -> u8/s8, the IMMA shift): exact;
//   - the int8 GEMM on the IMMA path (u8 and s8 activations, host and
//     device column sums, a batch folded into M, a batched B, the
//     dequantizing, requantizing and raw epilogues, a first run under
//     stream capture) and on the CUDA-core path (K not a multiple of 4, B
//     stored [K, N]), and 2-D convolutions (im2col + GEMM): int32 sums
//     exact, so the epilogue's results match the host's same fmaf bit for
//     bit; each case also checks which path ran (the plan cache's "qlt:"
//     entry);
//   - the weight-only GEMM: the small-M kernel (M = 1, 3, 16; int8 per
//     column and int4 in blocks of 128 or 32; f16 and f32 activations;
//     decoding shapes with split K; odd N) at relative L2 1e-5, the large-M
//     path (dequantize + cuBLASLt) at 1e-5 for f32 and 2e-3 for f16 (its
//     dequantized weights are rounded to f16), and the chunked fallback
//     when the workspace is too small;
//   - the fp8 GEMM (sm_89 and newer; skipped with a line below): f16, bf16,
//     f32 and E4M3 outputs, bias, scales, amax.
// Then it prints (does not judge) timings of decoding-sized weight-only
// GEMMs and BERT-sized int8 GEMMs for docs/quantization.md. Exits 77
// (skipped) without a GPU, 1 on any failure.
//
//===----------------------------------------------------------------------===//

#include "sluice_gen/cuda_quant_fp8.cuh"

#include "GpuTest.h"
#include "common/QuantReference.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace sluice_quant_test;
using sluice_gpu_test::DeviceBuffer;

int failures = 0;

void report(const std::string &what, bool ok, const std::string &detail) {
  printf("%-72s %s %s\n", what.c_str(), ok ? "ok" : "FAILED", detail.c_str());
  if (!ok)
    ++failures;
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
    state.workspaceBytes = 128u << 20;
    CHECK_CUDA(cudaMalloc(&state.workspace, state.workspaceBytes));
    memset(&args, 0, sizeof(args));
    args.error = error;
    args.error_size = sizeof(error);
    args.stream = state.stream;
    args.device_state = &state;
    error[0] = 0;
  }
  ~Context() {
    state.algorithms.clear();
    cudaFree(state.workspace);
    cublasLtDestroy(state.lt);
    cudaStreamDestroy(state.stream);
  }
  /// Whether a cached quantized cuBLASLt plan with an algorithm exists
  /// (the IMMA / large-M / fp8 path ran), then forgets the plans.
  bool ranLt() {
    bool found = false;
    for (auto &entry : state.algorithms)
      if (entry.first.rfind("qlt:", 0) == 0)
        found |= ((SluiceQuantLtPlan *)entry.second.get())->found;
    state.algorithms.clear();
    return found;
  }
};

/// Runs `call` directly or captured into a graph then launched, and
/// synchronizes; the call's status, or 1 when the capture failed.
int32_t enqueue(Context &ctx, bool capture, const std::function<int32_t()> &call) {
  cudaStream_t stream = ctx.state.stream;
  int32_t status = 0;
  if (!capture) {
    status = call();
  } else {
    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    status = call();
    cudaGraph_t graph = nullptr;
    cudaError_t err = cudaStreamEndCapture(stream, &graph);
    cudaGraphExec_t exec = nullptr;
    if (!status && err == cudaSuccess)
      err = cudaGraphInstantiate(&exec, graph, 0);
    if (!status && err == cudaSuccess)
      err = cudaGraphLaunch(exec, stream);
    if (exec)
      cudaGraphExecDestroy(exec);
    if (graph)
      cudaGraphDestroy(graph);
    if (!status && err != cudaSuccess) {
      snprintf(ctx.error, sizeof(ctx.error), "graph capture failed: %s", cudaGetErrorString(err));
      status = 1;
    }
  }
  cudaError_t err = cudaStreamSynchronize(stream);
  if (!status && err != cudaSuccess) {
    snprintf(ctx.error, sizeof(ctx.error), "%s", cudaGetErrorString(err));
    status = 1;
  }
  return status;
}

//===----------------------------------------------------------------------===//
// Quantize
//===----------------------------------------------------------------------===//

template <typename TX, typename TQ> void runQuantize(Context &ctx, bool shift) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-40.0f, 40.0f);
  const int64_t n = 100003;
  const float scale = 0.125f;
  const int32_t zp = shift || (TQ)-1 > (TQ)0 ? 131 : -7;
  std::vector<TX> x(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = SLUICE_STORE(TX, i % 2 ? dist(rng) : std::round(dist(rng) * 4.0f) / 4.0f * scale);
  DeviceBuffer<TX> dx(x);
  DeviceBuffer<TQ> dq(n);
  int32_t status = enqueue(ctx, false, [&] {
    return sluice_quantize(&ctx.args, "quantize", dx.ptr, dq.ptr, n, scale, zp, shift,
                           ctx.state.stream);
  });
  const std::vector<TQ> q = dq.read();
  const bool u8 = shift || (TQ)-1 > (TQ)0;
  int64_t bad = 0;
  for (int64_t i = 0; i < n && !status; ++i) {
    const int32_t ref = quantizeRef(sluice_load(x[i]), scale, zp, u8 ? 0 : -128, u8 ? 255 : 127);
    bad += (int32_t)q[i] != ref - (shift ? 128 : 0);
  }
  char what[128];
  snprintf(what, sizeof(what), "quantize %s -> %s%s", sizeof(TX) == 4 ? "f32" : "f16",
           (TQ)-1 > (TQ)0 ? "u8" : "s8", shift ? " (IMMA shift)" : "");
  report(what, !status && bad == 0,
         status ? ctx.error : (std::to_string(bad) + " of " + std::to_string(n) + " differ"));
}

//===----------------------------------------------------------------------===//
// int8 GEMM
//===----------------------------------------------------------------------===//

enum class Int8Epi { Dequant, Requant, Raw };

struct Int8Case {
  const char *name;
  int64_t batch, m, n, k;
  bool aUnsigned;
  int32_t zA;
  int32_t bLayout;
  bool sharedB, hostColsum;
  Int8Epi epi;
  bool expectLt, capture;
};

void runInt8(Context &ctx, const Int8Case &c) {
  std::mt19937 rng(7);
  const int64_t lda = c.k, strideA = c.m * lda;
  const bool nk = c.bLayout == SLUICE_INT8_B_NK;
  const int64_t ldb = nk ? c.k : c.n, bMatrix = c.n * c.k;
  const int64_t strideB = c.sharedB ? 0 : bMatrix;
  std::vector<uint8_t> a(c.batch * strideA);
  for (auto &v : a)
    v = (uint8_t)(rng() % 256);
  std::vector<int8_t> b((c.sharedB ? 1 : c.batch) * bMatrix);
  for (auto &v : b)
    v = (int8_t)(int)(rng() % 255 - 127);
  const int64_t sbk = nk ? 1 : ldb, sbn = nk ? ldb : 1;
  const std::vector<int32_t> acc =
      c.aUnsigned ? int8GemmRef(a.data(), lda, strideA, b.data(), sbk, sbn, strideB, c.zA, c.batch,
                                c.m, c.n, c.k)
                  : int8GemmRef((const int8_t *)a.data(), lda, strideA, b.data(), sbk, sbn, strideB,
                                c.zA, c.batch, c.m, c.n, c.k);
  std::vector<int32_t> colsum((c.sharedB ? 1 : c.batch) * c.n);
  for (int64_t bi = 0; bi < (c.sharedB ? 1 : c.batch); ++bi)
    sluice_int8_colsums(c.k, c.n, b.data() + bi * bMatrix, sbk, sbn, colsum.data() + bi * c.n);
  std::vector<float> colScale(c.n), bias(c.n);
  for (int64_t j = 0; j < c.n; ++j) {
    colScale[j] = 0.001f * (1 + j % 7);
    bias[j] = 0.5f - 0.01f * (float)j;
  }
  const float scale = 0.02f, outScale = 0.05f;
  const int32_t outZp = 120;
  DeviceBuffer<uint8_t> da(a);
  DeviceBuffer<int8_t> db(b);
  DeviceBuffer<int32_t> dcol(colsum);
  DeviceBuffer<float> dscale(colScale), dbias(bias);
  const int64_t total = c.batch * c.m * c.n;
  DeviceBuffer<float> dy(total);
  DeviceBuffer<uint8_t> dq(total);
  DeviceBuffer<int32_t> draw(total);
  SluiceInt8GemmShape g{c.m,         c.n,  c.k,     lda,     ldb,    c.bLayout,
                        c.aUnsigned, c.zA, c.batch, strideA, strideB};
  const int32_t *colsumPtr = c.hostColsum ? dcol.ptr : nullptr;
  const size_t workspace = (size_t)sluice_int8_gemm_workspace(g);
  ctx.state.algorithms.clear();
  int32_t status = enqueue(ctx, c.capture, [&]() -> int32_t {
    switch (c.epi) {
    case Int8Epi::Dequant: {
      SluiceInt8Dequant<float> e{dy.ptr,     c.n,     c.m * c.n, c.m, scale,
                                 dscale.ptr, nullptr, dbias.ptr, true};
      return sluice_int8_gemm(&ctx.args, &ctx.state, "int8", g, da.ptr, db.ptr, colsumPtr, e,
                              workspace, ctx.state.stream);
    }
    case Int8Epi::Requant: {
      SluiceInt8Requant<uint8_t> e{dq.ptr,    c.n,      c.m * c.n, scale, dscale.ptr,
                                   dbias.ptr, outScale, outZp,     outZp, 255};
      return sluice_int8_gemm(&ctx.args, &ctx.state, "int8", g, da.ptr, db.ptr, colsumPtr, e,
                              workspace, ctx.state.stream);
    }
    default: {
      SluiceInt8Store e{draw.ptr, c.n, c.m * c.n};
      return sluice_int8_gemm(&ctx.args, &ctx.state, "int8", g, da.ptr, db.ptr, colsumPtr, e,
                              workspace, ctx.state.stream);
    }
    }
  });
  const bool lt = ctx.ranLt();
  int64_t bad = 0;
  if (!status) {
    const std::vector<float> y = dy.read();
    const std::vector<uint8_t> q = dq.read();
    const std::vector<int32_t> raw = draw.read();
    for (int64_t e = 0; e < total; ++e) {
      const int64_t j = e % c.n;
      const float ref = fmaf((float)acc[e], scale * colScale[j], bias[j]);
      switch (c.epi) {
      case Int8Epi::Dequant:
        bad += y[e] != (ref > 0.0f ? ref : 0.0f);
        break;
      case Int8Epi::Requant:
        bad += (int32_t)q[e] != quantizeRef(ref, outScale, outZp, outZp, 255);
        break;
      default:
        bad += raw[e] != acc[e];
      }
    }
  }
  char what[160];
  snprintf(what, sizeof(what), "int8 %s (%s path)", c.name, lt ? "IMMA" : "CUDA-core");
  report(what, !status && bad == 0 && lt == c.expectLt,
         status ? ctx.error
                : std::to_string(bad) + " of " + std::to_string(total) + " differ" +
                      (lt == c.expectLt ? ""
                       : c.expectLt     ? "; expected IMMA"
                                        : "; expected CUDA cores"));
}

// clang-format off
const Int8Case kInt8Cases[] = {
  {"u8 x s8 [N,K] 37x64x128, host colsum, dequant+relu", 1, 37, 64, 128, true, 131, SLUICE_INT8_B_NK, true, true, Int8Epi::Dequant, true, false},
  {"u8 batch 3 folded into M, device colsum, requant u8", 3, 21, 96, 64, true, 77, SLUICE_INT8_B_NK, true, false, Int8Epi::Requant, true, false},
  {"s8 batched B 2x33x40x256, raw int32", 2, 33, 40, 256, false, -3, SLUICE_INT8_B_NK, false, false, Int8Epi::Raw, true, false},
  {"u8 128x768x768 (BERT-sized), first run captured", 1, 128, 768, 768, true, 128, SLUICE_INT8_B_NK, true, true, Int8Epi::Dequant, true, true},
  {"u8 K=45 (not a multiple of 4)", 1, 37, 64, 45, true, 131, SLUICE_INT8_B_NK, true, true, Int8Epi::Dequant, false, false},
  {"s8 x s8 B [K,N] (attention), batch 2", 2, 17, 50, 64, false, 0, SLUICE_INT8_B_KN, false, false, Int8Epi::Raw, false, false},
  {"u8 N=70 (not a multiple of 4), requant", 1, 5, 70, 32, true, 10, SLUICE_INT8_B_NK, true, true, Int8Epi::Requant, false, false},
};
// clang-format on

/// The int32 sums of a convolution into NCHW: the functor a bundle's
/// generated one stands for (b: group, i: image * OH * OW + pixel, j:
/// channel in the group).
struct ConvStore {
  int32_t *d;
  int64_t pixels, channels, groupChannels;
  __device__ void operator()(int64_t b, int64_t i, int64_t j, int32_t acc) const {
    const int64_t n = i / pixels, p = i % pixels;
    d[(n * channels + b * groupChannels + j) * pixels + p] = acc;
  }
};

void runInt8Conv(Context &ctx, const SluiceInt8ConvShape &c, const char *name, bool expectLt) {
  std::mt19937 rng(23);
  const int64_t cg = c.channels / c.groups, mg = c.outChannels / c.groups;
  std::vector<uint8_t> x(c.images * c.channels * c.height * c.width);
  for (auto &v : x)
    v = (uint8_t)(rng() % 256);
  std::vector<int8_t> w(c.outChannels * cg * c.kh * c.kw);
  for (auto &v : w)
    v = (int8_t)(int)(rng() % 255 - 127);
  const int64_t pixels = c.outH * c.outW, total = c.images * c.outChannels * pixels;
  // Direct convolution; padding taps read the zero point (contribute 0).
  std::vector<int32_t> ref(total);
  for (int64_t n = 0; n < c.images; ++n)
    for (int64_t m = 0; m < c.outChannels; ++m)
      for (int64_t p = 0; p < pixels; ++p) {
        int64_t sum = 0;
        const int64_t oh = p / c.outW, ow = p % c.outW, g = m / mg;
        for (int64_t ch = 0; ch < cg; ++ch)
          for (int64_t i = 0; i < c.kh; ++i)
            for (int64_t j = 0; j < c.kw; ++j) {
              const int64_t ih = oh * c.strideH - c.padT + i * c.dilH;
              const int64_t iw = ow * c.strideW - c.padL + j * c.dilW;
              if (ih < 0 || ih >= c.height || iw < 0 || iw >= c.width)
                continue;
              const int64_t xv =
                  c.aUnsigned
                      ? (int64_t)x[((n * c.channels + g * cg + ch) * c.height + ih) * c.width + iw]
                      : (int64_t)(int8_t)
                            x[((n * c.channels + g * cg + ch) * c.height + ih) * c.width + iw];
              sum += (xv - c.aZeroPoint) * w[((m * cg + ch) * c.kh + i) * c.kw + j];
            }
        ref[(n * c.outChannels + m) * pixels + p] = (int32_t)sum;
      }
  DeviceBuffer<uint8_t> dx(x);
  DeviceBuffer<int8_t> dw(w);
  DeviceBuffer<int32_t> dy(total);
  ctx.state.algorithms.clear();
  int32_t status = enqueue(ctx, false, [&] {
    return sluice_int8_conv(&ctx.args, &ctx.state, "conv", c, dx.ptr, dw.ptr,
                            ConvStore{dy.ptr, pixels, c.outChannels, mg},
                            (size_t)sluice_int8_conv_workspace(c), ctx.state.stream);
  });
  const bool lt = ctx.ranLt();
  int64_t bad = 0;
  if (!status) {
    const std::vector<int32_t> y = dy.read();
    for (int64_t e = 0; e < total; ++e)
      bad += y[e] != ref[e];
  }
  char what[160];
  snprintf(what, sizeof(what), "int8 conv %s (%s path)", name, lt ? "IMMA" : "CUDA-core");
  report(what, !status && bad == 0 && lt == expectLt,
         status ? ctx.error
                : std::to_string(bad) + " of " + std::to_string(total) + " differ" +
                      (lt == expectLt ? "" : " (wrong path)"));
}

//===----------------------------------------------------------------------===//
// Weight-only GEMM
//===----------------------------------------------------------------------===//

struct WonlyCase {
  const char *name;
  int bits;
  int64_t m, n, k, group;
  bool half;
  bool expectLt;
  size_t workspace;         // 0: sluice_wonly_workspace
  bool floatScales = false; // f32 scales (ONNX Runtime's QDQ), else f16
};

template <typename TA, typename TS> void runWonlyTyped(Context &ctx, const WonlyCase &c) {
  std::mt19937 rng(13);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  const int64_t lda = c.k, groups = (c.k + c.group - 1) / c.group;
  std::vector<TA> a(c.m * lda);
  std::vector<double> ad(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = SLUICE_STORE(TA, dist(rng));
    ad[i] = sluice_load(a[i]);
  }
  std::vector<int32_t> q(c.k * c.n);
  std::vector<int8_t> q8(q.size());
  for (size_t i = 0; i < q.size(); ++i) {
    q[i] = c.bits == 8 ? (int32_t)(rng() % 255) - 127 : (int32_t)(rng() % 16) - 8;
    q8[i] = (int8_t)q[i];
  }
  std::vector<uint8_t> b;
  if (c.bits == 8) {
    b.assign((const uint8_t *)q8.data(), (const uint8_t *)q8.data() + q8.size());
  } else {
    b.resize((q8.size() + 1) / 2);
    sluice_int4_pack(q8.data(), (int64_t)q8.size(), b.data());
  }
  std::vector<TS> scales(groups * c.n);
  std::vector<double> sd(scales.size());
  for (size_t i = 0; i < scales.size(); ++i) {
    scales[i] = SLUICE_STORE(TS, (float)(0.01 + 0.01 * (dist(rng) + 1.0)));
    sd[i] = sluice_load(scales[i]);
  }
  std::vector<float> bias(c.n);
  for (int64_t j = 0; j < c.n; ++j)
    bias[j] = 0.1f * (float)(j % 5);
  DeviceBuffer<TA> da(a);
  DeviceBuffer<uint8_t> db(b);
  DeviceBuffer<TS> ds(scales);
  DeviceBuffer<float> dbias(bias), dy(c.m * c.n);
  SluiceWonlyShape g{c.m, c.n, c.k, lda, c.n, c.bits, 1, 0, c.group};
  const size_t workspace =
      c.workspace ? c.workspace : (size_t)sluice_wonly_workspace(g, (int64_t)sizeof(TA));
  ctx.state.algorithms.clear();
  int32_t status = enqueue(ctx, false, [&] {
    SluiceWonlyStore<float> e{dy.ptr, c.n, dbias.ptr, false};
    return sluice_wonly_gemm(&ctx.args, &ctx.state, "wonly", g, da.ptr, db.ptr, ds.ptr, e,
                             workspace, ctx.state.stream);
  });
  const bool lt = ctx.ranLt();
  std::vector<double> ref = wonlyRef(ad, lda, q, sd, 0, c.group, c.m, c.n, c.k, sizeof(TS) == 2);
  for (int64_t e = 0; e < c.m * c.n; ++e)
    ref[e] += bias[e % c.n];
  double err = 1;
  if (!status) {
    const std::vector<float> y = dy.read();
    err = relL2(std::vector<double>(y.begin(), y.end()), ref);
  }
  // The large-M path rounds the dequantized weights to A's type.
  const double tol = lt && sizeof(TA) == 2 ? 2e-3 : 1e-5;
  char what[160];
  snprintf(what, sizeof(what), "w%da%s %s (%s)", c.bits, sizeof(TA) == 2 ? "16" : "32", c.name,
           lt ? "dequantize + cuBLASLt" : "GEMV kernel");
  char detail[160];
  snprintf(detail, sizeof(detail), "rel L2 %.3g (tol %.0e)%s", err, tol,
           lt == c.expectLt ? "" : " wrong path");
  report(what, !status && err <= tol && lt == c.expectLt, status ? ctx.error : detail);
}

void runWonly(Context &ctx, const WonlyCase &c) {
  if (c.floatScales)
    c.half ? runWonlyTyped<sluice_f16, float>(ctx, c) : runWonlyTyped<float, float>(ctx, c);
  else
    c.half ? runWonlyTyped<sluice_f16, sluice_f16>(ctx, c)
           : runWonlyTyped<float, sluice_f16>(ctx, c);
}

// clang-format off
const WonlyCase kWonlyCases[] = {
  {"M=1 768x768 per column (GPT-2 decoding)", 8, 1, 768, 768, 768, true, false, 0},
  {"M=1 3072x768 groups of 128, split K", 4, 1, 768, 3072, 128, true, false, 0},
  {"M=3 200x300 groups of 128 (edge tiles)", 4, 3, 200, 300, 128, false, false, 0},
  {"M=16 4096x512 groups of 32", 4, 16, 512, 4096, 32, true, false, 0},
  {"M=5 odd N 75x130", 8, 5, 75, 130, 130, false, false, 0},
  {"M=33 768x768 groups of 128", 4, 33, 768, 768, 128, true, true, 0},
  {"M=64 512x256 per column", 8, 64, 256, 512, 512, false, true, 0},
  {"M=40 no workspace: GEMV over row chunks", 8, 40, 256, 300, 300, true, false, 4096},
  {"M=2 f32 scales (ORT QDQ) 512x256 groups of 64", 4, 2, 256, 512, 64, false, false, 0, true},
  {"M=48 f32 scales 256x128 groups of 32", 4, 48, 128, 256, 32, true, true, 0, true},
};
// clang-format on

//===----------------------------------------------------------------------===//
// fp8 GEMM
//===----------------------------------------------------------------------===//

struct Fp8Case {
  const char *name;
  int64_t m, n, k;
  int32_t out;
  bool bias, amax, dScale;
};

void runFp8(Context &ctx, const Fp8Case &c) {
  std::mt19937 rng(19);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<uint8_t> a(c.m * c.k), b(c.n * c.k);
  std::vector<double> ad(a.size()), bd(b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = floatToE4m3(dist(rng));
    ad[i] = e4m3ToFloat(a[i]);
  }
  for (size_t i = 0; i < b.size(); ++i) {
    b[i] = floatToE4m3(dist(rng));
    bd[i] = e4m3ToFloat(b[i]);
  }
  const float scales[3] = {0.5f, 0.25f, 4.0f}; // A, B, D
  std::vector<double> biasD(c.n);
  std::vector<uint16_t> biasBits(c.n);
  for (int64_t j = 0; j < c.n; ++j) {
    const float v = 0.25f * (float)(j % 9) - 1.0f; // exact in f16 and bf16
    biasBits[j] = c.out == SLUICE_FP8_OUT_F16 ? sluice_to_f16(v).bits : sluice_to_bf16(v).bits;
    biasD[j] = v;
  }
  std::vector<double> ref(c.m * c.n);
  double peak = 0;
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < c.k; ++p)
        s += ad[i * c.k + p] * bd[j * c.k + p];
      s = s * scales[0] * scales[1] + (c.bias ? biasD[j] : 0.0);
      peak = std::max(peak, std::fabs(s));
      ref[i * c.n + j] = s;
    }
  const size_t outBytes = c.out == SLUICE_FP8_OUT_F32 ? 4 : c.out == SLUICE_FP8_OUT_E4M3 ? 1 : 2;
  DeviceBuffer<uint8_t> da(a), db(b), dd(c.m * c.n * outBytes);
  DeviceBuffer<uint16_t> dbias(biasBits);
  DeviceBuffer<float> dscales(scales, 3), damax(1);
  SluiceFp8GemmShape g{c.m, c.n, c.k, c.k, c.k, c.n, c.out, c.bias};
  ctx.state.algorithms.clear();
  int32_t status = enqueue(ctx, false, [&] {
    return sluice_fp8_gemm(&ctx.args, &ctx.state, "fp8", g, da.ptr, db.ptr, dd.ptr,
                           c.bias ? dbias.ptr : nullptr, dscales.ptr, dscales.ptr + 1,
                           c.dScale ? dscales.ptr + 2 : nullptr, c.amax ? damax.ptr : nullptr,
                           (size_t)32 << 20, ctx.state.stream);
  });
  double err = 1, amaxErr = 0;
  if (!status) {
    const std::vector<uint8_t> raw = dd.read();
    std::vector<double> got(c.m * c.n), want = ref;
    for (int64_t e = 0; e < c.m * c.n; ++e) {
      switch (c.out) {
      case SLUICE_FP8_OUT_F32: {
        float v;
        memcpy(&v, raw.data() + 4 * e, 4);
        got[e] = v;
        break;
      }
      case SLUICE_FP8_OUT_E4M3:
        got[e] = e4m3ToFloat(raw[e]);
        want[e] = ref[e] * (c.dScale ? scales[2] : 1.0f);
        break;
      default: {
        uint16_t bits;
        memcpy(&bits, raw.data() + 2 * e, 2);
        got[e] = c.out == SLUICE_FP8_OUT_F16 ? sluice_load(sluice_f16{bits})
                                             : sluice_load(sluice_bf16{bits});
      }
      }
    }
    err = relL2(got, want);
    if (c.amax)
      amaxErr = std::fabs(damax.read()[0] - peak) / peak;
  }
  // Exact products; the output's rounding dominates, except for an f32
  // output: Hopper's fp8 tensor cores add into an accumulator of about 14
  // mantissa bits between cuBLASLt's promotions to f32 (2^-14 = 6e-5; an
  // H200 measured 6.9e-5 at K = 64, 2026-11-27).
  const double tol = c.out == SLUICE_FP8_OUT_F32    ? 2e-4
                     : c.out == SLUICE_FP8_OUT_F16  ? 1e-3
                     : c.out == SLUICE_FP8_OUT_BF16 ? 8e-3
                                                    : 7e-2;
  char detail[160];
  snprintf(detail, sizeof(detail), "rel L2 %.3g (tol %.0e), amax rel err %.3g", err, tol, amaxErr);
  report(std::string("fp8 ") + c.name, !status && err <= tol && amaxErr <= 1e-2,
         status ? ctx.error : detail);
}

// clang-format off
const Fp8Case kFp8Cases[] = {
  {"64x96x128 -> f16 + bias", 64, 96, 128, SLUICE_FP8_OUT_F16, true, false, false},
  {"32x64x256 -> bf16 + bias, amax", 32, 64, 256, SLUICE_FP8_OUT_BF16, true, true, false},
  {"48x128x64 -> f32, amax", 48, 128, 64, SLUICE_FP8_OUT_F32, false, true, false},
  {"48x128x64 -> f32 + bias (bf16)", 48, 128, 64, SLUICE_FP8_OUT_F32, true, false, false},
  {"64x64x128 -> e4m3, D scale, amax", 64, 64, 128, SLUICE_FP8_OUT_E4M3, false, true, true},
};
// clang-format on

//===----------------------------------------------------------------------===//
// Timings (printed for docs/quantization.md; not judged)
//===----------------------------------------------------------------------===//

/// Microseconds per call of `call` (enqueues only), over 50 calls after 5.
double timeIt(Context &ctx, const std::function<int32_t()> &call) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  for (int i = 0; i < 5; ++i)
    if (call())
      return -1;
  CHECK_CUDA(cudaEventRecord(start, ctx.state.stream));
  for (int i = 0; i < 50; ++i)
    call();
  CHECK_CUDA(cudaEventRecord(stop, ctx.state.stream));
  CHECK_CUDA(cudaEventSynchronize(stop));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms * 1000.0 / 50;
}

/// Microseconds of a weight-only GEMM (f16 A, groups of 128 for int4).
double wonlyTime(Context &ctx, int bits, int64_t m, int64_t n, int64_t k) {
  const int64_t bBytes = bits == 8 ? n * k : n * k / 2, groups = bits == 8 ? 1 : k / 128;
  DeviceBuffer<sluice_f16> da(m * k), ds(groups * n);
  DeviceBuffer<uint8_t> db(bBytes);
  DeviceBuffer<float> dy(m * n);
  SluiceWonlyShape g{m, n, k, k, n, bits, 1, 0, bits == 8 ? k : 128};
  const size_t workspace = (size_t)sluice_wonly_workspace(g, 2);
  return timeIt(ctx, [&] {
    SluiceWonlyStore<float> e{dy.ptr, n, nullptr, false};
    return sluice_wonly_gemm(&ctx.args, &ctx.state, "wonly", g, da.ptr, db.ptr, ds.ptr, e,
                             workspace, ctx.state.stream);
  });
}

void timeWonly(Context &ctx, int bits, int64_t m, int64_t n, int64_t k) {
  const int64_t bBytes = bits == 8 ? n * k : n * k / 2, groups = bits == 8 ? 1 : k / 128;
  const double us = wonlyTime(ctx, bits, m, n, k);
  const double bytes = (double)bBytes + groups * n * 2 + m * k * 2 + m * n * 4;
  printf("time: w%da16 M=%lld N=%lld K=%lld: %.1f us, %.0f GB/s\n", bits, (long long)m,
         (long long)n, (long long)k, us, bytes / us * 1e-3);
}

/// Microseconds of an s8 x s8 GEMM (B [N, K]) dequantized to f32.
double int8Time(Context &ctx, int64_t m, int64_t n, int64_t k) {
  DeviceBuffer<int8_t> da(m * k), db(n * k);
  DeviceBuffer<float> dy(m * n);
  SluiceInt8GemmShape g{m, n, k, k, k, SLUICE_INT8_B_NK, 0, 0, 1, 0, 0};
  return timeIt(ctx, [&] {
    SluiceInt8Dequant<float> e{dy.ptr, n, 0, m, 1.0f, nullptr, nullptr, nullptr, false};
    return sluice_int8_gemm(&ctx.args, &ctx.state, "int8", g, da.ptr, db.ptr, nullptr, e,
                            (size_t)sluice_int8_gemm_workspace(g), ctx.state.stream);
  });
}

void timeInt8(Context &ctx, int64_t m, int64_t n, int64_t k) {
  const double us = int8Time(ctx, m, n, k);
  printf("time: int8 s8 M=%lld N=%lld K=%lld (IMMA + epilogue to f32): %.1f us, %.0f TOPS\n",
         (long long)m, (long long)n, (long long)k, us, 2.0 * m * n * k / us * 1e-6);
}

/// The f16 cuBLASLt GEMM Sluice's fp16 bundles run (f32 accumulation,
/// weight [N, K] as a Linear's), the peer of the int8 and fp8 timings.
double timeHalf(Context &ctx, int64_t m, int64_t n, int64_t k) {
  DeviceBuffer<sluice_f16> da(m * k), db(n * k), dy(m * n);
  SluiceGemmShape g{SLUICE_GEMM_F16, 0, 1, m, n, k, k, k, n, n, 1, 0, 0, 0, 0, SLUICE_EPI_NONE, 0};
  return timeIt(ctx, [&] {
    return sluice_gemm(&ctx.args, &ctx.state, "f16", g, da.ptr, db.ptr, nullptr, dy.ptr, nullptr,
                       1.0, (size_t)32 << 20, ctx.state.stream);
  });
}

double timeFp8(Context &ctx, int64_t m, int64_t n, int64_t k) {
  DeviceBuffer<uint8_t> da(m * k), db(n * k);
  DeviceBuffer<sluice_f16> dy(m * n);
  const float ones[2] = {1.0f, 1.0f};
  DeviceBuffer<float> ds(ones, 2);
  SluiceFp8GemmShape g{m, n, k, k, k, n, SLUICE_FP8_OUT_F16, 0};
  return timeIt(ctx, [&] {
    return sluice_fp8_gemm(&ctx.args, &ctx.state, "fp8", g, da.ptr, db.ptr, dy.ptr, nullptr,
                           ds.ptr, ds.ptr + 1, nullptr, nullptr, (size_t)32 << 20,
                           ctx.state.stream);
  });
}

/// BERT-base at batch 32, sequence 128 (M = 4096): the QKV, attention-out,
/// FFN-up and FFN-down GEMMs, each as f16, int8 (IMMA, int32 to f32
/// dequantized in the epilogue) and fp8 (E4M3 in, f16 out) in the same run.
void compareBertGemms(Context &ctx, bool fp8) {
  const int64_t shapes[4][3] = {{4096, 2304, 768}, {4096, 768, 768}, {4096, 3072, 768},
                                {4096, 768, 3072}};
  double sumHalf = 0, sumInt8 = 0, sumFp8 = 0;
  for (const auto &s : shapes) {
    const int64_t m = s[0], n = s[1], k = s[2];
    const double half = timeHalf(ctx, m, n, k);
    const double int8 = int8Time(ctx, m, n, k);
    const double f8 = fp8 ? timeFp8(ctx, m, n, k) : 0;
    sumHalf += half;
    sumInt8 += int8;
    sumFp8 += f8;
    printf("compare: BERT-base b32 GEMM M=%lld N=%lld K=%lld: f16 %.1f us, int8 %.1f us (%.2fx), "
           "fp8 %.1f us (%.2fx)\n",
           (long long)m, (long long)n, (long long)k, half, int8, half / int8, f8,
           f8 > 0 ? half / f8 : 0.0);
  }
  printf("compare: BERT-base b32 layer GEMMs: f16 %.1f us, int8 %.1f us (%.2fx f16), fp8 %.1f us "
         "(%.2fx f16)\n",
         sumHalf, sumInt8, sumHalf / sumInt8, sumFp8, sumFp8 > 0 ? sumHalf / sumFp8 : 0.0);
}

/// GPT-2 decoding (M = 1): w4a16 and w8a16 against the f16 GEMM.
void compareDecodeGemms(Context &ctx) {
  const int64_t shapes[4][2] = {{2304, 768}, {768, 768}, {3072, 768}, {768, 3072}};
  for (const auto &s : shapes) {
    const int64_t n = s[0], k = s[1];
    const double half = timeHalf(ctx, 1, n, k);
    const double w[2] = {wonlyTime(ctx, 4, 1, n, k), wonlyTime(ctx, 8, 1, n, k)};
    printf("compare: GPT-2 decoding GEMM M=1 N=%lld K=%lld: f16 %.1f us, w4a16 %.1f us (%.2fx), "
           "w8a16 %.1f us (%.2fx)\n",
           (long long)n, (long long)k, half, w[0], half / w[0], w[1], half / w[1]);
  }
}

} // namespace

int main() {
  if (sluice_gpu_test::noDevice())
    return sluice_gpu_test::kSkipped;
  Context ctx;
  runQuantize<float, uint8_t>(ctx, false);
  runQuantize<float, int8_t>(ctx, true);
  runQuantize<sluice_f16, int8_t>(ctx, false);
  for (const Int8Case &c : kInt8Cases)
    runInt8(ctx, c);
  // images, C, H, W, M, kh, kw, OH, OW, groups, strides, dilations, pads
  // (top, left), u8, zero point.
  runInt8Conv(ctx, {2, 8, 9, 9, 16, 3, 3, 9, 9, 2, 1, 1, 1, 1, 1, 1, 1, 100},
              "2x8x9x9 -> 16, 3x3 pad 1, 2 groups", true);
  runInt8Conv(ctx, {3, 3, 11, 10, 6, 3, 2, 5, 3, 1, 2, 3, 1, 2, 1, 0, 0, -5},
              "s8 3 channels, strides 2/3, dilation 2 (K = 18: CUDA cores)", false);
  for (const WonlyCase &c : kWonlyCases)
    runWonly(ctx, c);
  int device = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  if (sluice_fp8_supported(device)) {
    for (const Fp8Case &c : kFp8Cases)
      runFp8(ctx, c);
  } else {
    printf("fp8: the GPU is older than sm_89: skipped\n");
  }
  timeWonly(ctx, 4, 1, 4096, 4096);
  timeWonly(ctx, 8, 1, 4096, 4096);
  timeWonly(ctx, 4, 16, 4096, 4096);
  timeWonly(ctx, 4, 1, 768, 3072);
  timeInt8(ctx, 4096, 768, 768);
  timeInt8(ctx, 4096, 3072, 768);
  compareBertGemms(ctx, sluice_fp8_supported(device));
  compareDecodeGemms(ctx);
  printf("%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
