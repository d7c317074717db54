// RUN: sluice-opt %s --split-input-file --sluice-recognize-moe | FileCheck %s
// sluice-recognize-moe's form rewrites (MoeForms.cpp) one at a time, and the
// structural matcher on the form they lead to. Whole exported blocks:
// recognize-moe.test, recognize-moe-forms.test; numbers:
// recognize-moe-numerics.test.

// Einsums that are matmuls: broadcast over the stacked experts, a batched
// matmul, the output permuted, the combine over E, the operands swapped.
// CHECK-LABEL: func @einsums
// CHECK: %[[BCAST:.+]] = sluice.matmul %arg0, %arg1 : (tensor<6x8xf32>, tensor<4x8x5xf32>) -> tensor<4x6x5xf32>
// CHECK: %[[NEF:.+]] = sluice.matmul %arg0, %arg1 : (tensor<6x8xf32>, tensor<4x8x5xf32>) -> tensor<4x6x5xf32>
// CHECK: %[[T:.+]] = sluice.transpose %[[NEF]] {perm = array<i64: 1, 0, 2>}
// CHECK: %[[BATCHED:.+]] = sluice.matmul %arg2, %arg3 : (tensor<4x6x5xf32>, tensor<4x5x8xf32>) -> tensor<4x6x8xf32>
// CHECK: %[[ROW:.+]] = sluice.reshape %arg4, %{{.+}} -> tensor<6x1x4xf32>
// CHECK: %[[Y:.+]] = sluice.transpose %arg5 {perm = array<i64: 1, 0, 2>} : (tensor<4x6x8xf32>) -> tensor<6x4x8xf32>
// CHECK: %[[P:.+]] = sluice.matmul %[[ROW]], %[[Y]] : (tensor<6x1x4xf32>, tensor<6x4x8xf32>) -> tensor<6x1x8xf32>
// CHECK: %[[COMBINE:.+]] = sluice.reshape %[[P]], %{{.+}} -> tensor<6x8xf32>
// CHECK: %[[SWAPPED:.+]] = sluice.matmul %arg0, %arg1 : (tensor<6x8xf32>, tensor<4x8x5xf32>) -> tensor<4x6x5xf32>
// CHECK-NOT: sluice.einsum
// CHECK: return %[[BCAST]], %[[T]], %[[BATCHED]], %[[COMBINE]], %[[SWAPPED]]
func.func @einsums(%x: tensor<6x8xf32>, %w: tensor<4x8x5xf32>, %h: tensor<4x6x5xf32>, %w2: tensor<4x5x8xf32>, %c: tensor<6x4xf32>, %y: tensor<4x6x8xf32>)
    -> (tensor<4x6x5xf32>, tensor<6x4x5xf32>, tensor<4x6x8xf32>, tensor<6x8xf32>, tensor<4x6x5xf32>) {
  %0 = sluice.einsum %x, %w {equation = "nd,edf->enf"} : (tensor<6x8xf32>, tensor<4x8x5xf32>) -> tensor<4x6x5xf32>
  %1 = sluice.einsum %x, %w {equation = "nd,edf->nef"} : (tensor<6x8xf32>, tensor<4x8x5xf32>) -> tensor<6x4x5xf32>
  %2 = sluice.einsum %h, %w2 {equation = "etf,efd->etd"} : (tensor<4x6x5xf32>, tensor<4x5x8xf32>) -> tensor<4x6x8xf32>
  %3 = sluice.einsum %c, %y {equation = "te,etd->td"} : (tensor<6x4xf32>, tensor<4x6x8xf32>) -> tensor<6x8xf32>
  %4 = sluice.einsum %w, %x {equation = "edf,nd->enf"} : (tensor<4x8x5xf32>, tensor<6x8xf32>) -> tensor<4x6x5xf32>
  return %0, %1, %2, %3, %4 : tensor<4x6x5xf32>, tensor<6x4x5xf32>, tensor<4x6x8xf32>, tensor<6x8xf32>, tensor<4x6x5xf32>
}

// -----

