// RUN: sluice-opt %s --split-input-file --sluice-decompose-composites | FileCheck %s
// RUN: sluice-opt %s --split-input-file --sluice-decompose-composites="ops=sluice.attention,sluice.rms_norm" | FileCheck %s --check-prefix=SOME

// CHECK-LABEL: func @gelu_erf
// CHECK: %[[D:.+]] = sluice.div %arg0, %{{.+}}
// CHECK: %[[E:.+]] = sluice.erf %[[D]]
// CHECK: %[[P:.+]] = sluice.add %[[E]], %{{.+}}
// CHECK: %[[XP:.+]] = sluice.mul %arg0, %[[P]]
// CHECK: %[[Y:.+]] = sluice.mul %[[XP]], %{{.+}}
// CHECK: return %[[Y]]
// SOME-LABEL: func @gelu_erf
// SOME: sluice.gelu
func.func @gelu_erf(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = sluice.gelu %x : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// CHECK-LABEL: func @gelu_tanh_silu
// CHECK-NOT: sluice.gelu
// CHECK: sluice.tanh
// CHECK: %[[S:.+]] = sluice.sigmoid %arg0
// CHECK: sluice.mul %arg0, %[[S]]
// SOME-LABEL: func @gelu_tanh_silu
// SOME: sluice.gelu
// SOME: sluice.silu
func.func @gelu_tanh_silu(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %0 = sluice.gelu %x {approximate = "tanh"} : (tensor<8xf32>) -> tensor<8xf32>
  %1 = sluice.silu %x : (tensor<8xf32>) -> tensor<8xf32>
  return %0, %1 : tensor<8xf32>, tensor<8xf32>
}

// -----

// Statistics in f32 for an f16 input: casts around the normalization.
// CHECK-LABEL: func @norms
// CHECK: %[[XF:.+]] = sluice.cast %arg0 : tensor<2x8xf16> -> tensor<2x8xf32>
// CHECK: %[[SQ:.+]] = sluice.mul %[[XF]], %[[XF]]
// CHECK: %[[MS:.+]] = sluice.reduce %[[SQ]], %{{.+}} {kind = #sluice<reduce_kind mean>}
// CHECK: %[[R:.+]] = sluice.rsqrt
// CHECK: %[[N:.+]] = sluice.mul %[[XF]], %[[R]]
// CHECK: %[[NH:.+]] = sluice.cast %[[N]] : tensor<2x8xf32> -> tensor<2x8xf16>
// CHECK: %[[RMS:.+]] = sluice.mul %[[NH]], %arg1
// CHECK: %[[M:.+]] = sluice.reduce %arg2
// CHECK: %[[C:.+]] = sluice.sub %arg2, %[[M]]
// CHECK: %[[LN:.+]] = sluice.add %{{.+}}, %arg4
// CHECK: return %[[RMS]], %[[LN]], %[[M]]
// SOME-LABEL: func @norms
// SOME-NOT: sluice.rms_norm
// SOME: sluice.layer_norm
func.func @norms(%x: tensor<2x8xf16>, %w: tensor<8xf16>, %y: tensor<2x8xf32>, %s: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<2x8xf16>, tensor<2x8xf32>, tensor<2x1xf32>) {
  %0 = sluice.rms_norm %x, %w {axis = -1 : i64, epsilon = 1.0e-6 : f32} : (tensor<2x8xf16>, tensor<8xf16>) -> tensor<2x8xf16>
  %1, %mean, %inv = sluice.layer_norm %y, %s, %b {axis = 1 : i64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return %0, %1, %mean : tensor<2x8xf16>, tensor<2x8xf32>, tensor<2x1xf32>
}

// -----

// Attention: rotary on q and k, K transposed, scale, i1 keep-mask by
// Select, causal as an additive constant, softmax, second matmul.
// CHECK-LABEL: func @attention
// CHECK: %[[QC:.+]] = sluice.mul %arg0, %arg4
// CHECK: sluice.neg
// CHECK: sluice.concat
// CHECK: %[[QR:.+]] = sluice.add %[[QC]], %{{.+}}
// CHECK: %[[KR:.+]] = sluice.add
// CHECK: %[[KT:.+]] = sluice.transpose %[[KR]] {perm = array<i64: 0, 1, 3, 2>}
// CHECK: %[[S:.+]] = sluice.matmul %[[QR]], %[[KT]]
// CHECK: %[[SS:.+]] = sluice.mul %[[S]], %{{.+}}
// CHECK: %[[NINF:.+]] = sluice.constant dense<0xFF800000> : tensor<f32>
// CHECK: %[[M:.+]] = sluice.select %arg3, %[[SS]], %[[NINF]]
// CHECK: %[[CAUSAL:.+]] = sluice.constant dense<{{\[\[}}0.000000e+00, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0xFF800000], [0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<3x3xf32>
// CHECK: %[[C:.+]] = sluice.add %[[M]], %[[CAUSAL]]
// CHECK: %[[P:.+]] = sluice.softmax %[[C]] {axis = -1 : i64}
// CHECK: %[[O:.+]] = sluice.matmul %[[P]], %arg2
// CHECK: return %[[O]]
// SOME-LABEL: func @attention
// SOME-NOT: sluice.attention
// SOME: sluice.softmax
func.func @attention(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %keep: tensor<1x1x1x3xi1>, %cos: tensor<3x4xf32>, %sin: tensor<3x4xf32>) -> tensor<1x2x3x4xf32> {
  %0 = sluice.attention %q, %k, %v mask %keep rotary(%cos, %sin) {scale = 0.5 : f32, causal = true} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x1x1x3xi1>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<1x2x3x4xf32>
  return %0 : tensor<1x2x3x4xf32>
}
