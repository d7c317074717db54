// RUN: sluice-opt %s --split-input-file --verify-diagnostics
// Verifier and type-inference errors across op families.

func.func @broadcast_mismatch(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error@+2 {{shapes [2x3] and [4] are not broadcast-compatible}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @wrong_result_shape(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error@+2 {{inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3x2xf32>'}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.relu %a : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @mixed_element_types(%a: tensor<2xf32>, %b: tensor<2xf16>) -> tensor<2xf32> {
  // expected-error@+1 {{requires the same element type for all operands}}
  %0 = sluice.mul %a, %b : (tensor<2xf32>, tensor<2xf16>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @float_only(%a: tensor<2xi32>) -> tensor<2xi32> {
  // expected-error@+1 {{operand #0 must be tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values}}
  %0 = sluice.exp %a : (tensor<2xi32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

func.func @bad_perm(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error@+1 {{perm must be a permutation of [0, rank)}}
  %0 = sluice.transpose %a {perm = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @reshape_count(%a: tensor<2x3xf32>) -> tensor<4x2xf32> {
  %s = sluice.constant dense<[4, 2]> : tensor<2xi64>
  // expected-error@+2 {{cannot reshape 6 elements into 8}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.reshape %a, %s : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @matmul_contraction(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error@+2 {{matmul contraction dims differ: 3 vs 4}}
  // expected-error@+1 {{failed to infer returned types}}
  %0 = sluice.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @softmax_axis(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{axis 2 out of range for rank 2}}
  %0 = sluice.softmax %a {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @if_yield_count(%c: tensor<i1>, %a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{else branch yields 0 values, expected 1}}
  %0 = sluice.if %c : tensor<i1> -> tensor<2xf32> {
    sluice.yield %a : tensor<2xf32>
  } else {
    sluice.yield
  }
  return %0 : tensor<2xf32>
}

// -----

func.func @loop_body_arguments(%n: tensor<i64>, %x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{body takes 2 arguments, expected 3 (iteration, condition, carried values)}}
  %0 = sluice.loop(%n : tensor<i64>)() carried(%x : tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%i: tensor<i64>, %cond: tensor<i1>):
    sluice.yield %cond, %x : tensor<i1>, tensor<2xf32>
  }
  return %0 : tensor<2xf32>
}

// -----

// Strings are not numbers: only sluice.cast may take them.
func.func @add_strings(%x: tensor<3x!sluice.string>) -> tensor<3x!sluice.string> {
  // expected-error@+1 {{operand #0 must be tensor of}}
  %0 = sluice.add %x, %x : (tensor<3x!sluice.string>, tensor<3x!sluice.string>) -> tensor<3x!sluice.string>
  return %0 : tensor<3x!sluice.string>
}
