// RUN: sluice-opt %s --split-input-file --sluice-recognize-activations | FileCheck %s

// GELU, erf form as BERT exports it: ((x / 1.4142) -> erf -> +1) * x * 0.5.
// CHECK-LABEL: func @gelu_erf_div
// CHECK-SAME: (%[[X:.+]]: tensor<2x8xf32>)
// CHECK-NEXT: %[[G:.+]] = sluice.gelu %[[X]] : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: return %[[G]]
func.func @gelu_erf_div(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %sqrt2 = sluice.constant dense<1.41421354> : tensor<f32>
  %one = sluice.constant dense<1.0> : tensor<f32>
  %half = sluice.constant dense<0.5> : tensor<f32>
  %t = sluice.div %x, %sqrt2 : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %e = sluice.erf %t : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %p = sluice.add %e, %one : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %xp = sluice.mul %x, %p : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y = sluice.mul %xp, %half : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// Erf form with Mul by 0.7071 (4 digits), 0.5 applied to x first, operands swapped.
// CHECK-LABEL: func @gelu_erf_mul_reassociated
// CHECK-NEXT: %[[G:.+]] = sluice.gelu %arg0 : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT: return %[[G]]
func.func @gelu_erf_mul_reassociated(%x: tensor<8xf32>) -> tensor<8xf32> {
  %c = sluice.constant dense<0.7071> : tensor<f32>
  %one = sluice.constant dense<1.0> : tensor<f32>
  %half = sluice.constant dense<0.5> : tensor<f32>
  %t = sluice.mul %c, %x : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %e = sluice.erf %t : (tensor<8xf32>) -> tensor<8xf32>
  %p = sluice.add %one, %e : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %hx = sluice.mul %half, %x : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %y = sluice.mul %p, %hx : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// GELU, tanh form as GPT-2 exports it (x * x * x).
// CHECK-LABEL: func @gelu_tanh_cube_mul
// CHECK-NEXT: %[[G:.+]] = sluice.gelu %arg0 {approximate = "tanh"} : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: return %[[G]]
func.func @gelu_tanh_cube_mul(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %half = sluice.constant dense<0.5> : tensor<f32>
  %one = sluice.constant dense<1.0> : tensor<f32>
  %k = sluice.constant dense<0.797884583> : tensor<f32>
  %a = sluice.constant dense<0.044715> : tensor<f32>
  %x2 = sluice.mul %x, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %x3 = sluice.mul %x, %x2 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %ax3 = sluice.mul %x3, %a : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %s = sluice.add %x, %ax3 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %u = sluice.mul %s, %k : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %t = sluice.tanh %u : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %p = sluice.add %t, %one : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %xp = sluice.mul %x, %p : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y = sluice.mul %xp, %half : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// Tanh form with Pow(x, 3) and the constants on the other side.
// CHECK-LABEL: func @gelu_tanh_pow
// CHECK-NEXT: sluice.gelu %arg0 {approximate = "tanh"}
// CHECK-NEXT: return
func.func @gelu_tanh_pow(%x: tensor<8xf32>) -> tensor<8xf32> {
  %half = sluice.constant dense<0.5> : tensor<f32>
  %one = sluice.constant dense<1.0> : tensor<f32>
  %three = sluice.constant dense<3.0> : tensor<f32>
  %k = sluice.constant dense<0.7978846> : tensor<f32>
  %a = sluice.constant dense<0.044715> : tensor<f32>
  %x3 = sluice.pow %x, %three : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %ax3 = sluice.mul %a, %x3 : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %s = sluice.add %ax3, %x : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %u = sluice.mul %k, %s : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %t = sluice.tanh %u : (tensor<8xf32>) -> tensor<8xf32>
  %p = sluice.add %one, %t : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %hp = sluice.mul %p, %half : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %y = sluice.mul %x, %hp : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// SiLU, both operand orders.
// CHECK-LABEL: func @silu
// CHECK-NEXT: %[[A:.+]] = sluice.silu %arg0 : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[B:.+]] = sluice.silu %arg1 : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @silu(%x: tensor<4xf32>, %z: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %s = sluice.sigmoid %x : (tensor<4xf32>) -> tensor<4xf32>
  %y = sluice.mul %x, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t = sluice.sigmoid %z : (tensor<4xf32>) -> tensor<4xf32>
  %w = sluice.mul %t, %z : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y, %w : tensor<4xf32>, tensor<4xf32>
}

// -----

// Refused: 0.6 instead of 0.5.
// CHECK-LABEL: func @wrong_constant
// CHECK-NOT: sluice.gelu
// CHECK: return
func.func @wrong_constant(%x: tensor<8xf32>) -> tensor<8xf32> {
  %half = sluice.constant dense<0.6> : tensor<f32>
  %sqrt2 = sluice.constant dense<1.41421354> : tensor<f32>
  %one = sluice.constant dense<1.0> : tensor<f32>
  %t = sluice.div %x, %sqrt2 : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %e = sluice.erf %t : (tensor<8xf32>) -> tensor<8xf32>
  %p = sluice.add %e, %one : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %xp = sluice.mul %x, %p : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %y = sluice.mul %xp, %half : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// Refused: the erf value is also a result.
// CHECK-LABEL: func @erf_used_twice
// CHECK-NOT: sluice.gelu
// CHECK: return
func.func @erf_used_twice(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %half = sluice.constant dense<0.5> : tensor<f32>
  %sqrt2 = sluice.constant dense<1.41421354> : tensor<f32>
  %one = sluice.constant dense<1.0> : tensor<f32>
  %t = sluice.div %x, %sqrt2 : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %e = sluice.erf %t : (tensor<8xf32>) -> tensor<8xf32>
  %p = sluice.add %e, %one : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %xp = sluice.mul %x, %p : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %y = sluice.mul %xp, %half : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  return %y, %e : tensor<8xf32>, tensor<8xf32>
}

// -----

// Refused: the erf reads another value than the product.
// CHECK-LABEL: func @erf_of_other_value
// CHECK-NOT: sluice.gelu
// CHECK: return
func.func @erf_of_other_value(%x: tensor<8xf32>, %z: tensor<8xf32>) -> tensor<8xf32> {
  %half = sluice.constant dense<0.5> : tensor<f32>
  %sqrt2 = sluice.constant dense<1.41421354> : tensor<f32>
  %one = sluice.constant dense<1.0> : tensor<f32>
  %t = sluice.div %z, %sqrt2 : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %e = sluice.erf %t : (tensor<8xf32>) -> tensor<8xf32>
  %p = sluice.add %e, %one : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %xp = sluice.mul %x, %p : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %y = sluice.mul %xp, %half : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// Refused: x * sigmoid(z).
// CHECK-LABEL: func @sigmoid_of_other_value
// CHECK-NOT: sluice.silu
// CHECK: return
func.func @sigmoid_of_other_value(%x: tensor<8xf32>, %z: tensor<8xf32>) -> tensor<8xf32> {
  %s = sluice.sigmoid %z : (tensor<8xf32>) -> tensor<8xf32>
  %w = sluice.mul %x, %s : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %w : tensor<8xf32>
}

// -----

// Refused: the sigmoid is also a result.
// CHECK-LABEL: func @sigmoid_used_twice
// CHECK-NOT: sluice.silu
// CHECK: return
func.func @sigmoid_used_twice(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %s = sluice.sigmoid %x : (tensor<8xf32>) -> tensor<8xf32>
  %w = sluice.mul %x, %s : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %w, %s : tensor<8xf32>, tensor<8xf32>
}

// -----

// The gelu of a broadcast: 0.5 * x * (1 + erf(..)) where the product grows
// the shape is not elementwise in x: refused.
// CHECK-LABEL: func @broadcasting
// CHECK-NOT: sluice.gelu
func.func @broadcasting(%x: tensor<8xf32>, %b: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %sqrt2 = sluice.constant dense<1.41421354> : tensor<f32>
  %one = sluice.constant dense<1.0> : tensor<f32>
  %half = sluice.constant dense<0.5> : tensor<2x8xf32>
  %t = sluice.div %x, %sqrt2 : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %e = sluice.erf %t : (tensor<8xf32>) -> tensor<8xf32>
  %p = sluice.add %e, %one : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %xp = sluice.mul %x, %p : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %y = sluice.mul %xp, %half : (tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}
