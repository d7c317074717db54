// REQUIRES: nvcc
// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref > /dev/null
// RUN: sluice-compile %s --target=cuda %if gpu %{%} %else %{--gpu-arch=sm_90%} -o %t/b.sluice --report=%t/r.json --quiet
// RUN: FileCheck %s < %t/b.sluice/model.cu
// RUN: FileCheck %s --check-prefix=REPORT < %t/r.json
// RUN: sluice-compile %S/Inputs/attention-half-sm75.mlir --target=cuda --gpu-arch=sm_75 -o %t/b75.sluice --quiet
// RUN: FileCheck %s --check-prefix=SM75 < %t/b75.sluice/model.cu
// RUN: %if gpu %{ sluice-run %t/b.sluice --random-inputs --expect %t/ref/o0.npy %t/ref/o1.npy %t/ref/o2.npy %t/ref/o3.npy %t/ref/o4.npy %t/ref/o5.npy %t/ref/o6.npy --rtol=2e-2 --atol=2e-2 | FileCheck %s --check-prefix=EXEC %}
//
// Form F4 on the cuda target in f16/bf16 (built by nvcc for the default
// architectures sm_80, sm_90 and compute_90 PTX where a GPU runs it, for
// sm_90 alone without one: the same source in a third of nvcc's time).
// Head dims 64 and 128 without rotary run the FlashAttention-2 tensor-core kernel
// (sluice_attn_mma: 64 query rows per block, mma.sync m16n8k16, K/V tiles
// of 64 keys for D = 64 and 32 for D = 128); rotary, other head dims and
// D != Dv run the FMA kernel. No group is left to the host. Built for
// sm_75 the mma kernel computes mma.sync with warp shuffles instead
// (Inputs/attention-half-sm75.mlir: its two tile shapes, not all seven
// kernels, since nvcc takes minutes per instance for sm_75).

// EXEC-COUNT-7: : ok
// REPORT: "host_steps": 0,
// SM75: sluice_attn_mma<sluice_f16, sluice_f16, 64, 64><<<
// SM75: sluice_attn_mma<sluice_bf16, sluice_bf16, 128, 32><<<

// f16, D 64, a [B, 1, 1, S] additive f16 mask, sequence 100 (not a
// multiple of the 64-row tile): 2 x 2 batches x 2 query tiles.
// CHECK: #include "sluice_gen/cuda_attention.h"
// CHECK-LABEL: static int32_t k0_attention(
// CHECK: d.sq = 100LL; d.sk = 100LL; d.d = 64LL; d.dv = 64LL;
// CHECK: d.scale = 0x1p-3f; d.causal = false; d.window = 0{{(LL)?}}; d.mask = 1; d.rotary = false;
// CHECK: sluice_attn_mma<sluice_f16, sluice_f16, 64, 64><<<sluice_attn_blocks(desc, 64), 128, 0, stream>>>(desc, in0, in1, in2, in3, out0);
// CHECK-NEXT: SLUICE_LAUNCHED("k0_attention");
// bf16, D 128, causal (key tiles past the block's diagonal skipped).
// CHECK-LABEL: static int32_t k1_attention(
// CHECK: d.causal = true; d.window = 0{{(LL)?}}; d.mask = 0;
// CHECK: sluice_attn_mma<sluice_bf16, sluice_bf16, 128, 32><<<sluice_attn_blocks(desc, 64), 128, 0, stream>>>(desc, in0, in1, in2, (const sluice_bf16 *)nullptr, out0);
// q, k, v read in place from one [B, S, 3 * H * D] QKV output (row stride
// 768; rows 16-byte aligned, so tiles move as 16-byte vectors), the output
// written through transpose + reshape.
// CHECK-LABEL: static int32_t k2_attention(
// CHECK: d.q.row = 768LL; d.q.col = 1LL; d.q.batch[0] = 30720LL; d.q.batch[1] = 64LL;
// CHECK: d.out.row = 256LL; d.out.col = 1LL; d.out.batch[0] = 10240LL; d.out.batch[1] = 64LL;
// CHECK: sluice_attn_mma<sluice_f16, sluice_f16, 64, 64><<<{{.*}}>>>(desc, in0, (in0 + 256), (in0 + 512), (const sluice_f16 *)nullptr, out0);
// A decoder step with a cache: 50 queries over 70 keys, causal and a
// boolean keep-mask.
// CHECK-LABEL: static int32_t k3_attention(
// CHECK: d.sq = 50LL; d.sk = 70LL;
// CHECK: d.causal = true; d.window = 0{{(LL)?}}; d.mask = 2;
// CHECK: sluice_attn_mma<sluice_f16, bool, 64, 64><<<
// Rotary: the FMA kernel (rotation applied while tiles are loaded).
// CHECK-LABEL: static int32_t k4_attention(
// CHECK: sluice_attn_fma<sluice_f16, sluice_f16, sluice_f16, 64, 64, 4, 32><<<sluice_attn_blocks(desc, 16), 128, 0, stream>>>(desc, in0, in1, in2, (const sluice_f16 *)nullptr, in3, in4, out0);
// bf16 with head dim 80: the FMA kernel.
// CHECK-LABEL: static int32_t k5_attention(
// CHECK: sluice_attn_fma<sluice_bf16, sluice_bf16, sluice_bf16, 96, 96, 4, 32><<<
// f16 with D 128 and Dv 64: the FMA kernel.
// CHECK-LABEL: static int32_t k6_attention(
// CHECK: sluice_attn_fma<sluice_f16, sluice_f16, sluice_f16, 128, 64, 4, 32><<<

