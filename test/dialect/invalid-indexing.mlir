// RUN: sluice-opt %s --split-input-file --verify-diagnostics
// Verifier and type-inference errors of the indexing family.

func.func @gather_elements_rank(%x: tensor<3x4xf32>, %i: tensor<2xi64>) -> tensor<2xf32> {
  // expected-error@+1 {{indices rank 1 differs from input rank 2}}
  %0 = sluice.gather_elements %x, %i : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @gather_nd_tuple_too_long(%x: tensor<3x4xf32>, %i: tensor<2x3xi64>) -> tensor<2xf32> {
  // expected-error@+2 {{gather_nd index tuples of length 3 do not fit input rank 2 after 0 batch dims}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.gather_nd %x, %i : (tensor<3x4xf32>, tensor<2x3xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @scatter_shapes(%x: tensor<1x5xf32>, %i: tensor<1x2xi64>, %u: tensor<1x3xf32>) -> tensor<1x5xf32> {
  // expected-error@+1 {{indices and updates must have the same shape}}
  %0 = sluice.scatter_elements %x, %i, %u {axis = 1 : i64} : (tensor<1x5xf32>, tensor<1x2xi64>, tensor<1x3xf32>) -> tensor<1x5xf32>
  return %0 : tensor<1x5xf32>
}

// -----

func.func @scatter_mean(%x: tensor<1x5xf32>, %i: tensor<1x2xi64>, %u: tensor<1x2xf32>) -> tensor<1x5xf32> {
  // expected-error@+1 {{reduction must be sum, prod, max or min}}
  %0 = sluice.scatter_elements %x, %i, %u {reduction = #sluice<reduce_kind mean>} : (tensor<1x5xf32>, tensor<1x2xi64>, tensor<1x2xf32>) -> tensor<1x5xf32>
  return %0 : tensor<1x5xf32>
}

// -----

func.func @scatter_nd_updates(%x: tensor<4x4xf32>, %i: tensor<2x1xi64>, %u: tensor<2x3xf32>) -> tensor<4x4xf32> {
  // expected-error@+1 {{updates dim 1 differs from input dim 1}}
  %0 = sluice.scatter_nd %x, %i, %u : (tensor<4x4xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @one_hot_values(%i: tensor<3xi64>, %d: tensor<i64>, %v: tensor<3xf32>) -> tensor<3x?xf32> {
  // expected-error@+1 {{values must be a 1-D tensor of [off, on]}}
  %0 = sluice.one_hot %i, %d, %v : (tensor<3xi64>, tensor<i64>, tensor<3xf32>) -> tensor<3x?xf32>
  return %0 : tensor<3x?xf32>
}

// -----

func.func @one_hot_axis(%i: tensor<3xi64>, %d: tensor<i64>, %v: tensor<2xf32>) -> tensor<3x?xf32> {
  // expected-error@+2 {{one_hot axis 2 out of range for result rank 2}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.one_hot %i, %d, %v {axis = 2 : i64} : (tensor<3xi64>, tensor<i64>, tensor<2xf32>) -> tensor<3x?xf32>
  return %0 : tensor<3x?xf32>
}

// -----

func.func @compress_too_long(%x: tensor<3x2xf32>, %c: tensor<5xi1>) -> tensor<?x2xf32> {
  // expected-error@+1 {{condition has 5 entries for a dim of 3}}
  %0 = sluice.compress %x, %c {axis = 0 : i64} : (tensor<3x2xf32>, tensor<5xi1>) -> tensor<?x2xf32>
  return %0 : tensor<?x2xf32>
}

// -----

func.func @resize_both(%x: tensor<1x4xf32>, %s: tensor<2xf32>, %z: tensor<2xi64>) -> tensor<?x?xf32> {
  // expected-error@+2 {{resize needs exactly one of scales and sizes}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.resize %x, %s, %z {operandSegmentSizes = array<i32: 1, 0, 1, 1>} : (tensor<1x4xf32>, tensor<2xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @resize_mode(%x: tensor<1x4xf32>, %s: tensor<2xf32>) -> tensor<?x?xf32> {
  // expected-error@+1 {{mode must be one of 'nearest' 'linear' 'cubic', got 'bilinear'}}
  %0 = sluice.resize %x, %s {mode = "bilinear", operandSegmentSizes = array<i32: 1, 0, 1, 0>} : (tensor<1x4xf32>, tensor<2xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @resize_scales_length(%x: tensor<1x4xf32>, %s: tensor<3xf32>) -> tensor<?x?xf32> {
  // expected-error@+2 {{resize scales has 3 entries for rank 2}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.resize %x, %s {operandSegmentSizes = array<i32: 1, 0, 1, 0>} : (tensor<1x4xf32>, tensor<3xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

func.func @nms_boxes(%b: tensor<1x6x3xf32>, %s: tensor<1x1x6xf32>) -> tensor<?x3xi64> {
  // expected-error@+1 {{boxes must be [batches, boxes, 4]}}
  %0 = sluice.non_max_suppression %b, %s {operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>} : (tensor<1x6x3xf32>, tensor<1x1x6xf32>) -> tensor<?x3xi64>
  return %0 : tensor<?x3xi64>
}

// -----

func.func @roi_align_mode(%x: tensor<1x1x4x4xf32>, %r: tensor<2x4xf32>, %b: tensor<2xi64>) -> tensor<2x1x1x1xf32> {
  // expected-error@+1 {{coordinate_transformation_mode must be one of 'half_pixel' 'output_half_pixel', got 'asymmetric'}}
  %0 = sluice.roi_align %x, %r, %b {coordinate_transformation_mode = "asymmetric"} : (tensor<1x1x4x4xf32>, tensor<2x4xf32>, tensor<2xi64>) -> tensor<2x1x1x1xf32>
  return %0 : tensor<2x1x1x1xf32>
}

// -----

func.func @grid_sample_grid(%x: tensor<1x1x4x4xf32>, %g: tensor<1x2x2x3xf32>) -> tensor<1x1x2x2xf32> {
  // expected-error@+2 {{grid_sample needs a [N, C, H, W] input and a [N, H_out, W_out, 2] grid}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.grid_sample %x, %g : (tensor<1x1x4x4xf32>, tensor<1x2x2x3xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

func.func @unique_unknown_result(%x: tensor<6xf32>) -> tensor<6xf32> {
  // expected-error@+2 {{inferred type(s)}}
  // expected-error@+1 {{failed to infer returned types}}
  %0:4 = sluice.unique %x : (tensor<6xf32>) -> (tensor<6xf32>, tensor<?xi64>, tensor<5xi64>, tensor<?xi64>)
  return %0#0 : tensor<6xf32>
}
