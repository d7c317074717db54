// RUN: sluice-opt %s --split-input-file --sluice-form-kernels --sluice-plan-buffers | FileCheck %s

// A chain of four 4 KiB intermediates needs two arena slots (ping-pong);
// the returned value is written into output 0, not the arena.
// CHECK-LABEL: func @chain
// CHECK-SAME: sluice.arena_bytes = 8192
// CHECK: sluice.kernel @k0_exp
// CHECK: arena_offsets = array<i64: 0>
// CHECK: sluice.kernel @k1_exp
// CHECK: arena_offsets = array<i64: 4096>
// CHECK: sluice.kernel @k2_exp
// CHECK: arena_offsets = array<i64: 0>
// CHECK: sluice.kernel @k3_exp
// CHECK: arena_offsets = array<i64: -1>
func.func @chain(%x: tensor<1024xf32>) -> tensor<1024xf32> {
  %0 = sluice.exp %x : (tensor<1024xf32>) -> tensor<1024xf32>
  %1 = sluice.exp %0 : (tensor<1024xf32>) -> tensor<1024xf32>
  %2 = sluice.exp %1 : (tensor<1024xf32>) -> tensor<1024xf32>
  %3 = sluice.exp %2 : (tensor<1024xf32>) -> tensor<1024xf32>
  return %3 : tensor<1024xf32>
}

// -----

// A value read by a later step stays live: %0 is read by step 2, so step 1
// cannot reuse its space; outputs are numbered in return order.
// CHECK-LABEL: func @long_lived
// CHECK-SAME: sluice.arena_bytes = 128
// CHECK: sluice.kernel @k0_exp
// CHECK: arena_offsets = array<i64: 0>
// CHECK: sluice.kernel @k1_exp
// CHECK: arena_offsets = array<i64: 64>
// CHECK: sluice.kernel @k2_add
// CHECK: arena_offsets = array<i64: -2>
// CHECK: sluice.kernel @k3_neg
// CHECK: arena_offsets = array<i64: -1>
func.func @long_lived(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = sluice.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = sluice.exp %0 : (tensor<4xf32>) -> tensor<4xf32>
  %2 = sluice.add %0, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = sluice.neg %2 : (tensor<4xf32>) -> tensor<4xf32>
  return %3, %2 : tensor<4xf32>, tensor<4xf32>
}

