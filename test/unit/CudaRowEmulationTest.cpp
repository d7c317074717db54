//===- CudaRowEmulationTest.cpp - cuda row kernels run on the host --------===//
//
// The device templates of the cuda target's row groups
// (sluice_gen/cuda_reduce.h), unchanged, under the host emulation of
// CudaRowEmulation.h, against a double-precision host computation. The
// load/store lambdas are written as Row.cpp generates them (a prologue add
// of a per-column bias, scale in the epilogue, 16-byte vectors for the
// contiguous input and output). Covers each team size (sub-warp, warp,
// block), the register and the streaming (two-pass) paths, vector and
// scalar accesses, f32, f16 and f64, layer_norm's mean / inv_std_dev, and
// the reduce kinds; register slots past a row's end and teams past the last
// row (they load from a valid address, store no prologue value and change
// no statistic: every element is loaded exactly once with `first` set).
//
//===----------------------------------------------------------------------===//

#include "CudaRowEmulation.h"

#include "sluice_gen/cuda_reduce.h"

#include "common/RowReference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace {

using namespace sluice_row_test;

struct Problem {
  int64_t rows, len;
  unsigned grid; // blocks (fewer than the rows need: the row loop covers the rest)
  double offset = 0;
  bool vector = true;
};

template <int K> const char *kindName() {
  return K == SLUICE_ROW_SOFTMAX       ? "softmax"
         : K == SLUICE_ROW_LOG_SOFTMAX ? "log_softmax"
         : K == SLUICE_ROW_LAYER_NORM  ? "layer_norm"
                                       : "rms_norm";
}

/// Runs row op K with team TEAM, V elements per vector and PER vectors per
/// lane in registers (0: streamed) on random rows; compares with a double
/// reference. Returns the emulator's barrier/shuffle counts.
template <int K, int TEAM, int V, int PER, typename T>
sluice_emu::Stats checkRow(const Problem &pb, unsigned seed = 1) {
  typedef typename Compute<T>::type C;
  const int64_t rows = pb.rows, len = pb.len;
  const RowInputs<T> inputs = rowInputs<T>(rows, len, pb.offset, seed);
  std::vector<T> out(rows * len, toStorage<T>(-77.0));
  std::vector<float> mean(rows, -1), inv(rows, -1);
  const C eps = (C)1e-5;
  const bool vector = pb.vector && V > 1;
  const T *inP = inputs.in.data();
  T *outP = out.data();
  // Loads with `first` set (the prologue's stores) per element: exactly one
  // each; a load outside the rows is an error (the emulator would read past
  // the vectors).
  std::vector<int> firstLoads(rows * len, 0);
  int64_t outside = 0;
  auto kernel = [&] {
    const RowAccess<K, V, T, C> io{inP, inputs.bias.data(), inputs.scale.data(), outP, len,
                                   vector};
    auto load_ = [&](int64_t row, int64_t j0, C (&x_)[V], bool first_) {
      if (row < 0 || row >= rows || j0 < 0 || j0 + V > len || j0 % V) {
        ++outside;
        for (int k = 0; k < V; ++k)
          x_[k] = (C)0;
        return;
      }
      if (first_)
        for (int k = 0; k < V; ++k)
          ++firstLoads[row * len + j0 + k];
      io.load(row, j0, x_);
    };
    auto store_ = [&](int64_t row, int64_t j0, const C (&y0_)[V]) { io.store(row, j0, y0_); };
    auto stats_ = [&](int64_t row, C m, C i) {
      mean[row] = (float)m;
      inv[row] = (float)i;
    };
    sluice_row_run<K, TEAM, V, PER, C>(rows, len, eps, load_, store_, stats_);
  };
  const unsigned block = std::max(TEAM, 128);
  sluice_emu::Stats stats = sluice_emu::launch(pb.grid, block, kernel);

  const double tol = tolerance<T>();
  int64_t bad = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const RowExpected e = rowReference<K, C>(inputs, r, len);
    for (int64_t j = 0; j < len; ++j) {
      const double ref = e.values[j], got = sluice_load(out[r * len + j]);
      if (!rowValueClose<K>(got, ref, tol) && bad++ < 5)
        ADD_FAILURE() << kindName<K>() << " team " << TEAM << " V " << V << " PER " << PER
                      << ": row " << r << " element " << j << ": got " << got << ", want " << ref;
    }
    if (K == SLUICE_ROW_LAYER_NORM) {
      EXPECT_NEAR(mean[r], e.a, 1e-5 * (std::fabs(e.a) + 1)) << "mean of row " << r;
      EXPECT_NEAR(inv[r], e.b, 1e-5 * e.b) << "inv_std_dev of row " << r;
    } else {
      EXPECT_EQ(mean[r], -1.0f) << "statistics stored for " << kindName<K>();
    }
  }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(outside, 0) << "loads outside the rows";
  int64_t wrongFirst = 0;
  for (int64_t i = 0; i < rows * len; ++i)
    if (firstLoads[i] != 1 && wrongFirst++ < 3)
      ADD_FAILURE() << "element " << i << " loaded " << firstLoads[i]
                    << " times with `first` set (its prologue stores), not once";
  return stats;
}

