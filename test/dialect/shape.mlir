// RUN: sluice-opt %s --split-input-file | sluice-opt | FileCheck %s
// Round trip of the shape and data-movement family.

// CHECK-LABEL: func @slice
func.func @slice(%x: tensor<4x10xf32>, %s: tensor<2xi64>) -> tensor<4x?xf32> {
  %starts = sluice.constant dense<[1, -1]> : tensor<2xi64>
  %ends = sluice.constant dense<[1000, -9223372036854775807]> : tensor<2xi64>
  %axes = sluice.constant dense<[0, 1]> : tensor<2xi64>
  %steps = sluice.constant dense<[2, -3]> : tensor<2xi64>
  // Constant parameters give a static shape, clamped as ONNX does.
  // CHECK: sluice.slice %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x10xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x4xf32>
  %0 = sluice.slice %x, %starts, %ends, %axes, %steps : (tensor<4x10xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x4xf32>
  // Runtime starts leave the sliced dims dynamic.
  // CHECK: sluice.slice {{.*}} -> tensor<?x?xf32>
  %1 = sluice.slice %x, %s, %ends, %axes, %steps : (tensor<4x10xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x?xf32>
  // A declared type may be more static than inference.
  // CHECK: sluice.slice {{.*}} -> tensor<4x?xf32>
  %2 = sluice.slice %x, %s, %ends, %axes, %steps : (tensor<4x10xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<4x?xf32>
  return %2 : tensor<4x?xf32>
}

// -----

// CHECK-LABEL: func @concat_split
func.func @concat_split(%a: tensor<2x3xf32>, %b: tensor<2x?xf32>, %c: tensor<2x5xf32>, %s: tensor<2xi64>) -> tensor<2x?xf32> {
  // CHECK: sluice.concat %{{.*}}, %{{.*}} {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  %0 = sluice.concat %a, %c {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  // CHECK: sluice.concat {{.*}} -> tensor<2x?xf32>
  %1 = sluice.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x?xf32>) -> tensor<2x?xf32>
  // Uneven split without sizes: the last piece is smaller.
  // CHECK: sluice.split %{{.*}} {axis = 1 : i64, num_outputs = 3 : i64} : (tensor<2x8xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x2xf32>)
  %2:3 = sluice.split %0 {axis = 1 : i64, num_outputs = 3 : i64} : (tensor<2x8xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x2xf32>)
  %sizes = sluice.constant dense<[1, 7]> : tensor<2xi64>
  // CHECK: sluice.split {{.*}} -> (tensor<2x1xf32>, tensor<2x7xf32>)
  %3:2 = sluice.split %0, %sizes {axis = 1 : i64, num_outputs = 2 : i64} : (tensor<2x8xf32>, tensor<2xi64>) -> (tensor<2x1xf32>, tensor<2x7xf32>)
  // CHECK: sluice.split {{.*}} -> (tensor<2x?xf32>, tensor<2x?xf32>)
  %4:2 = sluice.split %0, %s {axis = 1 : i64, num_outputs = 2 : i64} : (tensor<2x8xf32>, tensor<2xi64>) -> (tensor<2x?xf32>, tensor<2x?xf32>)
  return %1 : tensor<2x?xf32>
}

// -----

// CHECK-LABEL: func @squeeze_unsqueeze
func.func @squeeze_unsqueeze(%x: tensor<1x3x1xf32>, %d: tensor<?x1xf32>, %axes: tensor<1xi64>) -> tensor<?xf32> {
  %a0 = sluice.constant dense<[0, -1]> : tensor<2xi64>
  // CHECK: sluice.squeeze %{{.*}}, %{{.*}} : (tensor<1x3x1xf32>, tensor<2xi64>) -> tensor<3xf32>
  %0 = sluice.squeeze %x, %a0 : (tensor<1x3x1xf32>, tensor<2xi64>) -> tensor<3xf32>
  // CHECK: sluice.squeeze %{{.*}} : (tensor<1x3x1xf32>) -> tensor<3xf32>
  %1 = sluice.squeeze %x : (tensor<1x3x1xf32>) -> tensor<3xf32>
  // Without axes, a dynamic dim makes the result rank unknown.
  // CHECK: sluice.squeeze %{{.*}} : (tensor<?x1xf32>) -> tensor<*xf32>
  %2 = sluice.squeeze %d : (tensor<?x1xf32>) -> tensor<*xf32>
  // Runtime axes: the rank is known from their count.
  // CHECK: sluice.squeeze {{.*}} -> tensor<?xf32>
  %3 = sluice.squeeze %d, %axes : (tensor<?x1xf32>, tensor<1xi64>) -> tensor<?xf32>
  // CHECK: sluice.unsqueeze %{{.*}}, %{{.*}} : (tensor<3xf32>, tensor<2xi64>) -> tensor<1x3x1xf32>
  %4 = sluice.unsqueeze %0, %a0 : (tensor<3xf32>, tensor<2xi64>) -> tensor<1x3x1xf32>
  // CHECK: sluice.unsqueeze {{.*}} -> tensor<?x?xf32>
  %5 = sluice.unsqueeze %0, %axes : (tensor<3xf32>, tensor<1xi64>) -> tensor<?x?xf32>
  return %3 : tensor<?xf32>
}

// -----

// CHECK-LABEL: func @expand_tile_pad
func.func @expand_tile_pad(%x: tensor<3x1xf32>, %s: tensor<3xi64>, %v: tensor<f32>) -> tensor<?x3x?xf32> {
  %shape = sluice.constant dense<[2, 1, 6]> : tensor<3xi64>
  // CHECK: sluice.expand %{{.*}}, %{{.*}} : (tensor<3x1xf32>, tensor<3xi64>) -> tensor<2x3x6xf32>
  %0 = sluice.expand %x, %shape : (tensor<3x1xf32>, tensor<3xi64>) -> tensor<2x3x6xf32>
  // A static dim other than 1 survives an unknown target.
  // CHECK: sluice.expand {{.*}} -> tensor<?x3x?xf32>
  %1 = sluice.expand %x, %s : (tensor<3x1xf32>, tensor<3xi64>) -> tensor<?x3x?xf32>
  %reps = sluice.constant dense<[2, 3]> : tensor<2xi64>
  // CHECK: sluice.tile %{{.*}}, %{{.*}} : (tensor<3x1xf32>, tensor<2xi64>) -> tensor<6x3xf32>
  %2 = sluice.tile %x, %reps : (tensor<3x1xf32>, tensor<2xi64>) -> tensor<6x3xf32>
  %pads = sluice.constant dense<[1, 0, 2, -1]> : tensor<4xi64>
  // CHECK: sluice.pad %{{.*}}, %{{.*}}, %{{.*}} {mode = #sluice<pad_mode reflect>} : (tensor<6x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<9x2xf32>
  %3 = sluice.pad %2, %pads, %v {mode = #sluice<pad_mode reflect>} : (tensor<6x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<9x2xf32>
  // CHECK: sluice.pad %{{.*}}, %{{.*}} : (tensor<6x3xf32>, tensor<4xi64>) -> tensor<9x2xf32>
  %4 = sluice.pad %2, %pads : (tensor<6x3xf32>, tensor<4xi64>) -> tensor<9x2xf32>
  return %1 : tensor<?x3x?xf32>
}

// -----

// CHECK-LABEL: func @creation
func.func @creation(%x: tensor<3x4xf32>, %n: tensor<i32>, %s: tensor<2xi64>) -> tensor<?xi32> {
  %shape = sluice.constant dense<[2, 3]> : tensor<2xi64>
  // CHECK: sluice.constant_of_shape %{{.*}} {value = dense<1> : tensor<1xi32>} : (tensor<2xi64>) -> tensor<2x3xi32>
  %0 = sluice.constant_of_shape %shape {value = dense<1> : tensor<1xi32>} : (tensor<2xi64>) -> tensor<2x3xi32>
  // CHECK: sluice.constant_of_shape {{.*}} -> tensor<?x?xf32>
  %1 = sluice.constant_of_shape %s {value = dense<0.0> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<?x?xf32>
  %start = sluice.constant dense<10> : tensor<i32>
  %limit = sluice.constant dense<4> : tensor<i32>
  %delta = sluice.constant dense<-3> : tensor<i32>
  // CHECK: sluice.range {{.*}} : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<2xi32>
  %2 = sluice.range %start, %limit, %delta : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<2xi32>
  // CHECK: sluice.range {{.*}} -> tensor<?xi32>
  %3 = sluice.range %start, %n, %delta : (tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<?xi32>
  %k = sluice.constant dense<1> : tensor<i64>
  // CHECK: sluice.trilu %{{.*}}, %{{.*}} {upper = false} : (tensor<3x4xf32>, tensor<i64>) -> tensor<3x4xf32>
  %4 = sluice.trilu %x, %k {upper = false} : (tensor<3x4xf32>, tensor<i64>) -> tensor<3x4xf32>
  // CHECK: sluice.trilu %{{.*}} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %5 = sluice.trilu %x : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return %3 : tensor<?xi32>
}

// -----

// CHECK-LABEL: func @reverse_sequence
func.func @reverse_sequence(%x: tensor<4x2x3xf32>, %y: tensor<2x4xf32>, %lens: tensor<2xi64>) -> tensor<4x2x3xf32> {
  // Default axes (batch 1, time 0) are elided.
  // CHECK: sluice.reverse_sequence %{{.*}}, %{{.*}} : (tensor<4x2x3xf32>, tensor<2xi64>) -> tensor<4x2x3xf32>
  %0 = sluice.reverse_sequence %x, %lens {batch_axis = 1 : i64, time_axis = 0 : i64} : (tensor<4x2x3xf32>, tensor<2xi64>) -> tensor<4x2x3xf32>
  // CHECK: sluice.reverse_sequence %{{.*}}, %{{.*}} {batch_axis = 0 : i64, time_axis = 1 : i64} : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %1 = sluice.reverse_sequence %y, %lens {batch_axis = 0 : i64, time_axis = 1 : i64} : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  return %0 : tensor<4x2x3xf32>
}
