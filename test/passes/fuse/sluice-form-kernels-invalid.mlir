// RUN: sluice-opt %s --sluice-form-kernels --verify-diagnostics --split-input-file

// A marked group that a path leaves and re-enters (exp -> tanh -> add) cannot
// be one kernel.
// expected-error @+1 {{kernel groups form a cycle}}
func.func @not_convex(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = sluice.exp %x {sluice.group = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = sluice.tanh %0 : (tensor<4xf32>) -> tensor<4xf32>
  %2 = sluice.add %0, %1 {sluice.group = 0 : i64, sluice.group_anchor} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}
