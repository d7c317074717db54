// RUN: sluice-opt %s --split-input-file --sluice-fuse-pipeline 2>/dev/null | FileCheck %s
// RUN: sluice-opt %s --split-input-file --sluice-simplify-pipeline | FileCheck %s --check-prefix=FOLD

// Form W (docs/quantization.md): the dequantization of a constant weight (and the
// cast after it) is the GEMM's prologue, one gemm kernel with the epilogue;
// the simplify phase does not fold it into a float weight.
// CHECK-LABEL: func @int8_per_column
// CHECK: sluice.kernel @k0_matmul gemm library "gemm"(
// CHECK: sluice.dequantize_linear
// CHECK: sluice.cast
// CHECK: sluice.matmul
// CHECK: sluice.add
// CHECK: sluice.relu
// CHECK-NOT: sluice.kernel @
// CHECK: return
// FOLD-LABEL: func @int8_per_column
// FOLD: sluice.dequantize_linear
func.func @int8_per_column(%x: tensor<2x4xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %q = sluice.constant dense<[[1, 2, 3], [4, 5, 6], [7, 8, 9], [1, -1, 5]]> : tensor<4x3xi8>
  %s = sluice.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf16>
  %d = sluice.dequantize_linear %q, %s : (tensor<4x3xi8>, tensor<3xf16>) -> tensor<4x3xf16>
  %c = sluice.cast %d : tensor<4x3xf16> -> tensor<4x3xf32>
  %0 = sluice.matmul %x, %c : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %1 = sluice.add %0, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %2 = sluice.relu %1 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}

// -----

// int4 in blocks along K, f16 activations: no cast between the
// dequantization and the matmul.
// CHECK-LABEL: func @int4_blocked_half
// CHECK: sluice.kernel @k0_matmul gemm library "gemm"(
// CHECK: sluice.dequantize_linear {{.*}}block_size = 2
// CHECK-NEXT: sluice.matmul
// CHECK-NOT: sluice.kernel @
// CHECK: return
func.func @int4_blocked_half(%x: tensor<2x4xf16>) -> tensor<2x3xf16> {
  %q = sluice.constant dense<[[1, 2, 3], [4, 5, 6], [7, -8, 0], [1, -1, 5]]> : tensor<4x3xi4>
  %s = sluice.constant dense<[[0.5, 0.25, 0.125], [1.0, 2.0, 4.0]]> : tensor<2x3xf16>
  %d = sluice.dequantize_linear %q, %s {axis = 0 : i64, block_size = 2 : i64} : (tensor<4x3xi4>, tensor<2x3xf16>) -> tensor<4x3xf16>
  %0 = sluice.matmul %x, %d : (tensor<2x4xf16>, tensor<4x3xf16>) -> tensor<2x3xf16>
  return %0 : tensor<2x3xf16>
}

// -----

// Asymmetric unsigned weights with zero points per block (ONNX Runtime's
// default weight-only QDQ form) are Form W too.
// CHECK-LABEL: func @uint4_zero_points
// CHECK: sluice.kernel @k0_matmul gemm library "gemm"(
// CHECK: sluice.dequantize_linear
// CHECK-NEXT: sluice.matmul
// CHECK-NOT: sluice.kernel @
// FOLD-LABEL: func @uint4_zero_points
// FOLD: sluice.dequantize_linear
func.func @uint4_zero_points(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %q = sluice.constant dense<[[1, 2, 3], [4, 5, 6], [7, 8, 15], [1, 0, 5]]> : tensor<4x3xui4>
  %s = sluice.constant dense<[[0.5, 0.25, 0.125], [1.0, 2.0, 4.0]]> : tensor<2x3xf32>
  %z = sluice.constant dense<[[8, 8, 7], [0, 3, 15]]> : tensor<2x3xui4>
  %d = sluice.dequantize_linear %q, %s, %z {axis = 0 : i64, block_size = 2 : i64} : (tensor<4x3xui4>, tensor<2x3xf32>, tensor<2x3xui4>) -> tensor<4x3xf32>
  %0 = sluice.matmul %x, %d : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Not Form W: a per-tensor scale, and a weight that is an input. The
// dequantization is a kernel of its own (per tensor: elementwise); the GEMM
// reads its float result.
// The simplify phase folds the constant one (no GEMM takes it as a
// prologue).
// CHECK-LABEL: func @not_weight_only
// CHECK: sluice.kernel @k0_dequantize_linear elementwise(
// CHECK: sluice.kernel @k1_matmul gemm
// CHECK-NOT: sluice.dequantize_linear
// CHECK: sluice.kernel @k2_dequantize_linear single(
// CHECK: sluice.kernel @k3_matmul gemm
// CHECK-NOT: sluice.dequantize_linear
// CHECK: return
// FOLD-LABEL: func @not_weight_only
// FOLD-COUNT-1: sluice.dequantize_linear
// FOLD-NOT: sluice.dequantize_linear
func.func @not_weight_only(%x: tensor<2x4xf32>, %w: tensor<4x3xi8>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %q = sluice.constant dense<[[1, 2, 3], [4, 5, 6], [7, 8, 9], [1, -1, 5]]> : tensor<4x3xi8>
  %t = sluice.constant dense<0.5> : tensor<f32>
  %z = sluice.constant dense<1> : tensor<i8>
  %d = sluice.dequantize_linear %q, %t, %z : (tensor<4x3xi8>, tensor<f32>, tensor<i8>) -> tensor<4x3xf32>
  %0 = sluice.matmul %x, %d : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %s = sluice.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %e = sluice.dequantize_linear %w, %s : (tensor<4x3xi8>, tensor<3xf32>) -> tensor<4x3xf32>
  %1 = sluice.matmul %x, %e : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}
