// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref | FileCheck %s --check-prefix=REF
// RUN: sluice-compile %s -o %t/bundle.sluice --quiet
// RUN: FileCheck %s --check-prefix=CODE < %t/bundle.sluice/model.cpp
// RUN: sluice-run %t/bundle.sluice --random-inputs --expect %t/ref/out.npy --rtol=1e-2 --threads=1 | FileCheck %s
// RUN: sluice-run %t/bundle.sluice --random-inputs --expect %t/ref/out.npy --rtol=1e-2 --threads=2 | FileCheck %s
// bf16 operands: f32 packs and arithmetic, one rounding at the end.

// REF: output 'out'
// CHECK: output 'out' {{.*}}: ok
// CODE: #include "sluice_gen/cpu_attention.h"
// CODE-LABEL: static int32_t k0_attention(
// CODE: sluice_attention<sluice_bf16, sluice_bf16, sluice_bf16>(

func.func @main(%q: tensor<1x2x20x16xbf16>, %k: tensor<1x2x20x16xbf16>, %v: tensor<1x2x20x16xbf16>) -> tensor<1x2x20x16xbf16> attributes {sluice.input_names = ["q", "k", "v"], sluice.output_names = ["out"]} {
  %0 = sluice.kernel @k0_attention(%q, %k, %v : tensor<1x2x20x16xbf16>, tensor<1x2x20x16xbf16>, tensor<1x2x20x16xbf16>) -> (tensor<1x2x20x16xbf16>) {
  ^bb0(%bq: tensor<1x2x20x16xbf16>, %bk: tensor<1x2x20x16xbf16>, %bv: tensor<1x2x20x16xbf16>):
    %a = sluice.attention %bq, %bk, %bv {scale = 2.500000e-01 : f32} : (tensor<1x2x20x16xbf16>, tensor<1x2x20x16xbf16>, tensor<1x2x20x16xbf16>) -> tensor<1x2x20x16xbf16>
    sluice.kernel_yield %a : tensor<1x2x20x16xbf16>
  }
  return %0 : tensor<1x2x20x16xbf16>
}
