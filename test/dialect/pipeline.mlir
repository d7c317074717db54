// RUN: sluice-opt %s | sluice-opt | FileCheck %s
// RUN: sluice-opt %s --sluice-fuse-pipeline | FileCheck %s --check-prefix=FUSE

// A pipeline transfer prints and parses back (stage_size 1 is the default
// and not printed); its result has its operand's type.
// CHECK-LABEL: func.func @transfer
// CHECK: sluice.transfer %{{.*}} {from = 0 : i64, to = 1 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK: sluice.transfer %{{.*}} {from = 1 : i64, stage_size = 2 : i64, to = 3 : i64}
// The fuse phase gives it a group of its own, a collective step.
// FUSE-LABEL: func.func @transfer
// FUSE: sluice.kernel @k0_transfer collective
// FUSE: sluice.kernel @k1_transfer collective
func.func @transfer(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %t = sluice.transfer %x {from = 0 : i64, to = 1 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %u = sluice.transfer %t {from = 1 : i64, to = 3 : i64, stage_size = 2 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return %u : tensor<4x3xf32>
}
