// RUN: sluice-opt %s --split-input-file --verify-diagnostics --sluice-plan-tensor-parallel="tp=4" -o /dev/null

// Heads that --tp does not divide: an error naming the op and the sizes.
func.func @heads(%q: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  // expected-error @below {{--tp=4 does not divide the heads of 'sluice.attention': 2 query heads, 2 key/value heads}}
  %a = sluice.attention %q, %q, %q {scale = 0.5 : f32} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %a : tensor<1x2x4x4xf32>
}

// -----

// An MLP width that --tp does not divide.
func.func @width(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %w1 = sluice.constant dense<0.1> : tensor<8x6xf32>
  %w2 = sluice.constant dense<0.2> : tensor<6x8xf32>
  %h = sluice.matmul %x, %w1 : (tensor<1x4x8xf32>, tensor<8x6xf32>) -> tensor<1x4x6xf32>
  %g = sluice.relu %h : (tensor<1x4x6xf32>) -> tensor<1x4x6xf32>
  // expected-error @below {{--tp=4 does not divide the width of the MLP ending in 'sluice.matmul': 6 hidden units}}
  %y = sluice.matmul %g, %w2 : (tensor<1x4x6xf32>, tensor<6x8xf32>) -> tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}

// -----

// Dynamic shapes: a per-rank program needs static ones.
// expected-error @below {{--tp=4 needs static shapes: bind every input's shape with --shape=NAME=DIMS}}
func.func @dynamic(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  return %x : tensor<?x8xf32>
}

// -----

// Nothing to split.
// expected-error @below {{--tp=4 found nothing to split: no attention, MLP or embedding whose sizes divide into 4 ranks}}
func.func @nothing(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = sluice.relu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// A function partitioned already.
// expected-error @below {{--tp=4: this function is already partitioned over 2 ranks}}
func.func @again(%x: tensor<2x8xf32>) -> tensor<2x8xf32> attributes {sluice.tp = 2 : i64} {
  return %x : tensor<2x8xf32>
}
