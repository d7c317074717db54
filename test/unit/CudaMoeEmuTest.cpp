//===- CudaMoeEmuTest.cpp - the cuda MoE kernels run on the host ----------===//
//
// The four kernels of sluice.moe on the device (sluice_gen/
// cuda_moe_kernels.cuh), unchanged, under the host emulation of
// CudaRowEmulation.h, launched as sluice_cuda_moe (sluice_gen/cuda_moe.h)
// launches them, against sluice.moe's definition computed here in double
// (as the evaluator does): top-2 routing renormalized over gated (SwiGLU)
// experts with biases and an expert offset (one rank of --ep=2), plain
// GELU experts without the up projection, and hard gating by a sample
// index. Sizes that are not multiples of the 16 x 16 tiles check the tile
// edges; the expert-load counters are checked too.
//
//===----------------------------------------------------------------------===//

#include "CudaRowEmulation.h"

// What sluice_gen/cuda.h gives the kernels on a GPU.
#include <cmath>
inline void sluice_device_fail(int *word, int step) {
  if (word)
    atomicCAS(word, 0, step + 1);
}

#include "sluice_gen/cuda_moe_kernels.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace {

/// One moe op's operands (host memory is device memory here).
struct MoeProblem {
  sluice_moe_shape s{};
  std::vector<float> x, w1, b1, w2, b2, w3, b3;
  std::vector<float> logits;  // top_k gating
  std::vector<int64_t> index; // hard gating
  int64_t offset = 0;
  bool gated = false, biases = false;
};

std::vector<float> randomValues(std::mt19937 &rng, size_t n, float scale) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float &f : v)
    f = normal(rng);
  return v;
}

/// A problem of `tokens` tokens, D = 12, F = 20, Do = 9 (no dim a multiple
/// of 16), `experts` experts of which the op holds `local` from `offset`.
MoeProblem makeProblem(bool hard, bool gated, bool biases, int64_t tokens, int64_t experts,
                       int64_t local, int64_t offset, int64_t topK, int activation, unsigned seed) {
  MoeProblem p;
  std::mt19937 rng(seed);
  const int64_t d = 12, f = 20, dOut = 9, samples = 3;
  p.s = {tokens, d,     f,         dOut, experts, local, topK, hard ? tokens / samples : 1,
         hard,   !hard, activation};
  p.x = randomValues(rng, tokens * d, 1.0f);
  p.w1 = randomValues(rng, local * d * f, 0.3f);
  p.w2 = randomValues(rng, local * f * dOut, 0.3f);
  p.gated = gated;
  p.biases = biases;
  if (gated)
    p.w3 = randomValues(rng, local * d * f, 0.3f);
  if (biases) {
    p.b1 = randomValues(rng, local * f, 0.1f);
    p.b2 = randomValues(rng, local * dOut, 0.1f);
    if (gated)
      p.b3 = randomValues(rng, local * f, 0.1f);
  }
  if (hard) {
    for (int64_t b = 0; b < samples; ++b)
      p.index.push_back((b * 5 + 1) % experts);
  } else {
    p.logits = randomValues(rng, tokens * experts, 1.5f);
  }
  p.offset = offset;
  return p;
}

const float *data(const std::vector<float> &v) { return v.empty() ? nullptr : v.data(); }

/// sluice.moe's definition in double: each token's chosen experts (those
/// this op holds) through their MLP, weighted and summed; `load` counts
/// every token's choices over all experts.
std::vector<float> reference(const MoeProblem &p, std::vector<int64_t> &load) {
  const sluice_moe_shape &s = p.s;
  std::vector<float> out(s.tokens * s.d_out, 0.0f);
  load.assign(s.experts, 0);
  for (int64_t t = 0; t < s.tokens; ++t) {
    std::vector<std::pair<int64_t, double>> chosen;
    if (s.hard) {
      chosen.push_back({p.index[t / s.per_sample], 1.0});
    } else {
      std::vector<double> prob(s.experts);
      double mx = -INFINITY, sum = 0;
      for (int64_t e = 0; e < s.experts; ++e)
        mx = std::max(mx, (double)p.logits[t * s.experts + e]);
      for (int64_t e = 0; e < s.experts; ++e)
        sum += prob[e] = std::exp(p.logits[t * s.experts + e] - mx);
      std::vector<int64_t> order(s.experts);
      for (int64_t e = 0; e < s.experts; ++e)
        order[e] = e;
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return prob[a] > prob[b]; });
      double picked = 0;
      for (int64_t j = 0; j < s.top_k; ++j) {
        chosen.push_back({order[j], prob[order[j]] / sum});
        picked += prob[order[j]] / sum;
      }
      if (s.normalize)
        for (auto &c : chosen)
          c.second /= picked;
    }
    for (auto [expert, weight] : chosen) {
      ++load[expert];
      int64_t e = expert - p.offset;
      if (e < 0 || e >= s.local)
        continue;
      std::vector<double> hidden(s.f);
      for (int64_t j = 0; j < s.f; ++j) {
        double h = p.biases ? p.b1[e * s.f + j] : 0.0,
               up = p.biases && p.gated ? p.b3[e * s.f + j] : 0.0;
        for (int64_t i = 0; i < s.d; ++i) {
          h += (double)p.x[t * s.d + i] * p.w1[(e * s.d + i) * s.f + j];
          if (p.gated)
            up += (double)p.x[t * s.d + i] * p.w3[(e * s.d + i) * s.f + j];
        }
        if (s.activation == 2)
          h = 0.5 * h * (1.0 + std::erf(h / std::sqrt(2.0)));
        else if (s.activation == 4)
          h = h / (1.0 + std::exp(-h));
        hidden[j] = p.gated ? h * up : h;
      }
      for (int64_t c = 0; c < s.d_out; ++c) {
        double y = p.biases ? p.b2[e * s.d_out + c] : 0.0;
        for (int64_t j = 0; j < s.f; ++j)
          y += hidden[j] * p.w2[(e * s.f + j) * s.d_out + c];
        out[t * s.d_out + c] += (float)(weight * y);
      }
    }
  }
  return out;
}

