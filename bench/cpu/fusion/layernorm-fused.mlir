module {
  func.func @main(%x: tensor<128x768xf32>, %h: tensor<128x768xf32>, %g: tensor<768xf32>, %b: tensor<768xf32>) -> tensor<128x768xf32>
      attributes {sluice.input_names = ["x", "h", "g", "b"], sluice.output_names = ["y"]} {
    %0 = sluice.kernel @k0_layer_norm(%x, %h, %g, %b : tensor<128x768xf32>, tensor<128x768xf32>, tensor<768xf32>, tensor<768xf32>) -> (tensor<128x768xf32>) {
    ^bb0(%a: tensor<128x768xf32>, %bb: tensor<128x768xf32>, %sc: tensor<768xf32>, %bi: tensor<768xf32>):
      %sum = sluice.add %a, %bb : (tensor<128x768xf32>, tensor<128x768xf32>) -> tensor<128x768xf32>
      %o, %mean, %inv = sluice.layer_norm %sum, %sc, %bi {axis = -1 : i64} : (tensor<128x768xf32>, tensor<768xf32>, tensor<768xf32>) -> (tensor<128x768xf32>, tensor<128x1xf32>, tensor<128x1xf32>)
      sluice.kernel_yield %o : tensor<128x768xf32>
    }
    return %0 : tensor<128x768xf32>
  }
}
