// RUN: sluice-opt %s --split-input-file --verify-diagnostics
// Verifier and type-inference errors of the reduction family.

func.func @reduce_axis_out_of_range(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %axes = sluice.constant dense<2> : tensor<1xi64>
  // expected-error@+2 {{reduce axis 2 out of range for rank 2}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.reduce %x, %axes {kind = #sluice<reduce_kind sum>} : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @argmax_axis(%x: tensor<2x3xf32>) -> tensor<2x3xi64> {
  // expected-error@+1 {{axis -3 out of range for rank 2}}
  %0 = sluice.argmax %x {axis = -3 : i64} : (tensor<2x3xf32>) -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// -----

func.func @argmin_result_type(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{result #0 must be tensor of 64-bit signless integer values}}
  %0 = sluice.argmin %x {keepdims = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @argmax_empty_dim(%x: tensor<0x3xf32>) -> tensor<1x3xi64> {
  // expected-error@+1 {{cannot reduce an empty dim to an index}}
  %0 = sluice.argmax %x : (tensor<0x3xf32>) -> tensor<1x3xi64>
  return %0 : tensor<1x3xi64>
}

// -----

func.func @topk_k_too_large(%x: tensor<3x4xf32>) -> tensor<3x5xf32> {
  %k = sluice.constant dense<5> : tensor<1xi64>
  // expected-error@+2 {{k = 5 exceeds the axis dim of size 4}}
  // expected-error@+1 {{failed to infer returned types}}
  %0:2 = sluice.topk %x, %k : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<3x5xf32>, tensor<3x5xi64>)
  return %0#0 : tensor<3x5xf32>
}

// -----

func.func @topk_negative_k(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %k = sluice.constant dense<-1> : tensor<1xi64>
  // expected-error@+2 {{k must be non-negative, got -1}}
  // expected-error@+1 {{failed to infer returned types}}
  %0:2 = sluice.topk %x, %k : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<3x4xf32>, tensor<3x4xi64>)
  return %0#0 : tensor<3x4xf32>
}

// -----

func.func @topk_k_shape(%x: tensor<3x4xf32>, %k: tensor<2xi64>) -> tensor<3x?xf32> {
  // expected-error@+1 {{k must be a one-element tensor}}
  %0:2 = sluice.topk %x, %k : (tensor<3x4xf32>, tensor<2xi64>) -> (tensor<3x?xf32>, tensor<3x?xi64>)
  return %0#0 : tensor<3x?xf32>
}

// -----

func.func @topk_wrong_result(%x: tensor<3x4xf32>) -> tensor<3x3xf32> {
  %k = sluice.constant dense<2> : tensor<1xi64>
  // expected-error@+2 {{inferred type(s) 'tensor<3x2xf32>', 'tensor<3x2xi64>' are incompatible with return type(s) of operation 'tensor<3x3xf32>', 'tensor<3x3xi64>'}}
  // expected-error@+1 {{failed to infer returned types}}
  %0:2 = sluice.topk %x, %k : (tensor<3x4xf32>, tensor<1xi64>) -> (tensor<3x3xf32>, tensor<3x3xi64>)
  return %0#0 : tensor<3x3xf32>
}

// -----

func.func @cumsum_axis_shape(%x: tensor<3x4xf32>, %axis: tensor<2xi64>) -> tensor<3x4xf32> {
  // expected-error@+1 {{axis must be a scalar or a one-element 1-D tensor}}
  %0 = sluice.cumsum %x, %axis : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @cumsum_axis_range(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %axis = sluice.constant dense<2> : tensor<i64>
  // expected-error@+1 {{axis 2 out of range for rank 2}}
  %0 = sluice.cumsum %x, %axis : (tensor<3x4xf32>, tensor<i64>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
