// REQUIRES: nvcc
// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref > /dev/null
// RUN: sluice-compile %s --target=cuda --gpu-arch=sm_80 -o %t/b.sluice --report=%t/r.json --quiet
// RUN: FileCheck %s < %t/b.sluice/model.cu
// RUN: FileCheck %s --check-prefix=REPORT < %t/r.json
// RUN: %if gpu %{ sluice-run %t/b.sluice --random-inputs --expect %t/ref/o0.npy %t/ref/o1.npy %t/ref/o2.npy %t/ref/o3.npy %t/ref/o4.npy %t/ref/o5.npy --rtol=1e-4 --atol=1e-5 | FileCheck %s --check-prefix=EXEC %}
//
// Form F4 on the cuda target, f32 (and f64): every f32 attention runs the
// tiled FMA kernel (sluice_attn_fma: 4 warps, online softmax in exp2) with
// the cpu target's descriptor of strides; f64 has no cuda kernel and runs as
// a host step whose reason the report names. model.cu is built by nvcc here
// and run against the reference evaluator where a GPU is present.

// EXEC-COUNT-7: : ok

// Plain, sequence 70 (not a multiple of the 16-row tile), head dim 64:
// 2 x 2 batches x 5 query tiles.
// CHECK: #include "sluice_gen/cuda_attention.h"
// CHECK-LABEL: static int32_t k0_attention(
// CHECK: static const sluice_cuda_attn_desc desc = [] {
// CHECK: d.nbatch = 2; d.batch[0] = 2LL; d.batch[1] = 2LL;
// CHECK: d.sq = 70LL; d.sk = 70LL; d.d = 64LL; d.dv = 64LL;
// CHECK: d.scale = 0x1p-3f; d.causal = false; d.window = 0{{(LL)?}}; d.mask = 0; d.rotary = false;
// CHECK: sluice_attn_fma<float, float, float, 64, 64, 4, 32><<<sluice_attn_blocks(desc, 16), 128, 0, stream>>>(desc, in0, in1, in2, (const float *)nullptr, (const float *)nullptr, (const float *)nullptr, out0);
// CHECK-NEXT: SLUICE_LAUNCHED("k0_attention");
// BERT's self-attention read in place from one QKV GEMM output (row stride
// 96, k and v at offsets 32 and 64), a [B, 1, 1, S] padding mask, the
// result written through transpose + reshape.
// CHECK-LABEL: static int32_t k1_attention(
// CHECK: d.q.row = 96LL; d.q.col = 1LL; d.q.batch[0] = 1536LL; d.q.batch[1] = 8LL;
// CHECK: d.m.row = 0LL; d.m.col = 1LL; d.m.batch[0] = 16LL; d.m.batch[1] = 0LL;
// CHECK: d.out.row = 32LL; d.out.col = 1LL; d.out.batch[0] = 512LL; d.out.batch[1] = 8LL;
// CHECK: sluice_attn_fma<float, float, float, 32, 32, 4, 32><<<sluice_attn_blocks(desc, 16), 128, 0, stream>>>(desc, in0, (in0 + 32), (in0 + 64), in1, (const float *)nullptr, (const float *)nullptr, out0);
// Rotary (rotate-half, applied while the Q and K tiles are loaded) with a
// causal mask.
// CHECK-LABEL: static int32_t k2_attention(
// CHECK: d.scale = 0x1p-2f; d.causal = true; d.window = 0{{(LL)?}}; d.mask = 0; d.rotary = true;
// CHECK: d.cos_q.row = 16LL; d.cos_q.col = 1LL; d.cos_q.batch[0] = 0LL; d.cos_q.batch[1] = 0LL;
// CHECK: sluice_attn_fma<float, float, float, 32, 32, 4, 32><<<{{.*}}>>>(desc, in0, in1, in2, (const float *)nullptr, in3, in4, out0);
// A boolean keep-mask, key/value shared by the 3 query heads (batch stride
// 0), head dims 40 and 24 padded to 64 and 32.
// CHECK-LABEL: static int32_t k3_attention(
// CHECK: d.k.row = 40LL; d.k.col = 1LL; d.k.batch[0] = 960LL; d.k.batch[1] = 0LL;
// CHECK: sluice_attn_fma<float, bool, float, 64, 32, 4, 32><<<{{.*}}>>>(desc, in0, in1, in2, in3, (const float *)nullptr, (const float *)nullptr, out0);
// Head dim 160: 8 query rows and 16 keys per tile; causal with more queries
// than keys (rows 0-9 see no key: NaN, as the evaluator).
// CHECK-LABEL: static int32_t k4_attention(
// CHECK: sluice_attn_fma<float, float, float, 160, 160, 2, 16><<<sluice_attn_blocks(desc, 8), 128, 0, stream>>>(
// f64: a host step.
// CHECK-LABEL: static int32_t k5_attention(
// CHECK: cudaLaunchHostFunc(stream, sluice_host_step_trampoline, slot.get())
// Head dim 288: wider than the kernels' shared tiles, a host step too.
// CHECK-LABEL: static int32_t k6_attention(
// CHECK: cudaLaunchHostFunc(stream, sluice_host_step_trampoline, slot.get())
// REPORT: "host_steps": 2,
// REPORT: "remarks": [
// REPORT-NEXT: "k5_attention (sluice.attention): runs on the host: attention in f64 has no cuda kernel (f32, f16, bf16 only)",
// REPORT-NEXT: "k6_attention (sluice.attention): runs on the host: attention head dim 288 exceeds the cuda kernels' 256"
// REPORT-NEXT: ],

