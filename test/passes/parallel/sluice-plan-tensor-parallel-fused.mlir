// RUN: sluice-opt %s --split-input-file --sluice-plan-tensor-parallel="tp=2" 2>/dev/null | FileCheck %s

// GPT-2's fused QKV projection: one weight and bias split three ways along
// the features. Each rank takes its heads of each of Q, K and V, so the
// weight is split in 3 groups (array<i64: axis, groups>).
// CHECK-LABEL: func.func @fused_qkv
// CHECK: sluice.constant {sluice.split = array<i64: 1, 3>} {{.*}} : tensor<8x24xf32>
// CHECK: sluice.constant {sluice.split = array<i64: 0, 3>} {{.*}} : tensor<24xf32>
// CHECK: sluice.constant {sluice.split = array<i64: 0, 1>} {{.*}} : tensor<8x8xf32>
func.func @fused_qkv(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %w = sluice.constant dense<0.1> : tensor<8x24xf32>
  %b = sluice.constant dense<0.01> : tensor<24xf32>
  %wo = sluice.constant dense<0.2> : tensor<8x8xf32>
  %sizes = sluice.constant dense<8> : tensor<3xi64>
  %s4 = sluice.constant dense<[1, 4, 2, 4]> : tensor<4xi64>
  %s3 = sluice.constant dense<[1, 4, 8]> : tensor<3xi64>
  %p = sluice.matmul %x, %w : (tensor<1x4x8xf32>, tensor<8x24xf32>) -> tensor<1x4x24xf32>
  %pb = sluice.add %p, %b : (tensor<1x4x24xf32>, tensor<24xf32>) -> tensor<1x4x24xf32>
  %qkv:3 = sluice.split %pb, %sizes {axis = -1 : i64, num_outputs = 3 : i64} : (tensor<1x4x24xf32>, tensor<3xi64>) -> (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
  %q1 = sluice.reshape %qkv#0, %s4 : (tensor<1x4x8xf32>, tensor<4xi64>) -> tensor<1x4x2x4xf32>
  %q = sluice.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %k1 = sluice.reshape %qkv#1, %s4 : (tensor<1x4x8xf32>, tensor<4xi64>) -> tensor<1x4x2x4xf32>
  %k = sluice.transpose %k1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %v1 = sluice.reshape %qkv#2, %s4 : (tensor<1x4x8xf32>, tensor<4xi64>) -> tensor<1x4x2x4xf32>
  %v = sluice.transpose %v1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %a = sluice.attention %q, %k, %v {scale = 0.5 : f32} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %a1 = sluice.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x4xf32>) -> tensor<1x4x2x4xf32>
  %a2 = sluice.reshape %a1, %s3 : (tensor<1x4x2x4xf32>, tensor<3xi64>) -> tensor<1x4x8xf32>
  %o = sluice.matmul %a2, %wo : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  return %o : tensor<1x4x8xf32>
}

// -----

// A gated MLP (LLaMA: silu(x Wg) * (x Wu), then Wd): gate and up split
// alike along their features, the down projection along its rows.
// CHECK-LABEL: func.func @gated_mlp
// CHECK: sluice.constant {sluice.split = array<i64: 1, 1>} {{.*}} : tensor<8x16xf32>
// CHECK: sluice.constant {sluice.split = array<i64: 1, 1>} {{.*}} : tensor<8x16xf32>
// CHECK: sluice.constant {sluice.split = array<i64: 0, 1>} {{.*}} : tensor<16x8xf32>
func.func @gated_mlp(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %wg = sluice.constant dense<0.1> : tensor<8x16xf32>
  %wu = sluice.constant dense<0.2> : tensor<8x16xf32>
  %wd = sluice.constant dense<0.3> : tensor<16x8xf32>
  %g = sluice.matmul %x, %wg : (tensor<1x4x8xf32>, tensor<8x16xf32>) -> tensor<1x4x16xf32>
  %s = sluice.silu %g : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %u = sluice.matmul %x, %wu : (tensor<1x4x8xf32>, tensor<8x16xf32>) -> tensor<1x4x16xf32>
  %h = sluice.mul %s, %u : (tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %y = sluice.matmul %h, %wd : (tensor<1x4x16xf32>, tensor<16x8xf32>) -> tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}
