// RUN: sluice-opt %s --split-input-file --sluice-recognize-attention | FileCheck %s

// GPT-2 as torch.onnx writes it: K^T = Transpose(K [B,S,H,D], [0,2,3,1]),
// Div by sqrt(d), masked_fill(~causal, -inf) = Where(drop, -inf, scores).
// CHECK-LABEL: func @gpt_causal_where
// CHECK-SAME: (%[[Q:.+]]: tensor<1x2x4x8xf32>, %[[K:.+]]: tensor<1x4x2x8xf32>, %[[V:.+]]: tensor<1x2x4x8xf32>)
// CHECK-NEXT: %[[KT:.+]] = sluice.transpose %[[K]] {perm = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT: %[[A:.+]] = sluice.attention %[[Q]], %[[KT]], %[[V]] {causal = true, scale = 2.500000e-01 : f32}
// CHECK-NEXT: return %[[A]]
func.func @gpt_causal_where(%q: tensor<1x2x4x8xf32>, %k: tensor<1x4x2x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %four = sluice.constant dense<4.0> : tensor<f32>
  %ninf = sluice.constant dense<0xFF800000> : tensor<f32>
  %drop = sluice.constant dense<[[false, true, true, true], [false, false, true, true], [false, false, false, true], [false, false, false, false]]> : tensor<4x4xi1>
  %kt = sluice.transpose %k {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x4x2x8xf32>) -> tensor<1x2x8x4xf32>
  %s = sluice.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %ss = sluice.div %s, %four : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %m = sluice.select %drop, %ninf, %ss : (tensor<4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = sluice.softmax %m {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = sluice.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// BERT: a padding mask computed from an input is added after the scale.
// CHECK-LABEL: func @bert_padding_mask
// CHECK-SAME: (%[[Q:.+]]: tensor<2x2x4x8xf32>, %[[KT:.+]]: tensor<2x2x4x8xf32>, %[[V:.+]]: tensor<2x2x4x8xf32>, %[[M:.+]]: tensor<2x1x1x4xf32>)
// CHECK-NOT: sluice.transpose
// CHECK: %[[A:.+]] = sluice.attention %[[Q]], %[[KT]], %[[V]] mask %[[M]] {scale = 2.500000e-01 : f32}
// CHECK-NEXT: return %[[A]]
func.func @bert_padding_mask(%q: tensor<2x2x4x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>, %mask: tensor<2x1x1x4xf32>) -> tensor<2x2x4x8xf32> {
  %quarter = sluice.constant dense<0.25> : tensor<f32>
  %kt = sluice.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x4x8xf32>) -> tensor<2x2x8x4xf32>
  %s = sluice.matmul %q, %kt : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  %ss = sluice.mul %quarter, %s : (tensor<f32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %m = sluice.add %mask, %ss : (tensor<2x1x1x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = sluice.softmax %m {axis = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %o = sluice.matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %o : tensor<2x2x4x8xf32>
}

// -----

// LLaMA: rotary on Q and K (rotate_half by Slice/Neg/Concat), K^T by
// [0,1,3,2], a constant additive causal mask (0 / -inf).
// CHECK-LABEL: func @llama_rotary_causal
// CHECK-SAME: (%[[Q:.+]]: tensor<1x2x4x8xf32>, %[[K:.+]]: tensor<1x2x4x8xf32>, %[[V:.+]]: tensor<1x2x4x8xf32>, %[[COS:.+]]: tensor<1x1x4x8xf32>, %[[SIN:.+]]: tensor<1x1x4x8xf32>)
// CHECK-NEXT: %[[A:.+]] = sluice.attention %[[Q]], %[[K]], %[[V]] rotary(%[[COS]], %[[SIN]]) {causal = true, scale = 2.500000e-01 : f32}
// CHECK-NEXT: return %[[A]]
func.func @llama_rotary_causal(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %cos: tensor<1x1x4x8xf32>, %sin: tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %c0 = sluice.constant dense<0> : tensor<1xi64>
  %c1 = sluice.constant dense<1> : tensor<1xi64>
  %c3 = sluice.constant dense<3> : tensor<1xi64>
  %c4 = sluice.constant dense<4> : tensor<1xi64>
  %big = sluice.constant dense<9223372036854775807> : tensor<1xi64>
  %four = sluice.constant dense<4.0> : tensor<f32>
  %causal = sluice.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %qc = sluice.mul %q, %cos : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32>
  %qu = sluice.slice %q, %c4, %big, %c3, %c1 : (tensor<1x2x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
  %qn = sluice.neg %qu : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %ql = sluice.slice %q, %c0, %c4, %c3, %c1 : (tensor<1x2x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
  %qh = sluice.concat %qn, %ql {axis = -1 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  %qs = sluice.mul %qh, %sin : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32>
  %qr = sluice.add %qc, %qs : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %kc = sluice.mul %cos, %k : (tensor<1x1x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %ku = sluice.slice %k, %c4, %big, %c3, %c1 : (tensor<1x2x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
  %kn = sluice.neg %ku : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %kl = sluice.slice %k, %c0, %c4, %c3, %c1 : (tensor<1x2x4x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
  %kh = sluice.concat %kn, %kl {axis = 3 : i64} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32>
  %ks = sluice.mul %sin, %kh : (tensor<1x1x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %kr = sluice.add %ks, %kc : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %kt = sluice.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = sluice.matmul %qr, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %ss = sluice.div %s, %four : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %m = sluice.add %ss, %causal : (tensor<1x2x4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = sluice.softmax %m {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = sluice.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// Where(keep, scores, -inf) keeps its condition, with sqrt-scale on both Q
// and K; Where(not(keep), -inf, scores) uses keep, with scale ops after the
// Where (-inf stays -inf). Where(drop, -inf, scores) on an argument gets a Not.
// CHECK-LABEL: func @where_masks
// CHECK-SAME: (%[[Q:.+]]: tensor<2x4x8xf32>, %[[K:.+]]: tensor<2x4x8xf32>, %[[V:.+]]: tensor<2x4x8xf32>, %[[KEEP:.+]]: tensor<2x1x4xi1>, %[[DROP:.+]]: tensor<2x1x4xi1>)
// CHECK: %[[A:.+]] = sluice.attention %[[Q]], %[[K]], %[[V]] mask %[[KEEP]] {scale = 2.500000e-01 : f32}
// CHECK: %[[B:.+]] = sluice.attention %[[Q]], %[[K]], %[[V]] mask %[[KEEP]] {scale = 1.250000e-01 : f32}
// CHECK: %[[NOT:.+]] = sluice.not %[[DROP]]
// CHECK: %[[C:.+]] = sluice.attention %[[Q]], %[[K]], %[[V]] mask %[[NOT]] {scale = 1.000000e+00 : f32}
// CHECK: return %[[A]], %[[B]], %[[C]]
func.func @where_masks(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>, %keep: tensor<2x1x4xi1>, %drop3: tensor<2x1x4xi1>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %half = sluice.constant dense<0.5> : tensor<f32>
  %ninf = sluice.constant dense<0xFF800000> : tensor<f32>
  %eight = sluice.constant dense<8.0> : tensor<f32>
  %qs = sluice.mul %q, %half : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<2x4x8xf32>
  %kt = sluice.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %kts = sluice.mul %kt, %half : (tensor<2x8x4xf32>, tensor<f32>) -> tensor<2x8x4xf32>
  %s = sluice.matmul %qs, %kts : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %m = sluice.select %keep, %s, %ninf : (tensor<2x1x4xi1>, tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %p = sluice.softmax %m {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = sluice.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %kt2 = sluice.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %s2 = sluice.matmul %q, %kt2 : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %drop = sluice.not %keep : (tensor<2x1x4xi1>) -> tensor<2x1x4xi1>
  %m2 = sluice.select %drop, %ninf, %s2 : (tensor<2x1x4xi1>, tensor<f32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %ss2 = sluice.div %m2, %eight : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %ss3 = sluice.mul %ss2, %eight : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %ss4 = sluice.div %ss3, %eight : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %p2 = sluice.softmax %ss4 {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o2 = sluice.matmul %p2, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %kt3 = sluice.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %s3 = sluice.matmul %q, %kt3 : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %m3 = sluice.select %drop3, %ninf, %s3 : (tensor<2x1x4xi1>, tensor<f32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %p3 = sluice.softmax %m3 {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o3 = sluice.matmul %p3, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o, %o2, %o3 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// A constant mask that is not causal stays an operand.
// CHECK-LABEL: func @constant_not_causal
// CHECK: %[[M:.+]] = sluice.constant dense<{{.*}}> : tensor<4x4xf32>
// CHECK: sluice.attention %arg0, %arg1, %arg2 mask %[[M]] {scale = 1.000000e+00 : f32}
func.func @constant_not_causal(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %band = sluice.constant dense<[[0.0, 0.0, -1.0e9, -1.0e9], [-1.0e9, 0.0, 0.0, -1.0e9], [-1.0e9, -1.0e9, 0.0, 0.0], [-1.0e9, -1.0e9, -1.0e9, 0.0]]> : tensor<4x4xf32>
  %kt = sluice.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %s = sluice.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %m = sluice.add %s, %band : (tensor<2x4x4xf32>, tensor<4x4xf32>) -> tensor<2x4x4xf32>
  %p = sluice.softmax %m {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = sluice.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// HF BERT exported without an attention_mask: the extended mask
// (1 - ones) * finfo.min folds to a constant of -0s, which adds nothing and is
// dropped; a constant with one nonzero stays an operand.
// CHECK-LABEL: func @hf_zero_mask
// CHECK: %[[ONE:.+]] = sluice.constant dense<{{.*}}-1.000000e+09{{.*}}> : tensor<1x1x4xf32>
// CHECK: %[[A:.+]] = sluice.attention %arg0, %arg1, %arg2 {scale = 1.250000e-01 : f32}
// CHECK: %[[B:.+]] = sluice.attention %arg0, %arg1, %arg2 mask %[[ONE]] {scale = 1.250000e-01 : f32}
// CHECK: return %[[A]], %[[B]]
func.func @hf_zero_mask(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %zero = sluice.constant dense<[[[-0.0, -0.0, -0.0, -0.0]]]> : tensor<1x1x4xf32>
  %one = sluice.constant dense<[[[-0.0, -0.0, -0.0, -1.0e9]]]> : tensor<1x1x4xf32>
  %c = sluice.constant dense<8.0> : tensor<f32>
  %kt = sluice.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %s = sluice.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %ss = sluice.div %s, %c : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %m = sluice.add %ss, %zero : (tensor<2x4x4xf32>, tensor<1x1x4xf32>) -> tensor<2x4x4xf32>
  %p = sluice.softmax %m {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = sluice.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %kt2 = sluice.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %s2 = sluice.matmul %q, %kt2 : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %ss2 = sluice.div %s2, %c : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %m2 = sluice.add %ss2, %one : (tensor<2x4x4xf32>, tensor<1x1x4xf32>) -> tensor<2x4x4xf32>
  %p2 = sluice.softmax %m2 {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o2 = sluice.matmul %p2, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o, %o2 : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// HF GPT-2: Where(causal, scores, -inf) then an additive padding mask: the
// causal constant becomes `causal`, the padding mask an operand. With a
// finite causal fill the two masks together are refused (a padding mask
// that drops the diagonal would leave the row to the fill values).
// CHECK-LABEL: func @causal_and_padding
// CHECK-SAME: (%[[Q:.+]]: tensor<1x2x4x8xf32>, %[[K:.+]]: tensor<1x2x4x8xf32>, %[[V:.+]]: tensor<1x2x4x8xf32>, %[[PAD:.+]]: tensor<1x1x1x4xf32>)
// CHECK: %[[A:.+]] = sluice.attention %[[Q]], %[[K]], %[[V]] mask %[[PAD]] {causal = true, scale = 2.500000e-01 : f32}
// CHECK: sluice.select
// CHECK: sluice.softmax
// CHECK: return %[[A]]
func.func @causal_and_padding(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %pad: tensor<1x1x1x4xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %four = sluice.constant dense<4.0> : tensor<f32>
  %ninf = sluice.constant dense<0xFF800000> : tensor<f32>
  %min = sluice.constant dense<-3.40282347E+38> : tensor<f32>
  %keep = sluice.constant dense<[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]> : tensor<4x4xi1>
  %kt = sluice.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = sluice.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %ss = sluice.div %s, %four : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %c = sluice.select %keep, %ss, %ninf : (tensor<4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %m = sluice.add %c, %pad : (tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x4xf32>
  %p = sluice.softmax %m {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = sluice.matmul %p, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %kt2 = sluice.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s2 = sluice.matmul %q, %kt2 : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %ss2 = sluice.div %s2, %four : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %c2 = sluice.select %keep, %ss2, %min : (tensor<4x4xi1>, tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %m2 = sluice.add %c2, %pad : (tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x4xf32>
  %p2 = sluice.softmax %m2 {axis = -1 : i64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o2 = sluice.matmul %p2, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o, %o2 : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}

// -----

// Refused: The softmax normalizes another axis than the keys.
// CHECK-LABEL: func @softmax_other_axis
// CHECK-NOT: sluice.attention
// CHECK: sluice.softmax
// CHECK-NOT: sluice.attention
func.func @softmax_other_axis(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %kt = sluice.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %s = sluice.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %p = sluice.softmax %s {axis = 1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = sluice.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// Refused: The scores are also a result of the function.
// CHECK-LABEL: func @scores_used_twice
// CHECK-NOT: sluice.attention
// CHECK: sluice.softmax
// CHECK-NOT: sluice.attention
func.func @scores_used_twice(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x4xf32>) {
  %kt = sluice.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %s = sluice.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %p = sluice.softmax %s {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = sluice.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o, %s : tensor<2x4x8xf32>, tensor<2x4x4xf32>
}

// -----

// Refused: An additive mask followed by a scale (the mask would be scaled too).
// CHECK-LABEL: func @mask_then_scale
// CHECK-NOT: sluice.attention
// CHECK: sluice.softmax
// CHECK-NOT: sluice.attention
func.func @mask_then_scale(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>, %mask: tensor<2x4x4xf32>) -> tensor<2x4x8xf32> {
  %kt = sluice.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %four = sluice.constant dense<4.0> : tensor<f32>
  %s = sluice.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %m = sluice.add %s, %mask : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %ss = sluice.div %m, %four : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %p = sluice.softmax %ss {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = sluice.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// Refused: A finite Where fill with a computed condition (a row may be all masked).
// CHECK-LABEL: func @finite_fill_computed_mask
// CHECK-NOT: sluice.attention
// CHECK: sluice.softmax
// CHECK-NOT: sluice.attention
func.func @finite_fill_computed_mask(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>, %keep: tensor<2x1x4xi1>) -> tensor<2x4x8xf32> {
  %kt = sluice.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %fill = sluice.constant dense<-1.0e4> : tensor<f32>
  %s = sluice.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %m = sluice.select %keep, %s, %fill : (tensor<2x1x4xi1>, tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %p = sluice.softmax %m {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = sluice.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// Refused: A Where fill that does not mask (-1.0).
// CHECK-LABEL: func @fill_not_negative_enough
// CHECK-NOT: sluice.attention
// CHECK: sluice.softmax
// CHECK-NOT: sluice.attention
func.func @fill_not_negative_enough(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>, %keep: tensor<2x1x4xi1>) -> tensor<2x4x8xf32> {
  %kt = sluice.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %fill = sluice.constant dense<-1.0> : tensor<f32>
  %s = sluice.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %m = sluice.select %keep, %s, %fill : (tensor<2x1x4xi1>, tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %p = sluice.softmax %m {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = sluice.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// Refused: Two masks, neither of them causal.
// CHECK-LABEL: func @two_masks_not_causal
// CHECK-NOT: sluice.attention
// CHECK: sluice.softmax
// CHECK-NOT: sluice.attention
func.func @two_masks_not_causal(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>, %m1: tensor<2x4x4xf32>, %m2: tensor<2x1x4xf32>) -> tensor<2x4x8xf32> {
  %kt = sluice.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %s = sluice.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %a = sluice.add %s, %m1 : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %b = sluice.add %a, %m2 : (tensor<2x4x4xf32>, tensor<2x1x4xf32>) -> tensor<2x4x4xf32>
  %p = sluice.softmax %b {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = sluice.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// Refused: The key side is not a transpose.
// CHECK-LABEL: func @key_not_transposed
// CHECK-NOT: sluice.attention
// CHECK: sluice.softmax
// CHECK-NOT: sluice.attention
func.func @key_not_transposed(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>, %kt0: tensor<2x8x4xf32>) -> tensor<2x4x8xf32> {
  %kt = sluice.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %s = sluice.matmul %q, %kt0 : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %p = sluice.softmax %s {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = sluice.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// Refused: A negative scale (it would turn -inf into +inf after a Where).
// CHECK-LABEL: func @negative_scale
// CHECK-NOT: sluice.attention
// CHECK: sluice.softmax
// CHECK-NOT: sluice.attention
func.func @negative_scale(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %kt = sluice.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %neg = sluice.constant dense<-0.25> : tensor<f32>
  %s = sluice.matmul %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %ss = sluice.mul %s, %neg : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %p = sluice.softmax %ss {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = sluice.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// Refused: Q's batch dim broadcasts against K's (the op's batch dims are the
// query's; key and value may only broadcast into them).
// CHECK-LABEL: func @query_batch_broadcasts
// CHECK-NOT: sluice.attention
// CHECK: sluice.softmax
// CHECK-NOT: sluice.attention
func.func @query_batch_broadcasts(%q: tensor<1x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %kt = sluice.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %s = sluice.matmul %q, %kt : (tensor<1x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %p = sluice.softmax %s {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = sluice.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// Refused: V's batch dim broadcasts against the scores'.
// CHECK-LABEL: func @value_batch_broadcasts
// CHECK-NOT: sluice.attention
// CHECK: sluice.softmax
// CHECK-NOT: sluice.attention
func.func @value_batch_broadcasts(%q: tensor<1x4x8xf32>, %k: tensor<1x4x8xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %kt = sluice.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<1x4x8xf32>) -> tensor<1x8x4xf32>
  %s = sluice.matmul %q, %kt : (tensor<1x4x8xf32>, tensor<1x8x4xf32>) -> tensor<1x4x4xf32>
  %p = sluice.softmax %s {axis = -1 : i64} : (tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %o = sluice.matmul %p, %v : (tensor<1x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// Refused: the op would type its result from Q's dynamic batch dim, the
// chain's result has K's static one.
// CHECK-LABEL: func @dynamic_query_batch
// CHECK-NOT: sluice.attention
// CHECK: sluice.softmax
// CHECK-NOT: sluice.attention
func.func @dynamic_query_batch(%q: tensor<?x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %kt = sluice.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %s = sluice.matmul %q, %kt : (tensor<?x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %p = sluice.softmax %s {axis = -1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o = sluice.matmul %p, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}
