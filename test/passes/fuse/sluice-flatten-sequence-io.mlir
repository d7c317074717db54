// RUN: sluice-opt %s --split-input-file --sluice-flatten-sequence-io | FileCheck %s

// A returned construct of ranked tensors: its elements become outputs y.0,
// y.1 in its place, and output_sequences records the grouping; the
// construct, read by nothing else, goes.
// CHECK-LABEL: func @construct_output
// CHECK-SAME: (%[[A:.+]]: tensor<2x3xf32>, %[[B:.+]]: tensor<4x3xf32>) -> (tensor<3xf32>, tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x3xf32>)
// CHECK-SAME: sluice.output_names = ["first", "y.0", "y.1", "last"]
// CHECK-SAME: sluice.output_sequences = [{elements = ["y.0", "y.1"], name = "y"}]
// CHECK-NOT: sequence_construct
// CHECK: %[[N:.+]] = sluice.neg %[[A]]
// CHECK: return %{{.+}}, %[[A]], %[[B]], %[[N]]
func.func @construct_output(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) -> (tensor<3xf32>, !sluice.sequence<tensor<?x3xf32>>, tensor<2x3xf32>) attributes {sluice.input_names = ["a", "b"], sluice.output_names = ["first", "y", "last"]} {
  %axes = sluice.constant dense<0> : tensor<1xi64>
  %r = sluice.reduce %a, %axes {kind = #sluice<reduce_kind sum>, keepdims = false} : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<3xf32>
  %s = sluice.sequence_construct %a, %b : (tensor<2x3xf32>, tensor<4x3xf32>) -> !sluice.sequence<tensor<?x3xf32>>
  %n = sluice.neg %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %r, %s, %n : tensor<3xf32>, !sluice.sequence<tensor<?x3xf32>>, tensor<2x3xf32>
}

// -----

// An empty sequence output has no elements: it leaves the outputs and stays
// in output_sequences; two sequences keep their order.
// CHECK-LABEL: func @empty_and_two
// CHECK-SAME: (%[[A:.+]]: tensor<2xf32>) -> tensor<2xf32>
// CHECK-SAME: sluice.output_names = ["t.0"]
// CHECK-SAME: sluice.output_sequences = [{elements = [], name = "e"}, {elements = ["t.0"], name = "t"}]
// CHECK: return %[[A]] : tensor<2xf32>
func.func @empty_and_two(%a: tensor<2xf32>) -> (!sluice.sequence<tensor<*xf32>>, !sluice.sequence<tensor<2xf32>>) attributes {sluice.input_names = ["a"], sluice.output_names = ["e", "t"]} {
  %e = sluice.sequence_empty {dtype = f32} : () -> !sluice.sequence<tensor<*xf32>>
  %t = sluice.sequence_construct %a : (tensor<2xf32>) -> !sluice.sequence<tensor<2xf32>>
  return %e, %t : !sluice.sequence<tensor<*xf32>>, !sluice.sequence<tensor<2xf32>>
}

// -----

// A sequence that is not a construct (its length is known only at run
// time) stays, for the plan phase to refuse; so does a construct of an
// unranked tensor. No attribute without a flattened sequence.
// CHECK-LABEL: func @not_flattened
// CHECK-SAME: -> (!sluice.sequence<tensor<?xf32>>, !sluice.sequence<tensor<*xf32>>)
// CHECK-NOT: sluice.output_sequences
// CHECK: sluice.split_to_sequence
// CHECK: sluice.sequence_construct
func.func @not_flattened(%a: tensor<6xf32>, %u: tensor<*xf32>) -> (!sluice.sequence<tensor<?xf32>>, !sluice.sequence<tensor<*xf32>>) attributes {sluice.input_names = ["a", "u"], sluice.output_names = ["p", "q"]} {
  %p = sluice.split_to_sequence %a {axis = 0 : i64, keepdims = true} : (tensor<6xf32>) -> !sluice.sequence<tensor<?xf32>>
  %q = sluice.sequence_construct %u : (tensor<*xf32>) -> !sluice.sequence<tensor<*xf32>>
  return %p, %q : !sluice.sequence<tensor<?xf32>>, !sluice.sequence<tensor<*xf32>>
}

// -----

// A construct also read inside the function stays for that reader.
// CHECK-LABEL: func @construct_also_read
// CHECK-SAME: sluice.output_names = ["y.0", "n"]
// CHECK: %[[S:.+]] = sluice.sequence_construct
// CHECK: %[[N:.+]] = sluice.sequence_length %[[S]]
// CHECK: return %{{.+}}, %[[N]]
func.func @construct_also_read(%a: tensor<2xf32>) -> (!sluice.sequence<tensor<2xf32>>, tensor<i64>) attributes {sluice.input_names = ["a"], sluice.output_names = ["y", "n"]} {
  %s = sluice.sequence_construct %a : (tensor<2xf32>) -> !sluice.sequence<tensor<2xf32>>
  %n = sluice.sequence_length %s : (!sluice.sequence<tensor<2xf32>>) -> tensor<i64>
  return %s, %n : !sluice.sequence<tensor<2xf32>>, tensor<i64>
}
