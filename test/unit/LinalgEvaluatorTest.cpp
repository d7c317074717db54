//===- LinalgEvaluatorTest.cpp - reference semantics of the linalg family -===//
//
// The numerics the conformance suite only touches indirectly: quantization
// rounding (ties to even) and saturation, exact integer contractions with
// zero points, einsum diagonals, determinants, max-pool index order and
// transposed convolutions that extend past their natural size.
//
//===----------------------------------------------------------------------===//

#include "dialects/sluice/SluiceOps.h"
#include "lib/reference/Evaluator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using sluice::DType;
using sluice::Tensor;

namespace {

struct LinalgEvaluatorTest : ::testing::Test {
  LinalgEvaluatorTest() {
    context.loadDialect<sluice::SluiceDialect, func::FuncDialect>();
  }

  std::vector<Tensor> run(const char *source,
                          const std::vector<Tensor> &inputs) {
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module);
    if (!module)
      return {};
    auto func = cast<func::FuncOp>(module->getBody()->front());
    auto outputs = sluice::evaluate(
        func, std::vector<sluice::RuntimeValue>(inputs.begin(), inputs.end()));
    EXPECT_TRUE(succeeded(outputs));
    std::vector<Tensor> tensors;
    if (succeeded(outputs))
      for (const sluice::RuntimeValue &value : *outputs)
        tensors.push_back(value.tensor());
    return tensors;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(LinalgEvaluatorTest, QuantizeRoundsHalfToEvenAndSaturates) {
  auto out =
      run(R"mlir(
    func.func @main(%x: tensor<6xf32>, %s: tensor<f32>, %z: tensor<i8>) -> tensor<6xi8> {
      %0 = sluice.quantize_linear %x, %s, %z : (tensor<6xf32>, tensor<f32>, tensor<i8>) -> tensor<6xi8>
      return %0 : tensor<6xi8>
    })mlir",
          {Tensor::fromDoubles(DType::F32, {6},
                               {5.0, 7.0, -5.0, -7.0, 1000.0, -1000.0}),
           Tensor::scalar(DType::F32, 2.0), Tensor::scalar(DType::I8, 1.0)});
  ASSERT_EQ(out.size(), 1u);
  // 2.5 -> 2, 3.5 -> 4, -2.5 -> -2, -3.5 -> -4 (then + 1), clamped to int8.
  EXPECT_EQ(out[0].toInt64Vector(),
            (std::vector<int64_t>{3, 5, -1, -3, 127, -128}));
}

TEST_F(LinalgEvaluatorTest, PerAxisDequantize) {
  auto out = run(R"mlir(
    func.func @main(%x: tensor<2x2xui8>, %s: tensor<2xf32>, %z: tensor<2xui8>) -> tensor<2x2xf32> {
      %0 = sluice.dequantize_linear %x, %s, %z {axis = 0 : i64} : (tensor<2x2xui8>, tensor<2xf32>, tensor<2xui8>) -> tensor<2x2xf32>
      return %0 : tensor<2x2xf32>
    })mlir",
                 {Tensor::fromDoubles(DType::U8, {2, 2}, {10, 20, 10, 20}),
                  Tensor::fromDoubles(DType::F32, {2}, {0.5, 2.0}),
                  Tensor::fromDoubles(DType::U8, {2}, {10, 0})});
  EXPECT_EQ(out[0].toDoubleVector(), (std::vector<double>{0, 5, 20, 40}));
}

TEST_F(LinalgEvaluatorTest, MatMulIntegerSubtractsZeroPointsExactly) {
  auto out = run(R"mlir(
    func.func @main(%a: tensor<1x2xui8>, %b: tensor<2x2xui8>, %za: tensor<ui8>, %zb: tensor<2xui8>) -> tensor<1x2xi32> {
      %0 = sluice.matmul_integer %a, %b, %za, %zb : (tensor<1x2xui8>, tensor<2x2xui8>, tensor<ui8>, tensor<2xui8>) -> tensor<1x2xi32>
      return %0 : tensor<1x2xi32>
    })mlir",
                 {Tensor::fromDoubles(DType::U8, {1, 2}, {255, 0}),
                  Tensor::fromDoubles(DType::U8, {2, 2}, {255, 0, 1, 1}),
                  Tensor::scalar(DType::U8, 1),
                  Tensor::fromDoubles(DType::U8, {2}, {0, 1})});
  // (255-1)*(255-0) + (0-1)*(1-0) = 64769; (255-1)*(0-1) + (0-1)*(1-1) = -254.
  EXPECT_EQ(out[0].toInt64Vector(), (std::vector<int64_t>{64769, -254}));
}

