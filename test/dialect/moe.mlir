// RUN: sluice-opt %s --split-input-file | sluice-opt | FileCheck %s
// Round trip of sluice.moe: plain and gated (SwiGLU) experts, with and
// without biases, hard gating, an expert-parallel shard's offset.

// CHECK-LABEL: func @top_k
func.func @top_k(%x: tensor<6x8xf32>, %logits: tensor<6x4xf32>, %w1: tensor<4x8x16xf32>, %w2: tensor<4x16x8xf32>) -> tensor<6x8xf32> {
  // CHECK: sluice.moe %{{.*}}, %{{.*}} experts(%{{[^ ]*}}, %{{[^ ]*}}) {activation = "relu", experts = 4 : i64, gating = "top_k", top_k = 2 : i64} : (tensor<6x8xf32>, tensor<6x4xf32>, tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<6x8xf32>
  %0 = sluice.moe %x, %logits experts(%w1, %w2) {activation = "relu", experts = 4 : i64, gating = "top_k", top_k = 2 : i64} : (tensor<6x8xf32>, tensor<6x4xf32>, tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<6x8xf32>
  return %0 : tensor<6x8xf32>
}

// -----

// CHECK-LABEL: func @gated
func.func @gated(%x: tensor<6x8xf32>, %logits: tensor<6x4xf32>, %w1: tensor<4x8x16xf32>, %w2: tensor<4x16x8xf32>, %w3: tensor<4x8x16xf32>) -> tensor<6x8xf32> {
  // CHECK: sluice.moe %{{.*}}, %{{.*}} experts(%[[W1:[^ ]*]], %[[W2:[^ ]*]], up %[[W3:[^ ]*]]) {activation = "silu", experts = 4 : i64, gating = "top_k", normalize = true, top_k = 2 : i64}
  %0 = sluice.moe %x, %logits experts(%w1, %w2, up %w3) {activation = "silu", experts = 4 : i64, gating = "top_k", normalize = true, top_k = 2 : i64} : (tensor<6x8xf32>, tensor<6x4xf32>, tensor<4x8x16xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<6x8xf32>
  return %0 : tensor<6x8xf32>
}

// -----

// CHECK-LABEL: func @gated_biases_offset
func.func @gated_biases_offset(%x: tensor<6x8xf32>, %logits: tensor<6x4xf32>, %w1: tensor<2x8x16xf32>, %b1: tensor<2x16xf32>, %w2: tensor<2x16x8xf32>, %b2: tensor<2x8xf32>, %w3: tensor<2x8x16xf32>, %b3: tensor<2x16xf32>, %offset: tensor<1xi64>) -> tensor<6x8xf32> {
  // CHECK: sluice.moe %{{.*}}, %{{.*}} experts(%{{[^ ]*}} bias %{{[^ ]*}}, %{{[^ ]*}} bias %{{[^ ]*}}, up %{{[^ ]*}} bias %{{[^ ]*}}) offset %{{[^ ]*}} {activation = "gelu", experts = 4 : i64, gating = "top_k", top_k = 1 : i64}
  %0 = sluice.moe %x, %logits experts(%w1 bias %b1, %w2 bias %b2, up %w3 bias %b3) offset %offset {activation = "gelu", experts = 4 : i64, gating = "top_k", top_k = 1 : i64} : (tensor<6x8xf32>, tensor<6x4xf32>, tensor<2x8x16xf32>, tensor<2x16xf32>, tensor<2x16x8xf32>, tensor<2x8xf32>, tensor<2x8x16xf32>, tensor<2x16xf32>, tensor<1xi64>) -> tensor<6x8xf32>
  return %0 : tensor<6x8xf32>
}

// -----

// CHECK-LABEL: func @hard
func.func @hard(%x: tensor<3x5x8xf32>, %language: tensor<3xi64>, %w1: tensor<4x8x16xf32>, %b1: tensor<4x16xf32>, %w2: tensor<4x16x8xf32>) -> tensor<3x5x8xf32> {
  // CHECK: sluice.moe %{{.*}}, %{{.*}} experts(%{{[^ ]*}} bias %{{[^ ]*}}, %{{[^ ]*}}) {experts = 4 : i64, gating = "hard", top_k = 1 : i64}
  %0 = sluice.moe %x, %language experts(%w1 bias %b1, %w2) {experts = 4 : i64, gating = "hard", top_k = 1 : i64} : (tensor<3x5x8xf32>, tensor<3xi64>, tensor<4x8x16xf32>, tensor<4x16xf32>, tensor<4x16x8xf32>) -> tensor<3x5x8xf32>
  return %0 : tensor<3x5x8xf32>
}
