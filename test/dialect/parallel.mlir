// RUN: sluice-opt %s | sluice-opt | FileCheck %s
// RUN: sluice-opt %s --sluice-fuse-pipeline | FileCheck %s --check-prefix=FUSE

// The parallelize phase's ops print and parse back: a rank's block of a
// weight (in groups for a fused weight) and the collectives, whose result
// types follow from the group size.
// CHECK-LABEL: func.func @ops
// CHECK: sluice.shard_constant dense<1.000000e+00> : tensor<4x6xf32> {axis = 1 : i64, groups = 3 : i64, parts = 2 : i64} -> tensor<4x3xf32>
// CHECK: sluice.all_reduce %{{.*}} {group_size = 2 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK: sluice.all_gather %{{.*}} {axis = 1 : i64, group_size = 2 : i64} : (tensor<4x3xf32>) -> tensor<4x6xf32>
// CHECK: sluice.reduce_scatter %{{.*}} {axis = 0 : i64, group_size = 2 : i64} : (tensor<4x6xf32>) -> tensor<2x6xf32>
// CHECK: sluice.all_to_all %{{.*}} {group_size = 2 : i64} : (tensor<2x6xf32>) -> tensor<2x6xf32>
func.func @ops() -> tensor<2x6xf32> {
  %w = sluice.shard_constant dense<1.0> : tensor<4x6xf32> {axis = 1 : i64, parts = 2 : i64, groups = 3 : i64} -> tensor<4x3xf32>
  %s = sluice.all_reduce %w {group_size = 2 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %g = sluice.all_gather %s {axis = 1 : i64, group_size = 2 : i64} : (tensor<4x3xf32>) -> tensor<4x6xf32>
  %r = sluice.reduce_scatter %g {axis = 0 : i64, group_size = 2 : i64} : (tensor<4x6xf32>) -> tensor<2x6xf32>
  %a = sluice.all_to_all %r {group_size = 2 : i64} : (tensor<2x6xf32>) -> tensor<2x6xf32>
  return %a : tensor<2x6xf32>
}

// A collective is a library call of its own (the `collective` form), and a
// shard constant stays outside the kernels like a weight.
// FUSE-LABEL: func.func @ops
// FUSE: sluice.shard_constant
// FUSE: sluice.kernel @k0_all_reduce collective library "collective"
// FUSE: sluice.kernel @k1_all_gather collective library "collective"
// FUSE: sluice.kernel @k2_reduce_scatter collective library "collective"
// FUSE: sluice.kernel @k3_all_to_all collective library "collective"
