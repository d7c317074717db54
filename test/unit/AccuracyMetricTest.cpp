//===- AccuracyMetricTest.cpp - the compress guards' output errors -------===//
//
// The arithmetic the accuracy guards of the compress phase judge outputs by
// (passes/compress/Calibration.h): the relative L2 error and the share of
// rows whose top-1 changed, accumulated over several sets, argmax's ties
// and NaNs, and the metrics' names and default budgets.
//
//===----------------------------------------------------------------------===//

#include "passes/compress/Calibration.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace sluice;
using namespace sluice::quant;

namespace {

Tensor floats(std::vector<int64_t> shape, const std::vector<double> &values) {
  return Tensor::fromDoubles(DType::F32, std::move(shape), values);
}

TEST(AccuracyMetric, NamesAndDefaultBudgets) {
  EXPECT_EQ(parseAccuracyMetric("rel-l2"), AccuracyMetric::RelL2);
  EXPECT_EQ(parseAccuracyMetric("top1-agreement"), AccuracyMetric::Top1Agreement);
  EXPECT_FALSE(parseAccuracyMetric("auto").has_value()); // resolved per model, elsewhere
  EXPECT_FALSE(parseAccuracyMetric("top1").has_value());
  EXPECT_STREQ(accuracyMetricName(AccuracyMetric::Top1Agreement), "top1-agreement");
  EXPECT_DOUBLE_EQ(defaultAccuracyBudget(AccuracyMetric::RelL2), 0.05);
  EXPECT_DOUBLE_EQ(defaultAccuracyBudget(AccuracyMetric::Top1Agreement), 0.01);
}

TEST(AccuracyMetric, ArgmaxTakesTheFirstOfEqualsAndNaNFirst) {
  Tensor t = floats({6}, {1, 3, 3, 2, 0, 0});
  EXPECT_EQ(argmaxOf(t, 0, 6), 1);    // ties: the first
  EXPECT_EQ(argmaxOf(t, 0, 3, 2), 1); // 1, 3, 0 with stride 2
  Tensor n = floats({3}, {1, std::nan(""), 5});
  EXPECT_EQ(argmaxOf(n, 0, 3), 1); // numpy's argmax: a NaN wins
  Tensor neg = floats({3}, {-5, -1, -3});
  EXPECT_EQ(argmaxOf(neg, 0, 3), 1);
}

TEST(AccuracyMetric, ChangedRowsOverSets) {
  // Two sets of [2, 3] logits: one row of four changes its top-1.
  Tensor ref1 = floats({2, 3}, {0, 1, 2, 5, 1, 0});
  Tensor got1 = floats({2, 3}, {0, 1, 1.9, 4, 1, 0}); // rows keep 2 and 0
  Tensor ref2 = floats({2, 3}, {1, 0, 0, 0, 0, 1});
  Tensor got2 = floats({2, 3}, {1, 0, 0, 0, 2, 1}); // second row: 2 -> 1
  ErrorSum sum;
  sum.add(got1, ref1);
  ErrorSum other;
  other.add(got2, ref2);
  sum.merge(other);
  EXPECT_EQ(sum.rows, 4);
  EXPECT_EQ(sum.changed, 1);
  EXPECT_DOUBLE_EQ(sum.value(AccuracyMetric::Top1Agreement), 0.25);
  // The relative L2 part: ||got - ref|| / ||ref|| over both sets.
  double diff2 = 0.01 + 1 + 4, norm2 = 0 + 1 + 4 + 25 + 1 + 0 + 1 + 0 + 0 + 0 + 0 + 1;
  EXPECT_NEAR(sum.value(AccuracyMetric::RelL2), std::sqrt(diff2 / norm2), 1e-7);
  EXPECT_DOUBLE_EQ(sum.value(), sum.value(AccuracyMetric::RelL2));
}

TEST(AccuracyMetric, L2OnlyCountsNoRowsAndNoErrorIsZero) {
  Tensor ref = floats({2, 2}, {1, 0, 0, 1});
  ErrorSum l2;
  l2.addL2(floats({2, 2}, {0, 1, 1, 0}), ref);
  EXPECT_EQ(l2.rows, 0);
  EXPECT_DOUBLE_EQ(l2.value(AccuracyMetric::Top1Agreement), 0.0);
  EXPECT_DOUBLE_EQ(l2.value(), std::sqrt(2.0)); // ||(-1, 1, 1, -1)|| / ||(1, 0, 0, 1)||
  ErrorSum same;
  same.add(ref, ref);
  EXPECT_EQ(same.rows, 2);
  EXPECT_DOUBLE_EQ(same.value(AccuracyMetric::Top1Agreement), 0.0);
  EXPECT_DOUBLE_EQ(same.value(AccuracyMetric::RelL2), 0.0);
  // An all-zero reference with a nonzero output: infinitely wrong in L2.
  ErrorSum zero;
  zero.add(floats({1, 2}, {0, 1}), floats({1, 2}, {0, 0}));
  EXPECT_TRUE(std::isinf(zero.value()));
  EXPECT_EQ(zero.changed, 1);
}

} // namespace
