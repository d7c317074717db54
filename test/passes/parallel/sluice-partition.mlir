// RUN: sluice-opt %s --sluice-plan-tensor-parallel="tp=2" --sluice-partition 2>/dev/null | FileCheck %s --check-prefix=TP
// RUN: sluice-opt %s --sluice-plan-tensor-parallel="tp=2 sp=true" --sluice-partition 2>/dev/null | FileCheck %s --check-prefix=SP
// RUN: sluice-opt %s --sluice-partition 2>/dev/null | FileCheck %s --check-prefix=NONE

// One rank's program of the layer in sluice-plan-tensor-parallel.mlir.
// Tensor parallel: the weights become this rank's blocks, the embedding a
// vocab-parallel lookup (ids shifted by this rank's first row, rows outside
// it zeroed) whose partial sums are all-reduced, attention runs on this
// rank's head (1 of 2), the output projection's and the MLP's partial sums
// are all-reduced (two per layer), the LM head's vocab blocks gathered.
// TP-LABEL: func.func @main
// TP: sluice.shard_constant {{.*}} : tensor<12x8xf32> {axis = 0 : i64, parts = 2 : i64} -> tensor<6x8xf32>
// TP: sluice.shard_constant dense<[0, 6]> : tensor<2xi64> {axis = 0 : i64, parts = 2 : i64} -> tensor<1xi64>
// TP: %[[EMB:.*]] = sluice.select {{.*}} -> tensor<1x4x8xf32>
// TP-NEXT: %[[X:.*]] = sluice.all_reduce %[[EMB]] {group_size = 2 : i64}
// TP: sluice.matmul %[[X]], {{.*}} : (tensor<1x4x8xf32>, tensor<8x4xf32>) -> tensor<1x4x4xf32>
// TP: sluice.reshape {{.*}} -> tensor<1x4x1x4xf32>
// TP: sluice.attention {{.*}} -> tensor<1x1x4x4xf32>
// TP: %[[O:.*]] = sluice.matmul {{.*}} : (tensor<1x4x4xf32>, tensor<4x8xf32>) -> tensor<1x4x8xf32>
// TP-NEXT: %[[OR:.*]] = sluice.all_reduce %[[O]]
// TP-NEXT: %[[R:.*]] = sluice.add %[[X]], %[[OR]]
// TP: sluice.gelu {{.*}} : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
// TP: sluice.all_reduce
// TP: %[[L:.*]] = sluice.matmul {{.*}} -> tensor<1x4x6xf32>
// TP-NEXT: %[[G:.*]] = sluice.all_gather %[[L]] {axis = 2 : i64, group_size = 2 : i64} : (tensor<1x4x6xf32>) -> tensor<1x4x12xf32>
// TP-NEXT: return %[[G]] : tensor<1x4x12xf32>

// Sequence parallel: the embedding's partial sums are reduce-scattered
// along the sequence, the residual stream stays split there (tensor<1x2x8>),
// each column-parallel projection gathers the sequence first and each
// row-parallel one reduce-scatters: no all_reduce at all.
// SP-LABEL: func.func @main
// SP-SAME: sluice.sp
// SP-NOT: sluice.all_reduce
// SP: %[[X:.*]] = sluice.reduce_scatter {{.*}} {axis = 1 : i64, group_size = 2 : i64} : (tensor<1x4x8xf32>) -> tensor<1x2x8xf32>
// SP: %[[XG:.*]] = sluice.all_gather %[[X]] {axis = 1 : i64, group_size = 2 : i64} : (tensor<1x2x8xf32>) -> tensor<1x4x8xf32>
// SP: sluice.matmul %[[XG]]
// SP: %[[OR:.*]] = sluice.reduce_scatter {{.*}} -> tensor<1x2x8xf32>
// SP-NEXT: sluice.add %[[X]], %[[OR]] : (tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> tensor<1x2x8xf32>
// SP-NOT: sluice.all_reduce

// Without a plan the partitioner leaves the function alone.
// NONE-LABEL: func.func @main
// NONE-NOT: shard_constant
// NONE-NOT: all_reduce
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
