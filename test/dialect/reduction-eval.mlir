// RUN: sluice-opt %s --split-input-file --sluice-fold-constants | FileCheck %s
// Reference semantics of the reduction family, checked by folding constant
// operands through the evaluator (integer results stay dense attributes).

// Ties: argmax takes the first maximum, or the last with select_last_index.
// CHECK-LABEL: func @arg_reduce_ties
// CHECK-DAG: %[[FIRST:.+]] = sluice.constant dense<{{\[}}[1], [0], [2]]> : tensor<3x1xi64>
// CHECK-DAG: %[[LAST:.+]] = sluice.constant dense<[2, 3, 3]> : tensor<3xi64>
// CHECK-DAG: %[[MIN:.+]] = sluice.constant dense<{{\[}}[2, 2, 0, 0]]> : tensor<1x4xi64>
// CHECK: return %[[FIRST]], %[[LAST]], %[[MIN]]
func.func @arg_reduce_ties() -> (tensor<3x1xi64>, tensor<3xi64>, tensor<1x4xi64>) {
  %x = sluice.constant dense<[[1, 3, 3, 2], [5, 5, 5, 5], [0, -1, 7, 7]]> : tensor<3x4xi32>
  %0 = sluice.argmax %x {axis = 1 : i64} : (tensor<3x4xi32>) -> tensor<3x1xi64>
  %1 = sluice.argmax %x {axis = -1 : i64, keepdims = false, select_last_index = true} : (tensor<3x4xi32>) -> tensor<3xi64>
  %2 = sluice.argmin %x : (tensor<3x4xi32>) -> tensor<1x4xi64>
  return %0, %1, %2 : tensor<3x1xi64>, tensor<3xi64>, tensor<1x4xi64>
}

// -----

// TopK keeps the lower index first among equal values, largest or smallest.
// CHECK-LABEL: func @topk_ties
// CHECK-DAG: %[[V:.+]] = sluice.constant dense<{{\[}}[3, 3, 2], [5, 5, 5], [7, 7, 0]]> : tensor<3x3xi64>
// CHECK-DAG: %[[I:.+]] = sluice.constant dense<{{\[}}[1, 2, 3], [0, 1, 2], [2, 3, 0]]> : tensor<3x3xi64>
// CHECK-DAG: %[[SI:.+]] = sluice.constant dense<{{\[}}[0, 3], [0, 1], [1, 0]]> : tensor<3x2xi64>
// CHECK: return %[[V]], %[[I]], %[[SI]]
func.func @topk_ties() -> (tensor<3x3xi64>, tensor<3x3xi64>, tensor<3x2xi64>) {
  %x = sluice.constant dense<[[1, 3, 3, 2], [5, 5, 5, 5], [0, -1, 7, 7]]> : tensor<3x4xi64>
  %three = sluice.constant dense<3> : tensor<1xi64>
  %two = sluice.constant dense<2> : tensor<1xi64>
  %0:2 = sluice.topk %x, %three : (tensor<3x4xi64>, tensor<1xi64>) -> (tensor<3x3xi64>, tensor<3x3xi64>)
  %1:2 = sluice.topk %x, %two {axis = 1 : i64, largest = false} : (tensor<3x4xi64>, tensor<1xi64>) -> (tensor<3x2xi64>, tensor<3x2xi64>)
  return %0#0, %0#1, %1#1 : tensor<3x3xi64>, tensor<3x3xi64>, tensor<3x2xi64>
}

// -----

// CHECK-LABEL: func @cumsum
// CHECK-DAG: %[[INCL:.+]] = sluice.constant dense<{{\[}}[1, 3, 6], [4, 9, 15]]> : tensor<2x3xi32>
// CHECK-DAG: %[[EXCL_REV:.+]] = sluice.constant dense<{{\[}}[5, 3, 0], [11, 6, 0]]> : tensor<2x3xi32>
// CHECK-DAG: %[[AXIS0:.+]] = sluice.constant dense<{{\[}}[0, 0, 0], [1, 2, 3]]> : tensor<2x3xi32>
// CHECK: return %[[INCL]], %[[EXCL_REV]], %[[AXIS0]]
func.func @cumsum() -> (tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>) {
  %x = sluice.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %last = sluice.constant dense<-1> : tensor<i64>
  %first = sluice.constant dense<0> : tensor<1xi32>
  %0 = sluice.cumsum %x, %last : (tensor<2x3xi32>, tensor<i64>) -> tensor<2x3xi32>
  %1 = sluice.cumsum %x, %last {exclusive = true, reverse = true} : (tensor<2x3xi32>, tensor<i64>) -> tensor<2x3xi32>
  %2 = sluice.cumsum %x, %first {exclusive = true} : (tensor<2x3xi32>, tensor<1xi32>) -> tensor<2x3xi32>
  return %0, %1, %2 : tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>
}
