// RUN: sluice-opt %s --sluice-form-kernels --sluice-plan-buffers --verify-diagnostics

// Dynamic inputs cannot be planned: the error names the input.
// expected-error @+1 {{input 'x' has dynamic dims (?x4): bundles need static shapes; bind them with --shape=x=...}}
func.func @dynamic(%x: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {sluice.input_names = ["x"]} {
  %0 = sluice.exp %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
