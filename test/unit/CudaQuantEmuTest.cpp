//===- CudaQuantEmuTest.cpp - quantized cuda kernels run on the host ------===//
//
// The device templates of sluice_gen/cuda_quant_kernels.cuh, unchanged,
// under the host emulation of CudaRowEmulation.h (each block's threads as
// fibers, __syncthreads a real barrier), against the independent host
// reference of test/common/QuantReference.h (the host arithmetic is
// tested in CudaQuantHostTest.cpp, the same binary).
//
// Covers: QuantizeLinear's rounding (ties to even, saturation, NaN) from
// f32 and f16, with and without the IMMA shift; the CUDA-core int8 GEMM
// (u8 and s8 activations, B stored [N, K] and [K, N], batches with a shared
// and a per-batch B, extreme values, odd sizes) exactly; the int8 epilogue's
// zero-point correction after an s8 x s8 product, as the IMMA path runs
// it; the weight-only GEMM at M = 1, 3, 16 for int8 and int4 (signed, and
// unsigned with a zero point), f32 and f16 activations, full 128-bit tiles
// and edge tiles, odd N and K, K split over blocks with the reduce kernel;
// and the large-M path's dequantization.
//
//===----------------------------------------------------------------------===//

#include "CudaRowEmulation.h"

#include "sluice_gen/cuda_quant_kernels.cuh"

#include "common/QuantReference.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace {

using namespace sluice_quant_test;

//===----------------------------------------------------------------------===//
// Emulated kernels
//===----------------------------------------------------------------------===//

template <typename TX, typename TQ> void checkQuantize(bool shift, float scale, int32_t zp) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-30.0f, 30.0f);
  const int64_t n = 1000;
  std::vector<TX> x(n);
  std::vector<float> xf(n);
  for (int64_t i = 0; i < n; ++i) {
    float v = i % 3 ? dist(rng) : std::round(dist(rng)) * scale * 0.5f; // ties
    if (i == 5)
      v = NAN;
    x[i] = SLUICE_STORE(TX, v);
    xf[i] = sluice_load(x[i]);
  }
  std::vector<TQ> q(n, (TQ)0x55);
  const bool u8 = shift || (TQ)-1 > (TQ)0;
  const int32_t qmin = u8 ? 0 : -128, qmax = u8 ? 255 : 127;
  sluice_emu::launch(
      2, 128, [&] { sluice_quantize_body(x.data(), q.data(), n, scale, zp, qmin, qmax, shift); });
  for (int64_t i = 0; i < n; ++i) {
    const int32_t ref = quantizeRef(xf[i], scale, zp, qmin, qmax) - (shift ? 128 : 0);
    ASSERT_EQ((int32_t)q[i], ref) << "element " << i << " = " << xf[i];
  }
}

TEST(CudaQuantEmu, Quantize) {
  checkQuantize<float, uint8_t>(false, 0.25f, 131);
  checkQuantize<float, int8_t>(false, 0.2f, 0);
  checkQuantize<float, int8_t>(true, 0.25f, 131);
  checkQuantize<sluice_f16, uint8_t>(false, 0.125f, 100);
  checkQuantize<sluice_bf16, int8_t>(false, 0.5f, -3);
}

struct Int8Problem {
  int64_t batch, m, n, k;
  bool aUnsigned, bNK, sharedB;
  int32_t zA;
  bool extreme = false;
};

