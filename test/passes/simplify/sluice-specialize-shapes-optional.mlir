// RUN: sluice-opt %s --sluice-specialize-shapes="shapes=o=none" | FileCheck %s --check-prefix=ABSENT
// RUN: sluice-opt %s --sluice-specialize-shapes="shapes=o=3" | FileCheck %s --check-prefix=PRESENT
// RUN: sluice-opt %s --sluice-specialize-shapes="shapes=o=none" --sluice-resolve-control-flow | FileCheck %s --check-prefix=FOLDED

// An optional input is compiled absent (the argument goes; an empty
// sluice.optional takes its uses) or present (the argument is the value,
// wrapped); sluice.input_optionals records which.
// ABSENT-LABEL: func @optional_input()
// ABSENT-SAME: sluice.input_names = []
// ABSENT-SAME: sluice.input_optionals = [{elements = [], name = "o", present = false}]
// ABSENT: sluice.optional  {element_type = tensor<?xf32>}
// PRESENT-LABEL: func @optional_input
// PRESENT-SAME: (%[[X:.+]]: tensor<3xf32>)
// PRESENT-SAME: sluice.input_names = ["o"]
// PRESENT-SAME: sluice.input_optionals = [{elements = ["o"], name = "o", present = true}]
// PRESENT: %[[W:.+]] = sluice.optional %[[X]]
// PRESENT: sluice.optional_has_element %[[W]]
// Absent, has_element folds to false.
// FOLDED-LABEL: func @optional_input()
// FOLDED: %[[F:.+]] = sluice.constant dense<false> : tensor<i1>
// FOLDED: return %[[F]]
func.func @optional_input(%o: !sluice.optional<tensor<?xf32>>) -> tensor<i1> attributes {sluice.input_names = ["o"], sluice.output_names = ["has"]} {
  %h = sluice.optional_has_element %o : (!sluice.optional<tensor<?xf32>>) -> tensor<i1>
  return %h : tensor<i1>
}
