// RUN: not sluice-compile %s -o %t.sluice --quiet 2>&1 | FileCheck %s
// A row group whose softmax is not over the last axis fails clearly.
// CHECK: error: {{.*}}'sluice.softmax' op cpu target: a fused softmax must be over the last axis
module {
  func.func @main(%x: tensor<8x16xf32>) -> tensor<8x16xf32>
      attributes {sluice.input_names = ["x"], sluice.output_names = ["y"]} {
    %0 = sluice.kernel @k0_softmax(%x : tensor<8x16xf32>) -> (tensor<8x16xf32>) {
    ^bb0(%a: tensor<8x16xf32>):
      %c = sluice.constant dense<2.0> : tensor<f32>
      %p = sluice.mul %a, %c : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
      %r = sluice.softmax %p {axis = 0 : i64} : (tensor<8x16xf32>) -> tensor<8x16xf32>
      sluice.kernel_yield %r : tensor<8x16xf32>
    }
    return %0 : tensor<8x16xf32>
  }
}