/// The CUDA-core int8 GEMM (what sluice_int8_gemm_tiles launches) against
/// the exact reference.
void checkInt8Tiles(const Int8Problem &pb) {
  std::mt19937 rng(17);
  const int64_t lda = pb.k + 3, strideA = pb.m * lda + 5;
  const int64_t ldb = pb.bNK ? pb.k + 1 : pb.n + 2;
  const int64_t bMatrix = pb.bNK ? pb.n * ldb : pb.k * ldb;
  const int64_t strideB = pb.sharedB ? 0 : bMatrix;
  std::vector<uint8_t> au(pb.batch * strideA);
  std::vector<int8_t> as(pb.batch * strideA);
  for (size_t i = 0; i < au.size(); ++i) {
    au[i] = pb.extreme ? 255 : (uint8_t)(rng() % 256);
    as[i] = pb.extreme ? -128 : (int8_t)(int)(rng() % 256 - 128);
  }
  std::vector<int8_t> b((pb.sharedB ? 1 : pb.batch) * bMatrix);
  for (auto &v : b)
    v = pb.extreme ? -128 : (int8_t)(int)(rng() % 256 - 128);
  const int64_t sbk = pb.bNK ? 1 : ldb, sbn = pb.bNK ? ldb : 1;
  const std::vector<int32_t> ref = pb.aUnsigned
                                       ? int8GemmRef(au.data(), lda, strideA, b.data(), sbk, sbn,
                                                     strideB, pb.zA, pb.batch, pb.m, pb.n, pb.k)
                                       : int8GemmRef(as.data(), lda, strideA, b.data(), sbk, sbn,
                                                     strideB, pb.zA, pb.batch, pb.m, pb.n, pb.k);
  std::vector<int32_t> got(ref.size(), 0x7eadbeef);
  std::vector<int> calls(ref.size(), 0);
  const int64_t m = pb.m, n = pb.n;
  auto epi = [&](int64_t bi, int64_t i, int64_t j, int32_t acc) {
    got[(bi * m + i) * n + j] = acc;
    ++calls[(bi * m + i) * n + j];
  };
  const int64_t tilesM = (pb.m + 63) / 64, tilesN = (pb.n + 63) / 64;
  sluice_emu::launch((unsigned)(tilesM * tilesN * pb.batch), 256, [&] {
    const int64_t bid = sluice_emu::blockIdx.x;
    const int64_t tileN = bid % tilesN, rest = bid / tilesN;
    if (pb.aUnsigned)
      sluice_int8_tile_body(au.data(), lda, strideA, b.data(), sbk, sbn, strideB, pb.zA, pb.m, pb.n,
                            pb.k, rest % tilesM, tileN, rest / tilesM, epi);
    else
      sluice_int8_tile_body(as.data(), lda, strideA, b.data(), sbk, sbn, strideB, pb.zA, pb.m, pb.n,
                            pb.k, rest % tilesM, tileN, rest / tilesM, epi);
  });
  for (size_t e = 0; e < ref.size(); ++e) {
    ASSERT_EQ(calls[e], 1) << "output " << e << " written " << calls[e] << " times";
    ASSERT_EQ(got[e], ref[e]) << "output " << e;
  }
}

TEST(CudaQuantEmu, Int8TilesU8WeightsNK) { checkInt8Tiles({1, 37, 70, 45, true, true, true, 131}); }
TEST(CudaQuantEmu, Int8TilesS8ActivationsKN) {
  checkInt8Tiles({1, 65, 33, 19, false, false, true, -5});
}
TEST(CudaQuantEmu, Int8TilesBatchedPerBatchB) {
  checkInt8Tiles({3, 9, 17, 40, true, false, false, 0});
}
TEST(CudaQuantEmu, Int8TilesBatchedSharedB) { checkInt8Tiles({2, 70, 5, 8, false, true, true, 0}); }
TEST(CudaQuantEmu, Int8TilesExtremeDeepK) {
  // Every byte at its limit: 255 * -128 * 2000 = -65,280,000 per sum.
  checkInt8Tiles({1, 3, 66, 2000, true, true, true, 0, true});
}
TEST(CudaQuantEmu, Int8TilesWrapModulo2To32) {
  // (-128 - 127) * -128 * 70000 = 2,284,800,000 > 2^31: int32 wraps, as
  // the reference's modulo 2^32.
  checkInt8Tiles({1, 1, 2, 70000, false, true, true, 127, true});
}

