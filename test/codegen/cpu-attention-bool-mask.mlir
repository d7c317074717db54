// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref | FileCheck %s --check-prefix=REF
// RUN: sluice-compile %s -o %t/bundle.sluice --quiet
// RUN: FileCheck %s --check-prefix=CODE < %t/bundle.sluice/model.cpp
// RUN: sluice-run %t/bundle.sluice --random-inputs --expect %t/ref/out.npy --rtol=1e-4 --threads=1 | FileCheck %s
// RUN: sluice-run %t/bundle.sluice --random-inputs --expect %t/ref/out.npy --rtol=1e-4 --threads=2 | FileCheck %s
// A boolean keep-mask broadcast over batch and heads, and key/value shared
// by the three heads (multi-query: batch stride 0).

// REF: output 'out'
// CHECK: output 'out' {{.*}}: ok
// CODE: #include "sluice_gen/cpu_attention.h"
// CODE-LABEL: static int32_t k0_attention(
// CODE: d.mask = 2;
// CODE: d.k.row = 16LL; d.k.col = 1LL; d.k.batch[0] = 384LL; d.k.batch[1] = 0LL;
// CODE: d.m.row = 24LL; d.m.col = 1LL; d.m.batch[0] = 0LL; d.m.batch[1] = 0LL;
// CODE: sluice_attention<float, bool, float>(

func.func @main(%q: tensor<2x3x20x16xf32>, %k: tensor<2x1x24x16xf32>, %v: tensor<2x1x24x16xf32>, %mask: tensor<1x1x20x24xi1>) -> tensor<2x3x20x16xf32> attributes {sluice.input_names = ["q", "k", "v", "mask"], sluice.output_names = ["out"]} {
  %0 = sluice.kernel @k0_attention(%q, %k, %v, %mask : tensor<2x3x20x16xf32>, tensor<2x1x24x16xf32>, tensor<2x1x24x16xf32>, tensor<1x1x20x24xi1>) -> (tensor<2x3x20x16xf32>) {
  ^bb0(%bq: tensor<2x3x20x16xf32>, %bk: tensor<2x1x24x16xf32>, %bv: tensor<2x1x24x16xf32>, %bmask: tensor<1x1x20x24xi1>):
    %a = sluice.attention %bq, %bk, %bv mask %bmask {scale = 2.500000e-01 : f32} : (tensor<2x3x20x16xf32>, tensor<2x1x24x16xf32>, tensor<2x1x24x16xf32>, tensor<1x1x20x24xi1>) -> tensor<2x3x20x16xf32>
    sluice.kernel_yield %a : tensor<2x3x20x16xf32>
  }
  return %0 : tensor<2x3x20x16xf32>
}