// Not matmuls: a label summed in one operand alone, a diagonal, three
// operands.
// CHECK-LABEL: func @einsums_kept
// CHECK-COUNT-3: sluice.einsum
// CHECK-NOT: sluice.matmul
func.func @einsums_kept(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>, %s: tensor<4x4xf32>, %c: tensor<5x2xf32>) -> (tensor<3xf32>, tensor<5xf32>, tensor<3x2xf32>) {
  %0 = sluice.einsum %a, %b {equation = "ij,jk->i"} : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3xf32>
  %1 = sluice.einsum %s, %b {equation = "ii,ij->j"} : (tensor<4x4xf32>, tensor<4x5xf32>) -> tensor<5xf32>
  %2 = sluice.einsum %a, %b, %c {equation = "ij,jk,kl->il"} : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<5x2xf32>) -> tensor<3x2xf32>
  return %0, %1, %2 : tensor<3xf32>, tensor<5xf32>, tensor<3x2xf32>
}

// -----

// Mixtral's routing, the softmax over the top-2 logits whose indices gather:
// the top-2 of the softmax, renormalized.
// CHECK-LABEL: func @softmax_of_topk
// CHECK: %[[P:.+]] = sluice.softmax %arg0 {axis = 1 : i64}
// CHECK: %[[V:.+]], %[[I:.+]] = sluice.topk %[[P]]
// CHECK: %[[SUM:.+]] = sluice.reduce %[[V]], %{{.+}} {kind = #sluice<reduce_kind sum>}
// CHECK: %[[W:.+]] = sluice.div %[[V]], %[[SUM]]
// CHECK: %[[IDX:.+]] = sluice.reshape %[[I]]
// CHECK: return %[[W]], %{{.+}}
func.func @softmax_of_topk(%logits: tensor<6x4xf32>, %y: tensor<6x4x8xf32>) -> (tensor<6x2xf32>, tensor<6x2x8xf32>) {
  %k = sluice.constant dense<2> : tensor<1xi64>
  %values, %indices = sluice.topk %logits, %k : (tensor<6x4xf32>, tensor<1xi64>) -> (tensor<6x2xf32>, tensor<6x2xi64>)
  %weights = sluice.softmax %values {axis = -1 : i64} : (tensor<6x2xf32>) -> tensor<6x2xf32>
  %column = sluice.constant dense<[6, 2, 1]> : tensor<3xi64>
  %idx3 = sluice.reshape %indices, %column : (tensor<6x2xi64>, tensor<3xi64>) -> tensor<6x2x1xi64>
  %full = sluice.constant dense<[6, 2, 8]> : tensor<3xi64>
  %idx = sluice.expand %idx3, %full : (tensor<6x2x1xi64>, tensor<3xi64>) -> tensor<6x2x8xi64>
  %chosen = sluice.gather_elements %y, %idx {axis = 1 : i64} : (tensor<6x4x8xf32>, tensor<6x2x8xi64>) -> tensor<6x2x8xf32>
  return %weights, %chosen : tensor<6x2xf32>, tensor<6x2x8xf32>
}

// -----

// A top-k whose indices index nothing (a sampler's): left as it is.
// CHECK-LABEL: func @softmax_of_topk_kept
// CHECK: sluice.topk %arg0
// CHECK-NEXT: sluice.softmax
func.func @softmax_of_topk_kept(%logits: tensor<6x4xf32>) -> (tensor<6x2xf32>, tensor<6x2xi64>) {
  %k = sluice.constant dense<2> : tensor<1xi64>
  %values, %indices = sluice.topk %logits, %k : (tensor<6x4xf32>, tensor<1xi64>) -> (tensor<6x2xf32>, tensor<6x2xi64>)
  %weights = sluice.softmax %values {axis = -1 : i64} : (tensor<6x2xf32>) -> tensor<6x2xf32>
  return %weights, %indices : tensor<6x2xf32>, tensor<6x2xi64>
}

// -----

