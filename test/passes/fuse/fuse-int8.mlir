// RUN: sluice-opt %s --split-input-file --sluice-fuse-pipeline 2>/dev/null | FileCheck %s
// RUN: sluice-opt %s --split-input-file --sluice-fuse-pipeline 2>/dev/null | sluice-opt --split-input-file | FileCheck %s

// Form I8 (docs/quantization.md) in the fuse phase: an int8
// matmul_integer / conv_integer is a GEMM anchor (library "gemm") whose
// elementwise epilogue grows like a float GEMM's, trailing quantize
// included; per-tensor quantize_linear / dequantize_linear are elementwise,
// so QDQ pairs fuse with their neighbours and a quantize joins a row op's
// epilogue. Per-axis ones and other integer matmuls stay ops of their own.

// The whole dequantize-and-requantize chain is the GEMM's epilogue: one kernel.
// CHECK-LABEL: func @gemm_epilogue
// CHECK: sluice.kernel @k0_quantize_linear elementwise(
// CHECK: sluice.kernel @k1_matmul_integer gemm library "gemm"(
// CHECK-NEXT: ^bb0(
// CHECK-DAG: sluice.constant dense<128> : tensor<ui8>
// CHECK-DAG: sluice.constant dense<0> : tensor<i8>
// CHECK: sluice.matmul_integer
// CHECK-NEXT: sluice.cast
// CHECK-NEXT: sluice.mul
// CHECK-NEXT: sluice.add
// CHECK-NEXT: sluice.relu
// CHECK-NEXT: sluice.quantize_linear
// CHECK-NEXT: sluice.kernel_yield
// CHECK-NOT: sluice.kernel @
// CHECK: return
func.func @gemm_epilogue(%x: tensor<4x16xf32>, %w: tensor<16x8xi8>, %s: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xui8> {
  %sx = sluice.constant dense<0.02> : tensor<f32>
  %zx = sluice.constant dense<128> : tensor<ui8>
  %zw = sluice.constant dense<0> : tensor<i8>
  %sy = sluice.constant dense<0.05> : tensor<f32>
  %zy = sluice.constant dense<7> : tensor<ui8>
  %xq = sluice.quantize_linear %x, %sx, %zx : (tensor<4x16xf32>, tensor<f32>, tensor<ui8>) -> tensor<4x16xui8>
  %acc = sluice.matmul_integer %xq, %w, %zx, %zw : (tensor<4x16xui8>, tensor<16x8xi8>, tensor<ui8>, tensor<i8>) -> tensor<4x8xi32>
  %f = sluice.cast %acc : tensor<4x8xi32> -> tensor<4x8xf32>
  %y = sluice.mul %f, %s : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %z = sluice.add %y, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %r = sluice.relu %z : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %q = sluice.quantize_linear %r, %sy, %zy : (tensor<4x8xf32>, tensor<f32>, tensor<ui8>) -> tensor<4x8xui8>
  return %q : tensor<4x8xui8>
}

// -----

// An int8 convolution with its per-channel dequantization: one kernel.
// CHECK-LABEL: func @conv_epilogue
// CHECK: sluice.kernel @k0_conv_integer gemm library "gemm"(
// CHECK: sluice.conv_integer
// CHECK-NEXT: sluice.cast
// CHECK-NEXT: sluice.mul
// CHECK-NEXT: sluice.add
// CHECK-NEXT: sluice.kernel_yield
// CHECK-NOT: sluice.kernel @
// CHECK: return
func.func @conv_epilogue(%x: tensor<1x4x6x6xui8>, %w: tensor<8x4x3x3xi8>, %s: tensor<8x1x1xf32>, %b: tensor<8x1x1xf32>) -> tensor<1x8x6x6xf32> {
  %zx = sluice.constant dense<128> : tensor<ui8>
  %zw = sluice.constant dense<0> : tensor<i8>
  %acc = sluice.conv_integer %x, %w, %zx, %zw {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x4x6x6xui8>, tensor<8x4x3x3xi8>, tensor<ui8>, tensor<i8>) -> tensor<1x8x6x6xi32>
  %f = sluice.cast %acc : tensor<1x8x6x6xi32> -> tensor<1x8x6x6xf32>
  %y = sluice.mul %f, %s : (tensor<1x8x6x6xf32>, tensor<8x1x1xf32>) -> tensor<1x8x6x6xf32>
  %z = sluice.add %y, %b : (tensor<1x8x6x6xf32>, tensor<8x1x1xf32>) -> tensor<1x8x6x6xf32>
  return %z : tensor<1x8x6x6xf32>
}

// -----

// A QDQ pair around an elementwise op (ONNX Runtime's QDQ format around an
// Add) fuses with it and its neighbours into one elementwise kernel.
// CHECK-LABEL: func @qdq_pair
// CHECK: sluice.kernel @k0_quantize_linear elementwise(
// CHECK: sluice.dequantize_linear
// CHECK: sluice.dequantize_linear
// CHECK: sluice.add
// CHECK: sluice.quantize_linear
// CHECK-NEXT: sluice.kernel_yield
// CHECK-NOT: sluice.kernel @
// CHECK: return
func.func @qdq_pair(%a: tensor<4x8xui8>, %b: tensor<4x8xui8>) -> tensor<4x8xui8> {
  %s = sluice.constant dense<0.02> : tensor<f32>
  %z = sluice.constant dense<128> : tensor<ui8>
  %fa = sluice.dequantize_linear %a, %s, %z : (tensor<4x8xui8>, tensor<f32>, tensor<ui8>) -> tensor<4x8xf32>
  %fb = sluice.dequantize_linear %b, %s, %z : (tensor<4x8xui8>, tensor<f32>, tensor<ui8>) -> tensor<4x8xf32>
  %sum = sluice.add %fa, %fb : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %q = sluice.quantize_linear %sum, %s, %z : (tensor<4x8xf32>, tensor<f32>, tensor<ui8>) -> tensor<4x8xui8>
  return %q : tensor<4x8xui8>
}

// -----

// A quantize after a layer norm is the row kernel's epilogue; the
// dequantize before it its prologue.
// CHECK-LABEL: func @row_epilogue
// CHECK: sluice.kernel @k0_layer_norm row(
// CHECK: sluice.dequantize_linear
// CHECK: sluice.layer_norm
// CHECK: sluice.quantize_linear
// CHECK-NEXT: sluice.kernel_yield
// CHECK-NOT: sluice.kernel @
// CHECK: return
func.func @row_epilogue(%x: tensor<4x8xi8>, %g: tensor<8xf32>) -> tensor<4x8xui8> {
  %s = sluice.constant dense<0.02> : tensor<f32>
  %zi = sluice.constant dense<0> : tensor<i8>
  %z = sluice.constant dense<128> : tensor<ui8>
  %f = sluice.dequantize_linear %x, %s, %zi : (tensor<4x8xi8>, tensor<f32>, tensor<i8>) -> tensor<4x8xf32>
  %y, %mean, %inv = sluice.layer_norm %f, %g {epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
  %q = sluice.quantize_linear %y, %s, %z : (tensor<4x8xf32>, tensor<f32>, tensor<ui8>) -> tensor<4x8xui8>
  return %q : tensor<4x8xui8>
}

// -----

// Not int8 GEMMs: a per-axis quantize is an op of its own; a matmul_integer
// with a u8 weight (or a non-zero weight zero point) stays the generic single op.
// CHECK-LABEL: func @not_int8
// CHECK: sluice.kernel @k0_quantize_linear single(
// CHECK: sluice.kernel @k1_matmul_integer single(
// CHECK: sluice.kernel @k2_cast elementwise(
// CHECK: sluice.kernel @k3_matmul_integer single(
func.func @not_int8(%x: tensor<4x16xf32>, %sc: tensor<16xf32>, %a: tensor<4x16xui8>, %w: tensor<16x8xui8>, %w8: tensor<16x8xi8>) -> (tensor<4x16xui8>, tensor<4x8xf32>, tensor<4x8xi32>) {
  %zc = sluice.constant dense<3> : tensor<16xui8>
  %q = sluice.quantize_linear %x, %sc, %zc {axis = 1 : i64} : (tensor<4x16xf32>, tensor<16xf32>, tensor<16xui8>) -> tensor<4x16xui8>
  %za = sluice.constant dense<128> : tensor<ui8>
  %zw = sluice.constant dense<0> : tensor<ui8>
  %acc = sluice.matmul_integer %a, %w, %za, %zw : (tensor<4x16xui8>, tensor<16x8xui8>, tensor<ui8>, tensor<ui8>) -> tensor<4x8xi32>
  %f = sluice.cast %acc : tensor<4x8xi32> -> tensor<4x8xf32>
  %z1 = sluice.constant dense<1> : tensor<i8>
  %acc2 = sluice.matmul_integer %a, %w8, %za, %z1 : (tensor<4x16xui8>, tensor<16x8xi8>, tensor<ui8>, tensor<i8>) -> tensor<4x8xi32>
  return %q, %f, %acc2 : tensor<4x16xui8>, tensor<4x8xf32>, tensor<4x8xi32>
}
