// BERT-base self-attention (B=1, 12 heads, S=128, D=64, [B,1,1,S] mask) as one
// fused kernel (form F4): q/k/v are views of the [1, 128, 2304] QKV GEMM output,
// the result is written as [1, 128, 768].
func.func @main(%x: tensor<1x128x2304xf32>, %mask: tensor<1x1x1x128xf32>) -> tensor<1x128x768xf32> attributes {sluice.input_names = ["qkv", "mask"], sluice.output_names = ["out"]} {
  %0 = sluice.kernel @k0_attention(%x, %mask : tensor<1x128x2304xf32>, tensor<1x1x1x128xf32>) -> (tensor<1x128x768xf32>) {
  ^bb0(%xx: tensor<1x128x2304xf32>, %m: tensor<1x1x1x128xf32>):
    %heads = sluice.constant dense<[1, 128, 12, 64]> : tensor<4xi64>
    %flat = sluice.constant dense<[1, 128, 768]> : tensor<3xi64>
    %q, %k, %v = sluice.split %xx {axis = 2 : i64, num_outputs = 3 : i64} : (tensor<1x128x2304xf32>) -> (tensor<1x128x768xf32>, tensor<1x128x768xf32>, tensor<1x128x768xf32>)
    %q1 = sluice.reshape %q, %heads : (tensor<1x128x768xf32>, tensor<4xi64>) -> tensor<1x128x12x64xf32>
    %k1 = sluice.reshape %k, %heads : (tensor<1x128x768xf32>, tensor<4xi64>) -> tensor<1x128x12x64xf32>
    %v1 = sluice.reshape %v, %heads : (tensor<1x128x768xf32>, tensor<4xi64>) -> tensor<1x128x12x64xf32>
    %q2 = sluice.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x128x12x64xf32>) -> tensor<1x12x128x64xf32>
    %k2 = sluice.transpose %k1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x128x12x64xf32>) -> tensor<1x12x128x64xf32>
    %v2 = sluice.transpose %v1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x128x12x64xf32>) -> tensor<1x12x128x64xf32>
    %a = sluice.attention %q2, %k2, %v2 mask %m {scale = 1.250000e-01 : f32} : (tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32>, tensor<1x1x1x128xf32>) -> tensor<1x12x128x64xf32>
    %t = sluice.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x12x128x64xf32>) -> tensor<1x128x12x64xf32>
    %r = sluice.reshape %t, %flat : (tensor<1x128x12x64xf32>, tensor<3xi64>) -> tensor<1x128x768xf32>
    sluice.kernel_yield %r : tensor<1x128x768xf32>
  }
  return %0 : tensor<1x128x768xf32>
}
