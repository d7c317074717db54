// sluice-prune on an MLP block: hidden units leave W1's columns, b1 and
// W2's rows together. Unit u's importance is mean|relu(h_u)| x ||W2[u]||:
// activations grow with u (W1's columns 1..4) and W2's rows 1 and 3 are the
// heavy ones, so units 1 and 3 stay. The output GEMM reaches the function's
// result and is not a candidate. The removed units' mean activation over
// the calibration sets times their W2 rows moves into b2 (compensation).
// The pruned function computes what the hand-pruned model computes (numpy),
// and what the unpruned one computes with the removed units' W2 rows zeroed
// and the same compensation (mask-only).
// RUN: rm -rf %t && %python %S/Inputs/prune_data.py %t/cal x=2x3
// RUN: sluice-opt %s --sluice-prune="metric=rel-l2 ffn=0.5 calibration=%t/cal budget=10" -o %t/pruned.mlir
// RUN: FileCheck %s < %t/pruned.mlir
// CHECK-LABEL: func.func @main
// CHECK-SAME: sluice.pruning = {achieved_fraction = {ffn = 5.000000e-01 : f64}, asked_fraction = {ffn = 5.000000e-01 : f64}, budget = 1.000000e+01 : f64, calibration_sets = 2 : i64
// CHECK-SAME: layers = [{fraction = 5.000000e-01 : f64, kept = 2 : i64, kept_units = [1, 3], kind = "ffn", node = "fc1", original = 4 : i64, reason = "as requested", requested_fraction = 5.000000e-01 : f64, sensitivity = {{[0-9.e-]+}} : f64, sensitivity_rel_l2 = {{[0-9.e-]+}} : f64}]
// CHECK-SAME: params_after = 14 : i64, params_before = 26 : i64
// CHECK-SAME: requested = {channels = 0.000000e+00 : f64, ffn = 5.000000e-01 : f64, heads = 0.000000e+00 : f64}
// CHECK-SAME: unprunable = [{kind = "ffn", node = "fc2", reason = "it reaches the function's result"}]
// CHECK: %[[W1:.+]] = sluice.constant {{.+}} : tensor<3x2xf32>
// CHECK: %[[H:.+]] = sluice.matmul %arg0, %[[W1]] : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
// CHECK: %[[B1:.+]] = sluice.constant {{.+}} : tensor<2xf32>
// CHECK: %[[A:.+]] = sluice.add %[[H]], %[[B1]] : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
// CHECK: %[[R:.+]] = sluice.relu %[[A]] : (tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK: %[[W2:.+]] = sluice.constant {{.+}} : tensor<2x2xf32>
// CHECK: sluice.matmul %[[R]], %[[W2]] : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK-NOT: tensor<3x4xf32>
// CHECK-NOT: tensor<4x2xf32>
//
// RUN: %python %S/Inputs/prune_data.py --ffn-expect %t/cal/set0/x.npy %t/hand.npy
// RUN: sluice-run %t/pruned.mlir --reference x=%t/cal/set0/x.npy --expect %t/hand.npy --rtol=1e-5 --atol=1e-6 | FileCheck %s --check-prefix=SAME
// RUN: sluice-opt %s --sluice-prune="metric=rel-l2 ffn=0.5 calibration=%t/cal budget=10 mask-only=1" -o %t/masked.mlir
// RUN: sluice-run %t/masked.mlir --reference x=%t/cal/set0/x.npy --expect %t/hand.npy --rtol=1e-5 --atol=1e-6 | FileCheck %s --check-prefix=SAME
// SAME: output 'y' f32[2x2]: {{.*}}: ok
// RUN: not sluice-run %s --reference x=%t/cal/set0/x.npy --expect %t/hand.npy --rtol=1e-5 --atol=1e-6 | FileCheck %s --check-prefix=DIFFERENT
// DIFFERENT: MISMATCH
//
// A zero budget: the only candidate is spared, nothing changes shape.
// RUN: sluice-opt %s --sluice-prune="metric=rel-l2 ffn=0.5 calibration=%t/cal budget=0 progress=1" 2>%t/progress.txt | FileCheck %s --check-prefix=SPARED
// RUN: FileCheck %s --check-prefix=PROGRESS < %t/progress.txt
// SPARED: kept = 4 : i64, kept_units = [0, 1, 2, 3], kind = "ffn", node = "fc1", original = 4 : i64, reason = "spared: most sensitive (error {{[0-9.]+}} alone)"
// SPARED: sluice.matmul %arg0, %{{.+}} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
// PROGRESS: sluice-compile: prune: sensitivity 1/1 ffn fc1 (2 of 4 removed): [[E:[0-9.]+]]
// PROGRESS: sluice-compile: prune: output error [[E]] (budget 0.0000)
// PROGRESS: sluice-compile: prune: spared fc1
// PROGRESS: sluice-compile: prune: output error 0.0000 (budget 0.0000)
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x2xf32> attributes {sluice.input_names = ["x"], sluice.output_names = ["y"]} {
  %w1 = sluice.constant dense<[[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0]]> : tensor<3x4xf32>
  %b1 = sluice.constant dense<[0.0, 0.5, 0.0, 0.25]> : tensor<4xf32>
  %w2 = sluice.constant dense<[[0.1, -0.1], [1.0, -1.0], [0.2, 0.2], [2.0, 0.5]]> : tensor<4x2xf32>
  %b2 = sluice.constant dense<[0.125, -0.5]> : tensor<2xf32>
  %0 = sluice.matmul %x, %w1 : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32> loc("fc1")
  %1 = sluice.add %0, %b1 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %2 = sluice.relu %1 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %3 = sluice.matmul %2, %w2 : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32> loc("fc2")
  %4 = sluice.add %3, %b2 : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  return %4 : tensor<2x2xf32>
}
