//===- SequenceEvaluatorTest.cpp - evaluator on sequences, optionals, scan ===//
//
// Cases the ONNX backend data does not cover: scalar split sizes with a
// shorter last piece, negative positions, a reverse scan stacked along a
// non-leading axis, batched (Scan-8) scans, and errors on bad runtime values.
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
using sluice::RuntimeValue;
using sluice::Tensor;

namespace {

struct SequenceEvaluatorTest : ::testing::Test {
  SequenceEvaluatorTest() {
    context.loadDialect<sluice::SluiceDialect, func::FuncDialect>();
  }

  FailureOr<std::vector<RuntimeValue>>
  run(const char *source, const std::vector<RuntimeValue> &inputs) {
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module);
    if (!module)
      return failure();
    return sluice::evaluate(cast<func::FuncOp>(module->getBody()->front()),
                            inputs);
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

std::vector<double> values(const Tensor &t) { return t.toDoubleVector(); }

TEST_F(SequenceEvaluatorTest, ScalarSplitThenNegativePositions) {
  auto out = run(R"mlir(
    func.func @main(%x: tensor<5xf32>) -> (!sluice.sequence<tensor<?xf32>>, tensor<?xf32>, tensor<i64>) {
      %two = sluice.constant dense<2> : tensor<i64>
      %last = sluice.constant dense<-1> : tensor<i64>
      %s = sluice.split_to_sequence %x, %two {axis = 0 : i64} : (tensor<5xf32>, tensor<i64>) -> !sluice.sequence<tensor<?xf32>>
      %a = sluice.sequence_at %s, %last : (!sluice.sequence<tensor<?xf32>>, tensor<i64>) -> tensor<?xf32>
      %e = sluice.sequence_erase %s, %last : (!sluice.sequence<tensor<?xf32>>, tensor<i64>) -> !sluice.sequence<tensor<?xf32>>
      %n = sluice.sequence_length %e : (!sluice.sequence<tensor<?xf32>>) -> tensor<i64>
      return %s, %a, %n : !sluice.sequence<tensor<?xf32>>, tensor<?xf32>, tensor<i64>
    })mlir",
                 {Tensor::fromDoubles(DType::F32, {5}, {1, 2, 3, 4, 5})});
  ASSERT_TRUE(succeeded(out));
  const RuntimeValue &pieces = (*out)[0];
  ASSERT_TRUE(pieces.isSequence());
  ASSERT_EQ(pieces.elements().size(), 3u);
  EXPECT_EQ(values(pieces.elements()[0]), (std::vector<double>{1, 2}));
  EXPECT_EQ(values(pieces.elements()[2]), (std::vector<double>{5}));
  EXPECT_EQ(values((*out)[1].tensor()), (std::vector<double>{5}));
  EXPECT_EQ((*out)[2].tensor().getInt(0), 2);
}

TEST_F(SequenceEvaluatorTest, StackAlongLastAxis) {
  auto out = run(R"mlir(
    func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2x?xf32> {
      %s = sluice.sequence_construct %a, %b : (tensor<2xf32>, tensor<2xf32>) -> !sluice.sequence<tensor<2xf32>>
      %0 = sluice.concat_from_sequence %s {axis = -1 : i64, new_axis = true} : (!sluice.sequence<tensor<2xf32>>) -> tensor<2x?xf32>
      return %0 : tensor<2x?xf32>
    })mlir",
                 {Tensor::fromDoubles(DType::F32, {2}, {1, 2}),
                  Tensor::fromDoubles(DType::F32, {2}, {3, 4})});
  ASSERT_TRUE(succeeded(out));
  EXPECT_EQ((*out)[0].tensor().shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values((*out)[0].tensor()), (std::vector<double>{1, 3, 2, 4}));
}

TEST_F(SequenceEvaluatorTest, OutOfRangePositionFails) {
  ScopedDiagnosticHandler silence(&context,
                                  [](Diagnostic &) { return success(); });
  auto out =
      run(R"mlir(
    func.func @main(%s: !sluice.sequence<tensor<*xf32>>, %p: tensor<i64>) -> tensor<*xf32> {
      %0 = sluice.sequence_at %s, %p : (!sluice.sequence<tensor<*xf32>>, tensor<i64>) -> tensor<*xf32>
      return %0 : tensor<*xf32>
    })mlir",
          {RuntimeValue::sequence({Tensor::fromDoubles(DType::F32, {1}, {1})}),
           Tensor::fromInt64({1}).reshaped({})});
  EXPECT_TRUE(failed(out));
}