TEST_F(LinalgEvaluatorTest, EinsumTraceAndBatchDiagonal) {
  auto out = run(
      R"mlir(
    func.func @main(%a: tensor<2x2x2xf32>) -> (tensor<f32>, tensor<2x2xf32>) {
      %0 = sluice.einsum %a {equation = "iij->"} : (tensor<2x2x2xf32>) -> tensor<f32>
      %1 = sluice.einsum %a {equation = "...ii->...i"} : (tensor<2x2x2xf32>) -> tensor<2x2xf32>
      return %0, %1 : tensor<f32>, tensor<2x2xf32>
    })mlir",
      {Tensor::fromDoubles(DType::F32, {2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})});
  ASSERT_EQ(out.size(), 2u);
  // a[0,0,:] + a[1,1,:] = 1 + 2 + 7 + 8.
  EXPECT_EQ(out[0].getDouble(0), 18.0);
  EXPECT_EQ(out[1].toDoubleVector(), (std::vector<double>{1, 4, 5, 8}));
}

TEST_F(LinalgEvaluatorTest, DeterminantWithPivoting) {
  auto out = run(
      R"mlir(
    func.func @main(%a: tensor<3x3xf64>) -> tensor<f64> {
      %0 = sluice.det %a : (tensor<3x3xf64>) -> tensor<f64>
      return %0 : tensor<f64>
    })mlir",
      {Tensor::fromDoubles(DType::F64, {3, 3}, {0, 2, 1, 1, 0, 0, 0, 0, 3})});
  EXPECT_NEAR(out[0].getDouble(0), -6.0, 1e-12);
}

TEST_F(LinalgEvaluatorTest, MaxPoolIndicesColumnMajor) {
  const char *source = R"mlir(
    func.func @main(%x: tensor<1x1x2x3xf32>) -> (tensor<1x1x1x1xf32>, tensor<1x1x1x1xi64>) {
      %0, %1 = sluice.pool %x {kind = #sluice<pool_kind max>, kernel_shape = array<i64: 2, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, storage_order = 1 : i64, return_indices} : (tensor<1x1x2x3xf32>) -> (tensor<1x1x1x1xf32>, tensor<1x1x1x1xi64>)
      return %0, %1 : tensor<1x1x1x1xf32>, tensor<1x1x1x1xi64>
    })mlir";
  auto out =
      run(source,
          {Tensor::fromDoubles(DType::F32, {1, 1, 2, 3}, {0, 9, 0, 0, 0, 0})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].getDouble(0), 9.0);
  // Element (h=0, w=1): row-major 1, column-major w*H + h = 2.
  EXPECT_EQ(out[1].getInt(0), 2);
}

TEST_F(LinalgEvaluatorTest, ConvTransposeNegativePadExtendsWithBias) {
  auto out = run(R"mlir(
    func.func @main(%x: tensor<1x1x1xf32>, %w: tensor<1x1x2xf32>, %b: tensor<1xf32>) -> tensor<1x1x3xf32> {
      %0 = sluice.conv_transpose %x, %w, %b {dilations = array<i64: 1>, output_padding = array<i64: 0>, pads = array<i64: 0, -1>, strides = array<i64: 1>} : (tensor<1x1x1xf32>, tensor<1x1x2xf32>, tensor<1xf32>) -> tensor<1x1x3xf32>
      return %0 : tensor<1x1x3xf32>
    })mlir",
                 {Tensor::fromDoubles(DType::F32, {1, 1, 1}, {2}),
                  Tensor::fromDoubles(DType::F32, {1, 1, 2}, {3, 4}),
                  Tensor::fromDoubles(DType::F32, {1}, {1})});
  EXPECT_EQ(out[0].toDoubleVector(), (std::vector<double>{7, 9, 1}));
}

TEST_F(LinalgEvaluatorTest, BadRuntimeShapeIsAnErrorNotACrash) {
  module = parseSourceString<ModuleOp>(R"mlir(
    func.func @main(%x: tensor<?x?x?x?xf32>, %w: tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32> {
      %0 = sluice.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
      return %0 : tensor<?x?x?x?xf32>
    })mlir",
                                       &context);
  ASSERT_TRUE(module);
  context.getDiagEngine().registerHandler([](Diagnostic &) {});
  auto func = cast<func::FuncOp>(module->getBody()->front());
  auto outputs = sluice::evaluate(func, {Tensor(DType::F32, {1, 3, 4, 4}),
                                         Tensor(DType::F32, {2, 2, 3, 3})});
  EXPECT_TRUE(failed(outputs));
}

} // namespace
