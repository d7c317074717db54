//===- CommReduceTest.cpp - the host collectives' arithmetic --------------===//

#include "runtime/comm/Reduce.h"

#include "sluice/bundle_abi.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace sluice::runtime::comm;

TEST(CommReduce, BlocksCoverEveryElementOnce) {
  for (size_t count : {0u, 1u, 5u, 24u, 1001u})
    for (int parts : {1, 2, 3, 7}) {
      size_t covered = 0;
      for (int b = 0; b < parts; ++b) {
        EXPECT_EQ(blockBegin(count, parts, b), covered)
            << count << "/" << parts;
        covered += blockSize(count, parts, b);
        // Sizes differ by at most one.
        EXPECT_LE(blockSize(count, parts, b), count / parts + 1);
        EXPECT_GE(blockSize(count, parts, b), count / parts);
      }
      EXPECT_EQ(covered, count);
    }
  // No overflow of count * block for counts near the top of size_t.
  size_t huge = std::numeric_limits<size_t>::max() / 2;
  EXPECT_EQ(blockBegin(huge, 4, 4), huge);
}

TEST(CommReduce, SumsInRankOrderAndInPlace) {
  std::vector<float> a = {1, 2, 3}, b = {10, 20, 30}, c = {100, 200, 300};
  const void *sources[] = {a.data(), b.data(), c.data()};
  sumInto(a.data(), sources, 3, 3, SLUICE_COMM_F32); // dst is a source
  EXPECT_EQ(a, (std::vector<float>{111, 222, 333}));

  // More than one chunk of elements.
  std::vector<double> x(3000), y(3000), out(3000);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = (double)i;
    y[i] = 0.5;
  }
  const void *doubles[] = {x.data(), y.data()};
  sumInto(out.data(), doubles, 2, x.size(), SLUICE_COMM_F64);
  EXPECT_EQ(out[2999], 2999.5);
}

TEST(CommReduce, IntegersWrapAround) {
  std::vector<int32_t> a = {2147483647, -5}, b = {1, 7};
  const void *sources[] = {a.data(), b.data()};
  std::vector<int32_t> out(2);
  sumInto(out.data(), sources, 2, 2, SLUICE_COMM_I32);
  EXPECT_EQ(out[0], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(out[1], 2);
  std::vector<uint8_t> u = {250, 3}, v = {10, 4}, w(2);
  const void *bytes[] = {u.data(), v.data()};
  sumInto(w.data(), bytes, 2, 2, SLUICE_COMM_U8);
  EXPECT_EQ(w[0], 4);
  EXPECT_EQ(w[1], 7);
}

TEST(CommReduce, HalfPrecisionRoundsOnce) {
  // 1 + 2^-11 + 2^-11 in half: summed in float (exactly 1 + 2^-10), then
  // rounded once; rounding after each add would give 1 (ties to even).
  uint16_t one = floatToHalf(1.0f), tiny = floatToHalf(std::ldexp(1.0f, -11));
  EXPECT_EQ(halfToFloat(tiny), std::ldexp(1.0f, -11));
  std::vector<uint16_t> a = {one}, b = {tiny}, c = {tiny}, out(1);
  const void *sources[] = {a.data(), b.data(), c.data()};
  sumInto(out.data(), sources, 3, 1, SLUICE_COMM_F16);
  EXPECT_EQ(halfToFloat(out[0]), 1.0f + std::ldexp(1.0f, -10));

  std::vector<uint16_t> p = {floatToBf16(1.5f)}, q = {floatToBf16(-0.25f)};
  const void *bf[] = {p.data(), q.data()};
  sumInto(out.data(), bf, 2, 1, SLUICE_COMM_BF16);
  EXPECT_EQ(bf16ToFloat(out[0]), 1.25f);
}

TEST(CommReduce, HalfConversions) {
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff); // the largest half
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00); // rounds to inf
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 1); // the smallest subnormal
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -26)), 0); // below half of it
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(halfToFloat(0x3c00), 1.0f);
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(NAN))));
  EXPECT_TRUE(std::isinf(halfToFloat(0x7c00)));
  // bfloat16: round to nearest even on the dropped 16 bits.
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  float justAbove;
  uint32_t bits = 0x3f808000; // exactly between 0x3f80 and 0x3f81: to even
  std::memcpy(&justAbove, &bits, 4);
  EXPECT_EQ(floatToBf16(justAbove), 0x3f80);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(NAN))));
}

TEST(CommReduce, ElementTypes) {
  EXPECT_EQ(dtypeBytes(SLUICE_COMM_F32), 4u);
  EXPECT_EQ(dtypeBytes(SLUICE_COMM_BF16), 2u);
  EXPECT_EQ(dtypeBytes(SLUICE_COMM_I64), 8u);
  EXPECT_EQ(dtypeBytes(SLUICE_COMM_U8), 1u);
  EXPECT_EQ(dtypeBytes(42), 0u);
  EXPECT_STREQ(dtypeName(SLUICE_COMM_F16), "f16");
  EXPECT_STREQ(dtypeName(-1), "?");
}