/// The IMMA path: A u8 shifted to s8 (the shift kernel), s8 x s8 product,
/// the epilogue subtracts zc * colsum (device column sums); n % 4 == 0
/// takes the four-column loop.
void checkInt8Epilogue(int64_t n) {
  std::mt19937 rng(23);
  const int64_t batch = 2, m = 5, k = 28, lda = 31, strideA = m * lda + 3;
  const int32_t zA = 117;
  std::vector<uint8_t> a(batch * strideA);
  for (auto &v : a)
    v = (uint8_t)(rng() % 256);
  std::vector<int8_t> b(n * k); // [N, K], shared
  for (auto &v : b)
    v = (int8_t)(int)(rng() % 256 - 128);
  std::vector<int8_t> shifted(batch * m * k);
  sluice_emu::launch(3, 64, [&] {
    sluice_int8_shift_body(a.data(), lda, strideA, m, batch * m, k, shifted.data());
  });
  std::vector<int32_t> colsum(n, -1);
  sluice_emu::launch(1, 32,
                     [&] { sluice_int8_colsum_body(b.data(), 1, k, 0, 1, k, n, colsum.data()); });
  std::vector<int32_t> hostColsum(n);
  sluice_int8_colsums(k, n, b.data(), 1, k, hostColsum.data());
  EXPECT_EQ(colsum, hostColsum);
  // What cuBLASLt computes: the s8 x s8 product.
  const std::vector<int32_t> product =
      int8GemmRef(shifted.data(), k, m * k, b.data(), 1, k, 0, 0, batch, m, n, k);
  std::vector<int32_t> got(batch * m * n, 0);
  const int32_t zc = sluice_int8_zero_correction(true, zA);
  sluice_emu::launch(2, 32, [&] {
    sluice_int8_epilogue_body(
        product.data(), colsum.data(), 0, zc, batch, m, n,
        [&](int64_t bi, int64_t i, int64_t j, int32_t acc) { got[(bi * m + i) * n + j] = acc; });
  });
  EXPECT_EQ(got, int8GemmRef(a.data(), lda, strideA, b.data(), 1, k, 0, zA, batch, m, n, k));
}

TEST(CudaQuantEmu, Int8EpilogueCorrectsTheShiftFourColumns) { checkInt8Epilogue(12); }
TEST(CudaQuantEmu, Int8EpilogueCorrectsTheShiftOddN) { checkInt8Epilogue(10); }

struct WonlyProblem {
  int bits;
  int64_t m, n, k, group;
  bool isSigned = true;
  int32_t zeroPoint = 0;
  int sms = 132;
  bool half = false;        // f16 activations, else f32
  bool floatScales = false; // f32 scales (ONNX Runtime's QDQ), else f16
};

template <int BITS, int MT, typename TA, typename TS>
void runWonly(const WonlyProblem &pb, const TA *a, const uint8_t *b, const TS *scales,
              std::vector<float> &y) {
  const SluiceWonlyPlan plan = sluice_wonly_plan(pb.m, pb.n, pb.k, BITS, pb.sms);
  SluiceWonlyArgs p;
  p.m = pb.m;
  p.n = pb.n;
  p.k = pb.k;
  p.lda = pb.k + 1;
  p.ldb = BITS == 8 ? pb.n : pb.n;
  p.group = pb.group;
  p.kPerSplit = plan.kPerSplit;
  p.zeroPoint = pb.zeroPoint;
  p.isSigned = pb.isSigned;
  p.vec = (uintptr_t)b % 16 == 0 && (BITS == 8 ? pb.n % 16 == 0 : pb.n % 32 == 0);
  std::vector<float> partial(plan.splits > 1 ? plan.splits * pb.m * pb.n : 0, NAN);
  std::vector<int> calls(pb.m * pb.n, 0);
  const int64_t n = pb.n;
  auto epi = [&](int64_t i, int64_t j, float v) {
    y[i * n + j] = v;
    ++calls[i * n + j];
  };
  sluice_emu::launch((unsigned)(plan.colTiles * plan.splits), SLUICE_WONLY_THREADS, [&] {
    const int64_t bid = sluice_emu::blockIdx.x;
    sluice_wonly_block<BITS, MT>(a, b, scales, p, plan.splits > 1 ? partial.data() : nullptr,
                                 bid % plan.colTiles, bid / plan.colTiles, epi);
  });
  if (plan.splits > 1)
    sluice_emu::launch(
        3, 64, [&] { sluice_wonly_reduce_body(partial.data(), plan.splits, pb.m, pb.n, epi); });
  for (size_t e = 0; e < calls.size(); ++e)
    ASSERT_EQ(calls[e], 1) << "output " << e;
}