module {
  func.func @main(%q0: tensor<2x2x100x64xf16>, %k0: tensor<2x2x100x64xf16>, %v0: tensor<2x2x100x64xf16>, %mask0: tensor<2x1x1x100xf16>,
                  %q1: tensor<1x2x80x128xbf16>, %k1: tensor<1x2x80x128xbf16>, %v1: tensor<1x2x80x128xbf16>,
                  %qkv: tensor<2x40x768xf16>,
                  %q3: tensor<1x2x50x64xf16>, %k3: tensor<1x2x70x64xf16>, %v3: tensor<1x2x70x64xf16>, %mask3: tensor<1x1x50x70xi1>,
                  %q4: tensor<1x2x24x64xf16>, %k4: tensor<1x2x24x64xf16>, %v4: tensor<1x2x24x64xf16>, %cos: tensor<24x64xf16>, %sin: tensor<24x64xf16>,
                  %q5: tensor<2x33x80xbf16>, %k5: tensor<2x33x80xbf16>, %v5: tensor<2x33x80xbf16>,
                  %q6: tensor<2x20x128xf16>, %k6: tensor<2x36x128xf16>, %v6: tensor<2x36x64xf16>)
      -> (tensor<2x2x100x64xf16>, tensor<1x2x80x128xbf16>, tensor<2x40x256xf16>, tensor<1x2x50x64xf16>, tensor<1x2x24x64xf16>, tensor<2x33x80xbf16>, tensor<2x20x64xf16>)
      attributes {sluice.input_names = ["q0", "k0", "v0", "mask0", "q1", "k1", "v1", "qkv", "q3", "k3", "v3", "mask3", "q4", "k4", "v4", "cos", "sin", "q5", "k5", "v5", "q6", "k6", "v6"],
                  sluice.output_names = ["o0", "o1", "o2", "o3", "o4", "o5", "o6"]} {
    %0 = sluice.kernel @k0_attention(%q0, %k0, %v0, %mask0 : tensor<2x2x100x64xf16>, tensor<2x2x100x64xf16>, tensor<2x2x100x64xf16>, tensor<2x1x1x100xf16>) -> (tensor<2x2x100x64xf16>) {
    ^bb0(%bq: tensor<2x2x100x64xf16>, %bk: tensor<2x2x100x64xf16>, %bv: tensor<2x2x100x64xf16>, %bm: tensor<2x1x1x100xf16>):
      %a = sluice.attention %bq, %bk, %bv mask %bm {scale = 1.250000e-01 : f32} : (tensor<2x2x100x64xf16>, tensor<2x2x100x64xf16>, tensor<2x2x100x64xf16>, tensor<2x1x1x100xf16>) -> tensor<2x2x100x64xf16>
      sluice.kernel_yield %a : tensor<2x2x100x64xf16>
    }
    %1 = sluice.kernel @k1_attention(%q1, %k1, %v1 : tensor<1x2x80x128xbf16>, tensor<1x2x80x128xbf16>, tensor<1x2x80x128xbf16>) -> (tensor<1x2x80x128xbf16>) {
    ^bb0(%bq: tensor<1x2x80x128xbf16>, %bk: tensor<1x2x80x128xbf16>, %bv: tensor<1x2x80x128xbf16>):
      %a = sluice.attention %bq, %bk, %bv {causal = true, scale = 0.0883883461 : f32} : (tensor<1x2x80x128xbf16>, tensor<1x2x80x128xbf16>, tensor<1x2x80x128xbf16>) -> tensor<1x2x80x128xbf16>
      sluice.kernel_yield %a : tensor<1x2x80x128xbf16>
    }
    %2 = sluice.kernel @k2_attention(%qkv : tensor<2x40x768xf16>) -> (tensor<2x40x256xf16>) {
    ^bb0(%x: tensor<2x40x768xf16>):
      %heads = sluice.constant dense<[2, 40, 4, 64]> : tensor<4xi64>
      %flat = sluice.constant dense<[2, 40, 256]> : tensor<3xi64>
      %q, %k, %v = sluice.split %x {axis = 2 : i64, num_outputs = 3 : i64} : (tensor<2x40x768xf16>) -> (tensor<2x40x256xf16>, tensor<2x40x256xf16>, tensor<2x40x256xf16>)
      %qh = sluice.reshape %q, %heads : (tensor<2x40x256xf16>, tensor<4xi64>) -> tensor<2x40x4x64xf16>
      %kh = sluice.reshape %k, %heads : (tensor<2x40x256xf16>, tensor<4xi64>) -> tensor<2x40x4x64xf16>
      %vh = sluice.reshape %v, %heads : (tensor<2x40x256xf16>, tensor<4xi64>) -> tensor<2x40x4x64xf16>
      %qt = sluice.transpose %qh {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x40x4x64xf16>) -> tensor<2x4x40x64xf16>
      %kt = sluice.transpose %kh {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x40x4x64xf16>) -> tensor<2x4x40x64xf16>
      %vt = sluice.transpose %vh {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x40x4x64xf16>) -> tensor<2x4x40x64xf16>
      %a = sluice.attention %qt, %kt, %vt {scale = 1.250000e-01 : f32} : (tensor<2x4x40x64xf16>, tensor<2x4x40x64xf16>, tensor<2x4x40x64xf16>) -> tensor<2x4x40x64xf16>
      %t = sluice.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x40x64xf16>) -> tensor<2x40x4x64xf16>
      %r = sluice.reshape %t, %flat : (tensor<2x40x4x64xf16>, tensor<3xi64>) -> tensor<2x40x256xf16>
      sluice.kernel_yield %r : tensor<2x40x256xf16>
    }
    %3 = sluice.kernel @k3_attention(%q3, %k3, %v3, %mask3 : tensor<1x2x50x64xf16>, tensor<1x2x70x64xf16>, tensor<1x2x70x64xf16>, tensor<1x1x50x70xi1>) -> (tensor<1x2x50x64xf16>) {
    ^bb0(%bq: tensor<1x2x50x64xf16>, %bk: tensor<1x2x70x64xf16>, %bv: tensor<1x2x70x64xf16>, %bm: tensor<1x1x50x70xi1>):
      %a = sluice.attention %bq, %bk, %bv mask %bm {causal = true, scale = 1.250000e-01 : f32} : (tensor<1x2x50x64xf16>, tensor<1x2x70x64xf16>, tensor<1x2x70x64xf16>, tensor<1x1x50x70xi1>) -> tensor<1x2x50x64xf16>
      sluice.kernel_yield %a : tensor<1x2x50x64xf16>
    }
    %4 = sluice.kernel @k4_attention(%q4, %k4, %v4, %cos, %sin : tensor<1x2x24x64xf16>, tensor<1x2x24x64xf16>, tensor<1x2x24x64xf16>, tensor<24x64xf16>, tensor<24x64xf16>) -> (tensor<1x2x24x64xf16>) {
    ^bb0(%bq: tensor<1x2x24x64xf16>, %bk: tensor<1x2x24x64xf16>, %bv: tensor<1x2x24x64xf16>, %bcos: tensor<24x64xf16>, %bsin: tensor<24x64xf16>):
      %a = sluice.attention %bq, %bk, %bv rotary(%bcos, %bsin) {causal = true, scale = 1.250000e-01 : f32} : (tensor<1x2x24x64xf16>, tensor<1x2x24x64xf16>, tensor<1x2x24x64xf16>, tensor<24x64xf16>, tensor<24x64xf16>) -> tensor<1x2x24x64xf16>
      sluice.kernel_yield %a : tensor<1x2x24x64xf16>
    }
    %5 = sluice.kernel @k5_attention(%q5, %k5, %v5 : tensor<2x33x80xbf16>, tensor<2x33x80xbf16>, tensor<2x33x80xbf16>) -> (tensor<2x33x80xbf16>) {
    ^bb0(%bq: tensor<2x33x80xbf16>, %bk: tensor<2x33x80xbf16>, %bv: tensor<2x33x80xbf16>):
      %a = sluice.attention %bq, %bk, %bv {scale = 0.111803398 : f32} : (tensor<2x33x80xbf16>, tensor<2x33x80xbf16>, tensor<2x33x80xbf16>) -> tensor<2x33x80xbf16>
      sluice.kernel_yield %a : tensor<2x33x80xbf16>
    }
    %6 = sluice.kernel @k6_attention(%q6, %k6, %v6 : tensor<2x20x128xf16>, tensor<2x36x128xf16>, tensor<2x36x64xf16>) -> (tensor<2x20x64xf16>) {
    ^bb0(%bq: tensor<2x20x128xf16>, %bk: tensor<2x36x128xf16>, %bv: tensor<2x36x64xf16>):
      %a = sluice.attention %bq, %bk, %bv {scale = 0.0883883461 : f32} : (tensor<2x20x128xf16>, tensor<2x36x128xf16>, tensor<2x36x64xf16>) -> tensor<2x20x64xf16>
      sluice.kernel_yield %a : tensor<2x20x64xf16>
    }
    return %0, %1, %2, %3, %4, %5, %6 : tensor<2x2x100x64xf16>, tensor<1x2x80x128xbf16>, tensor<2x40x256xf16>, tensor<1x2x50x64xf16>, tensor<1x2x24x64xf16>, tensor<2x33x80xbf16>, tensor<2x20x64xf16>
  }
}
