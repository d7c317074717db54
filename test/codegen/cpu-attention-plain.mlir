// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref | FileCheck %s --check-prefix=REF
// RUN: sluice-compile %s -o %t/bundle.sluice --quiet
// RUN: FileCheck %s --check-prefix=CODE < %t/bundle.sluice/model.cpp
// RUN: sluice-run %t/bundle.sluice --random-inputs --expect %t/ref/out.npy --rtol=1e-4 --threads=1 | FileCheck %s
// RUN: sluice-run %t/bundle.sluice --random-inputs --expect %t/ref/out.npy --rtol=1e-4 --threads=2 | FileCheck %s
// Fused attention (form F4) on the cpu target against the reference
// evaluator: two batch dims, Sq != Sk, D != Dv, contiguous operands.

// REF: output 'out'
// CHECK: output 'out' {{.*}}: ok
// CODE: #include "sluice_gen/cpu_attention.h"
// CODE-LABEL: static int32_t k0_attention(
// CODE: d.nbatch = 2; d.batch[0] = 2LL; d.batch[1] = 3LL;
// CODE: d.sq = 20LL; d.sk = 24LL; d.d = 16LL; d.dv = 8LL;
// CODE: d.scale = 0x1p-2f; d.causal = false; d.window = 0{{(LL)?}}; d.mask = 0; d.rotary = false;
// CODE: sluice_attention<float, float, float>(args->num_threads, desc, in0, in1, in2, (const float *)nullptr

func.func @main(%q: tensor<2x3x20x16xf32>, %k: tensor<2x3x24x16xf32>, %v: tensor<2x3x24x8xf32>) -> tensor<2x3x20x8xf32> attributes {sluice.input_names = ["q", "k", "v"], sluice.output_names = ["out"]} {
  %0 = sluice.kernel @k0_attention(%q, %k, %v : tensor<2x3x20x16xf32>, tensor<2x3x24x16xf32>, tensor<2x3x24x8xf32>) -> (tensor<2x3x20x8xf32>) {
  ^bb0(%bq: tensor<2x3x20x16xf32>, %bk: tensor<2x3x24x16xf32>, %bv: tensor<2x3x24x8xf32>):
    %a = sluice.attention %bq, %bk, %bv {scale = 2.500000e-01 : f32} : (tensor<2x3x20x16xf32>, tensor<2x3x24x16xf32>, tensor<2x3x24x8xf32>) -> tensor<2x3x20x8xf32>
    sluice.kernel_yield %a : tensor<2x3x20x8xf32>
  }
  return %0 : tensor<2x3x20x8xf32>
}
