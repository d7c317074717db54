// RUN: sluice-opt %s --sluice-plan-tensor-parallel="tp=2" 2>/dev/null | FileCheck %s
// RUN: sluice-opt %s --sluice-plan-tensor-parallel="tp=2" 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK

// One transformer layer as exporters write it (separate Q/K/V projections
// reshaped to heads, a GELU MLP, a vocab-sized embedding and LM head): the
// plan marks Q/K/V and the MLP's first weight and bias column-parallel
// (split along their output features, axis 1 / 0), the output projection
// and the MLP's second weight row-parallel (axis 0), the embedding table
// and the LM head vocab-parallel; the reshape targets stay whole.
// CHECK-LABEL: func.func @main
// CHECK-SAME: sluice.layers = 1 : i64
// CHECK-SAME: sluice.tp = 2 : i64
// CHECK-NEXT: sluice.constant {sluice.split = array<i64: 0, 1>} {{.*}} : tensor<12x8xf32>
// CHECK-NEXT: sluice.constant {sluice.split = array<i64: 1, 1>} {{.*}} : tensor<8x8xf32>
// CHECK-NEXT: sluice.constant {sluice.split = array<i64: 1, 1>} {{.*}} : tensor<8x8xf32>
// CHECK-NEXT: sluice.constant {sluice.split = array<i64: 1, 1>} {{.*}} : tensor<8x8xf32>
// CHECK-NEXT: sluice.constant {sluice.split = array<i64: 0, 1>} {{.*}} : tensor<8x8xf32>
// CHECK-NEXT: sluice.constant {sluice.split = array<i64: 1, 1>} {{.*}} : tensor<8x16xf32>
// CHECK-NEXT: sluice.constant {sluice.split = array<i64: 0, 1>} {{.*}} : tensor<16xf32>
// CHECK-NEXT: sluice.constant {sluice.split = array<i64: 0, 1>} {{.*}} : tensor<16x8xf32>
// CHECK-NEXT: sluice.constant {sluice.split = array<i64: 1, 1>} {{.*}} : tensor<8x12xf32>
// CHECK-NEXT: sluice.constant dense<[1, 4, 2, 4]>
// CHECK-NEXT: sluice.constant dense<[1, 4, 8]>
// CHECK-NEXT: sluice.gather {{.*}} {sluice.vocab_parallel}
// REMARK: remark: tensor parallel over 2 ranks: 1 attention layers split by heads, 1 MLPs, vocab-parallel embedding and LM head
func.func @main(%ids: tensor<1x4xi64>) -> tensor<1x4x12xf32> attributes {sluice.input_names = ["ids"], sluice.output_names = ["logits"]} {
  %wte = sluice.constant dense<0.5> : tensor<12x8xf32>
  %wq = sluice.constant dense<0.1> : tensor<8x8xf32>
  %wk = sluice.constant dense<0.2> : tensor<8x8xf32>
  %wv = sluice.constant dense<0.3> : tensor<8x8xf32>
  %wo = sluice.constant dense<0.4> : tensor<8x8xf32>
  %w1 = sluice.constant dense<0.5> : tensor<8x16xf32>
  %b1 = sluice.constant dense<0.01> : tensor<16xf32>
  %w2 = sluice.constant dense<0.6> : tensor<16x8xf32>
  %head = sluice.constant dense<0.7> : tensor<8x12xf32>
  %s4 = sluice.constant dense<[1, 4, 2, 4]> : tensor<4xi64>
  %s3 = sluice.constant dense<[1, 4, 8]> : tensor<3xi64>
  %x = sluice.gather %wte, %ids : (tensor<12x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
  %q0 = sluice.matmul %x, %wq : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %q1 = sluice.reshape %q0, %s4 : (tensor<1x4x8xf32>, tensor<4xi64>) -> tensor<1x4x2x4xf32>
  %q = sluice.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %k0 = sluice.matmul %x, %wk : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %k1 = sluice.reshape %k0, %s4 : (tensor<1x4x8xf32>, tensor<4xi64>) -> tensor<1x4x2x4xf32>
  %k = sluice.transpose %k1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %v0 = sluice.matmul %x, %wv : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %v1 = sluice.reshape %v0, %s4 : (tensor<1x4x8xf32>, tensor<4xi64>) -> tensor<1x4x2x4xf32>
  %v = sluice.transpose %v1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %a = sluice.attention %q, %k, %v {scale = 0.5 : f32, causal = true} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %a1 = sluice.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x4x4xf32>) -> tensor<1x4x2x4xf32>
  %a2 = sluice.reshape %a1, %s3 : (tensor<1x4x2x4xf32>, tensor<3xi64>) -> tensor<1x4x8xf32>
  %o = sluice.matmul %a2, %wo : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %r = sluice.add %x, %o : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %h0 = sluice.matmul %r, %w1 : (tensor<1x4x8xf32>, tensor<8x16xf32>) -> tensor<1x4x16xf32>
  %h1 = sluice.add %h0, %b1 : (tensor<1x4x16xf32>, tensor<16xf32>) -> tensor<1x4x16xf32>
  %h2 = sluice.gelu %h1 {approximate = "none"} : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %m = sluice.matmul %h2, %w2 : (tensor<1x4x16xf32>, tensor<16x8xf32>) -> tensor<1x4x8xf32>
  %r2 = sluice.add %r, %m : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %logits = sluice.matmul %r2, %head : (tensor<1x4x8xf32>, tensor<8x12xf32>) -> tensor<1x4x12xf32>
  return %logits : tensor<1x4x12xf32>
}
