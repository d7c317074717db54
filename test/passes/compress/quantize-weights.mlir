// RUN: sluice-opt %s --split-input-file --sluice-quantize-weights="bits=8" --mlir-print-debuginfo | FileCheck %s --check-prefix=W8
// RUN: sluice-opt %s --split-input-file --sluice-quantize-weights="bits=4 group=2" | FileCheck %s --check-prefix=W4
// RUN: sluice-opt %s --split-input-file --sluice-compress-pipeline="quantize=w8a16" --mlir-print-debuginfo | FileCheck %s --check-prefix=W8
// RUN: sluice-opt %s --split-input-file --sluice-compress-pipeline="precision=fp16 quantize=w8a16" | FileCheck %s --check-prefix=HALF
// RUN: sluice-opt %s --split-input-file --sluice-compress-pipeline="precision=bf16 quantize=w4a16" | FileCheck %s --check-prefix=BF16
// RUN: sluice-opt %s --split-input-file --sluice-compress-pipeline | FileCheck %s --check-prefix=NONE

// int8: per output column, max|w| / 127 rounded to f16 first (column 0:
// 7 / 127 -> 0.0551147, so 4 -> 73 and 7 -> 127). int4 with group 2: two
// blocks of two rows, max|w| / 7 per block and column. The f32 model casts
// the f16 dequantization back to f32; an fp16 model reads it directly. The
// new ops take the matmul's location.
// W8-LABEL: func @linear
// W8-DAG: %[[Q:.+]] = sluice.constant dense<{{\[}}[18, 32, 42], [73, 79, 85], [127, 127, 127], [18, -16, 7]]> : tensor<4x3xi8> loc(#[[LOC:.+]])
// W8-DAG: %[[S:.+]] = sluice.constant dense_resource<{{.+}}> : tensor<3xf16>
// W8: %[[D:.+]] = sluice.dequantize_linear %[[Q]], %[[S]] : (tensor<4x3xi8>, tensor<3xf16>) -> tensor<4x3xf16> loc(#[[LOC]])
// W8: %[[C:.+]] = sluice.cast %[[D]] : tensor<4x3xf16> -> tensor<4x3xf32> loc(#[[LOC]])
// W8: sluice.matmul %{{.+}}, %[[C]] : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32> loc(#[[LOC]])
// W8-NOT: tensor<4x3xf32>
// W8: #[[LOC]] = loc("fc1")
// W4-LABEL: func @linear
// W4-DAG: %[[Q:.+]] = sluice.constant dense<{{\[}}[2, 3, 4], [7, 7, 7], [7, 7, 7], [1, -1, 0]]> : tensor<4x3xi4>
// W4-DAG: %[[S:.+]] = sluice.constant dense_resource<{{.+}}> : tensor<2x3xf16>
// W4: %[[D:.+]] = sluice.dequantize_linear %[[Q]], %[[S]] {axis = 0 : i64, block_size = 2 : i64} : (tensor<4x3xi4>, tensor<2x3xf16>) -> tensor<4x3xf16>
// W4: %[[C:.+]] = sluice.cast %[[D]] : tensor<4x3xf16> -> tensor<4x3xf32>
// W4: sluice.matmul %{{.+}}, %[[C]]
// HALF-LABEL: func @linear
// HALF: %[[D:.+]] = sluice.dequantize_linear %{{.+}}, %{{.+}} : (tensor<4x3xi8>, tensor<3xf16>) -> tensor<4x3xf16>
// HALF-NOT: sluice.cast %[[D]]
// HALF: sluice.matmul %{{.+}}, %[[D]] : (tensor<2x4xf16>, tensor<4x3xf16>) -> tensor<2x3xf16>
// BF16-LABEL: func @linear
// BF16: %[[D:.+]] = sluice.dequantize_linear %{{.+}}, %{{.+}} {axis = 0 : i64, block_size = 4 : i64} : (tensor<4x3xi4>, tensor<1x3xf16>) -> tensor<4x3xf16>
// BF16: %[[C:.+]] = sluice.cast %[[D]] : tensor<4x3xf16> -> tensor<4x3xbf16>
// BF16: sluice.matmul %{{.+}}, %[[C]] : (tensor<2x4xbf16>, tensor<4x3xbf16>) -> tensor<2x3xbf16>
// NONE-LABEL: func @linear
// NONE-NOT: dequantize_linear
func.func @linear(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = sluice.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [1.0, -1.0, 0.5]]> : tensor<4x3xf32>
  %0 = sluice.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32> loc("fc1")
  return %0 : tensor<2x3xf32>
}

// -----

// Not rewritten: a B that is not a constant, and a vector A (no GEMM).
// W8-LABEL: func @untouched
// W8-NOT: dequantize_linear
// W8: sluice.matmul %{{.+}}, %{{.+}} : (tensor<2x4xf32>, tensor<4x3xf32>)
// W8: sluice.matmul %{{.+}}, %{{.+}} : (tensor<4xf32>, tensor<4x3xf32>)
// W4-LABEL: func @untouched
// W4-NOT: dequantize_linear
func.func @untouched(%x: tensor<2x4xf32>, %b: tensor<4x3xf32>, %v: tensor<4xf32>) -> (tensor<2x3xf32>, tensor<3xf32>) {
  %w = sluice.constant dense<1.0> : tensor<4x3xf32>
  %0 = sluice.matmul %x, %b : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %1 = sluice.matmul %v, %w : (tensor<4xf32>, tensor<4x3xf32>) -> tensor<3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<3xf32>
}

// -----

// One weight read by two matmuls is quantized once; each matmul gets its
// own dequantization (its GEMM group's prologue). K = 5 with the default
// group 128: one block of min(128, K) = 5 rows.
// W8-LABEL: func @shared
// W8: sluice.constant {{.+}} : tensor<5x2xi8>
// W8-NOT: sluice.constant {{.+}} : tensor<5x2xi8>
// W8: sluice.dequantize_linear
// W8-NOT: sluice.constant {{.+}} : tensor<5x2xi8>
// W8: sluice.dequantize_linear
// W4-LABEL: func @shared
// W4: sluice.dequantize_linear {{.*}} {axis = 0 : i64, block_size = 2 : i64} : (tensor<5x2xi4>, tensor<3x2xf16>)
func.func @shared(%x: tensor<3x5xf32>, %y: tensor<1x5xf32>) -> (tensor<3x2xf32>, tensor<1x2xf32>) {
  %w = sluice.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0], [9.0, 10.0]]> : tensor<5x2xf32>
  %0 = sluice.matmul %x, %w : (tensor<3x5xf32>, tensor<5x2xf32>) -> tensor<3x2xf32>
  %1 = sluice.matmul %y, %w : (tensor<1x5xf32>, tensor<5x2xf32>) -> tensor<1x2xf32>
  return %0, %1 : tensor<3x2xf32>, tensor<1x2xf32>
}
