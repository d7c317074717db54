//===- DnnlConvTest.cpp - oneDNN convolutions with blocked activations ----===//
//
// sluice_gen/cpu_nn_dnnl.h as the cpu target's generated code calls it when
// groups/Conv.cpp keeps activations in oneDNN's blocked layout between
// convolutions:
//   - sluice_dnnl_unblock moves a tensor between NCHW and nChw{B}c, B =
//     sluice_dnnl_block(), with the element at (c, p) of the plain tensor
//     at ((c / B) * hw + p) * B + c % B;
//   - a chain conv -> conv (+ the first's result as the second's residual,
//     then ReLU) with the activations blocked gives the same numbers as the
//     same calls on NCHW (the primitives are the same; only where the
//     reorders run changes);
//   - a residual in the blocked layout that shares its buffer with a plain
//     output (the sum post-op then goes through a buffer, no reorder runs
//     in place);
//   - the fallback the generated code runs when oneDNN refuses a call:
//     im2col + GEMM and the post-ops on sluice_dnnl_plain_io's plain copies,
//     blocked back into the call's dst by finish().
//
//===----------------------------------------------------------------------===//
#include "sluice_gen/cpu.h"
#include "sluice_gen/cpu_nn_blas.h"
#include "sluice_gen/cpu_nn_dnnl.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace {

std::vector<float> randomTensor(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

std::vector<float> blocked(const std::vector<float> &plain, int64_t c, int64_t hw) {
  std::vector<float> b(plain.size());
  sluice_dnnl_unblock(2, 1, c, hw, b.data(), (float *)plain.data(), true);
  return b;
}

std::vector<float> unblocked(const std::vector<float> &b, int64_t c, int64_t hw) {
  std::vector<float> p(b.size());
  sluice_dnnl_unblock(2, 1, c, hw, b.data(), p.data(), false);
  return p;
}

void expectNear(const std::vector<float> &got, const std::vector<float> &want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << "element " << i;
}

/// 3x3, stride 1, pad 1 over h x w.
sluice_window same3x3(int64_t h, int64_t w) {
  return {{1, h, w}, {1, 3, 3}, {1, h, w}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}};
}

TEST(DnnlConvTest, BlockedLayoutIndexing) {
  const int64_t c = 32, hw = 5, b = sluice_dnnl_block();
  ASSERT_TRUE(b == 8 || b == 16);
  std::vector<float> plain(c * hw);
  for (size_t i = 0; i < plain.size(); ++i)
    plain[i] = (float)i;
  std::vector<float> blk = blocked(plain, c, hw);
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t p = 0; p < hw; ++p)
      ASSERT_EQ(blk[((ch / b) * hw + p) * b + ch % b], plain[ch * hw + p]);
  EXPECT_EQ(unblocked(blk, c, hw), plain);
}

TEST(DnnlConvTest, BlockedChainMatchesPlainCalls) {
  const int64_t c = 16, m = 32, h = 9, w = 7, hw = h * w;
  const sluice_window g = same3x3(h, w);
  auto x = randomTensor(c * hw, 1), w1 = randomTensor(m * c * 9, 2), b1 = randomTensor(m, 3);
  auto w2 = randomTensor(m * m * 9, 4), b2 = randomTensor(m, 5);
  for (int threads : {1, 2}) {
    // Plain: y = relu(conv1(x)); z = relu(conv2(y) + y).
    sluice_dnnl_conv p1(g, 1, c, m, 1, true, true, false, true);
    sluice_dnnl_conv p2(g, 1, m, m, 1, true, true, true, true);
    std::vector<float> y(m * hw), z(m * hw);
    ASSERT_EQ(p1.run(threads, x.data(), w1.data(), b1.data(), y.data()), 0);
    ASSERT_EQ(p2.run(threads, y.data(), w2.data(), b2.data(), z.data(), y.data()), 0);
    // Blocked: y stays blocked, conv2 reads it as src and residual.
    sluice_dnnl_conv q1(g, 1, c, m, 1, true, true, false, true, SLUICE_DNNL_DST_BLOCKED);
    sluice_dnnl_conv q2(g, 1, m, m, 1, true, true, true, true,
                        SLUICE_DNNL_SRC_BLOCKED | SLUICE_DNNL_RESIDUAL_BLOCKED);
    std::vector<float> yb(m * hw), zq(m * hw);
    ASSERT_EQ(q1.run(threads, x.data(), w1.data(), b1.data(), yb.data()), 0);
    EXPECT_EQ(unblocked(yb, m, hw), y);
    ASSERT_EQ(q2.run(threads, yb.data(), w2.data(), b2.data(), zq.data(), yb.data()), 0);
    EXPECT_EQ(zq, z);
    // A blocked dst as well.
    sluice_dnnl_conv q3(g, 1, m, m, 1, true, true, true, true,
                        SLUICE_DNNL_SRC_BLOCKED | SLUICE_DNNL_RESIDUAL_BLOCKED |
                            SLUICE_DNNL_DST_BLOCKED);
    std::vector<float> zb(m * hw);
    ASSERT_EQ(q3.run(threads, yb.data(), w2.data(), b2.data(), zb.data(), yb.data()), 0);
    EXPECT_EQ(unblocked(zb, m, hw), z);
  }
}