// Sub-warp teams: several rows per warp; rows not a multiple of the rows a
// block takes, fewer blocks than rows need.
TEST(CudaRowEmulation, SoftmaxSubWarpVectors) {
  checkRow<SLUICE_ROW_SOFTMAX, 4, 4, 2, float>({37, 32, 3});
}
TEST(CudaRowEmulation, SoftmaxSubWarpScalarOddLength) {
  checkRow<SLUICE_ROW_SOFTMAX, 8, 1, 3, float>({45, 21, 2, 0, false});
}
TEST(CudaRowEmulation, LogSoftmaxSixteenLanes) {
  checkRow<SLUICE_ROW_LOG_SOFTMAX, 16, 4, 2, float>({20, 128, 1});
}
// One warp per row.
TEST(CudaRowEmulation, LogSoftmaxWarp) {
  checkRow<SLUICE_ROW_LOG_SOFTMAX, 32, 4, 4, float>({9, 512, 2});
}
TEST(CudaRowEmulation, RmsNormWarpPartialLastVectors) {
  // 300 = 75 vectors: lanes past the row's end hold nothing.
  checkRow<SLUICE_ROW_RMS_NORM, 32, 4, 3, float>({6, 300, 2});
}
// A block per row: shuffles, then shared memory across the warps.
TEST(CudaRowEmulation, LayerNormBlockWithStatistics) {
  auto stats = checkRow<SLUICE_ROW_LAYER_NORM, 256, 4, 2, float>({4, 2048, 2});
  EXPECT_GT(stats.barriers, 0u);
}
TEST(CudaRowEmulation, LayerNormLargeMeanIsStable) {
  // mean 100, unit variance: E[x^2] - E[x]^2 in f32 would lose the variance.
  checkRow<SLUICE_ROW_LAYER_NORM, 64, 4, 4, float>({3, 1024, 3, 100.0});
}
// Register rows whose last slots are idle in some lanes (the row's vectors
// not a multiple of the team), and blocks with idle teams (rows not a
// multiple of the rows a block takes): those slots load from a valid
// address, store no prologue value and change no statistic.
TEST(CudaRowEmulation, SoftmaxF16WarpIdleSlotsAndTeams) {
  // 560 = 70 vectors of 8: lanes 6..31 hold 2 of their 3 slots; 7 rows in
  // blocks of 4.
  checkRow<SLUICE_ROW_SOFTMAX, 32, 8, 3, sluice_f16>({7, 560, 1});
}
TEST(CudaRowEmulation, LogSoftmaxIdleSlotsWithNegativeValues) {
  // Idle slots hold -inf: the max (about -120 here; an idle 0 would win it,
  // and exp(x - 0) underflow to 0) and the sum ignore them.
  checkRow<SLUICE_ROW_LOG_SOFTMAX, 16, 4, 3, float>({5, 4 * 37, 2, -120.0});
}
TEST(CudaRowEmulation, LayerNormScalarOddLengthIdleSlots) {
  // 77 elements one by one over 96 slots: the squares select the idle ones
  // out (their x - mean is not 0).
  checkRow<SLUICE_ROW_LAYER_NORM, 32, 1, 3, float>({6, 77, 1, 10.0, false});
}
TEST(CudaRowEmulation, LayerNormF16BlockIdleSlotsPairedReduction) {
  // A block team (shared memory across 4 warps) reducing the squares and the
  // deviations together; 300 vectors over 384 slots; large mean.
  auto stats = checkRow<SLUICE_ROW_LAYER_NORM, 128, 4, 3, sluice_f16>({3, 1200, 2, 50.0});
  EXPECT_GT(stats.barriers, 0u);
}
TEST(CudaRowEmulation, RmsNormF16SubWarpIdleSlots) {
  // 45 vectors over 16 lanes x 3 slots; 11 rows in blocks of 8 teams.
  checkRow<SLUICE_ROW_RMS_NORM, 16, 8, 3, sluice_f16>({11, 360, 1});
}
// Rows longer than the registers hold: streamed statistics (online softmax,
// Welford), the prologue recomputed in a second pass.
TEST(CudaRowEmulation, SoftmaxStreamedBlock) {
  checkRow<SLUICE_ROW_SOFTMAX, 128, 1, 0, float>({3, 3001, 2, 0, false});
}
TEST(CudaRowEmulation, LayerNormStreamedBlock) {
  checkRow<SLUICE_ROW_LAYER_NORM, 128, 4, 0, float>({2, 5000, 1, 100.0});
}
TEST(CudaRowEmulation, LogSoftmaxStreamedSubWarp) {
  checkRow<SLUICE_ROW_LOG_SOFTMAX, 4, 4, 0, float>({11, 400, 2});
}
TEST(CudaRowEmulation, RmsNormStreamedWarp) {
  checkRow<SLUICE_ROW_RMS_NORM, 32, 2, 0, double>({5, 1000, 2});
}
// Half precision storage: 8 halves per 16-byte vector, statistics in f32.
TEST(CudaRowEmulation, SoftmaxF16SubWarp) {
  checkRow<SLUICE_ROW_SOFTMAX, 16, 8, 1, sluice_f16>({19, 128, 2});
}
TEST(CudaRowEmulation, LayerNormF16Warp) {
  checkRow<SLUICE_ROW_LAYER_NORM, 32, 8, 2, sluice_f16>({5, 512, 2, 10.0});
}
TEST(CudaRowEmulation, RmsNormBF16Block) {
  checkRow<SLUICE_ROW_RMS_NORM, 128, 8, 2, sluice_bf16>({3, 2048, 2});
}
TEST(CudaRowEmulation, LayerNormF16Streamed) {
  checkRow<SLUICE_ROW_LAYER_NORM, 64, 8, 0, sluice_f16>({2, 4096, 1});
}
TEST(CudaRowEmulation, SoftmaxF64Warp) {
  checkRow<SLUICE_ROW_SOFTMAX, 32, 2, 4, double>({4, 256, 1});
}

