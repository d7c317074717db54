//===- ScalarEmitterTest.cpp - C++ spellings of types and literals --------===//
//
// The scalar-expression emitter writes source both targets compile: a
// literal that is not valid C++ (`1f`) or that loses a value (INT64_MIN,
// infinities, NaN) is a miscompile, so its spellings are pinned here.
//
//===----------------------------------------------------------------------===//

#include "codegen/common/ScalarEmitter.h"

#include "dialects/sluice/SluiceOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace mlir;
using namespace sluice::codegen;

namespace {

struct ScalarEmitter : ::testing::Test {
  MLIRContext context;
  Builder b{&context};
  DenseElementsAttr floats(ArrayRef<float> values) {
    auto type = RankedTensorType::get({(int64_t)values.size()}, b.getF32Type());
    return DenseElementsAttr::get(type, values);
  }
};

TEST_F(ScalarEmitter, StorageAndComputeTypes) {
  EXPECT_EQ(storageType(b.getF32Type()), "float");
  EXPECT_EQ(storageType(b.getF16Type()), "sluice_f16");
  EXPECT_EQ(storageType(b.getBF16Type()), "sluice_bf16");
  EXPECT_EQ(storageType(b.getI1Type()), "bool");
  EXPECT_EQ(storageType(b.getIntegerType(8, /*isSigned=*/false)), "uint8_t");
  EXPECT_EQ(storageType(b.getI32Type()), "int32_t");
  EXPECT_EQ(computeType(b.getF16Type()), "float");
  EXPECT_EQ(computeType(b.getF64Type()), "double");
  EXPECT_EQ(computeType(b.getIntegerType(16)), "int64_t");
  EXPECT_EQ(storageBytes(b.getI1Type()), 1);
  EXPECT_EQ(storageBytes(b.getBF16Type()), 2);
}

TEST_F(ScalarEmitter, LoadsWidenAndStoresConvert) {
  EXPECT_EQ(loadExpr(b.getF16Type(), "x[i]"), "sluice_load(x[i])");
  EXPECT_EQ(loadExpr(b.getI32Type(), "x[i]"), "(int64_t)x[i]");
  EXPECT_EQ(loadExpr(b.getIntegerType(64, false), "x[i]"), "(int64_t)x[i]");
  EXPECT_EQ(loadExpr(b.getI64Type(), "x[i]"), "x[i]");
  EXPECT_EQ(storeExpr(b.getBF16Type(), "v"), "SLUICE_STORE(sluice_bf16, v)");
}

TEST_F(ScalarEmitter, FloatLiteralsAreValidCxx) {
  float inf = std::numeric_limits<float>::infinity();
  auto values = floats({1.0f, 0.5f, 1e-20f, inf, -inf, NAN, 3.0e38f});
  EXPECT_EQ(literal(values, 0), "1.f");
  EXPECT_EQ(literal(values, 1), "0.5f");
  EXPECT_EQ(literal(values, 2), "9.99999968e-21f");
  EXPECT_EQ(literal(values, 3), "(float)INFINITY");
  EXPECT_EQ(literal(values, 4), "-(float)INFINITY");
  EXPECT_EQ(literal(values, 5), "(float)NAN");
  EXPECT_EQ(literal(values, 6), "3.00000001e+38f"); // 9 digits: round-trips
}

TEST_F(ScalarEmitter, IntegerLiteralsKeepTheirValue) {
  auto type = RankedTensorType::get({3}, b.getI64Type());
  auto values = DenseElementsAttr::get(
      type, ArrayRef<int64_t>{std::numeric_limits<int64_t>::min(), -5, 7});
  EXPECT_EQ(literal(values, 0), "INT64_MIN");
  EXPECT_EQ(literal(values, 1), "(int64_t)-5LL");
  auto boolType = RankedTensorType::get({2}, b.getI1Type());
  auto bools = DenseElementsAttr::get(boolType, ArrayRef<bool>{true, false});
  EXPECT_EQ(literal(bools, 0), "true");
  EXPECT_EQ(literal(bools, 1), "false");
}

TEST_F(ScalarEmitter, SplatsReadElementZero) {
  auto type = RankedTensorType::get({4}, b.getF32Type());
  auto splat = DenseElementsAttr::get(type, 2.0f);
  EXPECT_EQ(literal(splat, 3), "2.f");
}

} // namespace
