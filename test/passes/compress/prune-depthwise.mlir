// sluice-prune through a depthwise convolution (MobileNet's separable
// block): the pointwise convolution's output channels, the depthwise
// filters and biases of the same channels (its group count follows) and
// the next pointwise convolution's input channels go together. Channels 1
// and 3 feed the heavy weights of the last convolution: they stay. The
// pruned block computes what the unpruned one computes with the same
// channels' weights zeroed (mask-only).
// RUN: rm -rf %t && %python %S/Inputs/prune_data.py %t/cal x=1x2x5x5
// RUN: sluice-opt %s --sluice-prune="channels=0.5 calibration=%t/cal budget=10" -o %t/pruned.mlir
// RUN: FileCheck %s < %t/pruned.mlir
// CHECK-LABEL: func.func @main
// CHECK-SAME: layers = [{{[{]}}fraction = 5.000000e-01 : f64, kept = 2 : i64, kept_units = [1, 3], kind = "channels", node = "pointwise1", original = 4 : i64, reason = "as requested"
// CHECK: %[[P:.+]] = sluice.conv %arg0, %{{.+}}, %{{.+}} {{.+}} : (tensor<1x2x5x5xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x5x5xf32>
// CHECK: %[[R:.+]] = sluice.relu %[[P]] : (tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
// CHECK: %[[D:.+]] = sluice.conv %[[R]], %{{.+}}, %{{.+}} {{{.*}}group = 2 : i64{{.*}}} : (tensor<1x2x5x5xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>) -> tensor<1x2x5x5xf32>
// CHECK: %[[R2:.+]] = sluice.relu %[[D]] : (tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
// CHECK: sluice.conv %[[R2]], %{{.+}}, %{{.+}} {{.+}} : (tensor<1x2x5x5xf32>, tensor<3x2x1x1xf32>, tensor<3xf32>) -> tensor<1x3x5x5xf32>
//
// RUN: sluice-opt %s --sluice-prune="channels=0.5 calibration=%t/cal budget=10 mask-only=1" -o %t/masked.mlir
// RUN: sluice-run %t/masked.mlir --reference x=%t/cal/set0/x.npy --save-outputs=%t/masked-out > /dev/null
// RUN: sluice-run %t/pruned.mlir --reference x=%t/cal/set0/x.npy --expect %t/masked-out/y.npy --rtol=1e-5 --atol=1e-6 | FileCheck %s --check-prefix=SAME
// SAME: output 'y' f32[1x3x5x5]: {{.*}}: ok
// RUN: not sluice-run %s --reference x=%t/cal/set0/x.npy --expect %t/masked-out/y.npy --rtol=1e-5 --atol=1e-6 | FileCheck %s --check-prefix=DIFFERENT
// DIFFERENT: MISMATCH
func.func @main(%x: tensor<1x2x5x5xf32>) -> tensor<1x3x5x5xf32> attributes {sluice.input_names = ["x"], sluice.output_names = ["y"]} {
  %w1 = sluice.constant dense<[[[[0.5]], [[0.25]]], [[[0.5]], [[-0.25]]], [[[1.0]], [[0.5]]], [[[0.75]], [[0.5]]]]> : tensor<4x2x1x1xf32>
  %b1 = sluice.constant dense<[0.1, 0.4, -0.2, 0.8]> : tensor<4xf32>
  %wd = sluice.constant dense<[[[[0.1, 0.2, 0.1], [0.2, 0.4, 0.2], [0.1, 0.2, 0.1]]], [[[0.0, 0.1, 0.0], [0.1, 0.5, 0.1], [0.0, 0.1, 0.0]]], [[[0.2, 0.0, -0.2], [0.2, 0.0, -0.2], [0.2, 0.0, -0.2]]], [[[0.1, 0.1, 0.1], [0.1, 0.1, 0.1], [0.1, 0.1, 0.1]]]]> : tensor<4x1x3x3xf32>
  %bd = sluice.constant dense<[0.05, 0.1, 0.15, 0.2]> : tensor<4xf32>
  %w2 = sluice.constant dense<[[[[0.1]], [[1.0]], [[0.05]], [[-2.0]]], [[[0.1]], [[-1.0]], [[0.05]], [[2.0]]], [[[-0.1]], [[0.5]], [[0.1]], [[1.0]]]]> : tensor<3x4x1x1xf32>
  %b2 = sluice.constant dense<[0.0, 0.5, -0.5]> : tensor<3xf32>
  %0 = sluice.conv %x, %w1, %b1 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x5x5xf32>, tensor<4x2x1x1xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32> loc("pointwise1")
  %1 = sluice.relu %0 : (tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32>
  %2 = sluice.conv %1, %wd, %bd {dilations = array<i64: 1, 1>, group = 4 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x4x5x5xf32>, tensor<4x1x3x3xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32> loc("depthwise")
  %3 = sluice.relu %2 : (tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32>
  %4 = sluice.conv %3, %w2, %b2 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x5x5xf32>, tensor<3x4x1x1xf32>, tensor<3xf32>) -> tensor<1x3x5x5xf32> loc("pointwise2")
  return %4 : tensor<1x3x5x5xf32>
}
