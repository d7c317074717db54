module {
  func.func @main(%s: tensor<1x12x128x128xf32>, %mask: tensor<1x1x1x128xf32>) -> tensor<1x12x128x128xf32>
      attributes {sluice.input_names = ["s", "mask"], sluice.output_names = ["y"]} {
    %0 = sluice.kernel @k0_add(%s, %mask : tensor<1x12x128x128xf32>, tensor<1x1x1x128xf32>) -> (tensor<1x12x128x128xf32>) {
    ^bb0(%a: tensor<1x12x128x128xf32>, %m: tensor<1x1x1x128xf32>):
      %c = sluice.constant dense<0.125> : tensor<f32>
      %p = sluice.mul %a, %c : (tensor<1x12x128x128xf32>, tensor<f32>) -> tensor<1x12x128x128xf32>
      %q = sluice.add %p, %m : (tensor<1x12x128x128xf32>, tensor<1x1x1x128xf32>) -> tensor<1x12x128x128xf32>
      sluice.kernel_yield %q : tensor<1x12x128x128xf32>
    }
    %1 = sluice.kernel @k1_softmax(%0 : tensor<1x12x128x128xf32>) -> (tensor<1x12x128x128xf32>) {
    ^bb0(%q: tensor<1x12x128x128xf32>):
      %r = sluice.softmax %q {axis = -1 : i64} : (tensor<1x12x128x128xf32>) -> tensor<1x12x128x128xf32>
      sluice.kernel_yield %r : tensor<1x12x128x128xf32>
    }
    return %1 : tensor<1x12x128x128xf32>
  }
}
