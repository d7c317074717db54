module {
  func.func @main(%x: tensor<128x768xf32>, %w: tensor<768x3072xf32>, %b: tensor<3072xf32>) -> tensor<128x3072xf32>
      attributes {sluice.input_names = ["x", "w", "b"], sluice.output_names = ["y"]} {
    %0 = sluice.kernel @k0_matmul library "gemm"(%x, %w, %b : tensor<128x768xf32>, tensor<768x3072xf32>, tensor<3072xf32>) -> (tensor<128x3072xf32>) {
    ^bb0(%a: tensor<128x768xf32>, %bb: tensor<768x3072xf32>, %c: tensor<3072xf32>):
      %m = sluice.matmul %a, %bb : (tensor<128x768xf32>, tensor<768x3072xf32>) -> tensor<128x3072xf32>
      %s = sluice.add %m, %c : (tensor<128x3072xf32>, tensor<3072xf32>) -> tensor<128x3072xf32>
      %g = sluice.gelu %s : (tensor<128x3072xf32>) -> tensor<128x3072xf32>
      sluice.kernel_yield %g : tensor<128x3072xf32>
    }
    return %0 : tensor<128x3072xf32>
  }
}
