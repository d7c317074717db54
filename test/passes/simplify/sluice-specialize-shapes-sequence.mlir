// RUN: sluice-opt %s --split-input-file --sluice-specialize-shapes="shapes=b=4,\"s=3x4,2x4\"" | FileCheck %s
// RUN: sluice-opt %s --split-input-file --sluice-specialize-shapes="shapes=b=4,s=3x4" | FileCheck %s --check-prefix=ONE
// RUN: sluice-opt %s --split-input-file --sluice-specialize-shapes="shapes=b=4,s=empty" | FileCheck %s --check-prefix=EMPTY

// A sequence input becomes one tensor input per element, in the sequence's
// place (the inputs keep the graph's order), named s.0, s.1 ...; a
// sequence_construct of them takes the old argument's uses (which the
// simplify phase's resolve step then rewrites to the elements). A tensor
// input beside it binds as before.
// CHECK-LABEL: func @sequence_input
// CHECK-SAME: (%[[E0:.+]]: tensor<3x4xf32>, %[[E1:.+]]: tensor<2x4xf32>, %[[B:.+]]: tensor<4xf32>) -> (tensor<?x4xf32>, tensor<i64>, tensor<4xf32>)
// CHECK-SAME: sluice.input_names = ["s.0", "s.1", "b"]
// CHECK-SAME: sluice.input_sequences = [{elements = ["s.0", "s.1"], name = "s"}]
// CHECK: %[[S:.+]] = sluice.sequence_construct %[[E0]], %[[E1]] : (tensor<3x4xf32>, tensor<2x4xf32>) -> !sluice.sequence<tensor<?x4xf32>>
// CHECK: sluice.concat_from_sequence %[[S]]
// CHECK: sluice.sequence_length %[[S]]
// CHECK: sluice.add %[[B]], %[[B]] : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// ONE-LABEL: func @sequence_input
// ONE-SAME: (%[[E0:.+]]: tensor<3x4xf32>, %{{.+}}: tensor<4xf32>)
// ONE-SAME: sluice.input_names = ["s.0", "b"]
// ONE-SAME: sluice.input_sequences = [{elements = ["s.0"], name = "s"}]
// ONE: sluice.sequence_construct %[[E0]] : (tensor<3x4xf32>) -> !sluice.sequence<tensor<3x4xf32>>
// EMPTY-LABEL: func @sequence_input
// EMPTY-SAME: (%{{.+}}: tensor<4xf32>)
// EMPTY-SAME: sluice.input_names = ["b"]
// EMPTY-SAME: sluice.input_sequences = [{elements = [], name = "s"}]
// EMPTY: %[[S:.+]] = sluice.sequence_empty {dtype = f32}
// EMPTY: sluice.concat_from_sequence %[[S]]
func.func @sequence_input(%s: !sluice.sequence<tensor<?x4xf32>>, %b: tensor<?xf32>) -> (tensor<?x4xf32>, tensor<i64>, tensor<?xf32>) attributes {sluice.input_names = ["s", "b"], sluice.output_names = ["c", "n", "d"]} {
  %c = sluice.concat_from_sequence %s {axis = 0 : i64} : (!sluice.sequence<tensor<?x4xf32>>) -> tensor<?x4xf32>
  %n = sluice.sequence_length %s : (!sluice.sequence<tensor<?x4xf32>>) -> tensor<i64>
  %d = sluice.add %b, %b : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %c, %n, %d : tensor<?x4xf32>, tensor<i64>, tensor<?xf32>
}

// -----

// Two sequences: each keeps its place, the second's elements after the
// first's; input_sequences lists them in the inputs' order.
// CHECK-LABEL: func @two_sequences
// CHECK-SAME: (%{{.+}}: tensor<4xf32>, %{{.+}}: tensor<3x4xf32>, %{{.+}}: tensor<2x4xf32>, %{{.+}}: tensor<4xf32>)
// CHECK-SAME: sluice.input_names = ["x", "s.0", "s.1", "b.0"]
// ONE-LABEL: func @two_sequences
// ONE-SAME: sluice.input_names = ["x", "s.0", "b.0"]
// ONE-SAME: sluice.input_sequences = [{elements = ["s.0"], name = "s"}, {elements = ["b.0"], name = "b"}]
// EMPTY-LABEL: func @two_sequences
// EMPTY-SAME: sluice.input_sequences = [{elements = [], name = "s"}, {elements = ["b.0"], name = "b"}]
func.func @two_sequences(%b0: tensor<4xf32>, %s: !sluice.sequence<tensor<*xf32>>, %b: !sluice.sequence<tensor<?xf32>>) -> !sluice.sequence<tensor<*xf32>> attributes {sluice.input_names = ["x", "s", "b"], sluice.output_names = ["y"]} {
  return %s : !sluice.sequence<tensor<*xf32>>
}
