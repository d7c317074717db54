// RUN: sluice-opt %s --split-input-file --verify-diagnostics --sluice-pipeline="pp=3" -o /dev/null

// More stages than layers: a stage holds at least one layer.
// expected-error @below {{--pp=3 exceeds the 2 layers (attention ops) of this model: a stage holds at least one layer}}
func.func @layers(%q: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %a = sluice.attention %q, %q, %q {scale = 0.5 : f32} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %b = sluice.attention %a, %a, %a {scale = 0.5 : f32} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %b : tensor<1x2x4x4xf32>
}

// -----

// More stages than places where one activation crosses: %a and %b are both
// live until the last op, so only one cut (before %b) is allowed.
// expected-error @below {{--pp=3 needs 2 cuts between ops where one activation crosses, and this model has 1 (at most --pp=2)}}
func.func @cuts(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %w = sluice.constant dense<0.1> : tensor<8x8xf32>
  %a = sluice.matmul %x, %w : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %b = sluice.exp %a : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %c = sluice.add %a, %b : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %c : tensor<1x4x8xf32>
}
