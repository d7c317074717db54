// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref | FileCheck %s --check-prefix=REF
// RUN: sluice-compile %s -o %t/bundle.sluice --quiet
// RUN: FileCheck %s --check-prefix=CODE < %t/bundle.sluice/model.cpp
// RUN: sluice-run %t/bundle.sluice --random-inputs --expect %t/ref/out.npy --rtol=1e-4 --threads=1 | FileCheck %s
// RUN: sluice-run %t/bundle.sluice --random-inputs --expect %t/ref/out.npy --rtol=1e-4 --threads=2 | FileCheck %s
// Causal with more queries than keys: query rows 0-9 see no key and are NaN,
// as the evaluator's (Where -> Softmax) rows are.

// REF: output 'out'
// CHECK: output 'out' {{.*}}: ok
// CODE: #include "sluice_gen/cpu_attention.h"
// CODE-LABEL: static int32_t k0_attention(

func.func @main(%q: tensor<2x30x16xf32>, %k: tensor<2x20x16xf32>, %v: tensor<2x20x16xf32>) -> tensor<2x30x16xf32> attributes {sluice.input_names = ["q", "k", "v"], sluice.output_names = ["out"]} {
  %0 = sluice.kernel @k0_attention(%q, %k, %v : tensor<2x30x16xf32>, tensor<2x20x16xf32>, tensor<2x20x16xf32>) -> (tensor<2x30x16xf32>) {
  ^bb0(%bq: tensor<2x30x16xf32>, %bk: tensor<2x20x16xf32>, %bv: tensor<2x20x16xf32>):
    %a = sluice.attention %bq, %bk, %bv {causal = true, scale = 2.500000e-01 : f32} : (tensor<2x30x16xf32>, tensor<2x20x16xf32>, tensor<2x20x16xf32>) -> tensor<2x30x16xf32>
    sluice.kernel_yield %a : tensor<2x30x16xf32>
  }
  return %0 : tensor<2x30x16xf32>
}