TEST_F(SequenceEvaluatorTest, InputKindMustMatch) {
  ScopedDiagnosticHandler silence(&context,
                                  [](Diagnostic &) { return success(); });
  auto out = run(R"mlir(
    func.func @main(%o: !sluice.optional<tensor<2xf32>>) -> tensor<i1> {
      %0 = sluice.optional_has_element %o : (!sluice.optional<tensor<2xf32>>) -> tensor<i1>
      return %0 : tensor<i1>
    })mlir",
                 {Tensor::fromDoubles(DType::F32, {2}, {1, 2})});
  EXPECT_TRUE(failed(out));
  auto none = run(R"mlir(
    func.func @main(%o: !sluice.optional<tensor<2xf32>>) -> tensor<i1> {
      %0 = sluice.optional_has_element %o : (!sluice.optional<tensor<2xf32>>) -> tensor<i1>
      return %0 : tensor<i1>
    })mlir",
                  {RuntimeValue::none()});
  ASSERT_TRUE(succeeded(none));
  EXPECT_EQ((*none)[0].tensor().getInt(0), 0);
}

// Reverse input and reverse output cancel: the output holds running sums
// from the end, in input order, stacked along axis 1.
TEST_F(SequenceEvaluatorTest, ReverseScanAlongAxisOne) {
  auto out =
      run(R"mlir(
    func.func @main(%init: tensor<2xf32>, %x: tensor<3x2xf32>) -> (tensor<2xf32>, tensor<2x?xf32>) {
      %0:2 = sluice.scan(%init, %x : tensor<2xf32>, tensor<3x2xf32>) -> tensor<2xf32>, tensor<2x?xf32> {
      ^bb0(%acc: tensor<2xf32>, %next: tensor<2xf32>):
        %1 = sluice.add %acc, %next : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
        sluice.yield %1, %1 : tensor<2xf32>, tensor<2xf32>
      } {num_scan_inputs = 1 : i64, scan_input_axes = array<i64: 0>, scan_input_directions = array<i64: 1>, scan_output_axes = array<i64: 1>, scan_output_directions = array<i64: 1>}
      return %0#0, %0#1 : tensor<2xf32>, tensor<2x?xf32>
    })mlir",
          {Tensor::fromDoubles(DType::F32, {2}, {0, 0}),
           Tensor::fromDoubles(DType::F32, {3, 2}, {1, 10, 2, 20, 3, 30})});
  ASSERT_TRUE(succeeded(out));
  EXPECT_EQ(values((*out)[0].tensor()), (std::vector<double>{6, 60}));
  // Iterations see rows 3, 2, 1 (sums 3, 5, 6); reversed output: 6, 5, 3.
  EXPECT_EQ((*out)[1].tensor().shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values((*out)[1].tensor()),
            (std::vector<double>{6, 5, 3, 60, 50, 30}));
}

TEST_F(SequenceEvaluatorTest, BatchedScanRunsPerBatchElement) {
  auto out =
      run(R"mlir(
    func.func @main(%init: tensor<2x1xf32>, %x: tensor<2x3x1xf32>) -> (tensor<2x1xf32>, tensor<2x?x1xf32>) {
      %0:2 = sluice.scan(%init, %x : tensor<2x1xf32>, tensor<2x3x1xf32>) -> tensor<2x1xf32>, tensor<2x?x1xf32> {
      ^bb0(%acc: tensor<1xf32>, %next: tensor<1xf32>):
        %1 = sluice.add %acc, %next : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
        sluice.yield %1, %1 : tensor<1xf32>, tensor<1xf32>
      } {batched, num_scan_inputs = 1 : i64, scan_input_axes = array<i64: 0>, scan_input_directions = array<i64: 0>, scan_output_axes = array<i64: 0>, scan_output_directions = array<i64: 0>}
      return %0#0, %0#1 : tensor<2x1xf32>, tensor<2x?x1xf32>
    })mlir",
          {Tensor::fromDoubles(DType::F32, {2, 1}, {0, 100}),
           Tensor::fromDoubles(DType::F32, {2, 3, 1}, {1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(succeeded(out));
  EXPECT_EQ(values((*out)[0].tensor()), (std::vector<double>{6, 115}));
  EXPECT_EQ(values((*out)[1].tensor()),
            (std::vector<double>{1, 3, 6, 104, 109, 115}));
}

} // namespace
