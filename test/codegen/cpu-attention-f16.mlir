// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref | FileCheck %s --check-prefix=REF
// RUN: sluice-compile %s -o %t/bundle.sluice --quiet
// RUN: FileCheck %s --check-prefix=CODE < %t/bundle.sluice/model.cpp
// RUN: sluice-run %t/bundle.sluice --random-inputs --expect %t/ref/out.npy --rtol=2e-3 --threads=1 | FileCheck %s
// RUN: sluice-run %t/bundle.sluice --random-inputs --expect %t/ref/out.npy --rtol=2e-3 --threads=2 | FileCheck %s
// f16 operands and an f16 additive mask: converted into f32 packs, softmax
// and both GEMMs in f32, the result rounded to f16 once (the evaluator
// computes in double and rounds once too: within an f16 ulp).

// REF: output 'out'
// CHECK: output 'out' {{.*}}: ok
// CODE: #include "sluice_gen/cpu_attention.h"
// CODE-LABEL: static int32_t k0_attention(
// CODE: sluice_attention<sluice_f16, sluice_f16, sluice_f16>(

func.func @main(%q: tensor<1x2x20x16xf16>, %k: tensor<1x2x20x16xf16>, %v: tensor<1x2x20x16xf16>, %mask: tensor<1x1x20x20xf16>) -> tensor<1x2x20x16xf16> attributes {sluice.input_names = ["q", "k", "v", "mask"], sluice.output_names = ["out"]} {
  %0 = sluice.kernel @k0_attention(%q, %k, %v, %mask : tensor<1x2x20x16xf16>, tensor<1x2x20x16xf16>, tensor<1x2x20x16xf16>, tensor<1x1x20x20xf16>) -> (tensor<1x2x20x16xf16>) {
  ^bb0(%bq: tensor<1x2x20x16xf16>, %bk: tensor<1x2x20x16xf16>, %bv: tensor<1x2x20x16xf16>, %bmask: tensor<1x1x20x20xf16>):
    %a = sluice.attention %bq, %bk, %bv mask %bmask {causal = true, scale = 2.500000e-01 : f32} : (tensor<1x2x20x16xf16>, tensor<1x2x20x16xf16>, tensor<1x2x20x16xf16>, tensor<1x1x20x20xf16>) -> tensor<1x2x20x16xf16>
    sluice.kernel_yield %a : tensor<1x2x20x16xf16>
  }
  return %0 : tensor<1x2x20x16xf16>
}
