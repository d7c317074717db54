// RUN: sluice-opt %s --sluice-quantize-weights="bits=3" --verify-diagnostics --split-input-file

// expected-error @+1 {{weight-only quantization takes bits=8 or bits=4, not 3}}
func.func @bad_bits(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = sluice.constant dense<1.0> : tensor<4x3xf32>
  %0 = sluice.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
