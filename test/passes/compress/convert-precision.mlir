// RUN: sluice-opt %s --split-input-file --sluice-convert-precision="precision=fp16" | FileCheck %s
// RUN: sluice-opt %s --split-input-file --sluice-convert-precision="precision=bf16" | FileCheck %s --check-prefix=BF16
// RUN: sluice-opt %s --split-input-file --sluice-compress-pipeline="precision=half" | FileCheck %s
// RUN: sluice-opt %s --split-input-file --sluice-compress-pipeline="precision=fp32" | FileCheck %s --check-prefix=FP32
// RUN: sluice-opt %s --split-input-file --sluice-compress-pipeline | FileCheck %s --check-prefix=FP32

// Weights are converted in the pass (no cast on a constant), the f32 input
// is cast once at the boundary, the output is cast back; exp stays fp32.
// CHECK-LABEL: func @mlp
// CHECK-SAME: (%[[X:.+]]: tensor<2x4xf32>) -> tensor<2x3xf32> attributes {sluice.precision = "fp16"}
// CHECK-DAG: %[[XH:.+]] = sluice.cast %[[X]] : tensor<2x4xf32> -> tensor<2x4xf16>
// CHECK-DAG: %[[W:.+]] = sluice.constant dense_resource<{{.+}}> : tensor<4x3xf16>
// CHECK-DAG: %[[B:.+]] = sluice.constant dense<5.000000e-01> : tensor<f16>
// CHECK: %[[MM:.+]] = sluice.matmul %[[XH]], %[[W]] : (tensor<2x4xf16>, tensor<4x3xf16>) -> tensor<2x3xf16>
// CHECK: %[[ADD:.+]] = sluice.add %[[MM]], %[[B]] : (tensor<2x3xf16>, tensor<f16>) -> tensor<2x3xf16>
// CHECK: %[[WIDE:.+]] = sluice.cast %[[ADD]] : tensor<2x3xf16> -> tensor<2x3xf32>
// CHECK: %[[EXP:.+]] = sluice.exp %[[WIDE]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: %[[NARROW:.+]] = sluice.cast %[[EXP]] : tensor<2x3xf32> -> tensor<2x3xf16>
// CHECK: %[[RELU:.+]] = sluice.relu %[[NARROW]] : (tensor<2x3xf16>) -> tensor<2x3xf16>
// CHECK: %[[OUT:.+]] = sluice.cast %[[RELU]] : tensor<2x3xf16> -> tensor<2x3xf32>
// CHECK: return %[[OUT]] : tensor<2x3xf32>
// CHECK-NOT: tensor<4x3xf32>
// BF16-LABEL: func @mlp
// BF16-SAME: attributes {sluice.precision = "bf16"}
// BF16-DAG: sluice.constant dense_resource<{{.+}}> : tensor<4x3xbf16>
// BF16: sluice.matmul {{.*}} : (tensor<2x4xbf16>, tensor<4x3xbf16>) -> tensor<2x3xbf16>
// BF16: sluice.exp {{.*}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// BF16: return {{.*}} : tensor<2x3xf32>
// FP32-LABEL: func @mlp
// FP32-NOT: f16
// FP32: sluice.matmul {{.*}} : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
func.func @mlp(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = sluice.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [1.0, -1.0, 0.5]]> : tensor<4x3xf32>
  %b = sluice.constant dense<0.5> : tensor<f32>
  %0 = sluice.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %1 = sluice.add %0, %b : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %2 = sluice.exp %1 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = sluice.relu %2 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %3 : tensor<2x3xf32>
}

// -----

