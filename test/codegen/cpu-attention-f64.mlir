// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref | FileCheck %s --check-prefix=REF
// RUN: sluice-compile %s -o %t/bundle.sluice --quiet
// RUN: FileCheck %s --check-prefix=CODE < %t/bundle.sluice/model.cpp
// RUN: sluice-run %t/bundle.sluice --random-inputs --expect %t/ref/out.npy --rtol=1e-12 --threads=1 | FileCheck %s
// RUN: sluice-run %t/bundle.sluice --random-inputs --expect %t/ref/out.npy --rtol=1e-12 --threads=2 | FileCheck %s
// f64: the plain loop nest in double (the evaluator's order of operations).

// REF: output 'out'
// CHECK: output 'out' {{.*}}: ok
// CODE: #include "sluice_gen/cpu_attention.h"
// CODE-LABEL: static int32_t k0_attention(
// CODE: sluice_attention<double, double, double>(

func.func @main(%q: tensor<2x3x20x16xf64>, %k: tensor<2x3x24x16xf64>, %v: tensor<2x3x24x8xf64>, %mask: tensor<2x1x20x24xf64>) -> tensor<2x3x20x8xf64> attributes {sluice.input_names = ["q", "k", "v", "mask"], sluice.output_names = ["out"]} {
  %0 = sluice.kernel @k0_attention(%q, %k, %v, %mask : tensor<2x3x20x16xf64>, tensor<2x3x24x16xf64>, tensor<2x3x24x8xf64>, tensor<2x1x20x24xf64>) -> (tensor<2x3x20x8xf64>) {
  ^bb0(%bq: tensor<2x3x20x16xf64>, %bk: tensor<2x3x24x16xf64>, %bv: tensor<2x3x24x8xf64>, %bmask: tensor<2x1x20x24xf64>):
    %a = sluice.attention %bq, %bk, %bv mask %bmask {causal = true, scale = 2.500000e-01 : f32} : (tensor<2x3x20x16xf64>, tensor<2x3x24x16xf64>, tensor<2x3x24x8xf64>, tensor<2x1x20x24xf64>) -> tensor<2x3x20x8xf64>
    sluice.kernel_yield %a : tensor<2x3x20x8xf64>
  }
  return %0 : tensor<2x3x20x8xf64>
}
