// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref | FileCheck %s --check-prefix=REF
// RUN: sluice-compile %s -o %t/bundle.sluice --quiet
// RUN: FileCheck %s --check-prefix=CODE < %t/bundle.sluice/model.cpp
// RUN: sluice-run %t/bundle.sluice --random-inputs --expect %t/ref/out.npy --rtol=1e-4 --threads=1 | FileCheck %s
// RUN: sluice-run %t/bundle.sluice --random-inputs --expect %t/ref/out.npy --rtol=1e-4 --threads=2 | FileCheck %s
// Rotary embeddings (rotate-half) applied while packing the query block and
// K^T, with a causal mask: a LLaMA-style self-attention.

// REF: output 'out'
// CHECK: output 'out' {{.*}}: ok
// CODE: #include "sluice_gen/cpu_attention.h"
// CODE-LABEL: static int32_t k0_attention(
// CODE: d.rotary = true;
// CODE: d.cos_q.row = 16LL; d.cos_q.col = 1LL; d.cos_q.batch[0] = 0LL; d.cos_q.batch[1] = 0LL;
// CODE: sluice_attention<float, float, float>(args->num_threads, desc, in0, in1, in2, (const float *)nullptr, in3, in4, out0)

func.func @main(%q: tensor<1x2x12x16xf32>, %k: tensor<1x2x12x16xf32>, %v: tensor<1x2x12x16xf32>, %cos: tensor<12x16xf32>, %sin: tensor<12x16xf32>) -> tensor<1x2x12x16xf32> attributes {sluice.input_names = ["q", "k", "v", "cos", "sin"], sluice.output_names = ["out"]} {
  %0 = sluice.kernel @k0_attention(%q, %k, %v, %cos, %sin : tensor<1x2x12x16xf32>, tensor<1x2x12x16xf32>, tensor<1x2x12x16xf32>, tensor<12x16xf32>, tensor<12x16xf32>) -> (tensor<1x2x12x16xf32>) {
  ^bb0(%bq: tensor<1x2x12x16xf32>, %bk: tensor<1x2x12x16xf32>, %bv: tensor<1x2x12x16xf32>, %bcos: tensor<12x16xf32>, %bsin: tensor<12x16xf32>):
    %a = sluice.attention %bq, %bk, %bv rotary(%bcos, %bsin) {causal = true, scale = 2.500000e-01 : f32} : (tensor<1x2x12x16xf32>, tensor<1x2x12x16xf32>, tensor<1x2x12x16xf32>, tensor<12x16xf32>, tensor<12x16xf32>) -> tensor<1x2x12x16xf32>
    sluice.kernel_yield %a : tensor<1x2x12x16xf32>
  }
  return %0 : tensor<1x2x12x16xf32>
}
