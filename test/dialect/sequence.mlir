// RUN: sluice-opt %s --split-input-file | sluice-opt | FileCheck %s

// CHECK-LABEL: func @build_and_read
// CHECK: %[[S:.+]] = sluice.sequence_construct %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<4x3xf32>) -> !sluice.sequence<tensor<?x3xf32>>
// CHECK: %[[E:.+]] = sluice.sequence_empty {dtype = f32} : () -> !sluice.sequence<tensor<*xf32>>
// CHECK: sluice.sequence_insert %[[S]], %{{.*}}, %{{.*}} : (!sluice.sequence<tensor<?x3xf32>>, tensor<2x3xf32>, tensor<i64>) -> !sluice.sequence<tensor<?x3xf32>>
// CHECK: sluice.sequence_insert %[[E]], %{{.*}} : (!sluice.sequence<tensor<*xf32>>, tensor<2x3xf32>) -> !sluice.sequence<tensor<*xf32>>
// CHECK: sluice.sequence_at %[[S]], %{{.*}} : (!sluice.sequence<tensor<?x3xf32>>, tensor<i64>) -> tensor<?x3xf32>
// CHECK: sluice.sequence_erase %[[S]] : (!sluice.sequence<tensor<?x3xf32>>) -> !sluice.sequence<tensor<?x3xf32>>
// CHECK: sluice.sequence_erase %[[S]], %{{.*}} : (!sluice.sequence<tensor<?x3xf32>>, tensor<i32>) -> !sluice.sequence<tensor<?x3xf32>>
// CHECK: sluice.sequence_length %[[S]] : (!sluice.sequence<tensor<?x3xf32>>) -> tensor<i64>
func.func @build_and_read(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>, %p: tensor<i64>, %q: tensor<i32>)
    -> (tensor<?x3xf32>, tensor<i64>) {
  %s = sluice.sequence_construct %a, %b : (tensor<2x3xf32>, tensor<4x3xf32>) -> !sluice.sequence<tensor<?x3xf32>>
  %e = sluice.sequence_empty {dtype = f32} : () -> !sluice.sequence<tensor<*xf32>>
  %s2 = sluice.sequence_insert %s, %a, %p : (!sluice.sequence<tensor<?x3xf32>>, tensor<2x3xf32>, tensor<i64>) -> !sluice.sequence<tensor<?x3xf32>>
  %e2 = sluice.sequence_insert %e, %a : (!sluice.sequence<tensor<*xf32>>, tensor<2x3xf32>) -> !sluice.sequence<tensor<*xf32>>
  %x = sluice.sequence_at %s, %p : (!sluice.sequence<tensor<?x3xf32>>, tensor<i64>) -> tensor<?x3xf32>
  %s3 = sluice.sequence_erase %s : (!sluice.sequence<tensor<?x3xf32>>) -> !sluice.sequence<tensor<?x3xf32>>
  %s4 = sluice.sequence_erase %s, %q : (!sluice.sequence<tensor<?x3xf32>>, tensor<i32>) -> !sluice.sequence<tensor<?x3xf32>>
  %n = sluice.sequence_length %s : (!sluice.sequence<tensor<?x3xf32>>) -> tensor<i64>
  return %x, %n : tensor<?x3xf32>, tensor<i64>
}

// -----

