//===- attention_test.cu - the cuda attention kernels vs doubles ----------===//
//
// Runs sluice_attn_mma (FlashAttention-2, mma.sync) and sluice_attn_fma
// (sluice_gen/cuda_attention.h) as generated bundles launch them, on random
// data, and compares every output element with softmax(scale Q K^T + mask) V
// computed on the host in double from the same rounded inputs (tolerance
// 1e-5 for f32, 4e-3 for f16, 3e-2 for bf16; NaN where a row sees no key).
// Covers head dims 64 and 128 on tensor cores, odd and wide head dims on
// FMAs, causal (with Sq != Sk), additive and boolean masks, rotary, a packed
// QKV layout, a transposed K and heads sharing K/V. Exits 77 (skipped)
// without a GPU.
//
//===----------------------------------------------------------------------===//

#include "sluice_gen/cuda_attention.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

int failures = 0;

#define CHECK_CUDA(call)                                                                           \
  do {                                                                                             \
    cudaError_t e = (call);                                                                        \
    if (e != cudaSuccess) {                                                                        \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e));        \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

template <typename T> T store(double x) { return SLUICE_STORE(T, (float)x); }
template <typename T> double load(T x) { return (double)sluice_load(x); }

/// A device copy of `host` that frees itself.
template <typename T> struct DeviceBuffer {
  T *ptr = nullptr;
  size_t count = 0;
  DeviceBuffer(const T *host, size_t n) : count(n) {
    CHECK_CUDA(cudaMalloc(&ptr, std::max<size_t>(n, 1) * sizeof(T)));
    CHECK_CUDA(cudaMemcpy(ptr, host, n * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~DeviceBuffer() { cudaFree(ptr); }
};

struct Problem {
  const char *name;
  std::vector<int64_t> batch;
  int64_t sq, sk, d, dv;
  bool causal = false, rotary = false;
  int mask = 0;             ///< 0 none, 1 additive, 2 boolean
  bool broadcastKV = false; ///< k/v shared by the heads (batch stride 0)
  bool transposedK = false; ///< K stored [B..., D, Sk]
  bool packedQKV = false;   ///< q, k, v in one [B, S, 3 H D] buffer
};

int64_t offsetOf(const sluice_cuda_attn_desc &d, const sluice_cuda_attn_access &a, int64_t b) {
  int64_t off = 0;
  for (int x = d.nbatch - 1; x >= 0; --x) {
    off += (b % d.batch[x]) * a.batch[x];
    b /= d.batch[x];
  }
  return off;
}

sluice_cuda_attn_access contiguous(const std::vector<int64_t> &batch, int64_t rows, int64_t cols,
                                   bool broadcastHeads = false) {
  sluice_cuda_attn_access a{};
  a.col = 1;
  a.row = cols;
  int64_t stride = rows * cols;
  for (int x = (int)batch.size() - 1; x >= 0; --x) {
    const bool bcast = broadcastHeads && x == (int)batch.size() - 1;
    a.batch[x] = bcast ? 0 : stride;
    stride *= bcast ? 1 : batch[x];
  }
  return a;
}

int64_t spanOf(const std::vector<int64_t> &batch, const sluice_cuda_attn_access &a, int64_t rows,
               int64_t cols) {
  int64_t s = (rows - 1) * a.row + (cols - 1) * a.col;
  for (size_t x = 0; x < batch.size(); ++x)
    s += (batch[x] - 1) * a.batch[x];
  return s + 1;
}

/// The launch the emitter (codegen/cuda/groups/Attention.cpp) would write.
template <typename T, typename MT, typename RT>
void launch(const sluice_cuda_attn_desc &d, const T *q, const T *k, const T *v, const MT *m,
            const RT *cs, const RT *sn, T *out, std::string &kernel) {
  bool done = false;
  if constexpr (!std::is_same<T, float>::value) {
    if (!d.rotary && d.d == d.dv && d.d == 64) {
      kernel = "mma<64, 64>";
      sluice_attn_mma<T, MT, 64, 64><<<sluice_attn_blocks(d, 64), 128>>>(d, q, k, v, m, out);
      done = true;
    } else if (!d.rotary && d.d == d.dv && d.d == 128) {
      kernel = "mma<128, 32>";
      sluice_attn_mma<T, MT, 128, 32><<<sluice_attn_blocks(d, 64), 128>>>(d, q, k, v, m, out);
      done = true;
    }
  }
  if (done) {
  } else if (d.d <= 64 && d.dv <= 64) {
    kernel = "fma<64, 64, 4, 32>";
    sluice_attn_fma<T, MT, RT, 64, 64, 4, 32>
        <<<sluice_attn_blocks(d, 16), 128>>>(d, q, k, v, m, cs, sn, out);
  } else if (d.d <= 128 && d.dv <= 128) {
    kernel = "fma<128, 128, 4, 32>";
    sluice_attn_fma<T, MT, RT, 128, 128, 4, 32>
        <<<sluice_attn_blocks(d, 16), 128>>>(d, q, k, v, m, cs, sn, out);
  } else {
    kernel = "fma<256, 256, 2, 16>";
    sluice_attn_fma<T, MT, RT, 256, 256, 2, 16>
        <<<sluice_attn_blocks(d, 8), 128>>>(d, q, k, v, m, cs, sn, out);
  }
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
}

template <typename T> const char *typeName() {
  return std::is_same<T, float>::value        ? "f32"
         : std::is_same<T, sluice_f16>::value ? "f16"
                                              : "bf16";
}
template <typename T> double tolerance() {
  return std::is_same<T, float>::value ? 1e-5 : std::is_same<T, sluice_f16>::value ? 4e-3 : 3e-2;
}

template <typename T, typename MT> void run(const Problem &p, std::mt19937 &rng) {
  using RT = T;
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  sluice_cuda_attn_desc d{};
  d.nbatch = (int)p.batch.size();
  int64_t batches = 1;
  for (size_t x = 0; x < p.batch.size(); ++x) {
    d.batch[x] = p.batch[x];
    batches *= p.batch[x];
  }
  d.sq = p.sq;
  d.sk = p.sk;
  d.d = p.d;
  d.dv = p.dv;
  d.scale = (float)(1.0 / std::sqrt((double)p.d));
  d.causal = p.causal;
  d.mask = p.mask;
  d.rotary = p.rotary;
  int64_t kOffset = 0, vOffset = 0;
  if (p.packedQKV) {
    const int64_t heads = p.batch.back(), rowLen = 3 * heads * p.d;
    d.q.col = d.k.col = d.v.col = 1;
    d.q.row = d.k.row = d.v.row = rowLen;
    d.q.batch[1] = d.k.batch[1] = d.v.batch[1] = p.d;
    d.q.batch[0] = d.k.batch[0] = d.v.batch[0] = p.sq * rowLen;
    kOffset = heads * p.d;
    vOffset = 2 * heads * p.d;
  } else {
    d.q = contiguous(p.batch, p.sq, p.d);
    d.k = contiguous(p.batch, p.sk, p.d, p.broadcastKV);
    d.v = contiguous(p.batch, p.sk, p.dv, p.broadcastKV);
    if (p.transposedK) {
      d.k = contiguous(p.batch, p.d, p.sk, p.broadcastKV);
      std::swap(d.k.row, d.k.col);
    }
  }
  d.out = contiguous(p.batch, p.sq, p.dv);
  d.m = contiguous(p.batch, p.sq, p.sk);
  d.m.batch[d.nbatch - 1] = 0;
  d.cos_q = d.sin_q = contiguous({}, p.sq, p.d);
  d.cos_k = d.sin_k = contiguous({}, p.sk, p.d);
  const int64_t positions = std::max(p.sq, p.sk);

  auto fill = [&](std::vector<T> &buf, std::vector<double> &rounded, int64_t n) {
    buf.resize(n);
    rounded.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      buf[i] = store<T>(uni(rng));
      rounded[i] = load(buf[i]);
    }
  };
  std::vector<T> qBuf, kBuf, vBuf;
  std::vector<double> qD, kD, vD;
  if (p.packedQKV) {
    fill(qBuf, qD, spanOf(p.batch, d.q, p.sq, p.d) + vOffset);
    kBuf = vBuf = qBuf;
    kD = vD = qD;
  } else {
    fill(qBuf, qD, spanOf(p.batch, d.q, p.sq, p.d));
    fill(kBuf, kD, spanOf(p.batch, d.k, p.sk, p.d));
    fill(vBuf, vD, spanOf(p.batch, d.v, p.sk, p.dv));
  }
  std::vector<RT> cosBuf(positions * p.d), sinBuf(positions * p.d);
  std::vector<double> cosD(positions * p.d), sinD(positions * p.d);
  for (int64_t i = 0; i < positions; ++i)
    for (int64_t c = 0; c < p.d; ++c) {
      const double angle = i / std::pow(100.0, (double)(c % (p.d / 2)) / (p.d / 2));
      cosBuf[i * p.d + c] = store<RT>(std::cos(angle));
      sinBuf[i * p.d + c] = store<RT>(std::sin(angle));
      cosD[i * p.d + c] = load(cosBuf[i * p.d + c]);
      sinD[i * p.d + c] = load(sinBuf[i * p.d + c]);
    }
  const int64_t maskN = spanOf(p.batch, d.m, p.sq, p.sk);
  std::unique_ptr<MT[]> maskBuf(new MT[maskN]);
  std::vector<double> maskD(maskN);
  for (int64_t i = 0; i < maskN; ++i) {
    const int64_t row = (i / p.sk) % p.sq;
    if (p.mask == 2) {
      const bool keep = row != 5 && rng() % 4 != 0;
      maskBuf[i] = SLUICE_STORE(MT, keep ? 1.0f : 0.0f);
      maskD[i] = keep;
    } else {
      const double x = row == 3 || rng() % 8 == 0 ? -INFINITY : uni(rng);
      maskBuf[i] = SLUICE_STORE(MT, (float)x);
      maskD[i] = load(maskBuf[i]);
    }
  }
  const int64_t outN = spanOf(p.batch, d.out, p.sq, p.dv);
  std::vector<T> out(outN, store<T>(12345.0));

  DeviceBuffer<T> qDev(qBuf.data(), qBuf.size()), kDev(kBuf.data(), kBuf.size()),
      vDev(vBuf.data(), vBuf.size()), outDev(out.data(), out.size());
  DeviceBuffer<RT> cosDev(cosBuf.data(), cosBuf.size()), sinDev(sinBuf.data(), sinBuf.size());
  DeviceBuffer<MT> maskDev(maskBuf.get(), maskN);
  std::string kernel;
  launch<T, MT, RT>(d, qDev.ptr, kDev.ptr + kOffset, vDev.ptr + vOffset,
                    p.mask ? maskDev.ptr : nullptr, cosDev.ptr, sinDev.ptr, outDev.ptr, kernel);
  CHECK_CUDA(cudaMemcpy(out.data(), outDev.ptr, outN * sizeof(T), cudaMemcpyDeviceToHost));

  auto rotated = [&](const std::vector<double> &x, int64_t base, int64_t colStride, int64_t pos,
                     int64_t c) {
    if (!p.rotary)
      return x[base + c * colStride];
    const int64_t h = p.d / 2;
    const double partner = c < h ? -x[base + (c + h) * colStride] : x[base + (c - h) * colStride];
    return x[base + c * colStride] * cosD[pos * p.d + c] + partner * sinD[pos * p.d + c];
  };
  double worst = 0;
  int64_t bad = 0;
  const double tol = tolerance<T>();
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t i = 0; i < p.sq; ++i) {
      std::vector<double> s(p.sk);
      double mx = -INFINITY;
      const int64_t qBase = offsetOf(d, d.q, b) + i * d.q.row;
      for (int64_t j = 0; j < p.sk; ++j) {
        const int64_t kBase = kOffset + offsetOf(d, d.k, b) + j * d.k.row;
        double acc = 0;
        for (int64_t c = 0; c < p.d; ++c)
          acc += rotated(qD, qBase, d.q.col, i, c) * rotated(kD, kBase, d.k.col, j, c);
        acc *= d.scale;
        const double mv = maskD[offsetOf(d, d.m, b) + i * d.m.row + j * d.m.col];
        if (p.mask == 1)
          acc += mv;
        else if (p.mask == 2 && mv == 0)
          acc = -INFINITY;
        if (p.causal && j > i + p.sk - p.sq)
          acc = -INFINITY;
        s[j] = acc;
        mx = std::max(mx, acc);
      }
      double sum = 0;
      for (int64_t j = 0; j < p.sk; ++j) {
        s[j] = mx == -INFINITY ? 0.0 : std::exp(s[j] - mx);
        sum += s[j];
      }
      for (int64_t c = 0; c < p.dv; ++c) {
        double ref = 0;
        for (int64_t j = 0; j < p.sk; ++j)
          ref += s[j] * vD[vOffset + offsetOf(d, d.v, b) + j * d.v.row + c * d.v.col];
        ref = sum > 0 ? ref / sum : NAN;
        const double got = load(out[offsetOf(d, d.out, b) + i * d.out.row + c * d.out.col]);
        if (std::isnan(ref) != std::isnan(got)) {
          ++bad;
          continue;
        }
        if (std::isnan(ref))
          continue;
        const double err = std::fabs(got - ref) / (1.0 + std::fabs(ref));
        worst = std::max(worst, err);
        bad += err > tol;
      }
    }
  const bool ok = bad == 0;
  printf("%-4s %-34s %-22s max err %.3g: %s\n", typeName<T>(), p.name, kernel.c_str(), worst,
         ok ? "ok" : "FAILED");
  failures += !ok;
}

} // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    printf("no CUDA device: skipped\n");
    return 77;
  }
  std::mt19937 rng(1234);
  Problem plain64{"d64 plain, S 100", {2, 2}, 100, 100, 64, 64};
  Problem causal64{"d64 causal, S 130", {1, 3}, 130, 130, 64, 64};
  causal64.causal = true;
  Problem mask64{"d64 additive mask, 40 x 77", {2, 2}, 40, 77, 64, 64};
  mask64.mask = 1;
  Problem cache64{"d64 causal + bool mask, 50 x 70", {1, 2}, 50, 70, 64, 64};
  cache64.causal = true;
  cache64.mask = 2;
  Problem nan64{"d64 causal, 100 x 70 (NaN rows)", {2, 1}, 100, 70, 64, 64};
  nan64.causal = true;
  Problem packed128{"d128 causal, packed QKV, S 90", {2, 2}, 90, 90, 128, 128};
  packed128.causal = true;
  packed128.packedQKV = true;
  Problem strided128{"d128 K^T, shared K/V, mask", {2, 4}, 33, 45, 128, 128};
  strided128.transposedK = true;
  strided128.broadcastKV = true;
  strided128.mask = 1;
  Problem long128{"d128 causal, S 1000", {1, 2}, 1000, 1000, 128, 128};
  long128.causal = true;
  Problem odd{"d40/dv24 bool mask, shared K/V", {2, 3}, 20, 24, 40, 24};
  odd.mask = 2;
  odd.broadcastKV = true;
  Problem wide{"d160 causal, 30 x 20", {2, 1}, 30, 20, 160, 160};
  wide.causal = true;
  Problem rotary{"d64 rotary causal, S 37", {1, 2}, 37, 37, 64, 64};
  rotary.rotary = true;
  rotary.causal = true;
  Problem dv{"d128 dv64, 20 x 36", {2, 1}, 20, 36, 128, 64};

  // Tensor cores.
  for (const Problem *p :
       std::initializer_list<const Problem *>{&plain64, &causal64, &nan64, &packed128, &long128}) {
    run<sluice_f16, sluice_f16>(*p, rng);
    run<sluice_bf16, sluice_bf16>(*p, rng);
  }
  run<sluice_f16, sluice_f16>(mask64, rng);
  run<sluice_f16, bool>(cache64, rng);
  run<sluice_bf16, float>(strided128, rng);
  // FMA kernel.
  run<float, float>(plain64, rng);
  run<float, float>(mask64, rng);
  run<float, bool>(odd, rng);
  run<float, float>(wide, rng);
  run<float, float>(rotary, rng);
  run<sluice_f16, sluice_f16>(rotary, rng);
  run<sluice_bf16, bool>(odd, rng);
  run<sluice_f16, sluice_f16>(dv, rng);
  if (failures) {
    printf("%d attention cases FAILED\n", failures);
    return 1;
  }
  printf("all attention cases ok\n");
  return 0;
}
