// RUN: sluice-opt %s --split-input-file --sluice-pipeline="pp=2 micro-batches=2" 2>/dev/null | FileCheck %s --check-prefix=PP2
// RUN: sluice-opt %s --split-input-file --sluice-pipeline="pp=3" 2>/dev/null | FileCheck %s --check-prefix=PP3
// RUN: sluice-opt %s --split-input-file --sluice-pipeline="pp=1" 2>/dev/null | FileCheck %s --check-prefix=NONE

// Two equal "layers" (a matmul, a masked add, a relu each) that share a
// weight and read a mask made from an input. At pp=2 the balanced cut is
// between the layers (one activation, %c, crosses it): %c is transferred
// from stage 0 to stage 1, the weight and the mask get a copy in stage 1,
// and the function records the plan.
// PP2-LABEL: func.func @two_layers
// PP2-SAME: sluice.micro_batches = 2 : i64
// PP2-SAME: bubble_fraction = 0.33333333333333331 : f64
// PP2-SAME: sluice.pp = 2 : i64
// PP2: %[[W:.*]] = sluice.constant {{.*}}sluice.stage = 0 : i64
// PP2-NEXT: %[[W1:.*]] = sluice.constant {{.*}}sluice.stage = 1 : i64
// PP2-NEXT: %[[M:.*]] = sluice.mul %arg1, %arg1 {sluice.stage = 0 : i64}
// PP2-NEXT: %[[M1:.*]] = sluice.mul %arg1, %arg1 {sluice.stage = 1 : i64}
// PP2-NEXT: %[[A:.*]] = sluice.matmul %arg0, %[[W]] {sluice.stage = 0 : i64}
// PP2-NEXT: %[[B:.*]] = sluice.add %[[A]], %[[M]] {sluice.stage = 0 : i64}
// PP2-NEXT: %[[C:.*]] = sluice.relu %[[B]] {sluice.stage = 0 : i64}
// PP2-NEXT: %[[T:.*]] = sluice.transfer %[[C]] {from = 0 : i64, to = 1 : i64}
// PP2-NEXT: %[[D:.*]] = sluice.matmul %[[T]], %[[W1]] {sluice.stage = 1 : i64}
// PP2-NEXT: %[[E:.*]] = sluice.add %[[D]], %[[M1]] {sluice.stage = 1 : i64}
// PP2-NEXT: %[[F:.*]] = sluice.relu %[[E]] {sluice.stage = 1 : i64}
// PP2-NEXT: return %[[F]]

// At pp=3 one stage holds less than a layer: two transfers, each of the one
// live activation.
// PP3-LABEL: func.func @two_layers
// PP3-COUNT-2: sluice.transfer
// PP3-NOT: sluice.transfer
// PP3: return

// pp=1: nothing changes.
// NONE-LABEL: func.func @two_layers
// NONE-NOT: sluice.stage
// NONE-NOT: sluice.transfer
func.func @two_layers(%x: tensor<1x4x8xf32>, %m: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %w = sluice.constant dense<0.1> : tensor<8x8xf32>
  %mask = sluice.mul %m, %m : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %a = sluice.matmul %x, %w : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %b = sluice.add %a, %mask : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %c = sluice.relu %b : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %d = sluice.matmul %c, %w : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %e = sluice.add %d, %mask : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %f = sluice.relu %e : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  return %f : tensor<1x4x8xf32>
}