template <typename TA, typename TS> void checkWonlyTyped(const WonlyProblem &pb) {
  std::mt19937 rng(29);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  const int64_t lda = pb.k + 1, groups = (pb.k + pb.group - 1) / pb.group;
  std::vector<TA> a(pb.m * lda);
  std::vector<double> ad(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = SLUICE_STORE(TA, dist(rng));
    ad[i] = sluice_load(a[i]);
  }
  const int lo = pb.isSigned ? -(1 << (pb.bits - 1)) : 0, span = 1 << pb.bits;
  std::vector<int32_t> q(pb.k * pb.n);
  std::vector<int8_t> q8(q.size());
  for (size_t i = 0; i < q.size(); ++i) {
    q[i] = lo + (int32_t)(rng() % span);
    q8[i] = (int8_t)q[i];
  }
  std::vector<uint8_t> b;
  if (pb.bits == 8) {
    b.resize(q.size());
    for (size_t i = 0; i < q.size(); ++i)
      b[i] = (uint8_t)q8[i];
  } else {
    b.resize((q.size() + 1) / 2);
    sluice_int4_pack(q8.data(), (int64_t)q8.size(), b.data());
  }
  std::vector<TS> scales(groups * pb.n);
  std::vector<double> sd(scales.size());
  for (size_t i = 0; i < scales.size(); ++i) {
    scales[i] = SLUICE_STORE(TS, (float)(0.01 + 0.02 * (dist(rng) + 1.0)));
    sd[i] = sluice_load(scales[i]);
  }
  std::vector<float> y(pb.m * pb.n, NAN);
  const int mt = sluice_wonly_m_tile(pb.m);
  if (pb.bits == 8) {
    if (mt == 1)
      runWonly<8, 1>(pb, a.data(), b.data(), scales.data(), y);
    else if (mt == 4)
      runWonly<8, 4>(pb, a.data(), b.data(), scales.data(), y);
    else
      runWonly<8, 16>(pb, a.data(), b.data(), scales.data(), y);
  } else {
    if (mt == 1)
      runWonly<4, 1>(pb, a.data(), b.data(), scales.data(), y);
    else if (mt == 4)
      runWonly<4, 4>(pb, a.data(), b.data(), scales.data(), y);
    else
      runWonly<4, 16>(pb, a.data(), b.data(), scales.data(), y);
  }
  const std::vector<double> ref =
      wonlyRef(ad, lda, q, sd, pb.zeroPoint, pb.group, pb.m, pb.n, pb.k, sizeof(TS) == 2);
  std::vector<double> got(y.begin(), y.end());
  // f32 sums of K products (each exact in f32 up to the dequantized weight's
  // one rounding): well inside 1e-5 relative.
  EXPECT_LE(relL2(got, ref), 1e-5);
  for (size_t e = 0; e < ref.size(); ++e)
    ASSERT_NEAR(got[e], ref[e], 1e-4 * (1.0 + std::fabs(ref[e]))) << "output " << e;

  // The large-M path's dequantization, the same weights.
  SluiceWonlyArgs p;
  p.m = pb.m;
  p.n = pb.n;
  p.k = pb.k;
  p.lda = lda;
  p.ldb = pb.n;
  p.group = pb.group;
  p.kPerSplit = pb.k;
  p.zeroPoint = pb.zeroPoint;
  p.isSigned = pb.isSigned;
  p.vec = false;
  std::vector<float> w(pb.k * pb.n, NAN);
  sluice_emu::launch(4, 64, [&] {
    if (pb.bits == 8)
      sluice_wonly_dequant_body<8>(b.data(), scales.data(), p, w.data());
    else
      sluice_wonly_dequant_body<4>(b.data(), scales.data(), p, w.data());
  });
  for (int64_t r = 0; r < pb.k; ++r)
    for (int64_t c = 0; c < pb.n; ++c)
      ASSERT_EQ(w[r * pb.n + c], (float)dequantRef(q[r * pb.n + c], pb.zeroPoint,
                                                   sd[(r / pb.group) * pb.n + c], sizeof(TS) == 2))
          << r << ", " << c;
}

