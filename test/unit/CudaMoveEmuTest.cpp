//===- CudaMoveEmuTest.cpp - the cuda strided move run on the host --------===//
//
// sluice_strided_move_kernel (sluice_gen/cuda_move_kernels.cuh), unchanged,
// under the host emulation of CudaRowEmulation.h, against direct index
// arithmetic: the copy of a transposed view (ShuffleNet's channel shuffle,
// [N, 2, C/2, H, W] -> [N, C/2, 2, H, W]), the copy of a view with an
// offset, and constant-mode Pad with positive and negative (cropping) pads,
// with and without a fill value, for 1-, 2- and 4-byte elements.
//
//===----------------------------------------------------------------------===//

#include "CudaRowEmulation.h"

#include "sluice_gen/cuda_move_kernels.cuh"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

namespace {

int64_t product(const std::vector<int64_t> &v) {
  return std::accumulate(v.begin(), v.end(), int64_t(1), std::multiplies<int64_t>());
}

/// Runs the kernel over `total` outputs on a small grid (the grid-stride
/// loop covers the rest).
template <typename T>
std::vector<T> move(const std::vector<T> &in, const SluiceMoveShape &s, const T *fill) {
  int64_t total = 1;
  for (int64_t d = 0; d < s.rank; ++d)
    total *= s.shape[d];
  std::vector<T> out(total, T(0xAB));
  sluice_emu::launch(3, 64, [&] { sluice_strided_move_kernel<T>(in.data(), out.data(), total, s, fill); });
  return out;
}

SluiceMoveShape shapeOf(const std::vector<int64_t> &shape, const std::vector<int64_t> &strides,
                        const std::vector<int64_t> &begin, const std::vector<int64_t> &extent,
                        int64_t offset) {
  SluiceMoveShape s{};
  s.rank = (int64_t)shape.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    s.shape[d] = shape[d];
    s.stride[d] = strides[d];
    s.begin[d] = begin[d];
    s.extent[d] = extent[d];
  }
  s.offset = offset;
  return s;
}

TEST(CudaMoveEmu, ChannelShuffleTranspose) {
  // x [N=2, G=2, C/G=3, H=2, W=2], contiguous; y = transpose(1, 2).
  const std::vector<int64_t> in = {2, 2, 3, 2, 2};
  const std::vector<int64_t> inStrides = {24, 12, 4, 2, 1};
  std::vector<float> x(product(in));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = (float)i;
  std::vector<unsigned> bits(x.size());
  memcpy(bits.data(), x.data(), x.size() * 4);
  const std::vector<int64_t> out = {2, 3, 2, 2, 2};
  auto got = move<unsigned>(bits, shapeOf(out, {24, 4, 12, 2, 1}, {0, 0, 0, 0, 0}, out, 0),
                            nullptr);
  int64_t e = 0;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t g = 0; g < 2; ++g)
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t w = 0; w < 2; ++w, ++e) {
            float v;
            memcpy(&v, &got[e], 4);
            EXPECT_EQ(v, x[n * inStrides[0] + g * inStrides[1] + c * inStrides[2] +
                           h * inStrides[3] + w])
                << "element " << e;
          }
}

TEST(CudaMoveEmu, ViewWithOffset) {
  // Rows 1..2 of a [4, 5] u16 matrix, every second column: a
  // [2, 3] view at offset 5 with strides {5, 2}.
  std::vector<unsigned short> x(20);
  std::iota(x.begin(), x.end(), (unsigned short)100);
  auto got = move<unsigned short>(x, shapeOf({2, 3}, {5, 2}, {0, 0}, {2, 3}, 5), nullptr);
  std::vector<unsigned short> want = {105, 107, 109, 110, 112, 114};
  EXPECT_EQ(got, want);
}

TEST(CudaMoveEmu, PadConstantWithCrop) {
  // x [3, 4] u8; pads begin {1, -1}, end {2, 1}: out [6, 4] where out(i, j)
  // = x(i - 1, j + 1) inside, the fill outside.
  std::vector<unsigned char> x(12);
  std::iota(x.begin(), x.end(), (unsigned char)1);
  const unsigned char fill = 200;
  auto got = move<unsigned char>(x, shapeOf({6, 4}, {4, 1}, {1, -1}, {3, 4}, 0), &fill);
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      int64_t r = i - 1, c = j + 1;
      unsigned char want = (r >= 0 && r < 3 && c >= 0 && c < 4) ? x[r * 4 + c] : fill;
      EXPECT_EQ(got[i * 4 + j], want) << i << "," << j;
    }
  // No fill value: zeros.
  auto zero = move<unsigned char>(x, shapeOf({6, 4}, {4, 1}, {1, -1}, {3, 4}, 0), nullptr);
  EXPECT_EQ(zero[0], 0);
  EXPECT_EQ(zero[4], x[1]);
}

TEST(CudaMoveEmu, PadOfATransposedView) {
  // Pad [1, 1] on both sides of x^T, x [2, 3] f32 bits: out [5, 4].
  std::vector<unsigned> x = {1, 2, 3, 4, 5, 6};
  auto got = move<unsigned>(x, shapeOf({5, 4}, {1, 3}, {1, 1}, {3, 2}, 0), nullptr);
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      int64_t r = i - 1, c = j - 1;
      unsigned want = (r >= 0 && r < 3 && c >= 0 && c < 2) ? x[c * 3 + r] : 0;
      EXPECT_EQ(got[i * 4 + j], want) << i << "," << j;
    }
}

} // namespace
