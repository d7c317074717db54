// RUN: sluice-opt %s --split-input-file --verify-diagnostics
// Verifier and type-inference errors of the shape and data-movement family.

func.func @slice_zero_step(%x: tensor<4xf32>) -> tensor<?xf32> {
  %z = sluice.constant dense<0> : tensor<1xi64>
  // expected-error@+2 {{slice step cannot be 0}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.slice %x, %z, %z, %z, %z : (tensor<4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @slice_lengths(%x: tensor<4xf32>, %a: tensor<1xi64>, %b: tensor<2xi64>) -> tensor<?xf32> {
  // expected-error@+2 {{slice starts, ends, axes and steps must have the same length}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.slice %x, %a, %b, %a, %a : (tensor<4xf32>, tensor<1xi64>, tensor<2xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @concat_mismatch(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) -> tensor<?x6xf32> {
  // expected-error@+2 {{concat inputs differ in dim 0: 2 vs 4}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<?x6xf32>
  return %0 : tensor<?x6xf32>
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+2 {{concat axis 2 is out of range for rank 2}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.concat %a {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @split_sizes(%x: tensor<6xf32>) -> tensor<2xf32> {
  %s = sluice.constant dense<[2, 3]> : tensor<2xi64>
  // expected-error@+2 {{split sizes sum to 5 but the dim is 6}}
  // expected-error@+1 {{failed to infer returned types}}
  %0:2 = sluice.split %x, %s {axis = 0 : i64, num_outputs = 2 : i64} : (tensor<6xf32>, tensor<2xi64>) -> (tensor<2xf32>, tensor<3xf32>)
  return %0#0 : tensor<2xf32>
}

// -----

func.func @split_count(%x: tensor<6xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{num_outputs is 3 but the op has 2 results}}
  %0:2 = sluice.split %x {axis = 0 : i64, num_outputs = 3 : i64} : (tensor<6xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %0#0 : tensor<3xf32>
}

// -----

func.func @squeeze_non_unit(%x: tensor<2x3xf32>) -> tensor<3xf32> {
  %a = sluice.constant dense<0> : tensor<1xi64>
  // expected-error@+2 {{squeeze of dim 0 of size 2}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.squeeze %x, %a : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @unsqueeze_repeated(%x: tensor<3xf32>) -> tensor<1x1x3xf32> {
  %a = sluice.constant dense<[0, -3]> : tensor<2xi64>
  // expected-error@+2 {{unsqueeze axis -3 is repeated}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.unsqueeze %x, %a : (tensor<3xf32>, tensor<2xi64>) -> tensor<1x1x3xf32>
  return %0 : tensor<1x1x3xf32>
}

// -----

func.func @expand_incompatible(%x: tensor<3xf32>) -> tensor<4xf32> {
  %s = sluice.constant dense<4> : tensor<1xi64>
  // expected-error@+2 {{cannot expand}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.expand %x, %s : (tensor<3xf32>, tensor<1xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @tile_rank(%x: tensor<3xf32>, %r: tensor<2xi64>) -> tensor<?xf32> {
  // expected-error@+2 {{tile has 2 repeats for rank 1}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.tile %x, %r : (tensor<3xf32>, tensor<2xi64>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @pad_count(%x: tensor<3xf32>, %p: tensor<3xi64>) -> tensor<?xf32> {
  // expected-error@+2 {{pad has 3 pads for rank 1 (expects 2)}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.pad %x, %p : (tensor<3xf32>, tensor<3xi64>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @pad_value_type(%x: tensor<3xf32>, %p: tensor<2xi64>, %v: tensor<i32>) -> tensor<?xf32> {
  // expected-error@+1 {{constant_value must have the input's element type}}
  %0 = sluice.pad %x, %p, %v : (tensor<3xf32>, tensor<2xi64>, tensor<i32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @constant_of_shape_value(%s: tensor<2xi64>) -> tensor<?x?xf32> {
  // expected-error@+1 {{value must hold one element, not 2}}
  %0 = sluice.constant_of_shape %s {value = dense<[1.0, 2.0]> : tensor<2xf32>} : (tensor<2xi64>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @range_zero_delta(%a: tensor<f32>) -> tensor<?xf32> {
  %z = sluice.constant dense<0.0> : tensor<f32>
  // expected-error@+2 {{range delta cannot be 0}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.range %z, %z, %z : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @range_not_scalar(%a: tensor<2xf32>, %b: tensor<f32>) -> tensor<?xf32> {
  // expected-error@+1 {{start, limit and delta must be scalars}}
  %0 = sluice.range %a, %b, %b : (tensor<2xf32>, tensor<f32>, tensor<f32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @trilu_rank(%x: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{input must have rank >= 2, not 1}}
  %0 = sluice.trilu %x : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @reverse_sequence_axes(%x: tensor<2x3xf32>, %l: tensor<2xi64>) -> tensor<2x3xf32> {
  // expected-error@+1 {{batch_axis and time_axis must be 0 and 1 in some order}}
  %0 = sluice.reverse_sequence %x, %l {batch_axis = 0 : i64, time_axis = 0 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @reverse_sequence_lens(%x: tensor<2x3xf32>, %l: tensor<2xi64>) -> tensor<2x3xf32> {
  // expected-error@+1 {{has 2 sequence lengths for a batch of 3}}
  %0 = sluice.reverse_sequence %x, %l : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
