// RUN: sluice-opt %s --split-input-file --sluice-fuse-horizontal-gemms 2>/dev/null | FileCheck %s
// RUN: sluice-opt %s --split-input-file --sluice-fuse-horizontal-gemms -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// Separate q/k/v projections with biases: one GEMM on the concatenated
// weights (a new blob), one bias add, a split on the last axis.
// CHECK-LABEL: func @qkv
// CHECK-NOT: tensor<4x2xf32>
// CHECK-DAG: %[[W:.+]] = sluice.constant dense_resource<{{.+}}> : tensor<4x7xf32>
// CHECK-DAG: %[[B:.+]] = sluice.constant dense_resource<{{.+}}> : tensor<7xf32>
// CHECK-DAG: %[[S:.+]] = sluice.constant dense<[2, 2, 3]> : tensor<3xi64>
// CHECK: %[[M:.+]] = sluice.matmul %arg0, %[[W]] : (tensor<2x3x4xf32>, tensor<4x7xf32>) -> tensor<2x3x7xf32>
// CHECK-NEXT: %[[A:.+]] = sluice.add %[[M]], %[[B]]
// CHECK-NEXT: %[[P:.+]]:3 = sluice.split %[[A]], %[[S]] {axis = -1 : i64, num_outputs = 3 : i64}
// CHECK-NOT: sluice.matmul
// CHECK: return %[[P]]#0, %[[P]]#1, %[[P]]#2
// The concatenated weights, row by row: [1 2 | 1.5 2.5 | 1 0 1], ...
// CHECK: folded: "0x400000000000803F000000400000C03F000020400000803F000000000000803F00004040000080400000604000009040000000000000803F000000000000A0400000C0400000B0400000D0400000803F0000803F0000803F0000E040000000410000F04000000841000000000000000000000040"
// REMARK: remark: fused 3 matmuls sharing their LHS into one GEMM with their bias adds
func.func @qkv(%x: tensor<2x3x4xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x2xf32>, tensor<2x3x3xf32>) {
  %wq = sluice.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]> : tensor<4x2xf32>
  %wk = sluice.constant dense<[[1.5, 2.5], [3.5, 4.5], [5.5, 6.5], [7.5, 8.5]]> : tensor<4x2xf32>
  %wv = sluice.constant dense<[[1.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 2.0]]> : tensor<4x3xf32>
  %bq = sluice.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %bk = sluice.constant dense<[3.0, 4.0]> : tensor<2xf32>
  %bv = sluice.constant dense<[5.0, 6.0, 7.0]> : tensor<3xf32>
  %q = sluice.matmul %x, %wq : (tensor<2x3x4xf32>, tensor<4x2xf32>) -> tensor<2x3x2xf32>
  %k = sluice.matmul %x, %wk : (tensor<2x3x4xf32>, tensor<4x2xf32>) -> tensor<2x3x2xf32>
  %v = sluice.matmul %x, %wv : (tensor<2x3x4xf32>, tensor<4x3xf32>) -> tensor<2x3x3xf32>
  %q1 = sluice.add %q, %bq : (tensor<2x3x2xf32>, tensor<2xf32>) -> tensor<2x3x2xf32>
  %k1 = sluice.add %bk, %k : (tensor<2xf32>, tensor<2x3x2xf32>) -> tensor<2x3x2xf32>
  %v1 = sluice.add %v, %bv : (tensor<2x3x3xf32>, tensor<3xf32>) -> tensor<2x3x3xf32>
  return %q1, %k1, %v1 : tensor<2x3x2xf32>, tensor<2x3x2xf32>, tensor<2x3x3xf32>
}

// -----

// Gate/up without biases; a third matmul with another K stays alone.
// CHECK-LABEL: func @gate_up
// CHECK: %[[M:.+]] = sluice.matmul %arg0, %{{.+}} : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: %[[P:.+]]:2 = sluice.split %[[M]]
// CHECK: sluice.matmul %arg1
// CHECK: return %[[P]]#0, %[[P]]#1
// REMARK: remark: fused 2 matmuls sharing their LHS into one GEMM:
func.func @gate_up(%x: tensor<3x4xf32>, %y: tensor<3x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>) {
  %wg = sluice.constant dense<1.0> : tensor<4x2xf32>
  %wu = sluice.constant dense<2.0> : tensor<4x2xf32>
  %wo = sluice.constant dense<3.0> : tensor<2x2xf32>
  %g = sluice.matmul %x, %wg : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %u = sluice.matmul %x, %wu : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %o = sluice.matmul %y, %wo : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  return %g, %u, %o : tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2xf32>
}

// -----

// Only one branch has a bias: the matmuls fuse, the adds stay.
// CHECK-LABEL: func @one_bias
// CHECK: sluice.matmul
// CHECK-NEXT: sluice.split
// CHECK: sluice.add
// CHECK-NOT: sluice.matmul
// REMARK: remark: biases not fused horizontally: not every branch adds a constant [N] bias
func.func @one_bias(%x: tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>) {
  %wg = sluice.constant dense<1.0> : tensor<4x2xf32>
  %wu = sluice.constant dense<2.0> : tensor<4x2xf32>
  %b = sluice.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %g = sluice.matmul %x, %wg : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %u = sluice.matmul %x, %wu : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %g1 = sluice.add %g, %b : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  return %g1, %u : tensor<3x2xf32>, tensor<3x2xf32>
}

// -----

// A computed weight: nothing to do.
// CHECK-LABEL: func @no_fusion
// CHECK-COUNT-2: sluice.matmul
// CHECK-NOT: sluice.split
func.func @no_fusion(%x: tensor<3x4xf32>, %w: tensor<4x2xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>) {
  %wg = sluice.constant dense<1.0> : tensor<4x2xf32>
  %g = sluice.matmul %x, %wg : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  %u = sluice.matmul %x, %w : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  return %g, %u : tensor<3x2xf32>, tensor<3x2xf32>
}

