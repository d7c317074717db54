// sluice-prune on conv -> batch_norm -> relu -> conv: half of the first
// convolution's output channels go, with its bias, the batch norm's four
// per-channel parameters and the second convolution's input channels. The
// channel importance is mean|relu(bn(conv))| x the norm of the second
// convolution's weights for the channel: channels 1 and 3 (the heavy input
// channels of conv2, and the larger biases) stay. The second convolution's
// channels reach the function's result: unprunable, and listed so (apart).
// RUN: rm -rf %t && %python %S/Inputs/prune_data.py %t/cal x=1x2x5x5
// RUN: sluice-opt %s --sluice-prune="channels=0.5 calibration=%t/cal budget=10" -o %t/pruned.mlir
// RUN: FileCheck %s < %t/pruned.mlir
// CHECK-LABEL: func.func @main
// CHECK-SAME: layers = [{{[{]}}fraction = 5.000000e-01 : f64, kept = 2 : i64, kept_units = [1, 3], kind = "channels", node = "conv1", original = 4 : i64, reason = "as requested"
// CHECK-SAME: unprunable = [{kind = "channels", node = "conv2", reason = "it reaches the function's result"}]
// CHECK: %[[C1:.+]] = sluice.conv %arg0, %{{.+}}, %{{.+}} {{.+}} : (tensor<1x2x5x5xf32>, tensor<2x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x5x5xf32>
// CHECK: %[[BN:.+]] = sluice.batch_norm %[[C1]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : (tensor<1x2x5x5xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x5x5xf32>
// CHECK: %[[R:.+]] = sluice.relu %[[BN]] : (tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
// CHECK: sluice.conv %[[R]], %{{.+}}, %{{.+}} {{.+}} : (tensor<1x2x5x5xf32>, tensor<3x2x1x1xf32>, tensor<3xf32>) -> tensor<1x3x5x5xf32>
//
// RUN: sluice-opt %s --sluice-prune="channels=0.5 calibration=%t/cal budget=10 mask-only=1" -o %t/masked.mlir
// RUN: sluice-run %t/masked.mlir --reference x=%t/cal/set0/x.npy --save-outputs=%t/masked-out > /dev/null
// RUN: sluice-run %t/pruned.mlir --reference x=%t/cal/set0/x.npy --expect %t/masked-out/y.npy --rtol=1e-5 --atol=1e-6 | FileCheck %s --check-prefix=SAME
// SAME: output 'y' f32[1x3x5x5]: {{.*}}: ok
// RUN: not sluice-run %s --reference x=%t/cal/set0/x.npy --expect %t/masked-out/y.npy --rtol=1e-5 --atol=1e-6 | FileCheck %s --check-prefix=DIFFERENT
// DIFFERENT: MISMATCH
func.func @main(%x: tensor<1x2x5x5xf32>) -> tensor<1x3x5x5xf32> attributes {sluice.input_names = ["x"], sluice.output_names = ["y"]} {
  %w1 = sluice.constant dense<0.25> : tensor<4x2x3x3xf32>
  %b1 = sluice.constant dense<[0.1, 0.4, -0.2, 0.8]> : tensor<4xf32>
  %scale = sluice.constant dense<[1.0, 1.5, 0.5, 2.0]> : tensor<4xf32>
  %shift = sluice.constant dense<[0.0, 0.1, 0.2, 0.3]> : tensor<4xf32>
  %mean = sluice.constant dense<[0.5, 0.25, 1.0, 0.75]> : tensor<4xf32>
  %var = sluice.constant dense<[1.0, 2.0, 0.5, 4.0]> : tensor<4xf32>
  %w2 = sluice.constant dense<[[[[0.1]], [[1.0]], [[0.05]], [[-2.0]]], [[[0.1]], [[-1.0]], [[0.05]], [[2.0]]], [[[-0.1]], [[0.5]], [[0.1]], [[1.0]]]]> : tensor<3x4x1x1xf32>
  %b2 = sluice.constant dense<[0.0, 0.5, -0.5]> : tensor<3xf32>
  %0 = sluice.conv %x, %w1, %b1 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32> loc("conv1")
  %1 = sluice.batch_norm %0, %scale, %shift, %mean, %var : (tensor<1x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
  %2 = sluice.relu %1 : (tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32>
  %3 = sluice.conv %2, %w2, %b2 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x5x5xf32>, tensor<3x4x1x1xf32>, tensor<3xf32>) -> tensor<1x3x5x5xf32> loc("conv2")
  return %3 : tensor<1x3x5x5xf32>
}
