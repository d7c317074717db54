// RUN: sluice-opt %s --split-input-file --sluice-recognize-norms | FileCheck %s

// LayerNorm as torch.onnx (opset < 17) writes it: Pow, Div by Sqrt, scale, bias.
// CHECK-LABEL: func @layer_norm_pow_div
// CHECK-SAME: (%[[X:.+]]: tensor<2x4x8xf32>, %[[S:.+]]: tensor<8xf32>, %[[B:.+]]: tensor<8xf32>)
// CHECK-NOT: sluice.reduce
// CHECK: %[[Y:.+]], %{{.+}}, %{{.+}} = sluice.layer_norm %[[X]], %[[S]], %[[B]] {axis = 2 : i64}
// CHECK-NOT: sluice.sqrt
// CHECK: return %[[Y]]
func.func @layer_norm_pow_div(%x: tensor<2x4x8xf32>, %s: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %axes = sluice.constant dense<-1> : tensor<1xi64>
  %two = sluice.constant dense<2.0> : tensor<f32>
  %eps = sluice.constant dense<1.0e-5> : tensor<f32>
  %m = sluice.reduce %x, %axes {kind = #sluice<reduce_kind mean>} : (tensor<2x4x8xf32>, tensor<1xi64>) -> tensor<2x4x1xf32>
  %d = sluice.sub %x, %m : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
  %sq = sluice.pow %d, %two : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %v = sluice.reduce %sq, %axes {kind = #sluice<reduce_kind mean>} : (tensor<2x4x8xf32>, tensor<1xi64>) -> tensor<2x4x1xf32>
  %ve = sluice.add %v, %eps : (tensor<2x4x1xf32>, tensor<f32>) -> tensor<2x4x1xf32>
  %sd = sluice.sqrt %ve : (tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
  %n = sluice.div %d, %sd : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
  %ns = sluice.mul %n, %s : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %y = sluice.add %b, %ns : (tensor<8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// d * d and Rsqrt over the last two axes, no scale or bias: ones as scale.
// CHECK-LABEL: func @layer_norm_two_axes_rsqrt
// CHECK: %[[ONES:.+]] = sluice.constant dense<1.000000e+00> : tensor<4x8xf32>
// CHECK: sluice.layer_norm %arg0, %[[ONES]] {axis = 1 : i64
// CHECK-NOT: sluice.rsqrt
func.func @layer_norm_two_axes_rsqrt(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %axes = sluice.constant dense<[1, 2]> : tensor<2xi64>
  %eps = sluice.constant dense<1.0e-5> : tensor<f32>
  %m = sluice.reduce %x, %axes {kind = #sluice<reduce_kind mean>} : (tensor<2x4x8xf32>, tensor<2xi64>) -> tensor<2x1x1xf32>
  %d = sluice.sub %x, %m : (tensor<2x4x8xf32>, tensor<2x1x1xf32>) -> tensor<2x4x8xf32>
  %sq = sluice.mul %d, %d : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %v = sluice.reduce %sq, %axes {kind = #sluice<reduce_kind mean>} : (tensor<2x4x8xf32>, tensor<2xi64>) -> tensor<2x1x1xf32>
  %ve = sluice.add %eps, %v : (tensor<f32>, tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
  %r = sluice.rsqrt %ve : (tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
  %n = sluice.mul %r, %d : (tensor<2x1x1xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %n : tensor<2x4x8xf32>
}

// -----

// RMSNorm as HF LLaMA exports it: x * (1 / Sqrt(mean(x^2) + eps)) * w.
// CHECK-LABEL: func @rms_norm_reciprocal
// CHECK-SAME: (%[[X:.+]]: tensor<3x16xf32>, %[[W:.+]]: tensor<16xf32>)
// CHECK: %[[Y:.+]] = sluice.rms_norm %[[X]], %[[W]] {axis = 1 : i64, epsilon = 9.99999997E-7 : f32}
// CHECK-NEXT: return %[[Y]]
func.func @rms_norm_reciprocal(%x: tensor<3x16xf32>, %w: tensor<16xf32>) -> tensor<3x16xf32> {
  %axes = sluice.constant dense<-1> : tensor<1xi64>
  %two = sluice.constant dense<2.0> : tensor<f32>
  %one = sluice.constant dense<1.0> : tensor<f32>
  %eps = sluice.constant dense<1.0e-6> : tensor<f32>
  %sq = sluice.pow %x, %two : (tensor<3x16xf32>, tensor<f32>) -> tensor<3x16xf32>
  %v = sluice.reduce %sq, %axes {kind = #sluice<reduce_kind mean>} : (tensor<3x16xf32>, tensor<1xi64>) -> tensor<3x1xf32>
  %ve = sluice.add %v, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %sd = sluice.sqrt %ve : (tensor<3x1xf32>) -> tensor<3x1xf32>
  %r = sluice.div %one, %sd : (tensor<f32>, tensor<3x1xf32>) -> tensor<3x1xf32>
  %n = sluice.mul %x, %r : (tensor<3x16xf32>, tensor<3x1xf32>) -> tensor<3x16xf32>
  %y = sluice.mul %w, %n : (tensor<16xf32>, tensor<3x16xf32>) -> tensor<3x16xf32>
  return %y : tensor<3x16xf32>
}

// -----

// RMSNorm, Div form with Reciprocal-free Sqrt, statistics in f32 inside casts.
// CHECK-LABEL: func @rms_norm_cast_div
// CHECK-SAME: (%[[X:.+]]: tensor<3x16xf16>, %[[W:.+]]: tensor<16xf16>)
// CHECK-NOT: sluice.cast
// CHECK: %[[Y:.+]] = sluice.rms_norm %[[X]], %[[W]] {axis = 1 : i64
// CHECK-SAME: (tensor<3x16xf16>, tensor<16xf16>) -> tensor<3x16xf16>
// CHECK-NEXT: return %[[Y]]
func.func @rms_norm_cast_div(%x: tensor<3x16xf16>, %w: tensor<16xf16>) -> tensor<3x16xf16> {
  %axes = sluice.constant dense<1> : tensor<1xi64>
  %eps = sluice.constant dense<1.0e-6> : tensor<f32>
  %xf = sluice.cast %x : tensor<3x16xf16> -> tensor<3x16xf32>
  %sq = sluice.mul %xf, %xf : (tensor<3x16xf32>, tensor<3x16xf32>) -> tensor<3x16xf32>
  %v = sluice.reduce %sq, %axes {kind = #sluice<reduce_kind mean>} : (tensor<3x16xf32>, tensor<1xi64>) -> tensor<3x1xf32>
  %ve = sluice.add %v, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %sd = sluice.sqrt %ve : (tensor<3x1xf32>) -> tensor<3x1xf32>
  %n = sluice.div %xf, %sd : (tensor<3x16xf32>, tensor<3x1xf32>) -> tensor<3x16xf32>
  %nh = sluice.cast %n : tensor<3x16xf32> -> tensor<3x16xf16>
  %y = sluice.mul %nh, %w : (tensor<3x16xf16>, tensor<16xf16>) -> tensor<3x16xf16>
  return %y : tensor<3x16xf16>
}

// -----

// Refused: the mean does not reduce the trailing axes.
// CHECK-LABEL: func @not_trailing
// CHECK-NOT: sluice.layer_norm
// CHECK-NOT: sluice.rms_norm
// CHECK: sluice.sqrt
func.func @not_trailing(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %axes = sluice.constant dense<1> : tensor<1xi64>
  %eps = sluice.constant dense<1.0e-5> : tensor<f32>
  %sq = sluice.mul %x, %x : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %v = sluice.reduce %sq, %axes {kind = #sluice<reduce_kind mean>} : (tensor<2x4x8xf32>, tensor<1xi64>) -> tensor<2x1x8xf32>
  %ve = sluice.add %v, %eps : (tensor<2x1x8xf32>, tensor<f32>) -> tensor<2x1x8xf32>
  %sd = sluice.sqrt %ve : (tensor<2x1x8xf32>) -> tensor<2x1x8xf32>
  %n = sluice.div %x, %sd : (tensor<2x4x8xf32>, tensor<2x1x8xf32>) -> tensor<2x4x8xf32>
  return %n : tensor<2x4x8xf32>
}

// -----

// Refused: the variance is also a result (an intermediate with another user).
// CHECK-LABEL: func @shared_variance
// CHECK-NOT: sluice.rms_norm
// CHECK: sluice.sqrt
func.func @shared_variance(%x: tensor<3x16xf32>) -> (tensor<3x16xf32>, tensor<3x1xf32>) {
  %axes = sluice.constant dense<-1> : tensor<1xi64>
  %eps = sluice.constant dense<1.0e-6> : tensor<f32>
  %sq = sluice.mul %x, %x : (tensor<3x16xf32>, tensor<3x16xf32>) -> tensor<3x16xf32>
  %v = sluice.reduce %sq, %axes {kind = #sluice<reduce_kind mean>} : (tensor<3x16xf32>, tensor<1xi64>) -> tensor<3x1xf32>
  %ve = sluice.add %v, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %sd = sluice.sqrt %ve : (tensor<3x1xf32>) -> tensor<3x1xf32>
  %n = sluice.div %x, %sd : (tensor<3x16xf32>, tensor<3x1xf32>) -> tensor<3x16xf32>
  return %n, %v : tensor<3x16xf32>, tensor<3x1xf32>
}

// -----

// Refused: a sum instead of a mean, and a per-row (not per-feature) scale
// stays outside the rms_norm.
// CHECK-LABEL: func @sum_not_mean
// CHECK-NOT: sluice.rms_norm
// CHECK: sluice.reduce {{.*}}reduce_kind sum
func.func @sum_not_mean(%x: tensor<3x16xf32>) -> tensor<3x16xf32> {
  %axes = sluice.constant dense<-1> : tensor<1xi64>
  %eps = sluice.constant dense<1.0e-6> : tensor<f32>
  %sq = sluice.mul %x, %x : (tensor<3x16xf32>, tensor<3x16xf32>) -> tensor<3x16xf32>
  %v = sluice.reduce %sq, %axes {kind = #sluice<reduce_kind sum>} : (tensor<3x16xf32>, tensor<1xi64>) -> tensor<3x1xf32>
  %ve = sluice.add %v, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %r = sluice.rsqrt %ve : (tensor<3x1xf32>) -> tensor<3x1xf32>
  %n = sluice.mul %x, %r : (tensor<3x16xf32>, tensor<3x1xf32>) -> tensor<3x16xf32>
  return %n : tensor<3x16xf32>
}

// -----

// A per-row factor is not a scale: the rms_norm stops before it.
// CHECK-LABEL: func @row_factor
// CHECK: %[[N:.+]] = sluice.rms_norm %arg0, %{{.+}} {axis = 1 : i64
// CHECK: sluice.mul %[[N]], %arg1
func.func @row_factor(%x: tensor<3x16xf32>, %f: tensor<3x1xf32>) -> tensor<3x16xf32> {
  %axes = sluice.constant dense<-1> : tensor<1xi64>
  %eps = sluice.constant dense<1.0e-6> : tensor<f32>
  %sq = sluice.mul %x, %x : (tensor<3x16xf32>, tensor<3x16xf32>) -> tensor<3x16xf32>
  %v = sluice.reduce %sq, %axes {kind = #sluice<reduce_kind mean>} : (tensor<3x16xf32>, tensor<1xi64>) -> tensor<3x1xf32>
  %ve = sluice.add %v, %eps : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
  %r = sluice.rsqrt %ve : (tensor<3x1xf32>) -> tensor<3x1xf32>
  %n = sluice.mul %x, %r : (tensor<3x16xf32>, tensor<3x1xf32>) -> tensor<3x16xf32>
  %y = sluice.mul %n, %f : (tensor<3x16xf32>, tensor<3x1xf32>) -> tensor<3x16xf32>
  return %y : tensor<3x16xf32>
}

// -----

// Refused: no weight over a dynamic normalized dim (the ones the op would
// take as its scale need a static shape).
// CHECK-LABEL: func @rms_norm_dynamic_no_weight
// CHECK-NOT: sluice.rms_norm
// CHECK: sluice.rsqrt
func.func @rms_norm_dynamic_no_weight(%x: tensor<2x?xf32>) -> tensor<2x?xf32> {
  %two = sluice.constant dense<2.0> : tensor<f32>
  %eps = sluice.constant dense<1.0e-6> : tensor<f32>
  %axes = sluice.constant dense<-1> : tensor<1xi64>
  %sq = sluice.pow %x, %two : (tensor<2x?xf32>, tensor<f32>) -> tensor<2x?xf32>
  %v = sluice.reduce %sq, %axes {kind = #sluice<reduce_kind mean>} : (tensor<2x?xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %ve = sluice.add %v, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %r = sluice.rsqrt %ve : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %n = sluice.mul %x, %r : (tensor<2x?xf32>, tensor<2x1xf32>) -> tensor<2x?xf32>
  return %n : tensor<2x?xf32>
}

// -----

// Refused: a scale with a leading 1 to drop (a reshape) and a dynamic dim.
// CHECK-LABEL: func @dynamic_scale_to_reshape
// CHECK-NOT: sluice.layer_norm
// CHECK-NOT: sluice.reshape
// CHECK: sluice.mul %{{.+}}, %arg1
func.func @dynamic_scale_to_reshape(%x: tensor<2x?xf32>, %s: tensor<1x?xf32>) -> tensor<2x?xf32> {
  %axes = sluice.constant dense<-1> : tensor<1xi64>
  %two = sluice.constant dense<2.0> : tensor<f32>
  %eps = sluice.constant dense<1.0e-5> : tensor<f32>
  %m = sluice.reduce %x, %axes {kind = #sluice<reduce_kind mean>} : (tensor<2x?xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %d = sluice.sub %x, %m : (tensor<2x?xf32>, tensor<2x1xf32>) -> tensor<2x?xf32>
  %sq = sluice.pow %d, %two : (tensor<2x?xf32>, tensor<f32>) -> tensor<2x?xf32>
  %v = sluice.reduce %sq, %axes {kind = #sluice<reduce_kind mean>} : (tensor<2x?xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %ve = sluice.add %v, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %sd = sluice.sqrt %ve : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %n = sluice.div %d, %sd : (tensor<2x?xf32>, tensor<2x1xf32>) -> tensor<2x?xf32>
  %ns = sluice.mul %n, %s : (tensor<2x?xf32>, tensor<1x?xf32>) -> tensor<2x?xf32>
  return %ns : tensor<2x?xf32>
}