// Finite constants saturate to f16's range (a -1e9 mask fill must not
// become -inf); infinities stay; bf16 holds 1e9 as it is.
// The blobs (after their 4-byte alignment word): f16 -65504, 65504, -inf,
// 1.0 (0xFBFF 0x7BFF 0xFC00 0x3C00); bf16 -1e9 (0xCE6E), 1e9, -inf, 1.0.
// CHECK-LABEL: func @saturate
// CHECK: sluice.constant dense_resource<[[BLOB:.+]]> : tensor<4xf16>
// CHECK: [[BLOB]]: "0x40000000FFFBFF7B00FC003C"
// BF16-LABEL: func @saturate
// BF16: sluice.constant dense_resource<[[BLOB:.+]]> : tensor<4xbf16>
// BF16: [[BLOB]]: "0x400000006ECE6E4E80FF803F"
func.func @saturate(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = sluice.constant dense<[-1.0e9, 1.0e9, 0xFF800000, 1.0]> : tensor<4xf32>
  %0 = sluice.add %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Integer tensors, indices and shapes are untouched; a Cast to f32 in the
// model still yields f32 (rounded once, as the model says), narrowed for
// its converted user; comparisons give i1 on half operands.
// CHECK-LABEL: func @integers
// CHECK-DAG: %[[TABLE:.+]] = sluice.constant dense_resource<{{.+}}> : tensor<3x2xf16>
// CHECK: %[[ROWS:.+]] = sluice.gather %[[TABLE]], %[[IDS:.+]] : (tensor<3x2xf16>, tensor<4xi64>) -> tensor<4x2xf16>
// CHECK: %[[POS:.+]] = sluice.cast %[[IDS]] : tensor<4xi64> -> tensor<4xf32>
// CHECK: %[[POSH:.+]] = sluice.cast %[[POS]] : tensor<4xf32> -> tensor<4xf16>
// CHECK: sluice.unsqueeze %[[POSH]], %{{.+}} : (tensor<4xf16>, tensor<1xi64>) -> tensor<4x1xf16>
// CHECK: sluice.less {{.*}} -> tensor<4x2xi1>
// CHECK: sluice.select {{.*}} : (tensor<4x2xi1>, tensor<4x2xf16>, tensor<4x2xf16>) -> tensor<4x2xf16>
// CHECK: %[[ARG:.+]] = sluice.argmax {{.*}} -> tensor<4x1xi64>
// CHECK: return {{.*}}, %[[ARG]] : tensor<4x2xf32>, tensor<4x1xi64>
func.func @integers(%ids: tensor<4xi64>) -> (tensor<4x2xf32>, tensor<4x1xi64>) {
  %table = sluice.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %axis = sluice.constant dense<[1]> : tensor<1xi64>
  %rows = sluice.gather %table, %ids : (tensor<3x2xf32>, tensor<4xi64>) -> tensor<4x2xf32>
  %pos = sluice.cast %ids : tensor<4xi64> -> tensor<4xf32>
  %col = sluice.unsqueeze %pos, %axis : (tensor<4xf32>, tensor<1xi64>) -> tensor<4x1xf32>
  %less = sluice.less %rows, %col : (tensor<4x2xf32>, tensor<4x1xf32>) -> tensor<4x2xi1>
  %neg = sluice.neg %rows : (tensor<4x2xf32>) -> tensor<4x2xf32>
  %sel = sluice.select %less, %rows, %neg : (tensor<4x2xi1>, tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %arg = sluice.argmax %sel {axis = 1 : i64} : (tensor<4x2xf32>) -> tensor<4x1xi64>
  return %sel, %arg : tensor<4x2xf32>, tensor<4x1xi64>
}

// -----

// Norms and softmax run in half (their kernels keep fp32 statistics; the
// layer_norm's mean and 1/stddev stay f32); sums stay fp32, max converts.
// CHECK-LABEL: func @rows
// CHECK: sluice.layer_norm {{.*}} : (tensor<4x8xf16>, tensor<8xf16>, tensor<8xf16>) -> (tensor<4x8xf16>, tensor<4x1xf32>, tensor<4x1xf32>)
// CHECK: sluice.softmax {{.*}} : (tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK: %[[WIDE:.+]] = sluice.cast %{{.+}} : tensor<4x8xf16> -> tensor<4x8xf32>
// CHECK: sluice.reduce %[[WIDE]], %{{.+}} {kind = #sluice<reduce_kind sum>} : (tensor<4x8xf32>, tensor<1xi64>) -> tensor<4x1xf32>
// CHECK: sluice.reduce %{{.+}}, %{{.+}} {kind = #sluice<reduce_kind max>} : (tensor<4x8xf16>, tensor<1xi64>) -> tensor<4x1xf16>
func.func @rows(%x: tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>) {
  %s = sluice.constant dense<1.0> : tensor<8xf32>
  %b = sluice.constant dense<0.0> : tensor<8xf32>
  %axes = sluice.constant dense<[-1]> : tensor<1xi64>
  %y, %mean, %inv = sluice.layer_norm %x, %s, %b {epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
  %p = sluice.softmax %y {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %sum = sluice.reduce %p, %axes {kind = #sluice<reduce_kind sum>} : (tensor<4x8xf32>, tensor<1xi64>) -> tensor<4x1xf32>
  %max = sluice.reduce %p, %axes {kind = #sluice<reduce_kind max>} : (tensor<4x8xf32>, tensor<1xi64>) -> tensor<4x1xf32>
  return %sum, %max : tensor<4x1xf32>, tensor<4x1xf32>
}

// -----

// Casts that cancel fold: the model's f16 -> f32 cast feeding a converted
// op, and its f32 -> f16 cast of a converted value. At bf16 they are not
// identities and stay.
// CHECK-LABEL: func @cancel
// CHECK-SAME: (%[[H:.+]]: tensor<4xf16>)
// CHECK-NEXT: %[[SUM:.+]] = sluice.add %[[H]], %[[H]] : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
// CHECK-NEXT: return %[[SUM]] : tensor<4xf16>
// BF16-LABEL: func @cancel
// BF16: sluice.cast %{{.+}} : tensor<4xf16> -> tensor<4xf32>
// BF16: sluice.cast %{{.+}} : tensor<4xf32> -> tensor<4xbf16>
// BF16: sluice.add {{.*}} -> tensor<4xbf16>
// BF16: sluice.cast %{{.+}} : tensor<4xbf16> -> tensor<4xf32>
// BF16: sluice.cast %{{.+}} : tensor<4xf32> -> tensor<4xf16>
func.func @cancel(%h: tensor<4xf16>) -> tensor<4xf16> {
  %0 = sluice.cast %h : tensor<4xf16> -> tensor<4xf32>
  %1 = sluice.add %0, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = sluice.cast %1 : tensor<4xf32> -> tensor<4xf16>
  return %2 : tensor<4xf16>
}