module {
  func.func @main(%q0: tensor<2x2x70x64xf32>, %k0: tensor<2x2x70x64xf32>, %v0: tensor<2x2x70x64xf32>,
                  %qkv: tensor<2x16x96xf32>, %mask1: tensor<2x1x1x16xf32>,
                  %q2: tensor<1x2x12x16xf32>, %k2: tensor<1x2x12x16xf32>, %v2: tensor<1x2x12x16xf32>, %cos: tensor<12x16xf32>, %sin: tensor<12x16xf32>,
                  %q3: tensor<2x3x20x40xf32>, %k3: tensor<2x1x24x40xf32>, %v3: tensor<2x1x24x24xf32>, %mask3: tensor<1x1x20x24xi1>,
                  %q4: tensor<2x30x160xf32>, %k4: tensor<2x20x160xf32>, %v4: tensor<2x20x160xf32>,
                  %q5: tensor<1x2x8x16xf64>, %k5: tensor<1x2x8x16xf64>, %v5: tensor<1x2x8x16xf64>,
                  %q6: tensor<2x5x288xf32>, %k6: tensor<2x7x288xf32>, %v6: tensor<2x7x288xf32>)
      -> (tensor<2x2x70x64xf32>, tensor<2x16x32xf32>, tensor<1x2x12x16xf32>, tensor<2x3x20x24xf32>, tensor<2x30x160xf32>, tensor<1x2x8x16xf64>, tensor<2x5x288xf32>)
      attributes {sluice.input_names = ["q0", "k0", "v0", "qkv", "mask1", "q2", "k2", "v2", "cos", "sin", "q3", "k3", "v3", "mask3", "q4", "k4", "v4", "q5", "k5", "v5", "q6", "k6", "v6"],
                  sluice.output_names = ["o0", "o1", "o2", "o3", "o4", "o5", "o6"]} {
    %0 = sluice.kernel @k0_attention(%q0, %k0, %v0 : tensor<2x2x70x64xf32>, tensor<2x2x70x64xf32>, tensor<2x2x70x64xf32>) -> (tensor<2x2x70x64xf32>) {
    ^bb0(%bq: tensor<2x2x70x64xf32>, %bk: tensor<2x2x70x64xf32>, %bv: tensor<2x2x70x64xf32>):
      %a = sluice.attention %bq, %bk, %bv {scale = 1.250000e-01 : f32} : (tensor<2x2x70x64xf32>, tensor<2x2x70x64xf32>, tensor<2x2x70x64xf32>) -> tensor<2x2x70x64xf32>
      sluice.kernel_yield %a : tensor<2x2x70x64xf32>
    }
    %1 = sluice.kernel @k1_attention(%qkv, %mask1 : tensor<2x16x96xf32>, tensor<2x1x1x16xf32>) -> (tensor<2x16x32xf32>) {
    ^bb0(%x: tensor<2x16x96xf32>, %m: tensor<2x1x1x16xf32>):
      %heads = sluice.constant dense<[2, 16, 4, 8]> : tensor<4xi64>
      %flat = sluice.constant dense<[2, 16, 32]> : tensor<3xi64>
      %q, %k, %v = sluice.split %x {axis = 2 : i64, num_outputs = 3 : i64} : (tensor<2x16x96xf32>) -> (tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>)
      %q1 = sluice.reshape %q, %heads : (tensor<2x16x32xf32>, tensor<4xi64>) -> tensor<2x16x4x8xf32>
      %k1 = sluice.reshape %k, %heads : (tensor<2x16x32xf32>, tensor<4xi64>) -> tensor<2x16x4x8xf32>
      %v1 = sluice.reshape %v, %heads : (tensor<2x16x32xf32>, tensor<4xi64>) -> tensor<2x16x4x8xf32>
      %qt = sluice.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x4x8xf32>) -> tensor<2x4x16x8xf32>
      %kt = sluice.transpose %k1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x4x8xf32>) -> tensor<2x4x16x8xf32>
      %vt = sluice.transpose %v1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x4x8xf32>) -> tensor<2x4x16x8xf32>
      %a = sluice.attention %qt, %kt, %vt mask %m {scale = 0.353553385 : f32} : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x1x1x16xf32>) -> tensor<2x4x16x8xf32>
      %t = sluice.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x16x8xf32>) -> tensor<2x16x4x8xf32>
      %r = sluice.reshape %t, %flat : (tensor<2x16x4x8xf32>, tensor<3xi64>) -> tensor<2x16x32xf32>
      sluice.kernel_yield %r : tensor<2x16x32xf32>
    }
    %2 = sluice.kernel @k2_attention(%q2, %k2, %v2, %cos, %sin : tensor<1x2x12x16xf32>, tensor<1x2x12x16xf32>, tensor<1x2x12x16xf32>, tensor<12x16xf32>, tensor<12x16xf32>) -> (tensor<1x2x12x16xf32>) {
    ^bb0(%bq: tensor<1x2x12x16xf32>, %bk: tensor<1x2x12x16xf32>, %bv: tensor<1x2x12x16xf32>, %bcos: tensor<12x16xf32>, %bsin: tensor<12x16xf32>):
      %a = sluice.attention %bq, %bk, %bv rotary(%bcos, %bsin) {causal = true, scale = 2.500000e-01 : f32} : (tensor<1x2x12x16xf32>, tensor<1x2x12x16xf32>, tensor<1x2x12x16xf32>, tensor<12x16xf32>, tensor<12x16xf32>) -> tensor<1x2x12x16xf32>
      sluice.kernel_yield %a : tensor<1x2x12x16xf32>
    }
    %3 = sluice.kernel @k3_attention(%q3, %k3, %v3, %mask3 : tensor<2x3x20x40xf32>, tensor<2x1x24x40xf32>, tensor<2x1x24x24xf32>, tensor<1x1x20x24xi1>) -> (tensor<2x3x20x24xf32>) {
    ^bb0(%bq: tensor<2x3x20x40xf32>, %bk: tensor<2x1x24x40xf32>, %bv: tensor<2x1x24x24xf32>, %bm: tensor<1x1x20x24xi1>):
      %a = sluice.attention %bq, %bk, %bv mask %bm {scale = 0.158113882 : f32} : (tensor<2x3x20x40xf32>, tensor<2x1x24x40xf32>, tensor<2x1x24x24xf32>, tensor<1x1x20x24xi1>) -> tensor<2x3x20x24xf32>
      sluice.kernel_yield %a : tensor<2x3x20x24xf32>
    }
    %4 = sluice.kernel @k4_attention(%q4, %k4, %v4 : tensor<2x30x160xf32>, tensor<2x20x160xf32>, tensor<2x20x160xf32>) -> (tensor<2x30x160xf32>) {
    ^bb0(%bq: tensor<2x30x160xf32>, %bk: tensor<2x20x160xf32>, %bv: tensor<2x20x160xf32>):
      %a = sluice.attention %bq, %bk, %bv {causal = true, scale = 0.0790569409 : f32} : (tensor<2x30x160xf32>, tensor<2x20x160xf32>, tensor<2x20x160xf32>) -> tensor<2x30x160xf32>
      sluice.kernel_yield %a : tensor<2x30x160xf32>
    }
    %5 = sluice.kernel @k5_attention(%q5, %k5, %v5 : tensor<1x2x8x16xf64>, tensor<1x2x8x16xf64>, tensor<1x2x8x16xf64>) -> (tensor<1x2x8x16xf64>) {
    ^bb0(%bq: tensor<1x2x8x16xf64>, %bk: tensor<1x2x8x16xf64>, %bv: tensor<1x2x8x16xf64>):
      %a = sluice.attention %bq, %bk, %bv {scale = 2.500000e-01 : f32} : (tensor<1x2x8x16xf64>, tensor<1x2x8x16xf64>, tensor<1x2x8x16xf64>) -> tensor<1x2x8x16xf64>
      sluice.kernel_yield %a : tensor<1x2x8x16xf64>
    }
    %6 = sluice.kernel @k6_attention(%q6, %k6, %v6 : tensor<2x5x288xf32>, tensor<2x7x288xf32>, tensor<2x7x288xf32>) -> (tensor<2x5x288xf32>) {
    ^bb0(%bq: tensor<2x5x288xf32>, %bk: tensor<2x7x288xf32>, %bv: tensor<2x7x288xf32>):
      %a = sluice.attention %bq, %bk, %bv {scale = 0.0589255653 : f32} : (tensor<2x5x288xf32>, tensor<2x7x288xf32>, tensor<2x7x288xf32>) -> tensor<2x5x288xf32>
      sluice.kernel_yield %a : tensor<2x5x288xf32>
    }
    return %0, %1, %2, %3, %4, %5, %6 : tensor<2x2x70x64xf32>, tensor<2x16x32xf32>, tensor<1x2x12x16xf32>, tensor<2x3x20x24xf32>, tensor<2x30x160xf32>, tensor<1x2x8x16xf64>, tensor<2x5x288xf32>
  }
}
