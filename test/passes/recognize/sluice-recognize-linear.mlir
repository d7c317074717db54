// RUN: sluice-opt %s --split-input-file --sluice-recognize-linear | FileCheck %s

// HF Conv1D (GPT-2's c_fc) as torch.onnx writes it: x.view(-1, K) ->
// Gemm (MatMul + Add here) -> view(B, S, N), then GELU. The Linear runs on x
// as it is; the reshapes go.
// CHECK-LABEL: func @conv1d_gelu
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>, %[[W:.+]]: tensor<4x6xf32>, %[[B:.+]]: tensor<6xf32>)
// CHECK-NEXT: %[[M:.+]] = sluice.matmul %[[X]], %[[W]] : (tensor<2x3x4xf32>, tensor<4x6xf32>) -> tensor<2x3x6xf32>
// CHECK-NEXT: %[[A:.+]] = sluice.add %[[M]], %[[B]] : (tensor<2x3x6xf32>, tensor<6xf32>) -> tensor<2x3x6xf32>
// CHECK-NEXT: %[[G:.+]] = sluice.gelu %[[A]]
// CHECK-NEXT: return %[[G]]
func.func @conv1d_gelu(%x: tensor<2x3x4xf32>, %w: tensor<4x6xf32>, %b: tensor<6xf32>) -> tensor<2x3x6xf32> {
  %flat = sluice.constant dense<[-1, 4]> : tensor<2xi64>
  %back = sluice.constant dense<[2, 3, 6]> : tensor<3xi64>
  %x2 = sluice.reshape %x, %flat : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
  %m = sluice.matmul %x2, %w : (tensor<6x4xf32>, tensor<4x6xf32>) -> tensor<6x6xf32>
  %a = sluice.add %b, %m : (tensor<6xf32>, tensor<6x6xf32>) -> tensor<6x6xf32>
  %y = sluice.reshape %a, %back : (tensor<6x6xf32>, tensor<3xi64>) -> tensor<2x3x6xf32>
  %g = sluice.gelu %y {approximate = "tanh"} : (tensor<2x3x6xf32>) -> tensor<2x3x6xf32>
  return %g : tensor<2x3x6xf32>
}

// -----

// Without a bias, a [1, N] bias, and a flatten whose input other ops read
// (it stays for them).
// CHECK-LABEL: func @no_bias_row_bias
// CHECK-SAME: (%[[X:.+]]: tensor<1x5x4xf32>, %[[W:.+]]: tensor<4x3xf32>, %[[B:.+]]: tensor<1x3xf32>)
// CHECK: %[[F:.+]] = sluice.reshape %[[X]]
// CHECK: %[[M1:.+]] = sluice.matmul %[[X]], %[[W]] : (tensor<1x5x4xf32>, tensor<4x3xf32>) -> tensor<1x5x3xf32>
// CHECK: %[[M2:.+]] = sluice.matmul %[[X]], %[[W]] : (tensor<1x5x4xf32>, tensor<4x3xf32>) -> tensor<1x5x3xf32>
// CHECK-NEXT: %[[A:.+]] = sluice.add %[[M2]], %[[B]] : (tensor<1x5x3xf32>, tensor<1x3xf32>) -> tensor<1x5x3xf32>
// CHECK: return %[[M1]], %[[A]], %[[F]]
func.func @no_bias_row_bias(%x: tensor<1x5x4xf32>, %w: tensor<4x3xf32>, %b: tensor<1x3xf32>) -> (tensor<1x5x3xf32>, tensor<1x5x3xf32>, tensor<5x4xf32>) {
  %flat = sluice.constant dense<[5, 4]> : tensor<2xi64>
  %back = sluice.constant dense<[1, 5, 3]> : tensor<3xi64>
  %x2 = sluice.reshape %x, %flat : (tensor<1x5x4xf32>, tensor<2xi64>) -> tensor<5x4xf32>
  %m = sluice.matmul %x2, %w : (tensor<5x4xf32>, tensor<4x3xf32>) -> tensor<5x3xf32>
  %y = sluice.reshape %m, %back : (tensor<5x3xf32>, tensor<3xi64>) -> tensor<1x5x3xf32>
  %m2 = sluice.matmul %x2, %w : (tensor<5x4xf32>, tensor<4x3xf32>) -> tensor<5x3xf32>
  %a2 = sluice.add %m2, %b : (tensor<5x3xf32>, tensor<1x3xf32>) -> tensor<5x3xf32>
  %y2 = sluice.reshape %a2, %back : (tensor<5x3xf32>, tensor<3xi64>) -> tensor<1x5x3xf32>
  return %y, %y2, %x2 : tensor<1x5x3xf32>, tensor<1x5x3xf32>, tensor<5x4xf32>
}

// -----

// Refused: the unflatten regroups rows differently from the flatten
// ([2,3,K] -> [6,K], then [3,2,N]); the GEMM result is read elsewhere; a bias
// that varies along rows; an unflatten that splits N.
// CHECK-LABEL: func @refused
// CHECK-COUNT-4: sluice.matmul %{{.+}} : (tensor<6x4xf32>, tensor<4x6xf32>) -> tensor<6x6xf32>
// CHECK-NOT: sluice.matmul
func.func @refused(%x: tensor<2x3x4xf32>, %w: tensor<4x6xf32>, %rows: tensor<6x6xf32>) -> (tensor<3x2x6xf32>, tensor<2x3x6xf32>, tensor<6x6xf32>, tensor<2x3x6xf32>, tensor<6x3x2xf32>) {
  %flat = sluice.constant dense<[6, 4]> : tensor<2xi64>
  %other = sluice.constant dense<[3, 2, 6]> : tensor<3xi64>
  %back = sluice.constant dense<[2, 3, 6]> : tensor<3xi64>
  %split = sluice.constant dense<[6, 3, 2]> : tensor<3xi64>
  %x2 = sluice.reshape %x, %flat : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
  %m1 = sluice.matmul %x2, %w : (tensor<6x4xf32>, tensor<4x6xf32>) -> tensor<6x6xf32>
  %y1 = sluice.reshape %m1, %other : (tensor<6x6xf32>, tensor<3xi64>) -> tensor<3x2x6xf32>
  %m2 = sluice.matmul %x2, %w : (tensor<6x4xf32>, tensor<4x6xf32>) -> tensor<6x6xf32>
  %y2 = sluice.reshape %m2, %back : (tensor<6x6xf32>, tensor<3xi64>) -> tensor<2x3x6xf32>
  %m3 = sluice.matmul %x2, %w : (tensor<6x4xf32>, tensor<4x6xf32>) -> tensor<6x6xf32>
  %a3 = sluice.add %m3, %rows : (tensor<6x6xf32>, tensor<6x6xf32>) -> tensor<6x6xf32>
  %y3 = sluice.reshape %a3, %back : (tensor<6x6xf32>, tensor<3xi64>) -> tensor<2x3x6xf32>
  %m4 = sluice.matmul %x2, %w : (tensor<6x4xf32>, tensor<4x6xf32>) -> tensor<6x6xf32>
  %y4 = sluice.reshape %m4, %split : (tensor<6x6xf32>, tensor<3xi64>) -> tensor<6x3x2xf32>
  return %y1, %y2, %m2, %y3, %y4 : tensor<3x2x6xf32>, tensor<2x3x6xf32>, tensor<6x6xf32>, tensor<2x3x6xf32>, tensor<6x3x2xf32>
}
