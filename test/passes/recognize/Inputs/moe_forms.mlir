// Small graphs for the MoE form rewrites of sluice-recognize-moe
// (passes/recognize/MoeForms.cpp) that rewrite without a whole MoE around
// them: einsums that are matmuls, a softmax over top-k logits whose
// indices gather, slots added back to their tokens, two per-expert chains
// stacked, a loop over them. sluice-recognize-moe.mlir checks the IR of
// such cases, recognize-moe-numerics.test the numbers of these.
func.func @main(%x: tensor<6x8xf32>, %w: tensor<4x8x5xf32>, %h: tensor<4x6x5xf32>, %w2: tensor<4x5x8xf32>, %c: tensor<6x4xf32>, %y: tensor<4x6x8xf32>, %logits: tensor<6x4xf32>, %slots: tensor<6x2x8xf32>)
    -> (tensor<4x6x5xf32>, tensor<6x4x5xf32>, tensor<4x6x8xf32>, tensor<6x8xf32>, tensor<4x6x5xf32>, tensor<6x2x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x2x8xf32>, tensor<6x8xf32>)
    attributes {sluice.input_names = ["x", "w", "h", "w2", "c", "y", "logits", "slots"],
                sluice.output_names = ["broadcast", "transposed", "batched", "combine", "swapped", "routed", "token_major", "slot_major", "stacked", "loop"]} {
  %0 = sluice.einsum %x, %w {equation = "nd,edf->enf"} : (tensor<6x8xf32>, tensor<4x8x5xf32>) -> tensor<4x6x5xf32>
  %1 = sluice.einsum %x, %w {equation = "nd,edf->nef"} : (tensor<6x8xf32>, tensor<4x8x5xf32>) -> tensor<6x4x5xf32>
  %2 = sluice.einsum %h, %w2 {equation = "etf,efd->etd"} : (tensor<4x6x5xf32>, tensor<4x5x8xf32>) -> tensor<4x6x8xf32>
  %3 = sluice.einsum %c, %y {equation = "te,etd->td"} : (tensor<6x4xf32>, tensor<4x6x8xf32>) -> tensor<6x8xf32>
  %4 = sluice.einsum %w, %x {equation = "edf,nd->enf"} : (tensor<4x8x5xf32>, tensor<6x8xf32>) -> tensor<4x6x5xf32>
  // Mixtral's routing: the softmax over the top-2 logits, the indices
  // gathering the experts' outputs.
  %k = sluice.constant dense<2> : tensor<1xi64>
  %values, %indices = sluice.topk %logits, %k : (tensor<6x4xf32>, tensor<1xi64>) -> (tensor<6x2xf32>, tensor<6x2xi64>)
  %weights = sluice.softmax %values {axis = -1 : i64} : (tensor<6x2xf32>) -> tensor<6x2xf32>
  %column = sluice.constant dense<[6, 2, 1]> : tensor<3xi64>
  %idx3 = sluice.reshape %indices, %column : (tensor<6x2xi64>, tensor<3xi64>) -> tensor<6x2x1xi64>
  %full = sluice.constant dense<[6, 2, 8]> : tensor<3xi64>
  %idx = sluice.expand %idx3, %full : (tensor<6x2x1xi64>, tensor<3xi64>) -> tensor<6x2x8xi64>
  %perm = sluice.transpose %y {perm = array<i64: 1, 0, 2>} : (tensor<4x6x8xf32>) -> tensor<6x4x8xf32>
  %chosen = sluice.gather_elements %perm, %idx {axis = 1 : i64} : (tensor<6x4x8xf32>, tensor<6x2x8xi64>) -> tensor<6x2x8xf32>
  %w3 = sluice.reshape %weights, %column : (tensor<6x2xf32>, tensor<3xi64>) -> tensor<6x2x1xf32>
  %5 = sluice.mul %chosen, %w3 : (tensor<6x2x8xf32>, tensor<6x2x1xf32>) -> tensor<6x2x8xf32>
  // Each token's 2 slots added back to it by scatter_add: rows r / 2
  // (token-major) and r % 6 (slot-major).
  %zeros = sluice.constant dense<0.0> : tensor<6x8xf32>
  %flat = sluice.constant dense<[12, 8]> : tensor<2xi64>
  %u = sluice.reshape %slots, %flat : (tensor<6x2x8xf32>, tensor<2xi64>) -> tensor<12x8xf32>
  %rows = sluice.constant dense<[[0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1, 1], [2, 2, 2, 2, 2, 2, 2, 2], [2, 2, 2, 2, 2, 2, 2, 2], [3, 3, 3, 3, 3, 3, 3, 3], [3, 3, 3, 3, 3, 3, 3, 3], [4, 4, 4, 4, 4, 4, 4, 4], [4, 4, 4, 4, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5, 5, 5], [5, 5, 5, 5, 5, 5, 5, 5]]> : tensor<12x8xi64>
  %6 = sluice.scatter_elements %zeros, %rows, %u {axis = 0 : i64, reduction = #sluice<reduce_kind sum>} : (tensor<6x8xf32>, tensor<12x8xi64>, tensor<12x8xf32>) -> tensor<6x8xf32>
  %slotRows = sluice.constant dense<[[0, 0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1], [2, 2, 2, 2, 2, 2, 2, 2], [3, 3, 3, 3, 3, 3, 3, 3], [4, 4, 4, 4, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5, 5, 5], [0, 0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1], [2, 2, 2, 2, 2, 2, 2, 2], [3, 3, 3, 3, 3, 3, 3, 3], [4, 4, 4, 4, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5, 5, 5]]> : tensor<12x8xi64>
  %u2 = sluice.reshape %slots, %flat : (tensor<6x2x8xf32>, tensor<2xi64>) -> tensor<12x8xf32>
  %7 = sluice.scatter_elements %zeros, %slotRows, %u2 {axis = 0 : i64, reduction = #sluice<reduce_kind sum>} : (tensor<6x8xf32>, tensor<12x8xi64>, tensor<12x8xf32>) -> tensor<6x8xf32>
  // Two experts as Linear-GELU-Linear chains with biases, stacked along
  // dim 1; the same two summed in a loop weighted by the columns of c.
  %w1a = sluice.constant dense<[[0.5, -0.25, 0.125, 1.0, -1.0], [0.25, 0.5, -0.5, 0.0, 0.75], [-0.125, 0.25, 1.0, -0.5, 0.5], [1.0, -1.0, 0.5, 0.25, 0.0], [0.0, 0.5, 0.25, -0.75, 1.0], [-0.5, 0.125, 0.0, 0.5, -0.25], [0.75, 0.0, -0.25, 0.125, 0.5], [0.25, -0.5, 0.75, 1.0, -0.125]]> : tensor<8x5xf32>
  %b1a = sluice.constant dense<[0.1, -0.2, 0.3, 0.0, 0.5]> : tensor<5xf32>
  %w2a = sluice.constant dense<0.25> : tensor<5x8xf32>
  %b2a = sluice.constant dense<0.5> : tensor<8xf32>
  %w1b = sluice.constant dense<-0.375> : tensor<8x5xf32>
  %b1b = sluice.constant dense<0.2> : tensor<5xf32>
  %w2b = sluice.constant dense<[[0.5, -0.25, 0.125, 1.0, -1.0, 0.0, 0.25, 0.5], [0.25, 0.5, -0.5, 0.0, 0.75, 1.0, -0.5, 0.0], [-0.125, 0.25, 1.0, -0.5, 0.5, 0.25, 0.0, -1.0], [1.0, -1.0, 0.5, 0.25, 0.0, -0.25, 0.5, 0.75], [0.0, 0.5, 0.25, -0.75, 1.0, 0.5, 0.125, -0.5]]> : tensor<5x8xf32>
  %b2b = sluice.constant dense<-0.5> : tensor<8xf32>
  %a0 = sluice.matmul %x, %w1a : (tensor<6x8xf32>, tensor<8x5xf32>) -> tensor<6x5xf32>
  %a1 = sluice.add %a0, %b1a : (tensor<6x5xf32>, tensor<5xf32>) -> tensor<6x5xf32>
  %a2 = sluice.gelu %a1 : (tensor<6x5xf32>) -> tensor<6x5xf32>
  %a3 = sluice.matmul %a2, %w2a : (tensor<6x5xf32>, tensor<5x8xf32>) -> tensor<6x8xf32>
  %a4 = sluice.add %a3, %b2a : (tensor<6x8xf32>, tensor<8xf32>) -> tensor<6x8xf32>
  %e0 = sluice.matmul %x, %w1b : (tensor<6x8xf32>, tensor<8x5xf32>) -> tensor<6x5xf32>
  %e1 = sluice.add %e0, %b1b : (tensor<6x5xf32>, tensor<5xf32>) -> tensor<6x5xf32>
  %e2 = sluice.gelu %e1 : (tensor<6x5xf32>) -> tensor<6x5xf32>
  %e3 = sluice.matmul %e2, %w2b : (tensor<6x5xf32>, tensor<5x8xf32>) -> tensor<6x8xf32>
  %e4 = sluice.add %e3, %b2b : (tensor<6x8xf32>, tensor<8xf32>) -> tensor<6x8xf32>
  %one = sluice.constant dense<[6, 1, 8]> : tensor<3xi64>
  %sa = sluice.reshape %a4, %one : (tensor<6x8xf32>, tensor<3xi64>) -> tensor<6x1x8xf32>
  %sb = sluice.reshape %e4, %one : (tensor<6x8xf32>, tensor<3xi64>) -> tensor<6x1x8xf32>
  %8 = sluice.concat %sa, %sb {axis = 1 : i64} : (tensor<6x1x8xf32>, tensor<6x1x8xf32>) -> tensor<6x2x8xf32>
  %l0 = sluice.matmul %x, %w1a : (tensor<6x8xf32>, tensor<8x5xf32>) -> tensor<6x5xf32>
  %l1 = sluice.add %l0, %b1a : (tensor<6x5xf32>, tensor<5xf32>) -> tensor<6x5xf32>
  %l2 = sluice.gelu %l1 : (tensor<6x5xf32>) -> tensor<6x5xf32>
  %l3 = sluice.matmul %l2, %w2a : (tensor<6x5xf32>, tensor<5x8xf32>) -> tensor<6x8xf32>
  %m0 = sluice.matmul %x, %w1b : (tensor<6x8xf32>, tensor<8x5xf32>) -> tensor<6x5xf32>
  %m1 = sluice.add %m0, %b1b : (tensor<6x5xf32>, tensor<5xf32>) -> tensor<6x5xf32>
  %m2 = sluice.gelu %m1 : (tensor<6x5xf32>) -> tensor<6x5xf32>
  %m3 = sluice.matmul %m2, %w2b : (tensor<6x5xf32>, tensor<5x8xf32>) -> tensor<6x8xf32>
  %s0 = sluice.constant dense<0> : tensor<1xi64>
  %s1 = sluice.constant dense<1> : tensor<1xi64>
  %s2 = sluice.constant dense<2> : tensor<1xi64>
  %c2 = sluice.slice %c, %s0, %s2, %s1, %s1 : (tensor<6x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<6x2xf32>
  %col0 = sluice.slice %c2, %s0, %s1, %s1, %s1 : (tensor<6x2xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<6x1xf32>
  %col1 = sluice.slice %c2, %s1, %s2, %s1, %s1 : (tensor<6x2xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<6x1xf32>
  %t0 = sluice.mul %col0, %l3 : (tensor<6x1xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  %t1 = sluice.mul %m3, %col1 : (tensor<6x8xf32>, tensor<6x1xf32>) -> tensor<6x8xf32>
  %9 = sluice.add %t0, %t1 : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : tensor<4x6x5xf32>, tensor<6x4x5xf32>, tensor<4x6x8xf32>, tensor<6x8xf32>, tensor<4x6x5xf32>, tensor<6x2x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x2x8xf32>, tensor<6x8xf32>
}
