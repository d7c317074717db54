// RUN: sluice-opt %s --split-input-file --sluice-fold-constants | FileCheck %s
// RUN: sluice-opt %s --split-input-file --sluice-fold-constants="max-elements=2" | FileCheck %s --check-prefix=LIMIT

// All-constant ops are evaluated by the reference evaluator.
// CHECK-LABEL: func @fold_arith
// CHECK-NEXT: %[[C:.+]] = sluice.constant dense<[5, 7, 9]> : tensor<3xi64>
// CHECK-NEXT: return %[[C]]
// LIMIT-LABEL: func @fold_arith
// LIMIT: sluice.add
func.func @fold_arith() -> tensor<3xi64> {
  %a = sluice.constant dense<[1, 2, 3]> : tensor<3xi64>
  %b = sluice.constant dense<[4, 5, 6]> : tensor<3xi64>
  %0 = sluice.add %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

// Ops with a non-constant operand stay.
// CHECK-LABEL: func @keep_dynamic
// CHECK: sluice.mul %arg0
func.func @keep_dynamic(%x: tensor<3xf32>) -> tensor<3xf32> {
  %a = sluice.constant dense<2.0> : tensor<f32>
  %0 = sluice.mul %x, %a : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// Folded float tensors are weights: they become dense_resource blobs.
// CHECK-LABEL: func @fold_weight_transpose
// CHECK: %[[W:.+]] = sluice.constant dense_resource<folded> : tensor<2x4xf32>
// CHECK: return %[[W]]
func.func @fold_weight_transpose() -> tensor<2x4xf32> {
  %w = sluice.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]> : tensor<4x2xf32>
  %t = sluice.transpose %w {perm = array<i64: 1, 0>} : (tensor<4x2xf32>) -> tensor<2x4xf32>
  return %t : tensor<2x4xf32>
}

// -----

// No elements attribute can hold strings: a cast to strings stays an op, and
// a cast back from it is not folded through it either.
// CHECK-LABEL: func @no_string_constants
// LIMIT-LABEL: func @no_string_constants
func.func @no_string_constants() -> tensor<2xf32> {
  %c = sluice.constant dense<[1.5, 2.0]> : tensor<2xf32>
  // CHECK: %[[S:.+]] = sluice.cast %{{.*}} : tensor<2xf32> -> tensor<2x!sluice.string>
  %s = sluice.cast %c : tensor<2xf32> -> tensor<2x!sluice.string>
  // CHECK: sluice.cast %[[S]] : tensor<2x!sluice.string> -> tensor<2xf32>
  %f = sluice.cast %s : tensor<2x!sluice.string> -> tensor<2xf32>
  return %f : tensor<2xf32>
}
