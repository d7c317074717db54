module {
  func.func @main(%x: tensor<128x768xf32>, %h: tensor<128x768xf32>, %g: tensor<768xf32>, %b: tensor<768xf32>) -> tensor<128x768xf32>
      attributes {sluice.input_names = ["x", "h", "g", "b"], sluice.output_names = ["y"]} {
    %0 = sluice.kernel @k0_add(%x, %h : tensor<128x768xf32>, tensor<128x768xf32>) -> (tensor<128x768xf32>) {
    ^bb0(%a: tensor<128x768xf32>, %bb: tensor<128x768xf32>):
      %sum = sluice.add %a, %bb : (tensor<128x768xf32>, tensor<128x768xf32>) -> tensor<128x768xf32>
      sluice.kernel_yield %sum : tensor<128x768xf32>
    }
    %1:3 = sluice.kernel @k1_layer_norm(%0, %g, %b : tensor<128x768xf32>, tensor<768xf32>, tensor<768xf32>) -> (tensor<128x768xf32>, tensor<128x1xf32>, tensor<128x1xf32>) {
    ^bb0(%sum: tensor<128x768xf32>, %sc: tensor<768xf32>, %bi: tensor<768xf32>):
      %o, %mean, %inv = sluice.layer_norm %sum, %sc, %bi {axis = -1 : i64} : (tensor<128x768xf32>, tensor<768xf32>, tensor<768xf32>) -> (tensor<128x768xf32>, tensor<128x1xf32>, tensor<128x1xf32>)
      sluice.kernel_yield %o, %mean, %inv : tensor<128x768xf32>, tensor<128x1xf32>, tensor<128x1xf32>
    }
    return %1#0 : tensor<128x768xf32>
  }
}
