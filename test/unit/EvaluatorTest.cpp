//===- EvaluatorTest.cpp - reference evaluator on parsed IR ---------------===//

#include "dialects/sluice/SluiceOps.h"
#include "lib/reference/Evaluator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

struct EvaluatorTest : ::testing::Test {
  EvaluatorTest() { context.loadDialect<sluice::SluiceDialect, func::FuncDialect>(); }

  std::vector<sluice::Tensor> run(const char *source,
                                    const std::vector<sluice::Tensor> &inputs) {
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module);
    auto func = cast<func::FuncOp>(module->getBody()->front());
    auto outputs = sluice::evaluate(
        func, std::vector<sluice::RuntimeValue>(inputs.begin(), inputs.end()));
    EXPECT_TRUE(succeeded(outputs));
    std::vector<sluice::Tensor> tensors;
    if (succeeded(outputs))
      for (const sluice::RuntimeValue &value : *outputs)
        tensors.push_back(value.tensor());
    return tensors;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(EvaluatorTest, BroadcastAddThenSoftmax) {
  auto out = run(R"mlir(
    func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
      %0 = sluice.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
      %1 = sluice.softmax %0 {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
      return %1 : tensor<2x3xf32>
    })mlir",
                 {sluice::Tensor::fromDoubles(sluice::DType::F32, {2, 3}, {0, 0, 0, 1, 2, 3}),
                  sluice::Tensor::fromDoubles(sluice::DType::F32, {3}, {0, 0, 0})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NEAR(out[0].getDouble(0), 1.0 / 3, 1e-6);
  double e1 = std::exp(1.0), e2 = std::exp(2.0), e3 = std::exp(3.0);
  EXPECT_NEAR(out[0].getDouble(5), e3 / (e1 + e2 + e3), 1e-6);
}

TEST_F(EvaluatorTest, MatMulBroadcastsBatch) {
  auto out = run(R"mlir(
    func.func @main(%a: tensor<2x1x2xf32>, %b: tensor<2x2xf32>) -> tensor<2x1x2xf32> {
      %0 = sluice.matmul %a, %b : (tensor<2x1x2xf32>, tensor<2x2xf32>) -> tensor<2x1x2xf32>
      return %0 : tensor<2x1x2xf32>
    })mlir",
                 {sluice::Tensor::fromDoubles(sluice::DType::F32, {2, 1, 2}, {1, 2, 3, 4}),
                  sluice::Tensor::fromDoubles(sluice::DType::F32, {2, 2}, {1, 0, 0, 1})});
  EXPECT_EQ(out[0].toDoubleVector(), (std::vector<double>{1, 2, 3, 4}));
}

TEST_F(EvaluatorTest, IntegerDivisionTruncatesAndModFollowsDivisor) {
  auto out = run(R"mlir(
    func.func @main(%a: tensor<2xi32>, %b: tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>) {
      %0 = sluice.div %a, %b : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
      %1 = sluice.mod %a, %b : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
      return %0, %1 : tensor<2xi32>, tensor<2xi32>
    })mlir",
                 {sluice::Tensor::fromDoubles(sluice::DType::I32, {2}, {-7, 7}),
                  sluice::Tensor::fromDoubles(sluice::DType::I32, {2}, {2, -2})});
  EXPECT_EQ(out[0].toInt64Vector(), (std::vector<int64_t>{-3, -3}));
  EXPECT_EQ(out[1].toInt64Vector(), (std::vector<int64_t>{1, -1}));
}

TEST_F(EvaluatorTest, Bfloat16CastRoundsOrTruncates) {
  // 1 + 2^-8 + 2^-9 lies above the midpoint between two bfloat16 values.
  auto out = run(R"mlir(
    func.func @main(%x: tensor<1xf32>) -> (tensor<1xbf16>, tensor<1xbf16>) {
      %0 = sluice.cast %x : tensor<1xf32> -> tensor<1xbf16>
      %1 = sluice.cast %x {truncate_bf16 = true} : tensor<1xf32> -> tensor<1xbf16>
      return %0, %1 : tensor<1xbf16>, tensor<1xbf16>
    })mlir",
                 {sluice::Tensor::fromDoubles(sluice::DType::F32, {1}, {1.0 + 1.0 / 256 + 1.0 / 512})});
  EXPECT_EQ(out[0].getDouble(0), 1.0 + 1.0 / 128);
  EXPECT_EQ(out[1].getDouble(0), 1.0);
}

TEST_F(EvaluatorTest, WrongInputCountFails) {
  module = parseSourceString<ModuleOp>(R"mlir(
    func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
      return %a : tensor<2xf32>
    })mlir",
                                       &context);
  ASSERT_TRUE(module);
  ScopedDiagnosticHandler silence(&context, [](Diagnostic &) { return success(); });
  auto func = cast<func::FuncOp>(module->getBody()->front());
  EXPECT_TRUE(failed(sluice::evaluate(func, {})));
}

} // namespace
