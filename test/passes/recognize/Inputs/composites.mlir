// Every composite in the forms the test models do not exercise: an i1
// keep-mask with a bottom-right causal mask (Sq < Sk), rotary with a float
// mask and key/value batch broadcast, f16 RMSNorm, LayerNorm over two dims.
func.func @main(%q: tensor<2x2x3x4xf32>, %k: tensor<2x2x5x4xf32>, %v: tensor<2x2x5x6xf32>,
                %keepArg: tensor<2x1x1x5xi1>, %q2: tensor<2x2x5x4xf32>, %k1: tensor<2x1x5x4xf32>,
                %v1: tensor<2x1x5x6xf32>, %mask: tensor<2x1x5x5xf32>, %cos: tensor<5x4xf32>,
                %sin: tensor<5x4xf32>, %h: tensor<3x8xf16>, %w: tensor<8xf16>,
                %x: tensor<2x3x4xf32>, %s: tensor<3x4xf32>, %b: tensor<4xf32>)
    -> (tensor<2x2x3x6xf32>, tensor<2x2x5x6xf32>, tensor<3x8xf16>, tensor<2x3x4xf32>,
        tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>)
    attributes {sluice.input_names = ["q", "k", "v", "keep", "q2", "k1", "v1", "mask", "cos", "sin", "h", "w", "x", "s", "b"],
                sluice.output_names = ["masked", "rotary", "rms", "ln", "gelu", "gelu_tanh", "silu"]} {
  // Key 0 is always kept: no row is fully masked (that row would be NaN).
  %first = sluice.constant dense<[[[[true, false, false, false, false]]]]> : tensor<1x1x1x5xi1>
  %keep = sluice.or %keepArg, %first : (tensor<2x1x1x5xi1>, tensor<1x1x1x5xi1>) -> tensor<2x1x1x5xi1>
  %0 = sluice.attention %q, %k, %v mask %keep {scale = 0.3 : f32, causal = true} : (tensor<2x2x3x4xf32>, tensor<2x2x5x4xf32>, tensor<2x2x5x6xf32>, tensor<2x1x1x5xi1>) -> tensor<2x2x3x6xf32>
  %1 = sluice.attention %q2, %k1, %v1 mask %mask rotary(%cos, %sin) {scale = 0.5 : f32} : (tensor<2x2x5x4xf32>, tensor<2x1x5x4xf32>, tensor<2x1x5x6xf32>, tensor<2x1x5x5xf32>, tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<2x2x5x6xf32>
  %2 = sluice.rms_norm %h, %w {axis = -1 : i64, epsilon = 1.0e-6 : f32} : (tensor<3x8xf16>, tensor<8xf16>) -> tensor<3x8xf16>
  %3, %mean, %inv = sluice.layer_norm %x, %s, %b {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  %4 = sluice.gelu %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %5 = sluice.gelu %x {approximate = "tanh"} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %6 = sluice.silu %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<2x2x3x6xf32>, tensor<2x2x5x6xf32>, tensor<3x8xf16>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
}
