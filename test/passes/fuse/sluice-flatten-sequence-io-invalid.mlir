// RUN: sluice-opt %s --split-input-file --verify-diagnostics --sluice-flatten-sequence-io

// A sequence input with no element shapes cannot be a bundle's input.
// expected-error @+1 {{input 's' is a sequence: a bundle takes its elements as tensor inputs; give their shapes with --shape=s=2x3,2x3 (one shape per element; s=empty for none)}}
func.func @unbound_input(%s: !sluice.sequence<tensor<*xf32>>) -> !sluice.sequence<tensor<*xf32>> attributes {sluice.input_names = ["s"], sluice.output_names = ["y"]} {
  return %s : !sluice.sequence<tensor<*xf32>>
}

// -----

// An element name the model already uses for an output.
// expected-error @+1 {{sequence output 'y': its element 0 would be output 'y.0', which the model already has}}
func.func @name_taken(%a: tensor<2xf32>) -> (!sluice.sequence<tensor<2xf32>>, tensor<2xf32>) attributes {sluice.input_names = ["a"], sluice.output_names = ["y", "y.0"]} {
  %s = sluice.sequence_construct %a : (tensor<2xf32>) -> !sluice.sequence<tensor<2xf32>>
  return %s, %a : !sluice.sequence<tensor<2xf32>>, tensor<2xf32>
}
