// RUN: sluice-opt %s --split-input-file --verify-diagnostics --sluice-decompose-composites

// The causal mask is a constant over [Sq, Sk]: it needs both static.
func.func @causal_dynamic_sequence(%q: tensor<2x?x8xf32>, %k: tensor<2x?x8xf32>, %v: tensor<2x?x8xf32>) -> tensor<2x?x8xf32> {
  // expected-error @+1 {{'sluice.attention' op cannot be decomposed (dynamic sequence or head dims?)}}
  %0 = sluice.attention %q, %k, %v {causal = true, scale = 1.0 : f32} : (tensor<2x?x8xf32>, tensor<2x?x8xf32>, tensor<2x?x8xf32>) -> tensor<2x?x8xf32>
  return %0 : tensor<2x?x8xf32>
}

// -----

// Rotate-half slices the head in two: the head size must be static.
func.func @rotary_dynamic_head(%q: tensor<2x4x?xf32>, %k: tensor<2x4x?xf32>, %v: tensor<2x4x8xf32>, %cos: tensor<4x?xf32>, %sin: tensor<4x?xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{'sluice.attention' op cannot be decomposed (dynamic sequence or head dims?)}}
  %0 = sluice.attention %q, %k, %v rotary(%cos, %sin) {scale = 1.0 : f32} : (tensor<2x4x?xf32>, tensor<2x4x?xf32>, tensor<2x4x8xf32>, tensor<4x?xf32>, tensor<4x?xf32>) -> tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

// -----

// A scale with more dims than the input would broadcast the result.
func.func @layer_norm_scale_broadcasts(%x: tensor<4xf32>, %s: tensor<2x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'sluice.layer_norm' op cannot be decomposed (dynamic sequence or head dims?)}}
  %y, %m, %i = sluice.layer_norm %x, %s {axis = 0 : i64} : (tensor<4xf32>, tensor<2x4xf32>) -> (tensor<4xf32>, tensor<1xf32>, tensor<1xf32>)
  return %y : tensor<4xf32>
}

// -----

// A result type more static than the input's: the primitive ops would give
// the input's type.
func.func @gelu_refined_result(%x: tensor<?xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'sluice.gelu' op cannot be decomposed (dynamic sequence or head dims?)}}
  %0 = sluice.gelu %x : (tensor<?xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
