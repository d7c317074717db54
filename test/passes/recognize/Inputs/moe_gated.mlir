// Gated (SwiGLU) sluice.moe ops for decompose-numerics.test: top-k gating
// with biases and renormalized weights, and hard gating by a constant index.
func.func @main(%x: tensor<2x6x8xf32>, %logits: tensor<2x6x4xf32>, %w1: tensor<4x8x5xf32>, %b1: tensor<4x5xf32>, %w2: tensor<4x5x8xf32>, %b2: tensor<4x8xf32>, %w3: tensor<4x8x5xf32>, %b3: tensor<4x5xf32>)
    -> (tensor<2x6x8xf32>, tensor<2x6x8xf32>)
    attributes {sluice.input_names = ["x", "logits", "w1", "b1", "w2", "b2", "w3", "b3"], sluice.output_names = ["top_k", "hard"]} {
  %0 = sluice.moe %x, %logits experts(%w1 bias %b1, %w2 bias %b2, up %w3 bias %b3) {activation = "silu", experts = 4 : i64, gating = "top_k", normalize = true, top_k = 2 : i64} : (tensor<2x6x8xf32>, tensor<2x6x4xf32>, tensor<4x8x5xf32>, tensor<4x5xf32>, tensor<4x5x8xf32>, tensor<4x8xf32>, tensor<4x8x5xf32>, tensor<4x5xf32>) -> tensor<2x6x8xf32>
  %language = sluice.constant dense<[3, 1]> : tensor<2xi64>
  %1 = sluice.moe %x, %language experts(%w1 bias %b1, %w2, up %w3 bias %b3) {activation = "gelu", experts = 4 : i64, gating = "hard", top_k = 1 : i64} : (tensor<2x6x8xf32>, tensor<2xi64>, tensor<4x8x5xf32>, tensor<4x5xf32>, tensor<4x5x8xf32>, tensor<4x8x5xf32>, tensor<4x5xf32>) -> tensor<2x6x8xf32>
  return %0, %1 : tensor<2x6x8xf32>, tensor<2x6x8xf32>
}
