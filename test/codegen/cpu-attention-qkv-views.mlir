// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref | FileCheck %s --check-prefix=REF
// RUN: sluice-compile %s -o %t/bundle.sluice --quiet
// RUN: FileCheck %s --check-prefix=CODE < %t/bundle.sluice/model.cpp
// RUN: sluice-run %t/bundle.sluice --random-inputs --expect %t/ref/out.npy --rtol=1e-4 --threads=1 | FileCheck %s
// RUN: sluice-run %t/bundle.sluice --random-inputs --expect %t/ref/out.npy --rtol=1e-4 --threads=2 | FileCheck %s
// BERT's self-attention as form F4: q, k and v are the split, head reshape
// and transpose of one [B, S, 3*H*D] QKV GEMM output, the padding mask is
// [B, 1, 1, S] float, the result goes back through transpose(0, 2, 1, 3) and
// reshape to [B, S, H*D]. No copies: the kernel reads q/k/v rows in place
// (row stride 3*H*D = 96, head stride D = 8, k and v at element offsets 32
// and 64) and writes the output's rows with stride H*D.

// REF: output 'out'
// CHECK: output 'out' {{.*}}: ok
// CODE: #include "sluice_gen/cpu_attention.h"
// CODE-LABEL: static int32_t k0_attention(
// CODE: d.nbatch = 2; d.batch[0] = 2LL; d.batch[1] = 4LL;
// CODE: d.scale = 0x1.6a09e6p-2f; d.causal = false; d.window = 0{{(LL)?}}; d.mask = 1; d.rotary = false;
// CODE: d.q.row = 96LL; d.q.col = 1LL; d.q.batch[0] = 1536LL; d.q.batch[1] = 8LL;
// CODE: d.m.row = 0LL; d.m.col = 1LL; d.m.batch[0] = 16LL; d.m.batch[1] = 0LL;
// CODE: d.out.row = 32LL; d.out.col = 1LL; d.out.batch[0] = 512LL; d.out.batch[1] = 8LL;
// CODE: sluice_attention<float, float, float>(args->num_threads, desc, in0, (in0 + 32), (in0 + 64), in1, (const float *)nullptr, (const float *)nullptr, out0)

func.func @main(%qkv: tensor<2x16x96xf32>, %mask: tensor<2x1x1x16xf32>) -> tensor<2x16x32xf32> attributes {sluice.input_names = ["qkv", "mask"], sluice.output_names = ["out"]} {
  %0 = sluice.kernel @k0_attention(%qkv, %mask : tensor<2x16x96xf32>, tensor<2x1x1x16xf32>) -> (tensor<2x16x32xf32>) {
  ^bb0(%x: tensor<2x16x96xf32>, %m: tensor<2x1x1x16xf32>):
    %heads = sluice.constant dense<[2, 16, 4, 8]> : tensor<4xi64>
    %flat = sluice.constant dense<[2, 16, 32]> : tensor<3xi64>
    %q, %k, %v = sluice.split %x {axis = 2 : i64, num_outputs = 3 : i64} : (tensor<2x16x96xf32>) -> (tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>)
    %q1 = sluice.reshape %q, %heads : (tensor<2x16x32xf32>, tensor<4xi64>) -> tensor<2x16x4x8xf32>
    %k1 = sluice.reshape %k, %heads : (tensor<2x16x32xf32>, tensor<4xi64>) -> tensor<2x16x4x8xf32>
    %v1 = sluice.reshape %v, %heads : (tensor<2x16x32xf32>, tensor<4xi64>) -> tensor<2x16x4x8xf32>
    %q2 = sluice.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x4x8xf32>) -> tensor<2x4x16x8xf32>
    %k2 = sluice.transpose %k1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x4x8xf32>) -> tensor<2x4x16x8xf32>
    %v2 = sluice.transpose %v1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x4x8xf32>) -> tensor<2x4x16x8xf32>
    %a = sluice.attention %q2, %k2, %v2 mask %m {scale = 0.353553385 : f32} : (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x1x1x16xf32>) -> tensor<2x4x16x8xf32>
    %t = sluice.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x16x8xf32>) -> tensor<2x16x4x8xf32>
    %r = sluice.reshape %t, %flat : (tensor<2x16x4x8xf32>, tensor<3xi64>) -> tensor<2x16x32xf32>
    sluice.kernel_yield %r : tensor<2x16x32xf32>
  }
  return %0 : tensor<2x16x32xf32>
}
