// RUN: sluice-opt %s --split-input-file --verify-diagnostics
// Verifier and type-inference errors of the sequence family, scan, and
// control flow over sequences.

func.func @construct_mixed(%a: tensor<2xf32>, %b: tensor<2xi64>) {
  // expected-error @+2 {{elements have different element types}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = sluice.sequence_construct %a, %b : (tensor<2xf32>, tensor<2xi64>) -> !sluice.sequence<tensor<2xf32>>
  return
}

// -----

func.func @insert_mismatch(%s: !sluice.sequence<tensor<2xf32>>, %b: tensor<2xi32>) {
  // expected-error @+2 {{cannot insert a 'tensor<2xi32>' into a '!sluice.sequence<tensor<2xf32>>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = sluice.sequence_insert %s, %b : (!sluice.sequence<tensor<2xf32>>, tensor<2xi32>) -> !sluice.sequence<tensor<2xf32>>
  return
}

// -----

func.func @position_not_scalar(%s: !sluice.sequence<tensor<2xf32>>, %p: tensor<2xi64>) {
  // expected-error @+2 {{position must be a scalar}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = sluice.sequence_at %s, %p : (!sluice.sequence<tensor<2xf32>>, tensor<2xi64>) -> tensor<2xf32>
  return
}

// -----

func.func @concat_axis(%s: !sluice.sequence<tensor<2x3xf32>>) {
  // expected-error @+2 {{axis 3 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = sluice.concat_from_sequence %s {axis = 3 : i64} : (!sluice.sequence<tensor<2x3xf32>>) -> tensor<?x3xf32>
  return
}

// -----

func.func @split_rank(%x: tensor<4xf32>, %split: tensor<2x2xi64>) {
  // expected-error @+2 {{split must be a scalar or 1-D}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = sluice.split_to_sequence %x, %split {axis = 0 : i64} : (tensor<4xf32>, tensor<2x2xi64>) -> !sluice.sequence<tensor<?xf32>>
  return
}

// -----

func.func @empty_optional_untyped() {
  // expected-error @+2 {{an empty optional needs element_type}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = sluice.optional : () -> !sluice.optional<tensor<f32>>
  return
}

// -----

func.func @optional_of_optional(%o: !sluice.optional<tensor<f32>>) {
  // expected-error @+2 {{optional holds a tensor or a sequence}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = sluice.optional {element_type = !sluice.optional<tensor<f32>>} : () -> !sluice.optional<tensor<f32>>
  return
}

// -----

func.func @optional_type_mismatch(%x: tensor<2xf32>) {
  // expected-error @+1 {{does not match element_type}}
  %0 = sluice.optional %x {element_type = tensor<3xf32>} : (tensor<2xf32>) -> !sluice.optional<tensor<2xf32>>
  return
}

// -----

func.func @map_first_input(%t: tensor<f32>) {
  // expected-error @+1 {{first input must be a sequence}}
  %0 = sluice.sequence_map(%t : tensor<f32>) -> !sluice.sequence<tensor<f32>> {
  ^bb0(%e: tensor<f32>):
    sluice.yield %e : tensor<f32>
  }
  return
}

// -----

func.func @map_arity(%s: !sluice.sequence<tensor<2xf32>>) {
  // expected-error @+1 {{body takes 2 arguments, expected 1 (one per input)}}
  %0 = sluice.sequence_map(%s : !sluice.sequence<tensor<2xf32>>) -> !sluice.sequence<tensor<2xf32>> {
  ^bb0(%e: tensor<2xf32>, %f: tensor<2xf32>):
    sluice.yield %e : tensor<2xf32>
  }
  return
}

// -----

func.func @map_result_type(%s: !sluice.sequence<tensor<2xf32>>) {
  // expected-error @+1 {{body value 0 has type 'tensor<2xf32>', incompatible with result element type 'tensor<3xf32>'}}
  %0 = sluice.sequence_map(%s : !sluice.sequence<tensor<2xf32>>) -> !sluice.sequence<tensor<3xf32>> {
  ^bb0(%e: tensor<2xf32>):
    sluice.yield %e : tensor<2xf32>
  }
  return
}

// -----

func.func @scan_axes(%init: tensor<2xf32>, %x: tensor<3x2xf32>) {
  // expected-error @+1 {{needs one scan input axis and direction per scan input}}
  %0:2 = sluice.scan(%init, %x : tensor<2xf32>, tensor<3x2xf32>) -> tensor<2xf32>, tensor<?x2xf32> {
  ^bb0(%acc: tensor<2xf32>, %next: tensor<2xf32>):
    sluice.yield %acc, %next : tensor<2xf32>, tensor<2xf32>
  } {num_scan_inputs = 1 : i64, scan_input_axes = array<i64: 0, 1>, scan_input_directions = array<i64: 0>, scan_output_axes = array<i64: 0>, scan_output_directions = array<i64: 0>}
  return
}

// -----

func.func @scan_direction(%init: tensor<2xf32>, %x: tensor<3x2xf32>) {
  // expected-error @+1 {{directions must be 0 (forward) or 1 (reverse)}}
  %0:2 = sluice.scan(%init, %x : tensor<2xf32>, tensor<3x2xf32>) -> tensor<2xf32>, tensor<?x2xf32> {
  ^bb0(%acc: tensor<2xf32>, %next: tensor<2xf32>):
    sluice.yield %acc, %next : tensor<2xf32>, tensor<2xf32>
  } {num_scan_inputs = 1 : i64, scan_input_axes = array<i64: 0>, scan_input_directions = array<i64: 2>, scan_output_axes = array<i64: 0>, scan_output_directions = array<i64: 0>}
  return
}

// -----

func.func @scan_body_arity(%init: tensor<2xf32>, %x: tensor<3x2xf32>) {
  // expected-error @+1 {{body takes 1 arguments, expected 2 (states, scan input slices)}}
  %0:2 = sluice.scan(%init, %x : tensor<2xf32>, tensor<3x2xf32>) -> tensor<2xf32>, tensor<?x2xf32> {
  ^bb0(%acc: tensor<2xf32>):
    sluice.yield %acc, %acc : tensor<2xf32>, tensor<2xf32>
  } {num_scan_inputs = 1 : i64, scan_input_axes = array<i64: 0>, scan_input_directions = array<i64: 0>, scan_output_axes = array<i64: 0>, scan_output_directions = array<i64: 0>}
  return
}

// -----

func.func @if_sequence_mismatch(%c: tensor<i1>, %x: tensor<2xf32>) {
  // expected-error @+1 {{then branch value 0 has type}}
  %0 = sluice.if %c : tensor<i1> -> !sluice.sequence<tensor<3xf32>> {
    %s = sluice.sequence_construct %x : (tensor<2xf32>) -> !sluice.sequence<tensor<2xf32>>
    sluice.yield %s : !sluice.sequence<tensor<2xf32>>
  } else {
    %e = sluice.sequence_empty {dtype = f32} : () -> !sluice.sequence<tensor<*xf32>>
    sluice.yield %e : !sluice.sequence<tensor<*xf32>>
  }
  return
}

// -----

// expected-error @+1 {{optional holds a tensor or a sequence, not 'f32'}}
func.func @bad_optional_type(%o: !sluice.optional<f32>) {
  return
}