// CHECK-LABEL: func @concat_and_split
// CHECK: sluice.concat_from_sequence %{{.*}} {axis = 0 : i64} : (!sluice.sequence<tensor<?x3xf32>>) -> tensor<?x3xf32>
// CHECK: sluice.concat_from_sequence %{{.*}} {axis = -1 : i64, new_axis = true} : (!sluice.sequence<tensor<?x3xf32>>) -> tensor<?x3x?xf32>
// CHECK: sluice.split_to_sequence %{{.*}} {axis = 1 : i64} : (tensor<4x3xf32>) -> !sluice.sequence<tensor<4x1xf32>>
// CHECK: sluice.split_to_sequence %{{.*}} {axis = 1 : i64, keepdims = false} : (tensor<4x3xf32>) -> !sluice.sequence<tensor<4xf32>>
// CHECK: sluice.split_to_sequence %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<4x3xf32>, tensor<2xi64>) -> !sluice.sequence<tensor<?x3xf32>>
// CHECK: sluice.split_to_sequence %{{.*}} {axis = 0 : i64} : (tensor<*xf32>) -> !sluice.sequence<tensor<*xf32>>
func.func @concat_and_split(%s: !sluice.sequence<tensor<?x3xf32>>, %x: tensor<4x3xf32>, %sizes: tensor<2xi64>, %u: tensor<*xf32>) {
  %0 = sluice.concat_from_sequence %s {axis = 0 : i64} : (!sluice.sequence<tensor<?x3xf32>>) -> tensor<?x3xf32>
  %1 = sluice.concat_from_sequence %s {axis = -1 : i64, new_axis = true} : (!sluice.sequence<tensor<?x3xf32>>) -> tensor<?x3x?xf32>
  %2 = sluice.split_to_sequence %x {axis = 1 : i64} : (tensor<4x3xf32>) -> !sluice.sequence<tensor<4x1xf32>>
  %3 = sluice.split_to_sequence %x {axis = 1 : i64, keepdims = false} : (tensor<4x3xf32>) -> !sluice.sequence<tensor<4xf32>>
  %4 = sluice.split_to_sequence %x, %sizes {axis = 0 : i64} : (tensor<4x3xf32>, tensor<2xi64>) -> !sluice.sequence<tensor<?x3xf32>>
  %5 = sluice.split_to_sequence %u {axis = 0 : i64} : (tensor<*xf32>) -> !sluice.sequence<tensor<*xf32>>
  return
}

// -----

// CHECK-LABEL: func @optionals
// CHECK: %[[SOME:.+]] = sluice.optional %{{.*}} : (tensor<4xf32>) -> !sluice.optional<tensor<4xf32>>
// CHECK: %[[NONE:.+]] = sluice.optional {element_type = !sluice.sequence<tensor<5xf32>>} : () -> !sluice.optional<!sluice.sequence<tensor<5xf32>>>
// CHECK: sluice.optional_has_element %[[SOME]] : (!sluice.optional<tensor<4xf32>>) -> tensor<i1>
// CHECK: sluice.optional_has_element %{{.*}} : (tensor<4xf32>) -> tensor<i1>
// CHECK: sluice.optional_get_element %[[NONE]] : (!sluice.optional<!sluice.sequence<tensor<5xf32>>>) -> !sluice.sequence<tensor<5xf32>>
// CHECK: sluice.optional_get_element %{{.*}} : (tensor<4xf32>) -> tensor<4xf32>
func.func @optionals(%x: tensor<4xf32>) -> !sluice.sequence<tensor<5xf32>> {
  %some = sluice.optional %x : (tensor<4xf32>) -> !sluice.optional<tensor<4xf32>>
  %none = sluice.optional {element_type = !sluice.sequence<tensor<5xf32>>} : () -> !sluice.optional<!sluice.sequence<tensor<5xf32>>>
  %h = sluice.optional_has_element %some : (!sluice.optional<tensor<4xf32>>) -> tensor<i1>
  %h2 = sluice.optional_has_element %x : (tensor<4xf32>) -> tensor<i1>
  %s = sluice.optional_get_element %none : (!sluice.optional<!sluice.sequence<tensor<5xf32>>>) -> !sluice.sequence<tensor<5xf32>>
  %t = sluice.optional_get_element %x : (tensor<4xf32>) -> tensor<4xf32>
  return %s : !sluice.sequence<tensor<5xf32>>
}

// -----

// CHECK-LABEL: func @map
// CHECK: sluice.sequence_map(%{{.*}}, %{{.*}} : !sluice.sequence<tensor<?xf32>>, tensor<f32>) -> !sluice.sequence<tensor<?xf32>>, !sluice.sequence<tensor<1xi64>> {
// CHECK: ^bb0(%[[E:.+]]: tensor<?xf32>, %[[T:.+]]: tensor<f32>):
// CHECK:   sluice.yield %{{.*}}, %{{.*}} : tensor<?xf32>, tensor<1xi64>
func.func @map(%s: !sluice.sequence<tensor<?xf32>>, %t: tensor<f32>) -> !sluice.sequence<tensor<?xf32>> {
  %0:2 = sluice.sequence_map(%s, %t : !sluice.sequence<tensor<?xf32>>, tensor<f32>) -> !sluice.sequence<tensor<?xf32>>, !sluice.sequence<tensor<1xi64>> {
  ^bb0(%e: tensor<?xf32>, %c: tensor<f32>):
    %1 = sluice.add %e, %c : (tensor<?xf32>, tensor<f32>) -> tensor<?xf32>
    %2 = sluice.shape %e : (tensor<?xf32>) -> tensor<1xi64>
    sluice.yield %1, %2 : tensor<?xf32>, tensor<1xi64>
  }
  return %0#0 : !sluice.sequence<tensor<?xf32>>
}

