// RUN: not sluice-compile %s -o %t.sluice --quiet 2>&1 | FileCheck %s
// A GEMM group whose B is a transposed view fails clearly (no silent copy).
// CHECK: error: {{.*}}'sluice.matmul' op cpu target: the GEMM's B operand is a view without unit stride along N (a transposed B); not supported in GEMM groups
module {
  func.func @main(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>) -> tensor<8x32xf32>
      attributes {sluice.input_names = ["x", "w"], sluice.output_names = ["y"]} {
    %0 = sluice.kernel @k0_matmul library "gemm"(%x, %w : tensor<8x16xf32>, tensor<32x16xf32>) -> (tensor<8x32xf32>) {
    ^bb0(%a: tensor<8x16xf32>, %b: tensor<32x16xf32>):
      %t = sluice.transpose %b {perm = array<i64: 1, 0>} : (tensor<32x16xf32>) -> tensor<16x32xf32>
      %m = sluice.matmul %a, %t : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
      %r = sluice.relu %m : (tensor<8x32xf32>) -> tensor<8x32xf32>
      sluice.kernel_yield %r : tensor<8x32xf32>
    }
    return %0 : tensor<8x32xf32>
  }
}