TEST(DnnlConvTest, BlockedResidualInThePlainOutputsBuffer) {
  const int64_t c = 16, h = 6, w = 6, hw = h * w;
  const sluice_window g = same3x3(h, w);
  auto x = randomTensor(c * hw, 6), wt = randomTensor(c * c * 9, 7), r = randomTensor(c * hw, 8);
  // Primitives on NCHW (blocked = false): the dst is `out` itself unless
  // the residual's reorder would have to run in place.
  sluice_dnnl_conv plain(g, 1, c, c, 1, false, false, true, false);
  std::vector<float> want(c * hw);
  ASSERT_EQ(plain.run(2, x.data(), wt.data(), nullptr, want.data(), r.data()), 0);
  // The residual, blocked, in the buffer the plain result goes to.
  sluice_dnnl_conv conv(g, 1, c, c, 1, false, false, true, false, SLUICE_DNNL_RESIDUAL_BLOCKED);
  std::vector<float> buf = blocked(r, c, hw);
  ASSERT_EQ(conv.run(2, x.data(), wt.data(), nullptr, buf.data(), buf.data()), 0);
  EXPECT_EQ(buf, want);
}

TEST(DnnlConvTest, FallbackOnPlainCopies) {
  const int64_t c = 16, m = 16, h = 5, w = 8, hw = h * w;
  const sluice_window g = same3x3(h, w);
  auto x = randomTensor(c * hw, 9), wt = randomTensor(m * c * 9, 10), bias = randomTensor(m, 11);
  auto r = randomTensor(m * hw, 12);
  sluice_dnnl_conv conv(g, 1, c, m, 1, true, true, true, true);
  std::vector<float> want(m * hw);
  ASSERT_EQ(conv.run(2, x.data(), wt.data(), bias.data(), want.data(), r.data()), 0);
  // What the generated code does when run() refuses: every side blocked.
  const unsigned sides =
      SLUICE_DNNL_SRC_BLOCKED | SLUICE_DNNL_DST_BLOCKED | SLUICE_DNNL_RESIDUAL_BLOCKED;
  std::vector<float> xb = blocked(x, c, hw), rb = blocked(r, m, hw), out(m * hw, -7.f);
  {
    sluice_dnnl_plain_io io(2, sides, 1, c, m, hw, hw, xb.data(), out.data(), rb.data());
    ASSERT_TRUE(io.ok());
    ASSERT_EQ(sluice_conv_gemm<float>(2, g, 1, c, m, 1, io.x, wt.data(), bias.data(), io.out), 0);
    for (int64_t i = 0; i < m * hw; ++i) {
      const float v = io.out[i] + io.residual[i];
      io.out[i] = v > 0.f ? v : 0.f;
    }
    io.finish();
  }
  expectNear(unblocked(out, m, hw), want, 1e-5);
  // Without blocked sides the stand-ins are the call's own pointers.
  sluice_dnnl_plain_io same(2, 0, 1, c, m, hw, hw, x.data(), out.data(), r.data());
  EXPECT_EQ(same.x, x.data());
  EXPECT_EQ(same.out, out.data());
  EXPECT_EQ(same.residual, r.data());
}

} // namespace
