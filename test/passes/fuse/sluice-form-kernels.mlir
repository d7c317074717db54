// RUN: sluice-opt %s --split-input-file --sluice-form-kernels | FileCheck %s
// RUN: sluice-opt %s --split-input-file --sluice-form-kernels="max-inline-elements=0" | FileCheck %s --check-prefix=NOINLINE

// One group per op, in program order; scalar constants are cloned into the
// group that reads them and the outer copy disappears.
// CHECK-LABEL: func @chain
// CHECK-SAME: (%[[X:.+]]: tensor<4xf32>)
// CHECK-NOT: sluice.constant
// CHECK: %[[K0:.+]] = sluice.kernel @k0_mul elementwise(%[[X]] : tensor<4xf32>) -> (tensor<4xf32>) {
// CHECK-NEXT: ^bb0(%[[A:.+]]: tensor<4xf32>):
// CHECK-NEXT: %[[TWO:.+]] = sluice.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[M:.+]] = sluice.mul %[[A]], %[[TWO]]
// CHECK-NEXT: sluice.kernel_yield %[[M]] : tensor<4xf32>
// CHECK: %[[K1:.+]] = sluice.kernel @k1_tanh elementwise(%[[K0]] : tensor<4xf32>)
// CHECK: sluice.tanh
// CHECK: return %[[K1]]
// NOINLINE-LABEL: func @chain
// NOINLINE: %[[C:.+]] = sluice.constant dense<2.000000e+00>
// NOINLINE: sluice.kernel @k0_mul elementwise(%arg0, %[[C]] : tensor<4xf32>, tensor<f32>)
func.func @chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %two = sluice.constant dense<2.0> : tensor<f32>
  %0 = sluice.mul %x, %two : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = sluice.tanh %0 : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// Float matmuls are library calls (BLAS); integer ones are generated kernels.
// CHECK-LABEL: func @library
// CHECK: sluice.kernel @k0_matmul gemm library "gemm"
// CHECK: sluice.kernel @k1_matmul single(
// CHECK-NOT: library
// CHECK: return
func.func @library(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<2x3xi32>, %d: tensor<3x4xi32>) -> (tensor<2x4xf32>, tensor<2x4xi32>) {
  %0 = sluice.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %1 = sluice.matmul %c, %d : (tensor<2x3xi32>, tensor<3x4xi32>) -> tensor<2x4xi32>
  return %0, %1 : tensor<2x4xf32>, tensor<2x4xi32>
}

// -----

// Ops marked with one sluice.group id form one kernel, named after the op
// marked sluice.group_anchor; it yields the values used outside the group
// (here the matmul result too) and no longer carries the marks. The kernel
// sits where the group's last op was; the tanh, which reads the group's
// first value, moves after it. Numbers follow the final order.
// CHECK-LABEL: func @group
// CHECK: %[[K:.+]]:2 = sluice.kernel @k0_matmul gemm library "gemm"(%arg0, %arg1, %arg2 : tensor<2x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[M:.+]] = sluice.matmul
// CHECK-NEXT: %[[A:.+]] = sluice.add %[[M]]
// CHECK-NEXT: %[[R:.+]] = sluice.relu %[[A]]
// CHECK-NOT: sluice.group
// CHECK-NEXT: sluice.kernel_yield %[[M]], %[[R]]
// CHECK: sluice.kernel @k1_tanh elementwise(%[[K]]#0
// CHECK: return %[[K]]#1, %{{.+}}
func.func @group(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %0 = sluice.matmul %a, %b {sluice.group = 0 : i64, sluice.group_anchor} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %1 = sluice.tanh %0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %2 = sluice.add %0, %c {sluice.group = 0 : i64} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %3 = sluice.relu %2 {sluice.group = 0 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %3, %1 : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// Weights (dense_resource blobs) stay outside and become inputs.
// CHECK-LABEL: func @weights
// CHECK: %[[W:.+]] = sluice.constant dense_resource<w>
// CHECK: sluice.kernel @k0_add elementwise(%arg0, %[[W]] : tensor<2xf32>, tensor<2xf32>)
func.func @weights(%x: tensor<2xf32>) -> tensor<2xf32> {
  %w = sluice.constant dense_resource<w> : tensor<2xf32>
  %0 = sluice.add %x, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      w: "0x040000000000803F00000040"
    }
  }
#-}
