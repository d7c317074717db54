// RUN: sluice-opt %s --split-input-file --sluice-fold-constants | FileCheck %s
// Reference semantics of blocked quantization (ONNX opset 21 block_size)
// and 4-bit integers, checked by folding constant operands through the
// evaluator (integer results stay dense attributes).

// Blocks of 2 rows along axis 0: rows 0-1 use scale row 0, row 2 row 1.
// int4 saturates to [-8, 7] (5 / 0.5 = 10 -> 7) and rounds half to even
// (-6 / 4 = -1.5 -> -2). Dequantizing multiplies back per block; the
// per-tensor requantization to i8 shows those values (3.5 -> 4).
// CHECK-LABEL: func @blocked_int4
// CHECK-DAG: %[[Q:.+]] = sluice.constant dense<{{\[}}[1, 1], [-3, 2], [7, -2]]> : tensor<3x2xi4>
// CHECK-DAG: %[[R:.+]] = sluice.constant dense<{{\[}}[1, 2], [-3, 4], [4, -8]]> : tensor<3x2xi8>
// CHECK: return %[[Q]], %[[R]]
func.func @blocked_int4() -> (tensor<3x2xi4>, tensor<3x2xi8>) {
  %x = sluice.constant dense<[[1.0, 2.0], [-3.0, 4.0], [5.0, -6.0]]> : tensor<3x2xf32>
  %s = sluice.constant dense<[[1.0, 2.0], [0.5, 4.0]]> : tensor<2x2xf32>
  %z = sluice.constant dense<0> : tensor<2x2xi4>
  %q = sluice.quantize_linear %x, %s, %z {axis = 0 : i64, block_size = 2 : i64} : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<2x2xi4>) -> tensor<3x2xi4>
  %d = sluice.dequantize_linear %q, %s {axis = 0 : i64, block_size = 2 : i64} : (tensor<3x2xi4>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %one = sluice.constant dense<1.0> : tensor<f32>
  %zero = sluice.constant dense<0> : tensor<i8>
  %r = sluice.quantize_linear %d, %one, %zero : (tensor<3x2xf32>, tensor<f32>, tensor<i8>) -> tensor<3x2xi8>
  return %q, %r : tensor<3x2xi4>, tensor<3x2xi8>
}

// -----

// Blocks along the last axis (block 3 over 4 columns: 2 blocks), uint4
// with a zero point per block.
// CHECK-LABEL: func @blocked_uint4_last_axis
// CHECK: %[[Q:.+]] = sluice.constant dense<{{\[}}[9, 10, 11, 4], [8, 8, 8, 15]]> : tensor<2x4xui4>
// CHECK: return %[[Q]]
func.func @blocked_uint4_last_axis() -> tensor<2x4xui4> {
  %x = sluice.constant dense<[[1.0, 2.0, 3.0, 0.0], [0.0, 0.0, 0.0, 100.0]]> : tensor<2x4xf32>
  %s = sluice.constant dense<[[1.0, 0.5], [1.0, 2.0]]> : tensor<2x2xf32>
  %z = sluice.constant dense<[[8, 4], [8, 4]]> : tensor<2x2xui4>
  %q = sluice.quantize_linear %x, %s, %z {axis = 1 : i64, block_size = 3 : i64} : (tensor<2x4xf32>, tensor<2x2xf32>, tensor<2x2xui4>) -> tensor<2x4xui4>
  return %q : tensor<2x4xui4>
}

// -----

// fp8 (f8E4M3FN, Form F8): quantize_linear rounds x / scale to the nearest
// E4M3 value, ties to even (34 lies halfway between 32 and 36: 32), and
// saturates at 448 (2000 -> 448); dequantize_linear multiplies back; a cast
// with saturate = false gives NaN (0x7F) out of range, 1.0625 rounds to 1.
// CHECK-LABEL: func @fp8_scalars
// CHECK-DAG: %[[Q:.+]] = sluice.constant dense<3.200000e+01> : tensor<f8E4M3FN>
// CHECK-DAG: %[[SAT:.+]] = sluice.constant dense<4.480000e+02> : tensor<f8E4M3FN>
// CHECK-DAG: %[[D:.+]] = sluice.constant dense<1.600000e+01> : tensor<f32>
// CHECK-DAG: %[[NAN:.+]] = sluice.constant dense<0x7F> : tensor<f8E4M3FN>
// CHECK-DAG: %[[ONE:.+]] = sluice.constant dense<1.000000e+00> : tensor<f8E4M3FN>
// CHECK: return %[[Q]], %[[SAT]], %[[D]], %[[NAN]], %[[ONE]]
func.func @fp8_scalars() -> (tensor<f8E4M3FN>, tensor<f8E4M3FN>, tensor<f32>, tensor<f8E4M3FN>, tensor<f8E4M3FN>) {
  %x = sluice.constant dense<17.0> : tensor<f32>
  %big = sluice.constant dense<1000.0> : tensor<f32>
  %s = sluice.constant dense<0.5> : tensor<f32>
  %z = sluice.constant dense<0.0> : tensor<f8E4M3FN>
  %q = sluice.quantize_linear %x, %s, %z : (tensor<f32>, tensor<f32>, tensor<f8E4M3FN>) -> tensor<f8E4M3FN>
  %sat = sluice.quantize_linear %big, %s, %z : (tensor<f32>, tensor<f32>, tensor<f8E4M3FN>) -> tensor<f8E4M3FN>
  %d = sluice.dequantize_linear %q, %s : (tensor<f8E4M3FN>, tensor<f32>) -> tensor<f32>
  %nan = sluice.cast %big {saturate = false} : tensor<f32> -> tensor<f8E4M3FN>
  %v = sluice.constant dense<1.0625> : tensor<f32>
  %one = sluice.cast %v : tensor<f32> -> tensor<f8E4M3FN>
  return %q, %sat, %d, %nan, %one : tensor<f8E4M3FN>, tensor<f8E4M3FN>, tensor<f32>, tensor<f8E4M3FN>, tensor<f8E4M3FN>
}
