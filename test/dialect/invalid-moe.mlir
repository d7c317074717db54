// RUN: sluice-opt %s --split-input-file --verify-diagnostics
// Verifier errors of sluice.moe's gated (w3, b3) operands.

func.func @w3_not_w1(%x: tensor<6x8xf32>, %logits: tensor<6x4xf32>, %w1: tensor<4x8x16xf32>, %w2: tensor<4x16x8xf32>, %w3: tensor<4x8x12xf32>) -> tensor<6x8xf32> {
  // expected-error@+1 {{w3 'tensor<4x8x12xf32>' is not w1's [E, D, F] 'tensor<4x8x16xf32>'}}
  %0 = sluice.moe %x, %logits experts(%w1, %w2, up %w3) {experts = 4 : i64, gating = "top_k", top_k = 2 : i64} : (tensor<6x8xf32>, tensor<6x4xf32>, tensor<4x8x16xf32>, tensor<4x16x8xf32>, tensor<4x8x12xf32>) -> tensor<6x8xf32>
  return %0 : tensor<6x8xf32>
}

// -----

func.func @b3_width(%x: tensor<6x8xf32>, %logits: tensor<6x4xf32>, %w1: tensor<4x8x16xf32>, %w2: tensor<4x16x8xf32>, %w3: tensor<4x8x16xf32>, %b3: tensor<4x8xf32>) -> tensor<6x8xf32> {
  // expected-error@+1 {{bias 'tensor<4x8xf32>' is not [E, width]}}
  %0 = sluice.moe %x, %logits experts(%w1, %w2, up %w3 bias %b3) {experts = 4 : i64, gating = "top_k", top_k = 2 : i64} : (tensor<6x8xf32>, tensor<6x4xf32>, tensor<4x8x16xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>, tensor<4x8xf32>) -> tensor<6x8xf32>
  return %0 : tensor<6x8xf32>
}

// -----

func.func @w3_element(%x: tensor<6x8xf32>, %logits: tensor<6x4xf32>, %w1: tensor<4x8x16xf32>, %w2: tensor<4x16x8xf32>, %w3: tensor<4x8x16xf16>) -> tensor<6x8xf32> {
  // expected-error@+1 {{expert weights must have the tokens' element type}}
  %0 = sluice.moe %x, %logits experts(%w1, %w2, up %w3) {experts = 4 : i64, gating = "top_k", top_k = 2 : i64} : (tensor<6x8xf32>, tensor<6x4xf32>, tensor<4x8x16xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf16>) -> tensor<6x8xf32>
  return %0 : tensor<6x8xf32>
}

// -----

// The generic form can name b3 without w3.
func.func @b3_without_w3(%x: tensor<6x8xf32>, %logits: tensor<6x4xf32>, %w1: tensor<4x8x16xf32>, %w2: tensor<4x16x8xf32>, %b3: tensor<4x16xf32>) -> tensor<6x8xf32> {
  // expected-error@+1 {{b3 without w3: the up projection's bias needs its weight}}
  %0 = "sluice.moe"(%x, %logits, %w1, %w2, %b3) <{experts = 4 : i64, gating = "top_k", top_k = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 0, 0, 1, 0>}> : (tensor<6x8xf32>, tensor<6x4xf32>, tensor<4x8x16xf32>, tensor<4x16x8xf32>, tensor<4x16xf32>) -> tensor<6x8xf32>
  return %0 : tensor<6x8xf32>
}
