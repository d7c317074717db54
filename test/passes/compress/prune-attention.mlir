// sluice-prune on a 4-head attention block (head_dim 4): 2 heads go from
// the Q, K and V projections (columns and biases), the reshapes to
// [B, S, H, D] and back, the attention op (its mask too, which carries the
// head axis) and the output projection's rows. The value bias grows with
// the head and the output projection's rows weigh heads 1 and 3 most: they
// stay.
// The pruned block computes what the unpruned one computes with
// the removed heads' output-projection rows zeroed (mask-only).
// RUN: rm -rf %t && %python %S/Inputs/prune_data.py %t/cal x=2x4x16
// RUN: sluice-opt %s --sluice-prune="heads=0.5 calibration=%t/cal budget=10" -o %t/pruned.mlir
// RUN: FileCheck %s < %t/pruned.mlir
// CHECK-LABEL: func.func @main
// CHECK-SAME: layers = [{{[{]}}fraction = 5.000000e-01 : f64, kept = 2 : i64, kept_units = [1, 3], kind = "heads", node = "q_proj", original = 4 : i64, reason = "as requested"
// CHECK: %[[Q:.+]] = sluice.matmul %arg0, %{{.+}} : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
// CHECK: %[[QB:.+]] = sluice.add %[[Q]], %{{.+}} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK: %[[SPLIT:.+]] = sluice.constant dense<[2, 4, 2, 4]> : tensor<4xi64>
// CHECK: sluice.reshape %[[QB]], %[[SPLIT]] : (tensor<2x4x8xf32>, tensor<4xi64>) -> tensor<2x4x2x4xf32>
// CHECK: sluice.matmul %arg0, %{{.+}} : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
// CHECK: sluice.matmul %arg0, %{{.+}} : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
// CHECK: %[[MASK:.+]] = sluice.constant {{.+}} : tensor<1x2x4x4xf32>
// CHECK: %[[ATT:.+]] = sluice.attention %{{.+}}, %{{.+}}, %{{.+}} mask %[[MASK]] {{.+}} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<2x2x4x4xf32>
// CHECK: %[[T:.+]] = sluice.transpose %[[ATT]] {{.+}} -> tensor<2x4x2x4xf32>
// CHECK: %[[MERGE:.+]] = sluice.constant dense<[2, 4, 8]> : tensor<3xi64>
// CHECK: %[[M:.+]] = sluice.reshape %[[T]], %[[MERGE]] : (tensor<2x4x2x4xf32>, tensor<3xi64>) -> tensor<2x4x8xf32>
// CHECK: sluice.matmul %[[M]], %{{.+}} : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
// CHECK-NOT: tensor<16x16xf32>
// CHECK-NOT: 4x4x4xf32>
//
// RUN: sluice-opt %s --sluice-prune="heads=0.5 calibration=%t/cal budget=10 mask-only=1" -o %t/masked.mlir
// RUN: sluice-run %t/masked.mlir --reference x=%t/cal/set1/x.npy --save-outputs=%t/masked-out > /dev/null
// RUN: sluice-run %t/pruned.mlir --reference x=%t/cal/set1/x.npy --expect %t/masked-out/y.npy --rtol=1e-5 --atol=1e-6 | FileCheck %s --check-prefix=SAME
// SAME: output 'y' f32[2x4x16]: {{.*}}: ok
// RUN: not sluice-run %s --reference x=%t/cal/set1/x.npy --expect %t/masked-out/y.npy --rtol=1e-5 --atol=1e-6 | FileCheck %s --check-prefix=DIFFERENT
// DIFFERENT: MISMATCH
func.func @main(%x: tensor<2x4x16xf32>) -> tensor<2x4x16xf32> attributes {sluice.input_names = ["x"], sluice.output_names = ["y"]} {
  %wq = sluice.constant dense<0.05> : tensor<16x16xf32>
  %wk = sluice.constant dense<0.04> : tensor<16x16xf32>
  %wv = sluice.constant dense<0.05> : tensor<16x16xf32>
  %bq = sluice.constant dense<[0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1, 0.11, 0.12, 0.13, 0.14, 0.15]> : tensor<16xf32>
  %bk = sluice.constant dense<[0.3, 0.28, 0.26, 0.24, 0.22, 0.2, 0.18, 0.16, 0.14, 0.12, 0.1, 0.08, 0.06, 0.04, 0.02, 0.0]> : tensor<16xf32>
  %bv = sluice.constant dense<[0.1, 0.1, 0.1, 0.1, 0.2, 0.2, 0.2, 0.2, 0.3, 0.3, 0.3, 0.3, 0.4, 0.4, 0.4, 0.4]> : tensor<16xf32>
  %wo = sluice.constant dense<[[0.1, -0.1, 0.1, -0.1, 0.1, -0.1, 0.1, -0.1, 0.1, -0.1, 0.1, -0.1, 0.1, -0.1, 0.1, -0.1],
    [0.125, -0.125, 0.125, -0.125, 0.125, -0.125, 0.125, -0.125, 0.125, -0.125, 0.125, -0.125, 0.125, -0.125, 0.125, -0.125],
    [0.15, -0.15, 0.15, -0.15, 0.15, -0.15, 0.15, -0.15, 0.15, -0.15, 0.15, -0.15, 0.15, -0.15, 0.15, -0.15],
    [0.175, -0.175, 0.175, -0.175, 0.175, -0.175, 0.175, -0.175, 0.175, -0.175, 0.175, -0.175, 0.175, -0.175, 0.175, -0.175],
    [0.5, -0.5, 0.5, -0.5, 0.5, -0.5, 0.5, -0.5, 0.5, -0.5, 0.5, -0.5, 0.5, -0.5, 0.5, -0.5],
    [0.625, -0.625, 0.625, -0.625, 0.625, -0.625, 0.625, -0.625, 0.625, -0.625, 0.625, -0.625, 0.625, -0.625, 0.625, -0.625],
    [0.75, -0.75, 0.75, -0.75, 0.75, -0.75, 0.75, -0.75, 0.75, -0.75, 0.75, -0.75, 0.75, -0.75, 0.75, -0.75],
    [0.875, -0.875, 0.875, -0.875, 0.875, -0.875, 0.875, -0.875, 0.875, -0.875, 0.875, -0.875, 0.875, -0.875, 0.875, -0.875],
    [0.05, -0.05, 0.05, -0.05, 0.05, -0.05, 0.05, -0.05, 0.05, -0.05, 0.05, -0.05, 0.05, -0.05, 0.05, -0.05],
    [0.0625, -0.0625, 0.0625, -0.0625, 0.0625, -0.0625, 0.0625, -0.0625, 0.0625, -0.0625, 0.0625, -0.0625, 0.0625, -0.0625, 0.0625, -0.0625],
    [0.075, -0.075, 0.075, -0.075, 0.075, -0.075, 0.075, -0.075, 0.075, -0.075, 0.075, -0.075, 0.075, -0.075, 0.075, -0.075],
    [0.0875, -0.0875, 0.0875, -0.0875, 0.0875, -0.0875, 0.0875, -0.0875, 0.0875, -0.0875, 0.0875, -0.0875, 0.0875, -0.0875, 0.0875, -0.0875],
    [1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0],
    [1.25, -1.25, 1.25, -1.25, 1.25, -1.25, 1.25, -1.25, 1.25, -1.25, 1.25, -1.25, 1.25, -1.25, 1.25, -1.25],
    [1.5, -1.5, 1.5, -1.5, 1.5, -1.5, 1.5, -1.5, 1.5, -1.5, 1.5, -1.5, 1.5, -1.5, 1.5, -1.5],
    [1.75, -1.75, 1.75, -1.75, 1.75, -1.75, 1.75, -1.75, 1.75, -1.75, 1.75, -1.75, 1.75, -1.75, 1.75, -1.75]]> : tensor<16x16xf32>
  %mask = sluice.constant dense<0.0> : tensor<1x4x4x4xf32>
  %split = sluice.constant dense<[2, 4, 4, 4]> : tensor<4xi64>
  %merge = sluice.constant dense<[2, 4, 16]> : tensor<3xi64>
  %q0 = sluice.matmul %x, %wq : (tensor<2x4x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32> loc("q_proj")
  %q1 = sluice.add %q0, %bq : (tensor<2x4x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  %q2 = sluice.reshape %q1, %split : (tensor<2x4x16xf32>, tensor<4xi64>) -> tensor<2x4x4x4xf32>
  %q = sluice.transpose %q2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %k0 = sluice.matmul %x, %wk : (tensor<2x4x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32> loc("k_proj")
  %k1 = sluice.add %k0, %bk : (tensor<2x4x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  %k2 = sluice.reshape %k1, %split : (tensor<2x4x16xf32>, tensor<4xi64>) -> tensor<2x4x4x4xf32>
  %k = sluice.transpose %k2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %v0 = sluice.matmul %x, %wv : (tensor<2x4x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32> loc("v_proj")
  %v1 = sluice.add %v0, %bv : (tensor<2x4x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  %v2 = sluice.reshape %v1, %split : (tensor<2x4x16xf32>, tensor<4xi64>) -> tensor<2x4x4x4xf32>
  %v = sluice.transpose %v2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %a = sluice.attention %q, %k, %v mask %mask {scale = 5.000000e-01 : f32} : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %a1 = sluice.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %a2 = sluice.reshape %a1, %merge : (tensor<2x4x4x4xf32>, tensor<3xi64>) -> tensor<2x4x16xf32>
  %o = sluice.matmul %a2, %wo : (tensor<2x4x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32> loc("o_proj")
  %y = sluice.add %x, %o : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  return %y : tensor<2x4x16xf32>
}