void checkWonly(const WonlyProblem &pb) {
  if (pb.floatScales)
    pb.half ? checkWonlyTyped<sluice_f16, float>(pb) : checkWonlyTyped<float, float>(pb);
  else
    pb.half ? checkWonlyTyped<sluice_f16, sluice_f16>(pb) : checkWonlyTyped<float, sluice_f16>(pb);
}

// int8: one scale per column (group = K), as Form W's int8.
TEST(CudaQuantEmu, WonlyInt8VectorTilesM1) { checkWonly({8, 1, 256, 300, 300}); }
TEST(CudaQuantEmu, WonlyInt8EdgeTilesM3) { checkWonly({8, 3, 200, 129, 129}); }
TEST(CudaQuantEmu, WonlyInt8M16Half) {
  WonlyProblem pb{8, 16, 144, 70, 70};
  pb.half = true;
  checkWonly(pb);
}
TEST(CudaQuantEmu, WonlyInt8SplitK) {
  // One column tile, K over several blocks: partial sums and the reduce.
  WonlyProblem pb{8, 2, 96, 1000, 1000};
  ASSERT_GT(sluice_wonly_plan(2, 96, 1000, 8, 132).splits, 1);
  checkWonly(pb);
}
// int4: blocks of 128 rows (or fewer) along K, as Form W's int4.
TEST(CudaQuantEmu, WonlyInt4VectorTilesSplitK) {
  ASSERT_GT(sluice_wonly_plan(1, 256, 700, 4, 132).splits, 1);
  checkWonly({4, 1, 256, 700, 128});
}
TEST(CudaQuantEmu, WonlyInt4OddN) { checkWonly({4, 3, 75, 130, 32}); }
TEST(CudaQuantEmu, WonlyInt4M16HalfSmallGroups) {
  WonlyProblem pb{4, 11, 160, 200, 16};
  pb.half = true;
  checkWonly(pb);
}
TEST(CudaQuantEmu, WonlyUint4ZeroPoint) {
  WonlyProblem pb{4, 4, 64, 96, 96};
  pb.isSigned = false;
  pb.zeroPoint = 8;
  checkWonly(pb);
}
TEST(CudaQuantEmu, WonlyInt4FloatScales) {
  WonlyProblem pb{4, 2, 96, 200, 64};
  pb.floatScales = true;
  checkWonly(pb);
}
TEST(CudaQuantEmu, WonlyInt8FloatScalesHalf) {
  WonlyProblem pb{8, 5, 130, 77, 77};
  pb.floatScales = true;
  pb.half = true;
  checkWonly(pb);
}
TEST(CudaQuantEmu, WonlyUint8ZeroPointOneSm) {
  WonlyProblem pb{8, 1, 130, 257, 257};
  pb.isSigned = false;
  pb.zeroPoint = 128;
  pb.sms = 1;
  checkWonly(pb);
}

} // namespace
