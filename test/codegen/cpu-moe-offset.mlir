// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref | FileCheck %s --check-prefix=REF
// RUN: sluice-compile %s -o %t/bundle.sluice --quiet
// RUN: FileCheck %s --check-prefix=CODE < %t/bundle.sluice/model.cpp
// (c0, c1: the small constants, the offset and the index, as in-kernel arrays.)
// RUN: sluice-run %t/bundle.sluice --random-inputs --expect %t/ref/top2.npy %t/ref/hard.npy %t/ref/gated.npy --rtol=1e-4 --atol=1e-5 --report=%t/report.json | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPORT < %t/report.json
// The MoE kernel with an expert_offset (what --ep gives each rank): the op
// holds experts [2, 4) of 4 (w1's first dim 2), tokens routed to experts 0
// and 1 contribute nothing; against the reference evaluator. The expert-load
// profile still counts all 4 experts (the full routing): the hard op's 16
// tokens all go to expert 3, held by rank 1 of the 2 ranks that 2 experts
// per rank make, so its imbalance over the ranks is 16 / 8 = 2. The third
// op has gated experts (SwiGLU: silu(x w1 + b1) * (x w3 + b3)), the same
// offset, renormalized top-2 weights.

// REF: output 'top2'
// REF: output 'hard'
// CHECK: output 'top2' {{.*}}: ok
// CHECK: output 'hard' {{.*}}: ok
// CHECK: output 'gated' {{.*}}: ok
// CODE-LABEL: static int32_t k0_moe(
// CODE: static const sluice_moe_shape shape = {24LL, 16LL, 8LL, 12LL, 4LL, 2LL, 2LL, 1LL, false, false, 4};
// CODE: sluice_moe<float>(args, "k0_moe", shape, in0, in1, in2, in3, in4, in5, nullptr, nullptr, c0, out0, args->expert_load ? args->expert_load + 0LL : nullptr);
// CODE-LABEL: static int32_t k1_moe(
// CODE: static const sluice_moe_shape shape = {16LL, 16LL, 8LL, 12LL, 4LL, 2LL, 1LL, 8LL, true, false, 0};
// CODE: sluice_moe<int32_t>(args, "k1_moe", shape, in0, c0, in1, nullptr, in2, nullptr, nullptr, nullptr, c1, out0, args->expert_load ? args->expert_load + 4LL : nullptr);
// CODE-LABEL: static int32_t k2_moe(
// CODE: static const sluice_moe_shape shape = {24LL, 16LL, 8LL, 12LL, 4LL, 2LL, 2LL, 1LL, false, true, 4};
// CODE: sluice_moe<float>(args, "k2_moe", shape, in0, in1, in2, in3, in4, in5, in6, in7, c0, out0, args->expert_load ? args->expert_load + 8LL : nullptr);
// REPORT: "expert_load": [
// REPORT: "gating": "top_k",
// REPORT: "experts_per_rank": 2,
// REPORT: "imbalance_over": "ranks"
// REPORT: "gating": "hard",
// REPORT: "experts_per_rank": 2,
// REPORT-NEXT: "tokens_per_expert": [
// REPORT-NEXT: 0,
// REPORT-NEXT: 0,
// REPORT-NEXT: 0,
// REPORT-NEXT: 16
// REPORT-NEXT: ],
// REPORT-NEXT: "tokens_per_rank": [
// REPORT-NEXT: 0,
// REPORT-NEXT: 16
// REPORT-NEXT: ],
// REPORT-NEXT: "imbalance": 2,
// REPORT-NEXT: "imbalance_over": "ranks"

func.func @main(%x: tensor<2x12x16xf32>, %logits: tensor<2x12x4xf32>, %w1: tensor<2x16x8xf32>, %b1: tensor<2x8xf32>, %w2: tensor<2x8x12xf32>, %b2: tensor<2x12xf32>, %y: tensor<2x8x16xf32>, %w3: tensor<2x16x8xf32>, %b3: tensor<2x8xf32>) -> (tensor<2x12x12xf32>, tensor<2x8x12xf32>, tensor<2x12x12xf32>) attributes {sluice.input_names = ["x", "logits", "w1", "b1", "w2", "b2", "y", "w3", "b3"], sluice.output_names = ["top2", "hard", "gated"]} {
  %offset = sluice.constant dense<[2]> : tensor<1xi64>
  %0 = sluice.moe %x, %logits experts(%w1 bias %b1, %w2 bias %b2) offset %offset {activation = "silu", experts = 4 : i64, gating = "top_k", top_k = 2 : i64} : (tensor<2x12x16xf32>, tensor<2x12x4xf32>, tensor<2x16x8xf32>, tensor<2x8xf32>, tensor<2x8x12xf32>, tensor<2x12xf32>, tensor<1xi64>) -> tensor<2x12x12xf32>
  %language = sluice.constant dense<[3, 3]> : tensor<2xi32>
  %1 = sluice.moe %y, %language experts(%w1, %w2) offset %offset {experts = 4 : i64, gating = "hard", top_k = 1 : i64} : (tensor<2x8x16xf32>, tensor<2xi32>, tensor<2x16x8xf32>, tensor<2x8x12xf32>, tensor<1xi64>) -> tensor<2x8x12xf32>
  %2 = sluice.moe %x, %logits experts(%w1 bias %b1, %w2 bias %b2, up %w3 bias %b3) offset %offset {activation = "silu", experts = 4 : i64, gating = "top_k", normalize = true, top_k = 2 : i64} : (tensor<2x12x16xf32>, tensor<2x12x4xf32>, tensor<2x16x8xf32>, tensor<2x8xf32>, tensor<2x8x12xf32>, tensor<2x12xf32>, tensor<2x16x8xf32>, tensor<2x8xf32>, tensor<1xi64>) -> tensor<2x12x12xf32>
  return %0, %1, %2 : tensor<2x12x12xf32>, tensor<2x8x12xf32>, tensor<2x12x12xf32>
}
