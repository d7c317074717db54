// RUN: sluice-opt %s --split-input-file | sluice-opt | FileCheck %s
// Round trip of the elementwise family.

// CHECK-LABEL: func @unary
func.func @unary(%x: tensor<2x3xf32>, %b: tensor<4xi1>, %i: tensor<4xi32>) -> tensor<2x3xf32> {
  // CHECK: sluice.abs %{{.*}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %0 = sluice.abs %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: sluice.exp
  %1 = sluice.exp %0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: sluice.erf
  %2 = sluice.erf %1 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: sluice.round
  %3 = sluice.round %2 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: sluice.not %{{.*}} : (tensor<4xi1>) -> tensor<4xi1>
  %4 = sluice.not %b : (tensor<4xi1>) -> tensor<4xi1>
  // CHECK: sluice.bitwise_not %{{.*}} : (tensor<4xi32>) -> tensor<4xi32>
  %5 = sluice.bitwise_not %i : (tensor<4xi32>) -> tensor<4xi32>
  // CHECK: sluice.is_inf %{{.*}} {detect_negative = false}
  %6 = sluice.is_inf %x {detect_negative = false} : (tensor<2x3xf32>) -> tensor<2x3xi1>
  return %3 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func @broadcast
func.func @broadcast(%a: tensor<2x1x4xf32>, %b: tensor<3x1xf32>, %d: tensor<?x4xf32>) -> tensor<2x3x4xi1> {
  // CHECK: sluice.add %{{.*}}, %{{.*}} : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %0 = sluice.add %a, %b : (tensor<2x1x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  // CHECK: sluice.mod %{{.*}} {fmod = true}
  %1 = sluice.mod %0, %0 {fmod = true} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK: sluice.less {{.*}} -> tensor<2x3x4xi1>
  %2 = sluice.less %1, %0 : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xi1>
  // A dynamic dim broadcast against a static one takes the static size.
  // CHECK: sluice.mul {{.*}} -> tensor<2x3x4xf32>
  %3 = sluice.mul %0, %d : (tensor<2x3x4xf32>, tensor<?x4xf32>) -> tensor<2x3x4xf32>
  return %2 : tensor<2x3x4xi1>
}

// -----

// CHECK-LABEL: func @select_cast_constant
func.func @select_cast_constant(%c: tensor<3xi1>, %x: tensor<3xf32>) -> tensor<3xf16> {
  // CHECK-DAG: %[[ZERO:.+]] = sluice.constant dense<0.000000e+00> : tensor<f32>
  %zero = sluice.constant dense<0.0> : tensor<f32>
  // CHECK: %[[SEL:.+]] = sluice.select %{{.*}}, %{{.*}}, %[[ZERO]]
  %0 = sluice.select %c, %x, %zero : (tensor<3xi1>, tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  // CHECK: sluice.cast %[[SEL]] : tensor<3xf32> -> tensor<3xf16>
  %1 = sluice.cast %0 : tensor<3xf32> -> tensor<3xf16>
  return %1 : tensor<3xf16>
}

// -----

// Strings: only sluice.cast takes them, to print and parse numbers.
// CHECK-LABEL: func @cast_string
func.func @cast_string(%x: tensor<3xf32>) -> tensor<3xi64> {
  // CHECK: %[[S:.+]] = sluice.cast %{{.*}} : tensor<3xf32> -> tensor<3x!sluice.string>
  %0 = sluice.cast %x : tensor<3xf32> -> tensor<3x!sluice.string>
  // CHECK: sluice.cast %[[S]] : tensor<3x!sluice.string> -> tensor<3xi64>
  %1 = sluice.cast %0 : tensor<3x!sluice.string> -> tensor<3xi64>
  return %1 : tensor<3xi64>
}
