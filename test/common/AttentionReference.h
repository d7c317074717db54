//===- AttentionReference.h - host reference for the cuda attention tests -===//
//
// The problems, inputs and double-precision reference that the attention
// kernel tests (test/gpu/attention_test.cu on a device,
// test/unit/CudaAttentionEmuTest.cpp under host emulation) check
// sluice_gen/cuda_attention.h against: random Q, K, V rounded to the
// storage type, rotary tables, additive masks with -inf (all of query row
// 3) or boolean keep-masks (all of row 5 dropped), laid out through the
// descriptor's strided accesses as the generated bundles lay them out;
// softmax(scale Q K^T + mask) V in double from the rounded inputs, NaN
// where a query sees no key.
//
// Compiles under nvcc and the host compiler; include it after
// sluice_gen/cuda_attention.h (on the host, after CudaAttentionEmulation.h).
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_TEST_COMMON_ATTENTIONREFERENCE_H
#define SLUICE_TEST_COMMON_ATTENTIONREFERENCE_H

#include "sluice_gen/cuda_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

namespace sluice_attention_test {

template <typename T> T store(double x) { return SLUICE_STORE(T, (float)x); }
template <typename T> double load(T x) { return (double)sluice_load(x); }

/// One attention problem: logical sizes, layout choices and options.
struct Problem {
  const char *name = "";
  std::vector<int64_t> batch{2, 2};
  int64_t sq = 16, sk = 16, d = 64, dv = 64;
  bool causal = false, rotary = false;
  int64_t window = 0;       ///< with causal: a sliding window (keys per row)
  int mask = 0;             ///< 0 none, 1 additive, 2 boolean
  bool broadcastKV = false; ///< k/v shared by the heads (batch stride 0)
  bool transposedK = false; ///< K stored [B..., D, Sk] (column stride Sk)
  bool packedQKV = false;   ///< q, k, v rows interleaved in one [B, S, 3 H D] buffer
  float scale = 0.125f;
};

/// Element offset of batch `b` (row-major over the descriptor's batch dims).
inline int64_t offsetOf(const sluice_cuda_attn_desc &d, const sluice_cuda_attn_access &a,
                        int64_t b) {
  int64_t off = 0;
  for (int x = d.nbatch - 1; x >= 0; --x) {
    off += (b % d.batch[x]) * a.batch[x];
    b /= d.batch[x];
  }
  return off;
}

/// Contiguous row-major strides of [batch..., rows, cols] as an access (the
/// last batch dim broadcast when `broadcastHeads`).
inline sluice_cuda_attn_access contiguous(const std::vector<int64_t> &batch, int64_t rows,
                                          int64_t cols, bool broadcastHeads = false) {
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

/// Elements an access reaches over [batch..., rows, cols].
inline int64_t spanOf(const std::vector<int64_t> &batch, const sluice_cuda_attn_access &a,
                      int64_t rows, int64_t cols) {
  int64_t s = (rows - 1) * a.row + (cols - 1) * a.col;
  for (size_t x = 0; x < batch.size(); ++x)
    s += (batch[x] - 1) * a.batch[x];
  return s + 1;
}

/// A problem's descriptor and host buffers (storage type T, mask type MT,
/// rotary table type RT), each with its values as doubles after rounding.
template <typename T, typename MT, typename RT> struct Case {
  Problem p;
  sluice_cuda_attn_desc d{};
  int64_t batches = 1;
  int64_t kOffset = 0, vOffset = 0; ///< k and v inside q's buffer when packed
  std::vector<T> qBuf, kBuf, vBuf;
  std::vector<double> qD, kD, vD;
  std::vector<RT> cosBuf, sinBuf;
  std::vector<double> cosD, sinD;
  int64_t maskN = 0;
  std::unique_ptr<MT[]> maskBuf; ///< not a vector: vector<bool> has no data()
  std::vector<double> maskD;
  std::vector<T> out; ///< the output's span, 12345 before the kernel runs

  Case(const Problem &problem, std::mt19937 &rng) : p(problem) {
    std::uniform_real_distribution<double> uni(-1.0, 1.0);
    d.nbatch = (int)p.batch.size();
    for (size_t x = 0; x < p.batch.size(); ++x) {
      d.batch[x] = p.batch[x];
      batches *= p.batch[x];
    }
    d.sq = p.sq;
    d.sk = p.sk;
    d.d = p.d;
    d.dv = p.dv;
    d.scale = p.scale;
    d.causal = p.causal;
    d.window = p.window;
    d.mask = p.mask;
    d.rotary = p.rotary;
    if (p.packedQKV) {
      // [B0, S, B1, 3, D]-like: one row of the buffer holds every head's q,
      // then k, then v (a QKV GEMM output split into heads).
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
        // K stored [B..., D, Sk]: rows (keys) are columns of the buffer.
        d.k = contiguous(p.batch, p.d, p.sk, p.broadcastKV);
        std::swap(d.k.row, d.k.col);
      }
    }
    d.out = contiguous(p.batch, p.sq, p.dv);
    d.m = contiguous(p.batch, p.sq, p.sk);
    d.m.batch[d.nbatch - 1] = 0; // one mask for every head
    // Rotary tables indexed by position from 0 for queries and keys alike.
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
    if (p.packedQKV) {
      fill(qBuf, qD, spanOf(p.batch, d.q, p.sq, p.d) + vOffset);
      kD = vD = qD;
    } else {
      fill(qBuf, qD, spanOf(p.batch, d.q, p.sq, p.d));
      fill(kBuf, kD, spanOf(p.batch, d.k, p.sk, p.d));
      fill(vBuf, vD, spanOf(p.batch, d.v, p.sk, p.dv));
    }
    cosBuf.resize(positions * p.d);
    sinBuf.resize(positions * p.d);
    cosD.resize(positions * p.d);
    sinD.resize(positions * p.d);
    for (int64_t i = 0; i < positions; ++i)
      for (int64_t c = 0; c < p.d; ++c) {
        const double angle = i / std::pow(100.0, (double)(c % (p.d / 2)) / (p.d / 2));
        cosBuf[i * p.d + c] = store<RT>(std::cos(angle));
        sinBuf[i * p.d + c] = store<RT>(std::sin(angle));
        cosD[i * p.d + c] = load(cosBuf[i * p.d + c]);
        sinD[i * p.d + c] = load(sinBuf[i * p.d + c]);
      }
    // Masks: additive values with some -inf (a whole row for query 3), a
    // boolean keep-mask with about a quarter dropped (all of row 5).
    maskN = spanOf(p.batch, d.m, p.sq, p.sk);
    maskBuf.reset(new MT[maskN]);
    maskD.resize(maskN);
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
    out.assign(spanOf(p.batch, d.out, p.sq, p.dv), store<T>(12345.0));
  }

  /// The host buffers k and v are read from (at kOffset / vOffset).
  const std::vector<T> &kHost() const { return p.packedQKV ? qBuf : kBuf; }
  const std::vector<T> &vHost() const { return p.packedQKV ? qBuf : vBuf; }

  /// softmax(scale Q K^T + mask) V in double, [batch][query][column]; NaN
  /// where a query sees no key.
  std::vector<double> reference() const {
    auto rotated = [&](const std::vector<double> &x, int64_t base, int64_t colStride, int64_t pos,
                       int64_t c) {
      if (!p.rotary)
        return x[base + c * colStride];
      const int64_t h = p.d / 2;
      const double partner =
          c < h ? -x[base + (c + h) * colStride] : x[base + (c - h) * colStride];
      return x[base + c * colStride] * cosD[pos * p.d + c] + partner * sinD[pos * p.d + c];
    };
    std::vector<double> ref;
    ref.reserve(batches * p.sq * p.dv);
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
          if (p.causal && (j > i + p.sk - p.sq ||
                           (p.window > 0 && j <= i + p.sk - p.sq - p.window)))
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
          double r = 0;
          for (int64_t j = 0; j < p.sk; ++j)
            r += s[j] * vD[vOffset + offsetOf(d, d.v, b) + j * d.v.row + c * d.v.col];
          ref.push_back(sum > 0 ? r / sum : NAN);
        }
      }
    return ref;
  }

  /// Output element (b, i, c) of `out`, as a double.
  double got(int64_t b, int64_t i, int64_t c) const {
    return load(out[offsetOf(d, d.out, b) + i * d.out.row + c * d.out.col]);
  }
};

} // namespace sluice_attention_test

#endif // SLUICE_TEST_COMMON_ATTENTIONREFERENCE_H
