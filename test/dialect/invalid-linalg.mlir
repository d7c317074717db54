// RUN: sluice-opt %s --split-input-file --verify-diagnostics
// Verifier and type-inference errors of the linalg family.

func.func @conv_channels(%x: tensor<1x3x5x5xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32> {
  // expected-error@+2 {{conv input has 3 channels but weight expects 2 x 1 groups}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32>
  return %0 : tensor<1x4x3x3xf32>
}

// -----

func.func @conv_pads(%x: tensor<1x2x5x5xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32> {
  // expected-error@+1 {{expects as many strides as dilations and twice as many pads, got 2, 2 and 2}}
  %0 = sluice.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32>
  return %0 : tensor<1x4x3x3xf32>
}

// -----

func.func @conv_spatial_rank(%x: tensor<1x2x5x5xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32> {
  // expected-error@+2 {{conv expects 2 strides and dilations and 4 pads, got 3, 3 and 6}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.conv %x, %w {dilations = array<i64: 1, 1, 1>, pads = array<i64: 0, 0, 0, 0, 0, 0>, strides = array<i64: 1, 1, 1>} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32>
  return %0 : tensor<1x4x3x3xf32>
}

// -----

func.func @conv_group(%x: tensor<1x2x5x5xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32> {
  // expected-error@+1 {{group must be positive, got 0}}
  %0 = sluice.conv %x, %w {dilations = array<i64: 1, 1>, group = 0 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32>
  return %0 : tensor<1x4x3x3xf32>
}

// -----

func.func @pool_kernel_rank(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error@+1 {{expects one positive kernel dim per stride}}
  %0 = sluice.pool %x {kind = #sluice<pool_kind max>, kernel_shape = array<i64: 2>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @pool_input_rank(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x4xf32> {
  // expected-error@+2 {{pool expects 2 kernel dims, got 1}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.pool %x {kind = #sluice<pool_kind max>, kernel_shape = array<i64: 2>, strides = array<i64: 2>, dilations = array<i64: 1>, pads = array<i64: 0, 0>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4xf32>
  return %0 : tensor<1x3x4xf32>
}

// -----

func.func @avg_pool_indices(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error@+2 {{pool indices exist only for max pooling}}
  // expected-error@+1 {{failed to infer returned types}}
  %0, %1 = sluice.pool %x {kind = #sluice<pool_kind avg>, kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, return_indices} : (tensor<1x3x8x8xf32>) -> (tensor<1x3x4x4xf32>, tensor<1x3x4x4xi64>)
  return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @layer_norm_axis(%x: tensor<2x3xf32>, %s: tensor<3xf32>) -> tensor<2x3xf32> {
  // expected-error@+2 {{layer_norm axis 2 out of range for rank 2}}
  // expected-error@+1 {{failed to infer returned types}}
  %0:3 = sluice.layer_norm %x, %s {axis = 2 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return %0#0 : tensor<2x3xf32>
}

// -----

func.func @group_norm_groups(%x: tensor<2x6x3xf32>, %s: tensor<4xf32>) -> tensor<2x6x3xf32> {
  // expected-error@+1 {{channels (6) are not divisible by num_groups (4)}}
  %0 = sluice.group_norm %x, %s, %s {num_groups = 4 : i64} : (tensor<2x6x3xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x6x3xf32>
  return %0 : tensor<2x6x3xf32>
}

// -----

func.func @einsum_bad_term(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error@+2 {{einsum 'ijk->kji': term 'ijk' does not match an operand of rank 2}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.einsum %a {equation = "ijk->kji"} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @einsum_sizes(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error@+2 {{einsum dims of one label differ: 3 vs 4}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.einsum %a, %b {equation = "ij,jk->ik"} : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @det_not_square(%a: tensor<2x3xf32>) -> tensor<f32> {
  // expected-error@+2 {{det expects square matrices, got 2x3}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.det %a : (tensor<2x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @quantize_axis_size(%x: tensor<3x4xf32>, %s: tensor<3xf32>) -> tensor<3x4xui8> {
  // expected-error@+1 {{per-axis scale has 3 values for a dim of size 4}}
  %0 = sluice.quantize_linear %x, %s {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3xf32>) -> tensor<3x4xui8>
  return %0 : tensor<3x4xui8>
}

// -----

func.func @dequantize_zero_type(%x: tensor<4xui8>, %s: tensor<f32>, %z: tensor<i8>) -> tensor<4xf32> {
  // expected-error@+1 {{zero point element type differs from the input's}}
  %0 = sluice.dequantize_linear %x, %s, %z : (tensor<4xui8>, tensor<f32>, tensor<i8>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @rnn_activations(%x: tensor<5x2x3xf32>, %w: tensor<1x4x3xf32>, %r: tensor<1x4x4xf32>, %b: tensor<1x8xf32>, %lens: tensor<2xi32>, %h: tensor<1x2x4xf32>) -> tensor<1x2x4xf32> {
  // expected-error@+1 {{expects 1 activations, got 2}}
  %y:2 = sluice.rnn %x, %w, %r, %b, %lens, %h {activation_alpha = array<f32>, activation_beta = array<f32>, activations = ["Tanh", "Tanh"], cell = "rnn", direction = "forward", hidden_size = 4 : i64} : (tensor<5x2x3xf32>, tensor<1x4x3xf32>, tensor<1x4x4xf32>, tensor<1x8xf32>, tensor<2xi32>, tensor<1x2x4xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>)
  return %y#1 : tensor<1x2x4xf32>
}

// -----

func.func @max_unpool_indices(%x: tensor<1x1x2x2xf32>, %i: tensor<1x1x2x3xi64>) -> tensor<1x1x4x4xf32> {
  // expected-error@+1 {{indices shape differs from the input's}}
  %0 = sluice.max_unpool %x, %i {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x1x2x2xf32>, tensor<1x1x2x3xi64>) -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

func.func @batch_norm_channels(%x: tensor<2x4x3xf32>, %c: tensor<3xf32>) -> tensor<2x4x3xf32> {
  // expected-error@+2 {{batch_norm parameter has 3 values for 4 channels}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.batch_norm %x, %c, %c, %c, %c : (tensor<2x4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x4x3xf32>
  return %0 : tensor<2x4x3xf32>
}

// -----

func.func @dequantize_blocked_shape(%x: tensor<5x4xi4>, %s: tensor<2x4xf16>) -> tensor<5x4xf16> {
  // expected-error@+1 {{blocked scale dim 0 is 2, expected 3 (block_size 2)}}
  %0 = sluice.dequantize_linear %x, %s {axis = 0 : i64, block_size = 2 : i64} : (tensor<5x4xi4>, tensor<2x4xf16>) -> tensor<5x4xf16>
  return %0 : tensor<5x4xf16>
}

// -----

func.func @dequantize_blocked_rank(%x: tensor<5x4xi8>, %s: tensor<4xf16>) -> tensor<5x4xf16> {
  // expected-error@+1 {{blocked scale has rank 1, the input 2}}
  %0 = sluice.dequantize_linear %x, %s {axis = 0 : i64, block_size = 2 : i64} : (tensor<5x4xi8>, tensor<4xf16>) -> tensor<5x4xf16>
  return %0 : tensor<5x4xf16>
}
