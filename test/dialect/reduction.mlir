// RUN: sluice-opt %s --split-input-file | sluice-opt | FileCheck %s
// Round trip of the reduction family: reduce, softmax, arg-reductions, top-k,
// cumsum.

// CHECK-LABEL: func @reduce
func.func @reduce(%x: tensor<2x3x4xf32>, %axes: tensor<?xi64>) -> (tensor<2x1x4xf32>, tensor<4xf32>, tensor<1x1x1xf32>, tensor<?x?x?xf32>) {
  // CHECK-DAG: %[[AXES:.+]] = sluice.constant dense<[1, -3]> : tensor<2xi64>
  %c = sluice.constant dense<[1, -3]> : tensor<2xi64>
  // CHECK-DAG: %[[ONE:.+]] = sluice.constant dense<1> : tensor<1xi64>
  %one = sluice.constant dense<1> : tensor<1xi64>
  // CHECK: sluice.reduce %{{.*}}, %[[ONE]] {kind = #sluice<reduce_kind sum>} : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x1x4xf32>
  %0 = sluice.reduce %x, %one {kind = #sluice<reduce_kind sum>} : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x1x4xf32>
  // Negative axes count from the end; without keepdims the dims go away.
  // CHECK: sluice.reduce %{{.*}}, %[[AXES]] {keepdims = false, kind = #sluice<reduce_kind max>} : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<4xf32>
  %1 = sluice.reduce %x, %c {keepdims = false, kind = #sluice<reduce_kind max>} : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<4xf32>
  // No axes operand: reduce everything.
  // CHECK: sluice.reduce %{{.*}} {kind = #sluice<reduce_kind mean>} : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
  %2 = sluice.reduce %x {kind = #sluice<reduce_kind mean>} : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
  // Axes known only at run time: rank survives with keepdims.
  // CHECK: sluice.reduce %{{.*}}, %{{.*}} {kind = #sluice<reduce_kind prod>, noop_with_empty_axes = true} : (tensor<2x3x4xf32>, tensor<?xi64>) -> tensor<?x?x?xf32>
  %3 = sluice.reduce %x, %axes {kind = #sluice<reduce_kind prod>, noop_with_empty_axes = true} : (tensor<2x3x4xf32>, tensor<?xi64>) -> tensor<?x?x?xf32>
  return %0, %1, %2, %3 : tensor<2x1x4xf32>, tensor<4xf32>, tensor<1x1x1xf32>, tensor<?x?x?xf32>
}

// -----

// CHECK-LABEL: func @softmax
func.func @softmax(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
  // CHECK: sluice.softmax %{{.*}} {axis = -1 : i64} : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %0 = sluice.softmax %x {axis = -1 : i64} : (tensor<?x3xf32>) -> tensor<?x3xf32>
  // CHECK: sluice.softmax %{{.*}} {axis = 0 : i64, log = true}
  %1 = sluice.softmax %0 {axis = 0 : i64, log = true} : (tensor<?x3xf32>) -> tensor<?x3xf32>
  return %1 : tensor<?x3xf32>
}

// -----

// CHECK-LABEL: func @arg_reduce
func.func @arg_reduce(%x: tensor<2x3x4xf16>, %d: tensor<?x5xi32>, %u: tensor<*xf32>) -> (tensor<2x1x4xi64>, tensor<2x3xi64>, tensor<?xi64>, tensor<*xi64>) {
  // Default axis 0 and keepdims: the reduced dim stays as 1.
  // CHECK: sluice.argmax %{{.*}} : (tensor<2x3x4xf16>) -> tensor<1x3x4xi64>
  %0 = sluice.argmax %x : (tensor<2x3x4xf16>) -> tensor<1x3x4xi64>
  // CHECK: sluice.argmax %{{.*}} {axis = 1 : i64, select_last_index = true} : (tensor<2x3x4xf16>) -> tensor<2x1x4xi64>
  %1 = sluice.argmax %x {axis = 1 : i64, select_last_index = true} : (tensor<2x3x4xf16>) -> tensor<2x1x4xi64>
  // CHECK: sluice.argmin %{{.*}} {axis = -1 : i64, keepdims = false} : (tensor<2x3x4xf16>) -> tensor<2x3xi64>
  %2 = sluice.argmin %x {axis = -1 : i64, keepdims = false} : (tensor<2x3x4xf16>) -> tensor<2x3xi64>
  // Dynamic dims survive; integer inputs are fine.
  // CHECK: sluice.argmin %{{.*}} {axis = 1 : i64, keepdims = false} : (tensor<?x5xi32>) -> tensor<?xi64>
  %3 = sluice.argmin %d {axis = 1 : i64, keepdims = false} : (tensor<?x5xi32>) -> tensor<?xi64>
  // CHECK: sluice.argmax %{{.*}} {axis = 3 : i64} : (tensor<*xf32>) -> tensor<*xi64>
  %4 = sluice.argmax %u {axis = 3 : i64} : (tensor<*xf32>) -> tensor<*xi64>
  return %1, %2, %3, %4 : tensor<2x1x4xi64>, tensor<2x3xi64>, tensor<?xi64>, tensor<*xi64>
}

// -----

// CHECK-LABEL: func @topk
func.func @topk(%x: tensor<3x4xf32>, %k: tensor<1xi64>, %i: tensor<5x?xi32>) -> (tensor<3x2xf32>, tensor<3x2xi64>, tensor<3x?xf32>, tensor<?x?xi64>) {
  // CHECK: %[[K:.+]] = sluice.constant dense<2> : tensor<1xi64>
  %two = sluice.constant dense<2> : tensor<1xi64>
  // A constant k makes the axis dim static.
  // CHECK: %[[V:.+]], %[[I:.+]] = sluice.topk %{{.*}}, %[[K]] : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  %v:2 = sluice.topk %x, %two : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  // A runtime k leaves it dynamic.
  // CHECK: sluice.topk %{{.*}}, %{{.*}} {axis = 1 : i64, largest = false, sorted = false} : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<3x?xf32>, tensor<3x?xi64>)
  %w:2 = sluice.topk %x, %k {axis = 1 : i64, largest = false, sorted = false} : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<3x?xf32>, tensor<3x?xi64>)
  // CHECK: %{{.+}}, %[[UI:.+]] = sluice.topk %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<5x?xi32>, tensor<1xi64>) -> (tensor<?x?xi32>, tensor<?x?xi64>)
  %u:2 = sluice.topk %i, %k {axis = 0 : i64} : (tensor<5x?xi32>, tensor<1xi64>) -> (tensor<?x?xi32>, tensor<?x?xi64>)
  // CHECK: return %[[V]], %[[I]], %{{.+}}, %[[UI]]
  return %v#0, %v#1, %w#0, %u#1 : tensor<3x2xf32>, tensor<3x2xi64>, tensor<3x?xf32>, tensor<?x?xi64>
}

// -----

// CHECK-LABEL: func @cumsum
func.func @cumsum(%x: tensor<2x3xf64>, %axis: tensor<i32>, %i: tensor<?xi64>) -> (tensor<2x3xf64>, tensor<?xi64>) {
  // CHECK: sluice.cumsum %{{.*}}, %{{.*}} : (tensor<2x3xf64>, tensor<i32>) -> tensor<2x3xf64>
  %0 = sluice.cumsum %x, %axis : (tensor<2x3xf64>, tensor<i32>) -> tensor<2x3xf64>
  %zero = sluice.constant dense<0> : tensor<1xi64>
  // CHECK: sluice.cumsum %{{.*}}, %{{.*}} {exclusive = true, reverse = true} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %1 = sluice.cumsum %i, %zero {exclusive = true, reverse = true} : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  return %0, %1 : tensor<2x3xf64>, tensor<?xi64>
}
