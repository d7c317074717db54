// RUN: not sluice-compile %s --target=cuda -o %t --quiet 2>&1 | FileCheck %s
// The cuda target plans form F4 as the cpu target does (AttentionPlan): an
// elementwise epilogue inside an attention group is an error naming the op,
// not a host step.

// CHECK: error: {{.*}}'sluice.tanh' op cuda target: an attention group holds only view ops around one sluice.attention (form F4)

func.func @main(%q: tensor<1x4x8xf32>, %k: tensor<1x4x8xf32>, %v: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> attributes {sluice.input_names = ["q", "k", "v"], sluice.output_names = ["out"]} {
  %0 = sluice.kernel @k0_attention(%q, %k, %v : tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> (tensor<1x4x8xf32>) {
  ^bb0(%a: tensor<1x4x8xf32>, %b: tensor<1x4x8xf32>, %c: tensor<1x4x8xf32>):
    %r = sluice.attention %a, %b, %c {scale = 2.500000e-01 : f32} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
    %t = sluice.tanh %r : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
    sluice.kernel_yield %t : tensor<1x4x8xf32>
  }
  return %0 : tensor<1x4x8xf32>
}