unsigned gridFor(int64_t n, unsigned block) {
  return (unsigned)std::max<int64_t>(1, (n + block - 1) / block);
}

/// The five launches of sluice_cuda_moe (sluice_gen/cuda_moe.h), in order,
/// with its geometry; the scratch in vectors. Sets the step's error word.
template <typename R>
std::vector<float> runKernels(const MoeProblem &p, const R *router, std::vector<int64_t> &load,
                              int &error) {
  const sluice_moe_shape &s = p.s;
  const size_t slots = s.tokens * s.top_k;
  std::vector<int> choice(slots), order(slots), start(s.local + 1);
  std::vector<float> weight(slots), hidden(slots * s.f), y(slots * s.d_out),
      out(s.tokens * s.d_out, -1.0f);
  load.assign(s.experts, 0);
  error = 0;
  const int64_t *offset = p.offset ? &p.offset : nullptr;
  using sluice_emu::dim3;
  sluice_emu::launch(gridFor(s.tokens, 128), 128, [&] {
    sluice_moe_route_kernel<R>(s, router, choice.data(), weight.data(), &error, 0);
  });
  size_t shared = std::max<int64_t>(s.experts, s.local + 1) * sizeof(int);
  sluice_emu::launch(
      dim3{1, 1, 1}, dim3{256, 1, 1},
      [&] {
        sluice_moe_group_kernel(s, choice.data(), offset, start.data(), order.data(), load.data());
      },
      shared);
  const unsigned tileRows = (unsigned)((slots + 15) / 16);
  sluice_emu::launch(dim3{(unsigned)((s.f + 15) / 16), tileRows, (unsigned)s.local},
                     dim3{16, 16, 1}, [&] {
                       sluice_moe_gemm_kernel<true>(s, start.data(), order.data(), p.x.data(), s.d,
                                                    p.w1.data(), data(p.b1), data(p.w3), data(p.b3),
                                                    s.f, hidden.data(), s.activation);
                     });
  sluice_emu::launch(dim3{(unsigned)((s.d_out + 15) / 16), tileRows, (unsigned)s.local},
                     dim3{16, 16, 1}, [&] {
                       sluice_moe_gemm_kernel<false>(s, start.data(), order.data(), hidden.data(),
                                                     s.f, p.w2.data(), data(p.b2), nullptr, nullptr,
                                                     s.d_out, y.data(), 0);
                     });
  sluice_emu::launch(gridFor(s.tokens * s.d_out, 256), 256, [&] {
    sluice_moe_combine_kernel(s, choice.data(), weight.data(), offset, y.data(), out.data());
  });
  return out;
}

void expectNear(const std::vector<float> &got, const std::vector<float> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-4 + 1e-4 * std::fabs(want[i])) << "element " << i;
}

TEST(CudaMoeEmu, GatedTop2RenormalizedWithBiasesAndOffset) {
  // One rank of --ep=2: experts [2, 4) of 4, SwiGLU (silu) experts.
  MoeProblem p = makeProblem(false, true, true, 21, 4, 2, 2, 2, 4, 7);
  std::vector<int64_t> load, wantLoad;
  int error = 0;
  std::vector<float> got = runKernels(p, p.logits.data(), load, error);
  expectNear(got, reference(p, wantLoad));
  EXPECT_EQ(load, wantLoad);
  EXPECT_EQ(error, 0);
}

TEST(CudaMoeEmu, GatedWithoutBiasesAllExperts) {
  MoeProblem p = makeProblem(false, true, false, 18, 4, 4, 0, 2, 4, 11);
  p.s.normalize = false;
  std::vector<int64_t> load, wantLoad;
  int error = 0;
  std::vector<float> got = runKernels(p, p.logits.data(), load, error);
  expectNear(got, reference(p, wantLoad));
  EXPECT_EQ(load, wantLoad);
}

TEST(CudaMoeEmu, PlainGeluTop1) {
  MoeProblem p = makeProblem(false, false, true, 17, 4, 4, 0, 1, 2, 13);
  std::vector<int64_t> load, wantLoad;
  int error = 0;
  std::vector<float> got = runKernels(p, p.logits.data(), load, error);
  expectNear(got, reference(p, wantLoad));
  EXPECT_EQ(load, wantLoad);
}

TEST(CudaMoeEmu, HardGatingGated) {
  // 3 samples of 6 tokens, each sample's expert from its index.
  MoeProblem p = makeProblem(true, true, true, 18, 4, 4, 0, 1, 4, 17);
  std::vector<int64_t> load, wantLoad;
  int error = 0;
  std::vector<float> got = runKernels(p, p.index.data(), load, error);
  expectNear(got, reference(p, wantLoad));
  EXPECT_EQ(load, wantLoad);
  EXPECT_EQ(error, 0);
}

TEST(CudaMoeEmu, HardIndexOutOfRangeSetsTheErrorWord) {
  MoeProblem p = makeProblem(true, false, false, 18, 4, 4, 0, 1, 1, 19);
  p.index[1] = 4;
  std::vector<int64_t> load;
  int error = 0;
  runKernels(p, p.index.data(), load, error);
  EXPECT_EQ(error, 1); // step 0, reported as step + 1
}

} // namespace
