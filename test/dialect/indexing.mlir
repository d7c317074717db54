// RUN: sluice-opt %s --split-input-file | sluice-opt | FileCheck %s
// Round trip of the indexing family: gathers, scatters, one-hot, non-zero,
// compress, resize, unique, non-max suppression, roi_align, grid_sample.

// CHECK-LABEL: func @gathers
func.func @gathers(%x: tensor<3x4xf32>, %i: tensor<2x4xi64>, %n: tensor<2x1xi32>, %d: tensor<?x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  // CHECK: sluice.gather %{{.*}}, %{{.*}} : (tensor<3x4xf32>, tensor<2x4xi64>) -> tensor<2x4x4xf32>
  %0 = sluice.gather %x, %i : (tensor<3x4xf32>, tensor<2x4xi64>) -> tensor<2x4x4xf32>
  // CHECK: sluice.gather_elements %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<3x4xf32>, tensor<2x4xi64>) -> tensor<2x4xf32>
  %1 = sluice.gather_elements %x, %i {axis = 1 : i64} : (tensor<3x4xf32>, tensor<2x4xi64>) -> tensor<2x4xf32>
  // CHECK: sluice.gather_nd %{{.*}}, %{{.*}} : (tensor<3x4xf32>, tensor<2x1xi32>) -> tensor<2x4xf32>
  %2 = sluice.gather_nd %x, %n : (tensor<3x4xf32>, tensor<2x1xi32>) -> tensor<2x4xf32>
  // A dynamic input dim stays dynamic; a declared static dim is compatible.
  // CHECK: sluice.gather_nd %{{.*}}, %{{.*}} {batch_dims = 1 : i64} : (tensor<?x4xf32>, tensor<2x1xi32>) -> tensor<2xf32>
  %3 = sluice.gather_nd %d, %n {batch_dims = 1 : i64} : (tensor<?x4xf32>, tensor<2x1xi32>) -> tensor<2xf32>
  return %1, %1, %2, %2 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func @scatters
func.func @scatters(%x: tensor<4x4x4xf32>, %i: tensor<1x2xi64>, %u: tensor<1x2xf32>, %y: tensor<1x5xf32>, %n: tensor<2x1xi64>, %v: tensor<2x4x4xf32>) -> (tensor<1x5xf32>, tensor<1x5xf32>, tensor<4x4x4xf32>, tensor<4x4x4xf32>) {
  // CHECK: sluice.scatter_elements %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<1x5xf32>, tensor<1x2xi64>, tensor<1x2xf32>) -> tensor<1x5xf32>
  %0 = sluice.scatter_elements %y, %i, %u {axis = 1 : i64} : (tensor<1x5xf32>, tensor<1x2xi64>, tensor<1x2xf32>) -> tensor<1x5xf32>
  // CHECK: sluice.scatter_elements {{.*}}reduction = #sluice<reduce_kind sum>
  %1 = sluice.scatter_elements %y, %i, %u {axis = 1 : i64, reduction = #sluice<reduce_kind sum>} : (tensor<1x5xf32>, tensor<1x2xi64>, tensor<1x2xf32>) -> tensor<1x5xf32>
  // CHECK: sluice.scatter_nd %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x4x4xf32>, tensor<2x1xi64>, tensor<2x4x4xf32>) -> tensor<4x4x4xf32>
  %2 = sluice.scatter_nd %x, %n, %v : (tensor<4x4x4xf32>, tensor<2x1xi64>, tensor<2x4x4xf32>) -> tensor<4x4x4xf32>
  // CHECK: sluice.scatter_nd {{.*}}reduction = #sluice<reduce_kind prod>
  %3 = sluice.scatter_nd %x, %n, %v {reduction = #sluice<reduce_kind prod>} : (tensor<4x4x4xf32>, tensor<2x1xi64>, tensor<2x4x4xf32>) -> tensor<4x4x4xf32>
  return %0, %1, %2, %3 : tensor<1x5xf32>, tensor<1x5xf32>, tensor<4x4x4xf32>, tensor<4x4x4xf32>
}

// -----

// CHECK-LABEL: func @one_hot
func.func @one_hot(%i: tensor<2x3xi64>, %d: tensor<i64>, %v: tensor<2xf32>) -> (tensor<2x10x3xf32>, tensor<2x3x?xf32>) {
  // A constant depth gives a static dim.
  // CHECK: %[[DEPTH:.+]] = sluice.constant dense<10> : tensor<1xi64>
  %c = sluice.constant dense<10> : tensor<1xi64>
  // CHECK: sluice.one_hot %{{.*}}, %[[DEPTH]], %{{.*}} {axis = 1 : i64} : (tensor<2x3xi64>, tensor<1xi64>, tensor<2xf32>) -> tensor<2x10x3xf32>
  %0 = sluice.one_hot %i, %c, %v {axis = 1 : i64} : (tensor<2x3xi64>, tensor<1xi64>, tensor<2xf32>) -> tensor<2x10x3xf32>
  // A runtime depth gives a dynamic one.
  // CHECK: sluice.one_hot %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x3xi64>, tensor<i64>, tensor<2xf32>) -> tensor<2x3x?xf32>
  %1 = sluice.one_hot %i, %d, %v : (tensor<2x3xi64>, tensor<i64>, tensor<2xf32>) -> tensor<2x3x?xf32>
  return %0, %1 : tensor<2x10x3xf32>, tensor<2x3x?xf32>
}

// -----

// CHECK-LABEL: func @data_dependent
func.func @data_dependent(%x: tensor<3x2xf32>, %c: tensor<3xi1>) -> (tensor<2x?xi64>, tensor<?x2xf32>, tensor<?xf32>, tensor<2x2xf32>) {
  // CHECK: sluice.non_zero %{{.*}} : (tensor<3x2xf32>) -> tensor<2x?xi64>
  %0 = sluice.non_zero %x : (tensor<3x2xf32>) -> tensor<2x?xi64>
  // CHECK: sluice.compress %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<3x2xf32>, tensor<3xi1>) -> tensor<?x2xf32>
  %1 = sluice.compress %x, %c {axis = 0 : i64} : (tensor<3x2xf32>, tensor<3xi1>) -> tensor<?x2xf32>
  // CHECK: sluice.compress %{{.*}}, %{{.*}} : (tensor<3x2xf32>, tensor<3xi1>) -> tensor<?xf32>
  %2 = sluice.compress %x, %c : (tensor<3x2xf32>, tensor<3xi1>) -> tensor<?xf32>
  // A constant condition gives a static dim.
  %k = sluice.constant dense<[false, true, true]> : tensor<3xi1>
  // CHECK: sluice.compress %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<3x2xf32>, tensor<3xi1>) -> tensor<2x2xf32>
  %3 = sluice.compress %x, %k {axis = 0 : i64} : (tensor<3x2xf32>, tensor<3xi1>) -> tensor<2x2xf32>
  return %0, %1, %2, %3 : tensor<2x?xi64>, tensor<?x2xf32>, tensor<?xf32>, tensor<2x2xf32>
}

// -----

// CHECK-LABEL: func @resize
func.func @resize(%x: tensor<1x1x4x4xf32>, %s: tensor<4xf32>, %z: tensor<4xi64>, %roi: tensor<8xf32>) -> (tensor<?x?x?x?xf32>, tensor<1x1x8x6xf32>, tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>) {
  // Runtime scales: the resized dims are dynamic.
  // CHECK: sluice.resize %{{.*}}, %{{.*}} {mode = "linear", operandSegmentSizes = array<i32: 1, 0, 1, 0>} : (tensor<1x1x4x4xf32>, tensor<4xf32>) -> tensor<?x?x?x?xf32>
  %0 = sluice.resize %x, %s {mode = "linear", operandSegmentSizes = array<i32: 1, 0, 1, 0>} : (tensor<1x1x4x4xf32>, tensor<4xf32>) -> tensor<?x?x?x?xf32>
  // Constant scales: floor(dim * scale).
  %cs = sluice.constant dense<[1.0, 1.0, 2.0, 1.7]> : tensor<4xf32>
  // CHECK: sluice.resize {{.*}} -> tensor<1x1x8x6xf32>
  %1 = sluice.resize %x, %cs {coordinate_transformation_mode = "asymmetric", nearest_mode = "floor", operandSegmentSizes = array<i32: 1, 0, 1, 0>} : (tensor<1x1x4x4xf32>, tensor<4xf32>) -> tensor<1x1x8x6xf32>
  // CHECK: sluice.resize {{.*}}cubic_coeff_a = -5.000000e-01 : f32, exclude_outside = true, mode = "cubic"{{.*}} -> tensor<?x?x?x?xf32>
  %2 = sluice.resize %x, %z {mode = "cubic", cubic_coeff_a = -0.5 : f32, exclude_outside = true, operandSegmentSizes = array<i32: 1, 0, 0, 1>} : (tensor<1x1x4x4xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  // CHECK: sluice.resize {{.*}}coordinate_transformation_mode = "tf_crop_and_resize", extrapolation_value = 1.000000e+01 : f32{{.*}}operandSegmentSizes = array<i32: 1, 1, 0, 1>
  %3 = sluice.resize %x, %roi, %z {coordinate_transformation_mode = "tf_crop_and_resize", extrapolation_value = 10.0 : f32, mode = "linear", operandSegmentSizes = array<i32: 1, 1, 0, 1>} : (tensor<1x1x4x4xf32>, tensor<8xf32>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  return %0, %1, %2, %3 : tensor<?x?x?x?xf32>, tensor<1x1x8x6xf32>, tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>
}

// -----

// CHECK-LABEL: func @unique
func.func @unique(%x: tensor<3x3xf32>, %v: tensor<6xf32>) -> (tensor<?x3xf32>, tensor<?xi64>, tensor<3xi64>, tensor<?xi64>) {
  // CHECK: sluice.unique %{{.*}} {axis = 0 : i64} : (tensor<3x3xf32>) -> (tensor<?x3xf32>, tensor<?xi64>, tensor<3xi64>, tensor<?xi64>)
  %0:4 = sluice.unique %x {axis = 0 : i64} : (tensor<3x3xf32>) -> (tensor<?x3xf32>, tensor<?xi64>, tensor<3xi64>, tensor<?xi64>)
  // CHECK: sluice.unique %{{.*}} {sorted = false} : (tensor<6xf32>) -> (tensor<?xf32>, tensor<?xi64>, tensor<6xi64>, tensor<?xi64>)
  %1:4 = sluice.unique %v {sorted = false} : (tensor<6xf32>) -> (tensor<?xf32>, tensor<?xi64>, tensor<6xi64>, tensor<?xi64>)
  return %0#0, %0#1, %0#2, %0#3 : tensor<?x3xf32>, tensor<?xi64>, tensor<3xi64>, tensor<?xi64>
}

// -----

// CHECK-LABEL: func @detection
func.func @detection(%boxes: tensor<1x6x4xf32>, %scores: tensor<1x2x6xf32>, %m: tensor<1xi64>, %iou: tensor<1xf32>, %x: tensor<1x3x10x10xf32>, %rois: tensor<5x4xf32>, %b: tensor<5xi64>, %g: tensor<1x6x7x2xf32>) -> (tensor<?x3xi64>, tensor<?x3xi64>, tensor<5x3x2x2xf32>, tensor<1x3x6x7xf32>) {
  // CHECK: sluice.non_max_suppression %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {center_point_box = true, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (tensor<1x6x4xf32>, tensor<1x2x6xf32>, tensor<1xi64>, tensor<1xf32>) -> tensor<?x3xi64>
  %0 = sluice.non_max_suppression %boxes, %scores, %m, %iou {center_point_box = true, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (tensor<1x6x4xf32>, tensor<1x2x6xf32>, tensor<1xi64>, tensor<1xf32>) -> tensor<?x3xi64>
  // CHECK: sluice.non_max_suppression %{{.*}}, %{{.*}} {operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}
  %1 = sluice.non_max_suppression %boxes, %scores {operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>} : (tensor<1x6x4xf32>, tensor<1x2x6xf32>) -> tensor<?x3xi64>
  // CHECK: sluice.roi_align %{{.*}}, %{{.*}}, %{{.*}} {mode = "max", output_height = 2 : i64, output_width = 2 : i64, sampling_ratio = 2 : i64} : (tensor<1x3x10x10xf32>, tensor<5x4xf32>, tensor<5xi64>) -> tensor<5x3x2x2xf32>
  %2 = sluice.roi_align %x, %rois, %b {mode = "max", output_height = 2 : i64, output_width = 2 : i64, sampling_ratio = 2 : i64} : (tensor<1x3x10x10xf32>, tensor<5x4xf32>, tensor<5xi64>) -> tensor<5x3x2x2xf32>
  // CHECK: sluice.grid_sample %{{.*}}, %{{.*}} {align_corners = true, mode = "bicubic", padding_mode = "border"} : (tensor<1x3x10x10xf32>, tensor<1x6x7x2xf32>) -> tensor<1x3x6x7xf32>
  %3 = sluice.grid_sample %x, %g {align_corners = true, mode = "bicubic", padding_mode = "border"} : (tensor<1x3x10x10xf32>, tensor<1x6x7x2xf32>) -> tensor<1x3x6x7xf32>
  return %0, %1, %2, %3 : tensor<?x3xi64>, tensor<?x3xi64>, tensor<5x3x2x2xf32>, tensor<1x3x6x7xf32>
}

// -----

// Unranked and dynamic operands infer ranked-dynamic or unranked results.
// CHECK-LABEL: func @unranked
func.func @unranked(%x: tensor<*xf32>, %i: tensor<*xi64>, %s: tensor<4xf32>, %z: tensor<?xi64>, %c: tensor<?xi1>, %d: tensor<i64>, %v: tensor<2xf32>, %r: tensor<*xf32>, %b: tensor<?xi64>) {
  // CHECK: sluice.gather_elements {{.*}} -> tensor<*xf32>
  %0 = sluice.gather_elements %x, %i : (tensor<*xf32>, tensor<*xi64>) -> tensor<*xf32>
  // CHECK: sluice.gather_nd {{.*}} -> tensor<*xf32>
  %1 = sluice.gather_nd %x, %i : (tensor<*xf32>, tensor<*xi64>) -> tensor<*xf32>
  %2 = sluice.scatter_elements %x, %i, %x : (tensor<*xf32>, tensor<*xi64>, tensor<*xf32>) -> tensor<*xf32>
  %3 = sluice.scatter_nd %x, %i, %x : (tensor<*xf32>, tensor<*xi64>, tensor<*xf32>) -> tensor<*xf32>
  %4 = sluice.one_hot %i, %d, %v : (tensor<*xi64>, tensor<i64>, tensor<2xf32>) -> tensor<*xf32>
  // CHECK: sluice.non_zero {{.*}} -> tensor<?x?xi64>
  %5 = sluice.non_zero %x : (tensor<*xf32>) -> tensor<?x?xi64>
  %6 = sluice.compress %x, %c {axis = 1 : i64} : (tensor<*xf32>, tensor<?xi1>) -> tensor<*xf32>
  %7 = sluice.compress %x, %c : (tensor<*xf32>, tensor<?xi1>) -> tensor<?xf32>
  // CHECK: sluice.resize {{.*}} -> tensor<?x?x?x?xf32>
  %8 = sluice.resize %x, %s {operandSegmentSizes = array<i32: 1, 0, 1, 0>} : (tensor<*xf32>, tensor<4xf32>) -> tensor<?x?x?x?xf32>
  // CHECK: sluice.resize {{.*}} -> tensor<*xf32>
  %9 = sluice.resize %x, %z {operandSegmentSizes = array<i32: 1, 0, 0, 1>} : (tensor<*xf32>, tensor<?xi64>) -> tensor<*xf32>
  %10:4 = sluice.unique %x {axis = 0 : i64} : (tensor<*xf32>) -> (tensor<*xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>)
  %11:4 = sluice.unique %x : (tensor<*xf32>) -> (tensor<?xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?xi64>)
  %12 = sluice.non_max_suppression %x, %x {operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>} : (tensor<*xf32>, tensor<*xf32>) -> tensor<?x3xi64>
  // CHECK: sluice.roi_align {{.*}} -> tensor<?x?x1x1xf32>
  %13 = sluice.roi_align %x, %r, %b : (tensor<*xf32>, tensor<*xf32>, tensor<?xi64>) -> tensor<?x?x1x1xf32>
  %14 = sluice.grid_sample %x, %r : (tensor<*xf32>, tensor<*xf32>) -> tensor<?x?x?x?xf32>
  return
}
