// BERT-base self-attention (B=1, 12 heads, S=128, D=64, [B,1,1,S] mask) as the
// kernels the cpu pipeline forms WITHOUT attention fusion (one op per kernel:
// split, reshapes, transposes, 2 batched GEMMs, mul, add, softmax): the
// baseline of attention_bench.sh. Written by sluice-compile --stop-after=fuse
// --emit=mlir from the plain-op graph; kept in kernel form so that later
// fusion passes do not fuse it.
module {
  func.func @main(%arg0: tensor<1x128x2304xf32>, %arg1: tensor<1x1x1x128xf32>) -> tensor<1x128x768xf32> attributes {sluice.input_names = ["qkv", "mask"], sluice.output_names = ["out"]} {
    %0:3 = sluice.kernel @k0_split(%arg0 : tensor<1x128x2304xf32>) -> (tensor<1x128x768xf32>, tensor<1x128x768xf32>, tensor<1x128x768xf32>) {
    ^bb0(%arg2: tensor<1x128x2304xf32>):
      %14:3 = sluice.split %arg2 {axis = 2 : i64, num_outputs = 3 : i64} : (tensor<1x128x2304xf32>) -> (tensor<1x128x768xf32>, tensor<1x128x768xf32>, tensor<1x128x768xf32>)
      sluice.kernel_yield %14#0, %14#1, %14#2 : tensor<1x128x768xf32>, tensor<1x128x768xf32>, tensor<1x128x768xf32>
    }
    %1 = sluice.kernel @k1_reshape(%0#0 : tensor<1x128x768xf32>) -> (tensor<1x128x12x64xf32>) {
    ^bb0(%arg2: tensor<1x128x768xf32>):
      %14 = sluice.constant dense<[1, 128, 12, 64]> : tensor<4xi64>
      %15 = sluice.reshape %arg2, %14 : (tensor<1x128x768xf32>, tensor<4xi64>) -> tensor<1x128x12x64xf32>
      sluice.kernel_yield %15 : tensor<1x128x12x64xf32>
    }
    %2 = sluice.kernel @k2_reshape(%0#1 : tensor<1x128x768xf32>) -> (tensor<1x128x12x64xf32>) {
    ^bb0(%arg2: tensor<1x128x768xf32>):
      %14 = sluice.constant dense<[1, 128, 12, 64]> : tensor<4xi64>
      %15 = sluice.reshape %arg2, %14 : (tensor<1x128x768xf32>, tensor<4xi64>) -> tensor<1x128x12x64xf32>
      sluice.kernel_yield %15 : tensor<1x128x12x64xf32>
    }
    %3 = sluice.kernel @k3_reshape(%0#2 : tensor<1x128x768xf32>) -> (tensor<1x128x12x64xf32>) {
    ^bb0(%arg2: tensor<1x128x768xf32>):
      %14 = sluice.constant dense<[1, 128, 12, 64]> : tensor<4xi64>
      %15 = sluice.reshape %arg2, %14 : (tensor<1x128x768xf32>, tensor<4xi64>) -> tensor<1x128x12x64xf32>
      sluice.kernel_yield %15 : tensor<1x128x12x64xf32>
    }
    %4 = sluice.kernel @k4_transpose(%1 : tensor<1x128x12x64xf32>) -> (tensor<1x12x128x64xf32>) {
    ^bb0(%arg2: tensor<1x128x12x64xf32>):
      %14 = sluice.transpose %arg2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x128x12x64xf32>) -> tensor<1x12x128x64xf32>
      sluice.kernel_yield %14 : tensor<1x12x128x64xf32>
    }
    %5 = sluice.kernel @k5_transpose(%2 : tensor<1x128x12x64xf32>) -> (tensor<1x12x64x128xf32>) {
    ^bb0(%arg2: tensor<1x128x12x64xf32>):
      %14 = sluice.transpose %arg2 {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x128x12x64xf32>) -> tensor<1x12x64x128xf32>
      sluice.kernel_yield %14 : tensor<1x12x64x128xf32>
    }
    %6 = sluice.kernel @k6_transpose(%3 : tensor<1x128x12x64xf32>) -> (tensor<1x12x128x64xf32>) {
    ^bb0(%arg2: tensor<1x128x12x64xf32>):
      %14 = sluice.transpose %arg2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x128x12x64xf32>) -> tensor<1x12x128x64xf32>
      sluice.kernel_yield %14 : tensor<1x12x128x64xf32>
    }
    %7 = sluice.kernel @k7_matmul library "gemm"(%4, %5 : tensor<1x12x128x64xf32>, tensor<1x12x64x128xf32>) -> (tensor<1x12x128x128xf32>) {
    ^bb0(%arg2: tensor<1x12x128x64xf32>, %arg3: tensor<1x12x64x128xf32>):
      %14 = sluice.matmul %arg2, %arg3 : (tensor<1x12x128x64xf32>, tensor<1x12x64x128xf32>) -> tensor<1x12x128x128xf32>
      sluice.kernel_yield %14 : tensor<1x12x128x128xf32>
    }
    %8 = sluice.kernel @k8_mul(%7 : tensor<1x12x128x128xf32>) -> (tensor<1x12x128x128xf32>) {
    ^bb0(%arg2: tensor<1x12x128x128xf32>):
      %14 = sluice.constant dense<1.250000e-01> : tensor<f32>
      %15 = sluice.mul %arg2, %14 : (tensor<1x12x128x128xf32>, tensor<f32>) -> tensor<1x12x128x128xf32>
      sluice.kernel_yield %15 : tensor<1x12x128x128xf32>
    }
    %9 = sluice.kernel @k9_add(%8, %arg1 : tensor<1x12x128x128xf32>, tensor<1x1x1x128xf32>) -> (tensor<1x12x128x128xf32>) {
    ^bb0(%arg2: tensor<1x12x128x128xf32>, %arg3: tensor<1x1x1x128xf32>):
      %14 = sluice.add %arg2, %arg3 : (tensor<1x12x128x128xf32>, tensor<1x1x1x128xf32>) -> tensor<1x12x128x128xf32>
      sluice.kernel_yield %14 : tensor<1x12x128x128xf32>
    }
    %10 = sluice.kernel @k10_softmax(%9 : tensor<1x12x128x128xf32>) -> (tensor<1x12x128x128xf32>) {
    ^bb0(%arg2: tensor<1x12x128x128xf32>):
      %14 = sluice.softmax %arg2 {axis = 3 : i64} : (tensor<1x12x128x128xf32>) -> tensor<1x12x128x128xf32>
      sluice.kernel_yield %14 : tensor<1x12x128x128xf32>
    }
    %11 = sluice.kernel @k11_matmul library "gemm"(%10, %6 : tensor<1x12x128x128xf32>, tensor<1x12x128x64xf32>) -> (tensor<1x12x128x64xf32>) {
    ^bb0(%arg2: tensor<1x12x128x128xf32>, %arg3: tensor<1x12x128x64xf32>):
      %14 = sluice.matmul %arg2, %arg3 : (tensor<1x12x128x128xf32>, tensor<1x12x128x64xf32>) -> tensor<1x12x128x64xf32>
      sluice.kernel_yield %14 : tensor<1x12x128x64xf32>
    }
    %12 = sluice.kernel @k12_transpose(%11 : tensor<1x12x128x64xf32>) -> (tensor<1x128x12x64xf32>) {
    ^bb0(%arg2: tensor<1x12x128x64xf32>):
      %14 = sluice.transpose %arg2 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x12x128x64xf32>) -> tensor<1x128x12x64xf32>
      sluice.kernel_yield %14 : tensor<1x128x12x64xf32>
    }
    %13 = sluice.kernel @k13_reshape(%12 : tensor<1x128x12x64xf32>) -> (tensor<1x128x768xf32>) {
    ^bb0(%arg2: tensor<1x128x12x64xf32>):
      %14 = sluice.constant dense<[1, 128, 768]> : tensor<3xi64>
      %15 = sluice.reshape %arg2, %14 : (tensor<1x128x12x64xf32>, tensor<3xi64>) -> tensor<1x128x768xf32>
      sluice.kernel_yield %15 : tensor<1x128x768xf32>
    }
    return %13 : tensor<1x128x768xf32>
  }
}
