// RUN: sluice-opt %s --split-input-file | sluice-opt | FileCheck %s
// Round trip of the linalg family: contractions, convolutions, pooling,
// normalizations, quantization and recurrent ops.

// CHECK-LABEL: func @matmul
func.func @matmul(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
  // CHECK: sluice.matmul %{{.*}}, %{{.*}} : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  %0 = sluice.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// CHECK-LABEL: func @matmul_integer
func.func @matmul_integer(%a: tensor<4x3xui8>, %b: tensor<3x2xui8>, %za: tensor<ui8>, %zb: tensor<2xui8>) -> tensor<4x2xi32> {
  // CHECK: sluice.matmul_integer %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x3xui8>, tensor<3x2xui8>, tensor<ui8>, tensor<2xui8>) -> tensor<4x2xi32>
  %0 = sluice.matmul_integer %a, %b, %za, %zb : (tensor<4x3xui8>, tensor<3x2xui8>, tensor<ui8>, tensor<2xui8>) -> tensor<4x2xi32>
  return %0 : tensor<4x2xi32>
}

// -----

// CHECK-LABEL: func @conv
func.func @conv(%x: tensor<1x4x5x5xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>, %d: tensor<?x4x?x5xf32>) -> tensor<1x6x3x3xf32> {
  // CHECK: sluice.conv %{{.*}}, %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x5x5xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x3x3xf32>
  %0 = sluice.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x5x5xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x3x3xf32>
  // Without bias; dynamic dims stay dynamic.
  // CHECK: sluice.conv {{.*}} -> tensor<?x6x?x3xf32>
  %1 = sluice.conv %d, %w {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<?x4x?x5xf32>, tensor<6x2x3x3xf32>) -> tensor<?x6x?x3xf32>
  return %0 : tensor<1x6x3x3xf32>
}

// -----

// CHECK-LABEL: func @conv_transpose
func.func @conv_transpose(%x: tensor<1x1x3x3xf32>, %w: tensor<1x2x3x3xf32>) -> tensor<1x2x10x8xf32> {
  // CHECK: sluice.conv_transpose {{.*}} output_padding = array<i64: 1, 1>{{.*}} -> tensor<1x2x10x8xf32>
  %0 = sluice.conv_transpose %x, %w {dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 3, 2>} : (tensor<1x1x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x10x8xf32>
  return %0 : tensor<1x2x10x8xf32>
}

// -----

// CHECK-LABEL: func @conv_integer
func.func @conv_integer(%x: tensor<1x1x3x3xui8>, %w: tensor<1x1x2x2xui8>, %zx: tensor<ui8>, %zw: tensor<ui8>) -> tensor<1x1x2x2xi32> {
  // CHECK: sluice.conv_integer {{.*}} -> tensor<1x1x2x2xi32>
  %0 = sluice.conv_integer %x, %w, %zx, %zw {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x3x3xui8>, tensor<1x1x2x2xui8>, tensor<ui8>, tensor<ui8>) -> tensor<1x1x2x2xi32>
  return %0 : tensor<1x1x2x2xi32>
}

// -----

// CHECK-LABEL: func @pool
func.func @pool(%x: tensor<1x3x32x32xf32>) -> (tensor<1x3x16x16xf32>, tensor<1x3x16x16xi64>) {
  // CHECK: %{{.*}}, %{{.*}} = sluice.pool {{.*}}kind = #sluice<pool_kind max>{{.*}}return_indices{{.*}} -> (tensor<1x3x16x16xf32>, tensor<1x3x16x16xi64>)
  %0, %1 = sluice.pool %x {kind = #sluice<pool_kind max>, kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, return_indices} : (tensor<1x3x32x32xf32>) -> (tensor<1x3x16x16xf32>, tensor<1x3x16x16xi64>)
  // ceil_mode keeps the partial last window.
  // CHECK: sluice.pool {{.*}}ceil_mode = true{{.*}} -> tensor<1x3x11x11xf32>
  %2 = sluice.pool %x {kind = #sluice<pool_kind avg>, kernel_shape = array<i64: 3, 3>, strides = array<i64: 3, 3>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = true, count_include_pad = true} : (tensor<1x3x32x32xf32>) -> tensor<1x3x11x11xf32>
  // CHECK: sluice.pool {{.*}}kind = #sluice<pool_kind lp>{{.*}}p = 3
  %3 = sluice.pool %x {kind = #sluice<pool_kind lp>, kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, p = 3 : i64} : (tensor<1x3x32x32xf32>) -> tensor<1x3x16x16xf32>
  return %0, %1 : tensor<1x3x16x16xf32>, tensor<1x3x16x16xi64>
}

// -----

// CHECK-LABEL: func @norms
func.func @norms(%x: tensor<2x4x3x3xf32>, %c: tensor<4xf32>, %g: tensor<2xf32>, %s: tensor<3x3xf32>) -> tensor<2x4x3x3xf32> {
  // CHECK: sluice.batch_norm {{.*}} {epsilon = 1.000000e-03 : f32} {{.*}} -> tensor<2x4x3x3xf32>
  %0 = sluice.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-3 : f32} : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  // CHECK: sluice.instance_norm {{.*}} -> tensor<2x4x3x3xf32>
  %1 = sluice.instance_norm %0, %c, %c : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  // CHECK: sluice.group_norm {{.*}}num_groups = 2 : i64{{.*}} -> tensor<2x4x3x3xf32>
  %2 = sluice.group_norm %1, %g, %g {num_groups = 2 : i64} : (tensor<2x4x3x3xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x4x3x3xf32>
  // CHECK: sluice.lrn {{.*}}size = 3 : i64{{.*}} -> tensor<2x4x3x3xf32>
  %3 = sluice.lrn %2 {size = 3 : i64} : (tensor<2x4x3x3xf32>) -> tensor<2x4x3x3xf32>
  // CHECK: %{{.*}}, %{{.*}}, %{{.*}} = sluice.layer_norm {{.*}}axis = 2 : i64{{.*}} -> (tensor<2x4x3x3xf32>, tensor<2x4x1x1xf32>, tensor<2x4x1x1xf32>)
  %4:3 = sluice.layer_norm %3, %s {axis = 2 : i64} : (tensor<2x4x3x3xf32>, tensor<3x3xf32>) -> (tensor<2x4x3x3xf32>, tensor<2x4x1x1xf32>, tensor<2x4x1x1xf32>)
  return %4#0 : tensor<2x4x3x3xf32>
}

// -----

// CHECK-LABEL: func @einsum_det
func.func @einsum_det(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>, %d: tensor<5x3x3xf64>) -> tensor<2x3x5xf32> {
  // CHECK: sluice.einsum %{{.*}}, %{{.*}} {equation = "bij,bjk->bik"} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %0 = sluice.einsum %a, %b {equation = "bij,bjk->bik"} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  // Implicit output: the labels seen once, sorted, after the ellipsis.
  // CHECK: sluice.einsum {{.*}} -> tensor<2x4x3xf32>
  %1 = sluice.einsum %a {equation = "...ji"} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  // CHECK: sluice.det %{{.*}} : (tensor<5x3x3xf64>) -> tensor<5xf64>
  %2 = sluice.det %d : (tensor<5x3x3xf64>) -> tensor<5xf64>
  return %0 : tensor<2x3x5xf32>
}

// -----

// CHECK-LABEL: func @quantize
func.func @quantize(%x: tensor<3x4xf32>, %s: tensor<f32>, %z: tensor<i8>, %sa: tensor<4xf32>, %za: tensor<4xui8>) -> tensor<3x4xf32> {
  // CHECK: sluice.quantize_linear {{.*}} -> tensor<3x4xi8>
  %0 = sluice.quantize_linear %x, %s, %z : (tensor<3x4xf32>, tensor<f32>, tensor<i8>) -> tensor<3x4xi8>
  // Without zero point the result is uint8.
  // CHECK: sluice.quantize_linear {{.*}} -> tensor<3x4xui8>
  %1 = sluice.quantize_linear %x, %s : (tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xui8>
  // The default axis (1) is elided.
  // CHECK: sluice.dequantize_linear %{{.*}}, %{{.*}}, %{{.*}} : (tensor<3x4xui8>, tensor<4xf32>, tensor<4xui8>) -> tensor<3x4xf32>
  %2 = sluice.dequantize_linear %1, %sa, %za {axis = 1 : i64} : (tensor<3x4xui8>, tensor<4xf32>, tensor<4xui8>) -> tensor<3x4xf32>
  return %2 : tensor<3x4xf32>
}

// -----

// CHECK-LABEL: func @recurrent
func.func @recurrent(%x: tensor<5x2x3xf32>, %w: tensor<1x16x3xf32>, %r: tensor<1x16x4xf32>, %b: tensor<1x32xf32>, %lens: tensor<2xi32>, %h: tensor<1x2x4xf32>, %p: tensor<1x12xf32>) -> tensor<1x2x4xf32> {
  // CHECK: %{{.*}}, %{{.*}}, %{{.*}} = sluice.rnn {{.*}}cell = "lstm"{{.*}} -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
  %y:3 = sluice.rnn %x, %w, %r, %b, %lens, %h, %h, %p {activation_alpha = array<f32>, activation_beta = array<f32>, activations = ["Sigmoid", "Tanh", "Tanh"], cell = "lstm", direction = "forward", hidden_size = 4 : i64} : (tensor<5x2x3xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, tensor<1x32xf32>, tensor<2xi32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x12xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>)
  return %y#2 : tensor<1x2x4xf32>
}

// -----

// CHECK-LABEL: func @max_unpool
func.func @max_unpool(%x: tensor<1x1x2x2xf32>, %i: tensor<1x1x2x2xi64>, %s: tensor<4xi64>) -> tensor<1x1x4x4xf32> {
  // CHECK: sluice.max_unpool %{{.*}}, %{{.*}} {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>) -> tensor<1x1x4x4xf32>
  %0 = sluice.max_unpool %x, %i {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>) -> tensor<1x1x4x4xf32>
  // A runtime output_shape leaves the dims dynamic.
  // CHECK: sluice.max_unpool {{.*}} -> tensor<?x?x?x?xf32>
  %1 = sluice.max_unpool %x, %i, %s {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xi64>, tensor<4xi64>) -> tensor<?x?x?x?xf32>
  return %0 : tensor<1x1x4x4xf32>
}