/// Reduce kind K of each row (a prologue that doubles x), stored by lane 0.
template <int K, int TEAM, int V, typename T>
void checkReduce(int64_t rows, int64_t len, unsigned grid, bool withNan = false) {
  typedef typename Compute<T>::type A;
  std::vector<T> in = reduceInputs<T>(rows, len);
  if (withNan)
    in[len + len / 2] = toStorage<T>(NAN); // row 1
  std::vector<A> out(rows, (A)-99);
  const T *inP = in.data();
  auto kernel = [&] {
    auto load_ = [&](int64_t row, int64_t j0, A (&x_)[V], bool) {
      reduceLoad<V>(inP, len, row, j0, x_);
    };
    auto store_ = [&](int64_t row, A y0_) { out[row] = y0_; };
    sluice_row_reduce_run<K, TEAM, V, A>(rows, len, load_, store_);
  };
  sluice_emu::launch(grid, std::max(TEAM, 128), kernel);
  for (int64_t r = 0; r < rows; ++r) {
    const ReduceExpected e = reduceReference<K, A>(in, r, len);
    const bool nan = e.nan;
    const double acc = e.value;
    if (nan) {
      EXPECT_TRUE(std::isnan((double)out[r])) << "row " << r << " holds a NaN";
      continue;
    }
    EXPECT_NEAR((double)out[r], acc, 1e-5 * std::fabs(acc) + 1e-5) << "row " << r;
  }
}

TEST(CudaRowEmulation, ReduceSumSubWarp) { checkReduce<0, 8, 4, float>(29, 48, 2); }
TEST(CudaRowEmulation, ReduceMeanWarp) { checkReduce<4, 32, 4, float>(7, 1000, 2); }
TEST(CudaRowEmulation, ReduceMaxBlockPropagatesNaN) {
  checkReduce<2, 256, 1, float>(3, 4099, 2, true);
}
TEST(CudaRowEmulation, ReduceMinF16) { checkReduce<3, 16, 8, sluice_f16>(10, 256, 1); }
TEST(CudaRowEmulation, ReduceSumInt64Block) { checkReduce<0, 64, 2, int64_t>(3, 1000, 1); }
TEST(CudaRowEmulation, ReduceMeanInt64) { checkReduce<4, 4, 2, int64_t>(9, 14, 1); }

// The emulator itself: a barrier only part of the block reaches (undefined
// on a GPU) fails the launch, so a kernel that diverges cannot pass.
TEST(CudaRowEmulation, DivergentBarrierFails) {
  EXPECT_THROW(sluice_emu::launch(1, 64,
                                  [] {
                                    if (threadIdx.x < 40)
                                      __syncthreads();
                                  }),
               std::runtime_error);
  EXPECT_THROW(sluice_emu::launch(1, 32,
                                  [] {
                                    if (threadIdx.x < 16)
                                      (void)__shfl_xor_sync(0xffffffffu, 1.0f, 1);
                                  }),
               std::runtime_error);
  // A team reduction that every lane reaches works.
  std::vector<float> got(64);
  sluice_emu::launch(1, 64, [&] {
    got[threadIdx.x] = sluice_team_all<64>((float)threadIdx.x, sluice_dsum<float>);
  });
  for (float v : got)
    EXPECT_EQ(v, 63.0f * 64.0f / 2.0f);
}

} // namespace
