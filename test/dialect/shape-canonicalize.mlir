// RUN: sluice-opt %s --split-input-file --canonicalize | FileCheck %s
// Canonical forms of the shape family: squeeze and unsqueeze between static
// shapes become reshapes; a one-input concat is its input.

// CHECK-LABEL: func @squeeze_to_reshape
// CHECK-SAME: (%[[X:.+]]: tensor<1x3x1xf32>)
func.func @squeeze_to_reshape(%x: tensor<1x3x1xf32>) -> (tensor<3xf32>, tensor<3x1xf32>) {
  %axes = sluice.constant dense<0> : tensor<1xi64>
  // CHECK-DAG: %[[S1:.+]] = sluice.constant dense<3> : tensor<1xi64>
  // CHECK-DAG: %[[S2:.+]] = sluice.constant dense<[3, 1]> : tensor<2xi64>
  // CHECK-DAG: %[[A:.+]] = sluice.reshape %[[X]], %[[S1]] : (tensor<1x3x1xf32>, tensor<1xi64>) -> tensor<3xf32>
  // CHECK-DAG: %[[B:.+]] = sluice.reshape %[[X]], %[[S2]] : (tensor<1x3x1xf32>, tensor<2xi64>) -> tensor<3x1xf32>
  // CHECK-NOT: sluice.squeeze
  %0 = sluice.squeeze %x : (tensor<1x3x1xf32>) -> tensor<3xf32>
  %1 = sluice.squeeze %x, %axes : (tensor<1x3x1xf32>, tensor<1xi64>) -> tensor<3x1xf32>
  // CHECK: return %[[A]], %[[B]]
  return %0, %1 : tensor<3xf32>, tensor<3x1xf32>
}

// -----

// CHECK-LABEL: func @unsqueeze
// CHECK-SAME: (%[[X:.+]]: tensor<3xf32>, %[[D:.+]]: tensor<?xf32>)
func.func @unsqueeze(%x: tensor<3xf32>, %d: tensor<?xf32>) -> (tensor<3x1xf32>, tensor<?x1xf32>) {
  %axes = sluice.constant dense<1> : tensor<1xi64>
  // CHECK: sluice.reshape %[[X]], %{{.*}} -> tensor<3x1xf32>
  %0 = sluice.unsqueeze %x, %axes : (tensor<3xf32>, tensor<1xi64>) -> tensor<3x1xf32>
  // A dynamic dim keeps the op.
  // CHECK: sluice.unsqueeze %[[D]]
  %1 = sluice.unsqueeze %d, %axes : (tensor<?xf32>, tensor<1xi64>) -> tensor<?x1xf32>
  return %0, %1 : tensor<3x1xf32>, tensor<?x1xf32>
}

// -----

// CHECK-LABEL: func @concat_one
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf32>)
func.func @concat_one(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK-NOT: sluice.concat
  // CHECK: return %[[X]]
  %0 = sluice.concat %x {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
