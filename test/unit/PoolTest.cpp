//===- PoolTest.cpp - the cpu target's max pooling (sluice_gen/cpu_nn.h) ---===//
//
// sluice_pool's separable max pooling (sluice_max_pool_separable: the
// window's rows folded per input column, then the columns per output, with
// the vectorized interior of sluice_max_pool_columns) against the one-pass
// loop nest that ports the evaluator (sluice_pool_impl<0>), on random
// windows: 1-D, 2-D and 3-D, strides 1-3 (the compile-time paths 1 and 2
// and the run-time one), dilations, asymmetric and oversized pads (rows
// and outputs with no tap in bounds), rows longer than one chunk, NaNs and
// infinities, and the element types whose max runs in float (f32, int8)
// or double (f64, int32 with values above 2^24). The values must be equal
// (either zero wins a tie of +0 and -0, which the data here avoids), NaN
// where the reference gives NaN.
//
//===----------------------------------------------------------------------===//
#include "sluice_gen/cpu.h"
#include "sluice_gen/cpu_nn.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace {

/// A random window of `rank` spatial dims (normalized to 3-D with leading
/// ones, as the emitter writes it).
/// `empty`: pads may exceed the window's reach and taps may skip (dilation),
/// leaving outputs with no tap in bounds (-inf; for integers the conversion
/// of -inf is undefined, so their tests keep a tap of every window in
/// bounds: no dilation, pads under the kernel).
sluice_window randomWindow(std::mt19937 &rng, int rank, bool empty) {
  sluice_window g;
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int i = 0; i < 3; ++i) {
    g.in[i] = 1, g.k[i] = 1, g.out[i] = 1, g.s[i] = 1, g.d[i] = 1, g.pb[i] = 0, g.pe[i] = 0;
    if (i < 3 - rank)
      continue;
    // The last dim sometimes spans more than one output chunk.
    g.in[i] = i == 2 && pick(0, 5) == 0 ? pick(300, 700) : pick(1, 13);
    g.k[i] = pick(1, 4);
    g.s[i] = pick(1, 3);
    g.d[i] = empty && pick(0, 3) == 0 ? 2 : 1;
    const int reach = (int)((g.k[i] - 1) * g.d[i]);
    g.pb[i] = empty && pick(0, 3) == 0 ? pick(0, 6) : pick(0, reach);
    g.pe[i] = empty ? pick(0, 3) : pick(0, reach);
    const int64_t span = g.in[i] + g.pb[i] + g.pe[i] - ((g.k[i] - 1) * g.d[i] + 1);
    g.out[i] = span < 0 ? 1 : span / g.s[i] + 1;
  }
  return g;
}

template <typename T> T randomValue(std::mt19937 &rng, int special) {
  if constexpr (std::is_floating_point<T>::value) {
    if (special == 1)
      return NAN;
    if (special == 2)
      return -INFINITY;
    if (special == 3)
      return INFINITY;
    // No zeros: which of +0 and -0 wins a tie may differ.
    T v = std::uniform_real_distribution<T>(-100, 100)(rng);
    return v == 0 ? T(1) : v;
  } else if constexpr (sizeof(T) == 1) {
    return (T)std::uniform_int_distribution<int>(-128, 127)(rng);
  } else {
    return (T)std::uniform_int_distribution<int64_t>(-2000000000, 2000000000)(rng);
  }
}

template <typename T> void checkRandomPools(bool specials, uint32_t seed) {
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 300; ++trial) {
    const int rank = 1 + trial % 3;
    sluice_window g = randomWindow(rng, rank, std::is_floating_point<T>::value);
    const int64_t planes = std::uniform_int_distribution<int>(1, 3)(rng);
    std::vector<T> x(planes * g.inSize());
    for (T &v : x)
      v = randomValue<T>(rng, specials ? std::uniform_int_distribution<int>(0, 12)(rng) : 0);
    std::vector<T> got(planes * g.outSize(), T(7)), want(got.size(), T(9));
    const int threads = 1 + trial % 2;
    sluice_pool<T>(threads, g, planes, 0, false, 2.0, false, rank, x.data(), got.data(),
                   (int64_t *)nullptr);
    sluice_pool_impl<0, T>(threads, g, planes, false, 2.0, false, x.data(), want.data(),
                           (int64_t *)nullptr);
    for (size_t i = 0; i < got.size(); ++i) {
      if constexpr (std::is_floating_point<T>::value)
        if (std::isnan(want[i])) {
          ASSERT_TRUE(std::isnan(got[i])) << "trial " << trial << " output " << i;
          continue;
        }
      ASSERT_EQ(got[i], want[i]) << "trial " << trial << " output " << i << " (in " << g.in[0]
                                 << "x" << g.in[1] << "x" << g.in[2] << ", k " << g.k[2]
                                 << ", s " << g.s[2] << ", d " << g.d[2] << ", pads "
                                 << g.pb[2] << "/" << g.pe[2] << ")";
    }
  }
}

TEST(MaxPoolTest, FloatMatchesEvaluatorLoop) { checkRandomPools<float>(false, 1); }
TEST(MaxPoolTest, FloatNaNsAndInfinities) { checkRandomPools<float>(true, 2); }
TEST(MaxPoolTest, Double) { checkRandomPools<double>(true, 3); }
TEST(MaxPoolTest, Int8) { checkRandomPools<int8_t>(false, 4); }
TEST(MaxPoolTest, Int32AboveFloatPrecision) { checkRandomPools<int32_t>(false, 5); }

TEST(MaxPoolTest, ResNetStem) {
  // 3x3, stride 2, pad 1 over 112x112: the benchmark's max pool.
  const sluice_window g = {{1, 112, 112}, {1, 3, 3}, {1, 56, 56}, {1, 2, 2},
                           {1, 1, 1},     {0, 1, 1}, {0, 1, 1}};
  std::mt19937 rng(6);
  std::vector<float> x(4 * g.inSize());
  for (float &v : x)
    v = randomValue<float>(rng, 0);
  std::vector<float> got(4 * g.outSize()), want(got.size());
  sluice_pool<float>(2, g, 4, 0, false, 2.0, false, 2, x.data(), got.data(), (int64_t *)nullptr);
  sluice_pool_impl<0, float>(2, g, 4, false, 2.0, false, x.data(), want.data(),
                             (int64_t *)nullptr);
  EXPECT_EQ(got, want);
}

} // namespace
