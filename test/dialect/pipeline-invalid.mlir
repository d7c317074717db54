// RUN: sluice-opt %s --verify-diagnostics -o /dev/null

// Activations go forward only.
func.func @backward(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error @below {{sends from stage 1 to stage 1; activations go to a later stage}}
  %t = sluice.transfer %x {from = 1 : i64, to = 1 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return %t : tensor<4x3xf32>
}
