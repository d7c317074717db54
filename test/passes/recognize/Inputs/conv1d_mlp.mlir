// GPT-2's MLP as torch.onnx exports HF Conv1D (x.view(-1, K) -> addmm ->
// view(B, S, N)): c_fc, tanh GELU, c_proj, residual add. Weights are inputs
// (random in the test), so the evaluator compares every element.
func.func @main(%x: tensor<2x3x4xf32>, %wfc: tensor<4x8xf32>, %bfc: tensor<8xf32>,
                %wproj: tensor<8x4xf32>, %bproj: tensor<4xf32>)
    -> tensor<2x3x4xf32> attributes {sluice.input_names = ["x", "wfc", "bfc", "wproj", "bproj"], sluice.output_names = ["y"]} {
  %flat4 = sluice.constant dense<[-1, 4]> : tensor<2xi64>
  %flat8 = sluice.constant dense<[-1, 8]> : tensor<2xi64>
  %back8 = sluice.constant dense<[2, 3, 8]> : tensor<3xi64>
  %back4 = sluice.constant dense<[2, 3, 4]> : tensor<3xi64>
  %x2 = sluice.reshape %x, %flat4 : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
  %m1 = sluice.matmul %x2, %wfc : (tensor<6x4xf32>, tensor<4x8xf32>) -> tensor<6x8xf32>
  %a1 = sluice.add %bfc, %m1 : (tensor<8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  %h = sluice.reshape %a1, %back8 : (tensor<6x8xf32>, tensor<3xi64>) -> tensor<2x3x8xf32>
  %g = sluice.gelu %h {approximate = "tanh"} : (tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %g2 = sluice.reshape %g, %flat8 : (tensor<2x3x8xf32>, tensor<2xi64>) -> tensor<6x8xf32>
  %m2 = sluice.matmul %g2, %wproj : (tensor<6x8xf32>, tensor<8x4xf32>) -> tensor<6x4xf32>
  %a2 = sluice.add %bproj, %m2 : (tensor<4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
  %p = sluice.reshape %a2, %back4 : (tensor<6x4xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  %y = sluice.add %x, %p : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}
