// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref | FileCheck %s --check-prefix=REF
// RUN: sluice-compile %s -o %t/bundle.sluice --quiet
// RUN: FileCheck %s --check-prefix=CODE < %t/bundle.sluice/model.cpp
// RUN: sluice-run %t/bundle.sluice --random-inputs --expect %t/ref/out.npy --rtol=1e-4 --threads=1 | FileCheck %s
// RUN: sluice-run %t/bundle.sluice --random-inputs --expect %t/ref/out.npy --rtol=1e-4 --threads=2 | FileCheck %s
// Causal attention, bottom-right aligned (query i sees keys j <= i + 30):
// 100 query rows are two blocks of the kernel, each computing scores only
// for the keys it can see; Dv = 40 leaves partial GEMM tiles.

// REF: output 'out'
// CHECK: output 'out' {{.*}}: ok
// CODE: #include "sluice_gen/cpu_attention.h"
// CODE-LABEL: static int32_t k0_attention(
// CODE: d.causal = true; d.window = 0{{(LL)?}}; d.mask = 0;

func.func @main(%q: tensor<1x2x100x64xf32>, %k: tensor<1x2x130x64xf32>, %v: tensor<1x2x130x40xf32>) -> tensor<1x2x100x40xf32> attributes {sluice.input_names = ["q", "k", "v"], sluice.output_names = ["out"]} {
  %0 = sluice.kernel @k0_attention(%q, %k, %v : tensor<1x2x100x64xf32>, tensor<1x2x130x64xf32>, tensor<1x2x130x40xf32>) -> (tensor<1x2x100x40xf32>) {
  ^bb0(%bq: tensor<1x2x100x64xf32>, %bk: tensor<1x2x130x64xf32>, %bv: tensor<1x2x130x40xf32>):
    %a = sluice.attention %bq, %bk, %bv {causal = true, scale = 1.250000e-01 : f32} : (tensor<1x2x100x64xf32>, tensor<1x2x130x64xf32>, tensor<1x2x130x40xf32>) -> tensor<1x2x100x40xf32>
    sluice.kernel_yield %a : tensor<1x2x100x40xf32>
  }
  return %0 : tensor<1x2x100x40xf32>
}