// index_add of one slot per token (k = 1, a scatter without reduction at
// rows 0..T-1) and the add of zeros after it: the slots themselves.
// CHECK-LABEL: func @index_add
// CHECK-NOT: sluice.scatter_elements
// CHECK-NOT: sluice.add
// CHECK: return %arg0
func.func @index_add(%slots: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %zeros = sluice.constant dense<0.0> : tensor<3x2xf32>
  %rows = sluice.constant dense<[[0, 0], [1, 1], [2, 2]]> : tensor<3x2xi64>
  %0 = sluice.scatter_elements %zeros, %rows, %slots {axis = 0 : i64} : (tensor<3x2xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %1 = sluice.add %zeros, %0 : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  return %1 : tensor<3x2xf32>
}

// -----

// Rows that are not each token's slots, and two slots written without a
// reduction (the last would win): left as they are.
// CHECK-LABEL: func @scatter_kept
// CHECK-COUNT-2: sluice.scatter_elements
func.func @scatter_kept(%slots: tensor<4x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %zeros = sluice.constant dense<0.0> : tensor<2x2xf32>
  %shuffled = sluice.constant dense<[[1, 1], [0, 0], [0, 0], [1, 1]]> : tensor<4x2xi64>
  %0 = sluice.scatter_elements %zeros, %shuffled, %slots {axis = 0 : i64, reduction = #sluice<reduce_kind sum>} : (tensor<2x2xf32>, tensor<4x2xi64>, tensor<4x2xf32>) -> tensor<2x2xf32>
  %rows = sluice.constant dense<[[0, 0], [0, 0], [1, 1], [1, 1]]> : tensor<4x2xi64>
  %1 = sluice.scatter_elements %zeros, %rows, %slots {axis = 0 : i64} : (tensor<2x2xf32>, tensor<4x2xi64>, tensor<4x2xf32>) -> tensor<2x2xf32>
  return %0, %1 : tensor<2x2xf32>, tensor<2x2xf32>
}

// -----

// Two experts written as Linear-ReLU-Linear chains over one input and
// stacked along dim 1 (torch.stack): one chain over stacked constants,
// transposed.
// CHECK-LABEL: func @stack_chains
// CHECK: %[[W1:.+]] = sluice.constant {{.*}} : tensor<2x8x5xf32>
// CHECK: %[[H:.+]] = sluice.matmul %arg0, %[[W1]] : (tensor<6x8xf32>, tensor<2x8x5xf32>) -> tensor<2x6x5xf32>
// CHECK: %[[B1:.+]] = sluice.constant {{.*}} : tensor<2x1x5xf32>
// CHECK: %[[HB:.+]] = sluice.add %[[H]], %[[B1]] : (tensor<2x6x5xf32>, tensor<2x1x5xf32>) -> tensor<2x6x5xf32>
// CHECK: %[[A:.+]] = sluice.relu %[[HB]] : (tensor<2x6x5xf32>) -> tensor<2x6x5xf32>
// CHECK: %[[W2:.+]] = sluice.constant {{.*}} : tensor<2x5x8xf32>
// CHECK: %[[Y:.+]] = sluice.matmul %[[A]], %[[W2]] : (tensor<2x6x5xf32>, tensor<2x5x8xf32>) -> tensor<2x6x8xf32>
// CHECK: %[[S:.+]] = sluice.transpose %[[Y]] {perm = array<i64: 1, 0, 2>}
// CHECK-NOT: sluice.concat
// CHECK: return %[[S]]
func.func @stack_chains(%x: tensor<6x8xf32>) -> tensor<6x2x8xf32> {
  %w1a = sluice.constant dense<0.5> : tensor<8x5xf32>
  %b1a = sluice.constant dense<0.1> : tensor<5xf32>
  %w2a = sluice.constant dense<0.25> : tensor<5x8xf32>
  %w1b = sluice.constant dense<-0.5> : tensor<8x5xf32>
  %b1b = sluice.constant dense<0.2> : tensor<5xf32>
  %w2b = sluice.constant dense<0.75> : tensor<5x8xf32>
  %0 = sluice.matmul %x, %w1a : (tensor<6x8xf32>, tensor<8x5xf32>) -> tensor<6x5xf32>
  %1 = sluice.add %0, %b1a : (tensor<6x5xf32>, tensor<5xf32>) -> tensor<6x5xf32>
  %2 = sluice.relu %1 : (tensor<6x5xf32>) -> tensor<6x5xf32>
  %3 = sluice.matmul %2, %w2a : (tensor<6x5xf32>, tensor<5x8xf32>) -> tensor<6x8xf32>
  %4 = sluice.matmul %x, %w1b : (tensor<6x8xf32>, tensor<8x5xf32>) -> tensor<6x5xf32>
  %5 = sluice.add %4, %b1b : (tensor<6x5xf32>, tensor<5xf32>) -> tensor<6x5xf32>
  %6 = sluice.relu %5 : (tensor<6x5xf32>) -> tensor<6x5xf32>
  %7 = sluice.matmul %6, %w2b : (tensor<6x5xf32>, tensor<5x8xf32>) -> tensor<6x8xf32>
  %shape = sluice.constant dense<[6, 1, 8]> : tensor<3xi64>
  %8 = sluice.reshape %3, %shape : (tensor<6x8xf32>, tensor<3xi64>) -> tensor<6x1x8xf32>
  %9 = sluice.reshape %7, %shape : (tensor<6x8xf32>, tensor<3xi64>) -> tensor<6x1x8xf32>
  %10 = sluice.concat %8, %9 {axis = 1 : i64} : (tensor<6x1x8xf32>, tensor<6x1x8xf32>) -> tensor<6x2x8xf32>
  return %10 : tensor<6x2x8xf32>
}

// -----

// Chains that differ (ReLU in one, GELU in the other): not stacked.
// CHECK-LABEL: func @stack_chains_kept
// CHECK: sluice.concat
func.func @stack_chains_kept(%x: tensor<6x8xf32>) -> tensor<2x6x5xf32> {
  %wa = sluice.constant dense<0.5> : tensor<8x5xf32>
  %wb = sluice.constant dense<-0.5> : tensor<8x5xf32>
  %0 = sluice.matmul %x, %wa : (tensor<6x8xf32>, tensor<8x5xf32>) -> tensor<6x5xf32>
  %1 = sluice.relu %0 : (tensor<6x5xf32>) -> tensor<6x5xf32>
  %2 = sluice.matmul %x, %wb : (tensor<6x8xf32>, tensor<8x5xf32>) -> tensor<6x5xf32>
  %3 = sluice.gelu %2 : (tensor<6x5xf32>) -> tensor<6x5xf32>
  %shape = sluice.constant dense<[1, 6, 5]> : tensor<3xi64>
  %4 = sluice.reshape %1, %shape : (tensor<6x5xf32>, tensor<3xi64>) -> tensor<1x6x5xf32>
  %5 = sluice.reshape %3, %shape : (tensor<6x5xf32>, tensor<3xi64>) -> tensor<1x6x5xf32>
  %6 = sluice.concat %4, %5 {axis = 0 : i64} : (tensor<1x6x5xf32>, tensor<1x6x5xf32>) -> tensor<2x6x5xf32>
  return %6 : tensor<2x6x5xf32>
}

// -----

// A Python loop adding column e of a [T, E] matrix times expert e's output:
// the outputs stacked, weighted by the matrix as [T, E, 1], summed over E.
// CHECK-LABEL: func @loop_over_experts
// CHECK: %[[S:.+]] = sluice.concat %{{.+}}, %{{.+}} {axis = 1 : i64} : (tensor<6x1x8xf32>, tensor<6x1x8xf32>) -> tensor<6x2x8xf32>
// CHECK: %[[C:.+]] = sluice.reshape %arg0, %{{.+}} -> tensor<6x2x1xf32>
// CHECK: %[[P:.+]] = sluice.mul %[[S]], %[[C]]
// CHECK: %[[SUM:.+]] = sluice.reduce %[[P]], %{{.+}} {keepdims = false, kind = #sluice<reduce_kind sum>}
// CHECK: return %[[SUM]]
func.func @loop_over_experts(%c: tensor<6x2xf32>, %y0: tensor<6x8xf32>, %y1: tensor<6x8xf32>) -> tensor<6x8xf32> {
  %zero = sluice.constant dense<0> : tensor<1xi64>
  %one = sluice.constant dense<1> : tensor<1xi64>
  %two = sluice.constant dense<2> : tensor<1xi64>
  %0 = sluice.slice %c, %zero, %one, %one, %one : (tensor<6x2xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<6x1xf32>
  %1 = sluice.mul %0, %y0 : (tensor<6x1xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  %2 = sluice.slice %c, %one, %two, %one, %one : (tensor<6x2xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<6x1xf32>
  %3 = sluice.mul %y1, %2 : (tensor<6x8xf32>, tensor<6x1xf32>) -> tensor<6x8xf32>
  %4 = sluice.add %1, %3 : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  return %4 : tensor<6x8xf32>
}

// -----

// Top-2 weights scattered into [T, E] and the experts' outputs [E, T, D]
// summed with them: the chosen outputs gathered by the top-2 indices.
// CHECK-LABEL: func @dense_combine
// CHECK: %[[V:.+]], %[[I:.+]] = sluice.topk
// CHECK: %[[Y:.+]] = sluice.transpose %arg1 {perm = array<i64: 1, 0, 2>} : (tensor<4x6x8xf32>) -> tensor<6x4x8xf32>
// CHECK: %[[I3:.+]] = sluice.reshape %[[I]], %{{.+}} -> tensor<6x2x1xi64>
// CHECK: %[[IDX:.+]] = sluice.expand %[[I3]], %{{.+}} -> tensor<6x2x8xi64>
// CHECK: %[[G:.+]] = sluice.gather_elements %[[Y]], %[[IDX]] {axis = 1 : i64}
// CHECK: %[[W:.+]] = sluice.reshape %[[V]], %{{.+}} -> tensor<6x2x1xf32>
// CHECK: %[[P:.+]] = sluice.mul %[[G]], %[[W]]
// CHECK: sluice.reduce %[[P]], %{{.+}} {keepdims = false, kind = #sluice<reduce_kind sum>} : (tensor<6x2x8xf32>, tensor<1xi64>) -> tensor<6x8xf32>
// CHECK-NOT: sluice.scatter_elements
func.func @dense_combine(%probs: tensor<6x4xf32>, %y: tensor<4x6x8xf32>) -> tensor<6x8xf32> {
  %k = sluice.constant dense<2> : tensor<1xi64>
  %values, %indices = sluice.topk %probs, %k : (tensor<6x4xf32>, tensor<1xi64>) -> (tensor<6x2xf32>, tensor<6x2xi64>)
  %zeros = sluice.constant dense<0.0> : tensor<6x4xf32>
  %c = sluice.scatter_elements %zeros, %indices, %values {axis = 1 : i64} : (tensor<6x4xf32>, tensor<6x2xi64>, tensor<6x2xf32>) -> tensor<6x4xf32>
  %ct = sluice.transpose %c {perm = array<i64: 1, 0>} : (tensor<6x4xf32>) -> tensor<4x6xf32>
  %shape = sluice.constant dense<[4, 6, 1]> : tensor<3xi64>
  %c3 = sluice.reshape %ct, %shape : (tensor<4x6xf32>, tensor<3xi64>) -> tensor<4x6x1xf32>
  %0 = sluice.mul %y, %c3 : (tensor<4x6x8xf32>, tensor<4x6x1xf32>) -> tensor<4x6x8xf32>
  %axis = sluice.constant dense<0> : tensor<1xi64>
  %1 = sluice.reduce %0, %axis {keepdims = false, kind = #sluice<reduce_kind sum>} : (tensor<4x6x8xf32>, tensor<1xi64>) -> tensor<6x8xf32>
  return %1 : tensor<6x8xf32>
}

// -----

// Weights scattered at indices that are not a TopK's (they may repeat):
// left dense.
// CHECK-LABEL: func @dense_combine_kept
// CHECK: sluice.scatter_elements
func.func @dense_combine_kept(%indices: tensor<6x2xi64>, %values: tensor<6x2xf32>, %y: tensor<6x4x8xf32>) -> tensor<6x8xf32> {
  %zeros = sluice.constant dense<0.0> : tensor<6x4xf32>
  %c = sluice.scatter_elements %zeros, %indices, %values {axis = 1 : i64} : (tensor<6x4xf32>, tensor<6x2xi64>, tensor<6x2xf32>) -> tensor<6x4xf32>
  %shape = sluice.constant dense<[6, 4, 1]> : tensor<3xi64>
  %c3 = sluice.reshape %c, %shape : (tensor<6x4xf32>, tensor<3xi64>) -> tensor<6x4x1xf32>
  %0 = sluice.mul %y, %c3 : (tensor<6x4x8xf32>, tensor<6x4x1xf32>) -> tensor<6x4x8xf32>
  %axis = sluice.constant dense<1> : tensor<1xi64>
  %1 = sluice.reduce %0, %axis {keepdims = false, kind = #sluice<reduce_kind sum>} : (tensor<6x4x8xf32>, tensor<1xi64>) -> tensor<6x8xf32>
  return %1 : tensor<6x8xf32>
}
