//===- ComputeTest.cpp - the arithmetic of a step (steps[].compute) -------===//
//
// computeOf (codegen/common/Compute.h) classifies each kernel of a module by
// its anchor, as docs/quantization.md's `"compute"` says: int8
// contractions, weight-only GEMMs (B a dequantize_linear of an i8 constant,
// through casts and views), float anchors, and groups without one.
//
//===----------------------------------------------------------------------===//

#include "codegen/common/Compute.h"

#include "dialects/sluice/SluiceOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <map>

using namespace mlir;
using namespace sluice;

namespace {

const char *kKernels = R"mlir(
func.func @main(%x: tensor<4x16xf32>, %xq: tensor<4x16xui8>, %h: tensor<4x16xf16>,
                %v: tensor<4xi64>, %wf: tensor<16x8xf32>) -> (tensor<4x8xi32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf16>, tensor<4xi64>, tensor<4x4xf32>, tensor<4x16xui8>) {
  %w8 = sluice.constant dense<1> : tensor<16x8xi8>
  %s = sluice.constant dense<0.5> : tensor<f32>
  %i8 = sluice.kernel @int8 gemm library "gemm"(%xq, %w8 : tensor<4x16xui8>, tensor<16x8xi8>) -> (tensor<4x8xi32>) {
  ^bb0(%a: tensor<4x16xui8>, %b: tensor<16x8xi8>):
    %za = sluice.constant dense<128> : tensor<ui8>
    %zb = sluice.constant dense<0> : tensor<i8>
    %acc = sluice.matmul_integer %a, %b, %za, %zb : (tensor<4x16xui8>, tensor<16x8xi8>, tensor<ui8>, tensor<i8>) -> tensor<4x8xi32>
    sluice.kernel_yield %acc : tensor<4x8xi32>
  }
  %wo = sluice.kernel @int8w gemm library "gemm"(%x, %w8 : tensor<4x16xf32>, tensor<16x8xi8>) -> (tensor<4x8xf32>) {
  ^bb0(%a: tensor<4x16xf32>, %b: tensor<16x8xi8>):
    %sc = sluice.constant dense<0.5> : tensor<f32>
    %d = sluice.dequantize_linear %b, %sc : (tensor<16x8xi8>, tensor<f32>) -> tensor<16x8xf32>
    %y = sluice.matmul %a, %d : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
    sluice.kernel_yield %y : tensor<4x8xf32>
  }
  %fl = sluice.kernel @f32 gemm library "gemm"(%x, %wf : tensor<4x16xf32>, tensor<16x8xf32>) -> (tensor<4x8xf32>) {
  ^bb0(%a: tensor<4x16xf32>, %b: tensor<16x8xf32>):
    %y = sluice.matmul %a, %b : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
    sluice.kernel_yield %y : tensor<4x8xf32>
  }
  %hf = sluice.kernel @f16 gemm library "gemm"(%h, %wf : tensor<4x16xf16>, tensor<16x8xf32>) -> (tensor<4x8xf16>) {
  ^bb0(%a: tensor<4x16xf16>, %b: tensor<16x8xf32>):
    %c = sluice.cast %b : tensor<16x8xf32> -> tensor<16x8xf16>
    %y = sluice.matmul %a, %c : (tensor<4x16xf16>, tensor<16x8xf16>) -> tensor<4x8xf16>
    sluice.kernel_yield %y : tensor<4x8xf16>
  }
  %ints = sluice.kernel @i64 elementwise(%v : tensor<4xi64>) -> (tensor<4xi64>) {
  ^bb0(%a: tensor<4xi64>):
    %y = sluice.add %a, %a : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
    sluice.kernel_yield %y : tensor<4xi64>
  }
  %act = sluice.kernel @activation_dq gemm library "gemm"(%x, %xq : tensor<4x16xf32>, tensor<4x16xui8>) -> (tensor<4x4xf32>) {
  ^bb0(%a: tensor<4x16xf32>, %b: tensor<4x16xui8>):
    %sc = sluice.constant dense<0.5> : tensor<f32>
    %d = sluice.dequantize_linear %b, %sc : (tensor<4x16xui8>, tensor<f32>) -> tensor<4x16xf32>
    %t = sluice.transpose %d {perm = array<i64: 1, 0>} : (tensor<4x16xf32>) -> tensor<16x4xf32>
    %y = sluice.matmul %a, %t : (tensor<4x16xf32>, tensor<16x4xf32>) -> tensor<4x4xf32>
    sluice.kernel_yield %y : tensor<4x4xf32>
  }
  %q = sluice.kernel @quantize elementwise(%x, %s : tensor<4x16xf32>, tensor<f32>) -> (tensor<4x16xui8>) {
  ^bb0(%a: tensor<4x16xf32>, %sc: tensor<f32>):
    %zp = sluice.constant dense<128> : tensor<ui8>
    %y = sluice.quantize_linear %a, %sc, %zp : (tensor<4x16xf32>, tensor<f32>, tensor<ui8>) -> tensor<4x16xui8>
    sluice.kernel_yield %y : tensor<4x16xui8>
  }
  return %i8, %wo, %fl, %hf, %ints, %act, %q : tensor<4x8xi32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf16>, tensor<4xi64>, tensor<4x4xf32>, tensor<4x16xui8>
}
)mlir";

TEST(Compute, ByAnchor) {
  MLIRContext context;
  DialectRegistry registry;
  registry.insert<SluiceDialect, func::FuncDialect>();
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kKernels, &context);
  ASSERT_TRUE(module);
  std::map<std::string, std::string> compute;
  module->walk(
      [&](KernelOp kernel) { compute[kernel.getSymName().str()] = codegen::computeOf(kernel); });
  EXPECT_EQ(compute["int8"], "int8");
  // B dequantized from an i8 weight (a block argument fed by a constant).
  EXPECT_EQ(compute["int8w"], "int8w");
  EXPECT_EQ(compute["f32"], "f32");
  // The anchor's type, not its operands' (the f32 weight cast to f16).
  EXPECT_EQ(compute["f16"], "f16");
  // No float anchor: the first output's element type.
  EXPECT_EQ(compute["i64"], "i64");
  EXPECT_EQ(compute["quantize"], "ui8");
  // A dequantized activation (not a constant) is a float GEMM.
  EXPECT_EQ(compute["activation_dq"], "f32");
}

} // namespace
