// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref | FileCheck %s --check-prefix=REF
// RUN: sluice-compile %s -o %t/bundle.sluice --quiet
// RUN: FileCheck %s --check-prefix=CODE < %t/bundle.sluice/model.cpp
// RUN: sluice-run %t/bundle.sluice --random-inputs --expect %t/ref/out.npy %t/ref/out_long.npy --rtol=1e-4 --atol=1e-6 --threads=1 | FileCheck %s
// RUN: sluice-run %t/bundle.sluice --random-inputs --expect %t/ref/out.npy %t/ref/out_long.npy --rtol=1e-4 --atol=1e-6 --threads=2 | FileCheck %s
// A per-head f32 additive mask (T5's relative-position bias, [1, H, Sq, Sk])
// with fewer than 16 keys, where the row-max pass adds the whole mask in its
// scalar tail, and with 20 keys (16-lane body plus tail): the mask is added
// once in both.

// REF: output 'out'
// REF: output 'out_long'
// CHECK: output 'out' {{.*}}: ok
// CHECK: output 'out_long' {{.*}}: ok
// CODE-LABEL: static int32_t k0_attention(
// CODE: d.mask = 1;
// CODE: d.m.row = 12LL; d.m.col = 1LL; d.m.batch[0] = 0LL; d.m.batch[1] = 144LL;
// CODE-LABEL: static int32_t k1_attention(
// CODE: d.mask = 1;
// CODE: d.m.row = 20LL; d.m.col = 1LL; d.m.batch[0] = 0LL; d.m.batch[1] = 240LL;

func.func @main(%q: tensor<2x4x12x16xf32>, %k: tensor<2x4x12x16xf32>, %v: tensor<2x4x12x16xf32>, %mask: tensor<1x4x12x12xf32>, %ql: tensor<2x4x12x16xf32>, %kl: tensor<2x4x20x16xf32>, %vl: tensor<2x4x20x16xf32>, %maskl: tensor<1x4x12x20xf32>) -> (tensor<2x4x12x16xf32>, tensor<2x4x12x16xf32>) attributes {sluice.input_names = ["q", "k", "v", "mask", "q_long", "k_long", "v_long", "mask_long"], sluice.output_names = ["out", "out_long"]} {
  %0 = sluice.kernel @k0_attention(%q, %k, %v, %mask : tensor<2x4x12x16xf32>, tensor<2x4x12x16xf32>, tensor<2x4x12x16xf32>, tensor<1x4x12x12xf32>) -> (tensor<2x4x12x16xf32>) {
  ^bb0(%bq: tensor<2x4x12x16xf32>, %bk: tensor<2x4x12x16xf32>, %bv: tensor<2x4x12x16xf32>, %bmask: tensor<1x4x12x12xf32>):
    %a = sluice.attention %bq, %bk, %bv mask %bmask {scale = 1.000000e+00 : f32} : (tensor<2x4x12x16xf32>, tensor<2x4x12x16xf32>, tensor<2x4x12x16xf32>, tensor<1x4x12x12xf32>) -> tensor<2x4x12x16xf32>
    sluice.kernel_yield %a : tensor<2x4x12x16xf32>
  }
  %1 = sluice.kernel @k1_attention(%ql, %kl, %vl, %maskl : tensor<2x4x12x16xf32>, tensor<2x4x20x16xf32>, tensor<2x4x20x16xf32>, tensor<1x4x12x20xf32>) -> (tensor<2x4x12x16xf32>) {
  ^bb0(%bq: tensor<2x4x12x16xf32>, %bk: tensor<2x4x20x16xf32>, %bv: tensor<2x4x20x16xf32>, %bmask: tensor<1x4x12x20xf32>):
    %a = sluice.attention %bq, %bk, %bv mask %bmask {scale = 1.000000e+00 : f32} : (tensor<2x4x12x16xf32>, tensor<2x4x20x16xf32>, tensor<2x4x20x16xf32>, tensor<1x4x12x20xf32>) -> tensor<2x4x12x16xf32>
    sluice.kernel_yield %a : tensor<2x4x12x16xf32>
  }
  return %0, %1 : tensor<2x4x12x16xf32>, tensor<2x4x12x16xf32>
}