// -----

// Control flow carries sequences and optionals.
// CHECK-LABEL: func @control
// CHECK: sluice.if %{{.*}} : tensor<i1> -> !sluice.optional<!sluice.sequence<tensor<5xf32>>> {
// CHECK: sluice.loop(%{{.*}} : tensor<i64>) () carried(%{{.*}} : !sluice.sequence<tensor<*xf32>>) -> !sluice.sequence<tensor<*xf32>> {
func.func @control(%c: tensor<i1>, %n: tensor<i64>, %x: tensor<5xf32>, %s: !sluice.sequence<tensor<*xf32>>)
    -> (!sluice.optional<!sluice.sequence<tensor<5xf32>>>, !sluice.sequence<tensor<*xf32>>) {
  %0 = sluice.if %c : tensor<i1> -> !sluice.optional<!sluice.sequence<tensor<5xf32>>> {
    %none = sluice.optional {element_type = !sluice.sequence<tensor<5xf32>>} : () -> !sluice.optional<!sluice.sequence<tensor<5xf32>>>
    sluice.yield %none : !sluice.optional<!sluice.sequence<tensor<5xf32>>>
  } else {
    %seq = sluice.sequence_construct %x : (tensor<5xf32>) -> !sluice.sequence<tensor<5xf32>>
    %some = sluice.optional %seq : (!sluice.sequence<tensor<5xf32>>) -> !sluice.optional<!sluice.sequence<tensor<5xf32>>>
    sluice.yield %some : !sluice.optional<!sluice.sequence<tensor<5xf32>>>
  }
  %1 = sluice.loop(%n : tensor<i64>)() carried(%s : !sluice.sequence<tensor<*xf32>>) -> !sluice.sequence<tensor<*xf32>> {
  ^bb0(%i: tensor<i64>, %cond: tensor<i1>, %acc: !sluice.sequence<tensor<*xf32>>):
    %2 = sluice.sequence_insert %acc, %x : (!sluice.sequence<tensor<*xf32>>, tensor<5xf32>) -> !sluice.sequence<tensor<*xf32>>
    sluice.yield %cond, %2 : tensor<i1>, !sluice.sequence<tensor<*xf32>>
  }
  return %0, %1 : !sluice.optional<!sluice.sequence<tensor<5xf32>>>, !sluice.sequence<tensor<*xf32>>
}

// -----

// CHECK-LABEL: func @scan
// CHECK: sluice.scan(%{{.*}}, %{{.*}} : tensor<2xf32>, tensor<3x2xf32>) -> tensor<2xf32>, tensor<2x?xf32> {
// CHECK: } {batched, num_scan_inputs = 1 : i64, scan_input_axes = array<i64: 0>, scan_input_directions = array<i64: 1>, scan_output_axes = array<i64: 1>, scan_output_directions = array<i64: 0>}
func.func @scan(%init: tensor<2xf32>, %x: tensor<3x2xf32>) -> tensor<2x?xf32> {
  %0:2 = sluice.scan(%init, %x : tensor<2xf32>, tensor<3x2xf32>) -> tensor<2xf32>, tensor<2x?xf32> {
  ^bb0(%acc: tensor<2xf32>, %next: tensor<2xf32>):
    %1 = sluice.add %acc, %next : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    sluice.yield %1, %1 : tensor<2xf32>, tensor<2xf32>
  } {batched, num_scan_inputs = 1 : i64, scan_input_axes = array<i64: 0>, scan_input_directions = array<i64: 1>, scan_output_axes = array<i64: 1>, scan_output_directions = array<i64: 0>}
  return %0#1 : tensor<2x?xf32>
}
