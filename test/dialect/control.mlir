// RUN: sluice-opt %s --split-input-file | sluice-opt | FileCheck %s
// RUN: sluice-opt %s --split-input-file --sluice-specialize-shapes | FileCheck %s --check-prefix=SPEC

// CHECK-LABEL: func @branch
// CHECK: %[[R:.+]] = sluice.if %{{.*}} : tensor<i1> -> tensor<?xf32> {
// CHECK:   sluice.yield %{{.*}} : tensor<2xf32>
// CHECK: } else {
// CHECK:   sluice.yield %{{.*}} : tensor<3xf32>
// CHECK: }
func.func @branch(%c: tensor<i1>, %a: tensor<2xf32>, %b: tensor<3xf32>) -> tensor<?xf32> {
  %0 = sluice.if %c : tensor<i1> -> tensor<?xf32> {
    %1 = sluice.relu %a : (tensor<2xf32>) -> tensor<2xf32>
    sluice.yield %1 : tensor<2xf32>
  } else {
    sluice.yield %b : tensor<3xf32>
  }
  return %0 : tensor<?xf32>
}

// -----

// Shapes are refined inside regions too.
// CHECK-LABEL: func @counted_loop
// CHECK: sluice.loop(%{{.*}} : tensor<i64>) () carried(%{{.*}} : tensor<?xf32>) -> tensor<?xf32>, tensor<?x4xf32>
// SPEC-LABEL: func @counted_loop
// SPEC: sluice.add {{.*}} -> tensor<?xf32>
// SPEC: sluice.mul {{.*}} -> tensor<4xf32>
func.func @counted_loop(%n: tensor<i64>, %x: tensor<?xf32>, %w: tensor<4xf32>) -> (tensor<?xf32>, tensor<?x4xf32>) {
  %0:2 = sluice.loop(%n : tensor<i64>)() carried(%x : tensor<?xf32>) -> tensor<?xf32>, tensor<?x4xf32> {
  ^bb0(%i: tensor<i64>, %cond: tensor<i1>, %v: tensor<?xf32>):
    %1 = sluice.add %v, %v : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
    %2 = sluice.mul %w, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<?xf32>
    sluice.yield %cond, %1, %2 : tensor<i1>, tensor<?xf32>, tensor<?xf32>
  }
  return %0#0, %0#1 : tensor<?xf32>, tensor<?x4xf32>
}
