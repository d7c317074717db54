// RUN: sluice-opt %s --split-input-file --verify-diagnostics

func.func @indivisible() -> tensor<3x2xf32> {
  // expected-error @below {{dim 0 (6) is not divisible by 4 parts x 1 groups}}
  %w = sluice.shard_constant dense<1.0> : tensor<6x2xf32> {axis = 0 : i64, parts = 4 : i64} -> tensor<3x2xf32>
  return %w : tensor<3x2xf32>
}

// -----

func.func @axis() -> tensor<6x2xf32> {
  // expected-error @below {{axis 2 out of range for rank 2}}
  %w = sluice.shard_constant dense<1.0> : tensor<6x2xf32> {axis = 2 : i64, parts = 2 : i64} -> tensor<6x2xf32>
  return %w : tensor<6x2xf32>
}

// -----

func.func @scatter(%x: tensor<3x4xf32>) -> tensor<1x4xf32> {
  // expected-error @below {{dim 0 (3) is not divisible by the group size 2}}
  %r = sluice.reduce_scatter %x {axis = 0 : i64, group_size = 2 : i64} : (tensor<3x4xf32>) -> tensor<1x4xf32>
  return %r : tensor<1x4xf32>
}

// -----

func.func @group(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{group_size must be at least 1}}
  %r = sluice.all_reduce %x {group_size = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @gather_axis(%x: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @below {{collective axis 1 out of range for rank 1}}
  // expected-error @below {{failed to infer returned types}}
  %r = sluice.all_gather %x {axis = 1 : i64, group_size = 2 : i64} : (tensor<4xf32>) -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// A collective takes no other op into its kernel.
func.func @fused(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{body is no collective group: 'sluice.all_reduce' is a collective, which takes no other op into its group}}
  %0 = sluice.kernel @k0 collective library "collective" (%x : tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %r = sluice.all_reduce %a {group_size = 2 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %n = sluice.neg %r : (tensor<4xf32>) -> tensor<4xf32>
    sluice.kernel_yield %n : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}
