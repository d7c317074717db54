// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref | FileCheck %s --check-prefix=REF
// RUN: sluice-compile %s -o %t/bundle.sluice --quiet
// RUN: FileCheck %s --check-prefix=CODE < %t/bundle.sluice/model.cpp
// RUN: sluice-run %t/bundle.sluice --random-inputs --expect %t/ref/out.npy --rtol=1e-4 --threads=1 | FileCheck %s
// RUN: sluice-run %t/bundle.sluice --random-inputs --expect %t/ref/out.npy --rtol=1e-4 --threads=3 | FileCheck %s
// Head dims that are not unit-stride: q and v come transposed ([D, S] in
// memory), k is a strided slice, the mask a transposed bool [Sk, Sq], and
// the result is written transposed ([Dv, Sq]); rank 2 (no batch dims).

// REF: output 'out'
// CHECK: output 'out' {{.*}}: ok
// CODE-LABEL: static int32_t k0_attention(
// CODE: d.nbatch = 0;
// CODE: d.sq = 40LL; d.sk = 33LL; d.d = 32LL; d.dv = 24LL;
// CODE: d.q.row = 1LL; d.q.col = 40LL;
// CODE: d.k.row = 64LL; d.k.col = 2LL;
// CODE: d.v.row = 1LL; d.v.col = 33LL;
// CODE: d.m.row = 1LL; d.m.col = 40LL;
// CODE: d.out.row = 1LL; d.out.col = 40LL;

func.func @main(%qt: tensor<32x40xf32>, %kw: tensor<33x64xf32>, %vt: tensor<24x33xf32>, %mt: tensor<33x40xi1>) -> tensor<24x40xf32> attributes {sluice.input_names = ["qt", "kw", "vt", "mt"], sluice.output_names = ["out"]} {
  %0 = sluice.kernel @k0_attention(%qt, %kw, %vt, %mt : tensor<32x40xf32>, tensor<33x64xf32>, tensor<24x33xf32>, tensor<33x40xi1>) -> (tensor<24x40xf32>) {
  ^bb0(%a: tensor<32x40xf32>, %b: tensor<33x64xf32>, %c: tensor<24x33xf32>, %d: tensor<33x40xi1>):
    %starts = sluice.constant dense<[0]> : tensor<1xi64>
    %ends = sluice.constant dense<[64]> : tensor<1xi64>
    %axes = sluice.constant dense<[1]> : tensor<1xi64>
    %steps = sluice.constant dense<[2]> : tensor<1xi64>
    %q = sluice.transpose %a {perm = array<i64: 1, 0>} : (tensor<32x40xf32>) -> tensor<40x32xf32>
    %k = sluice.slice %b, %starts, %ends, %axes, %steps : (tensor<33x64xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<33x32xf32>
    %v = sluice.transpose %c {perm = array<i64: 1, 0>} : (tensor<24x33xf32>) -> tensor<33x24xf32>
    %m = sluice.transpose %d {perm = array<i64: 1, 0>} : (tensor<33x40xi1>) -> tensor<40x33xi1>
    %r = sluice.attention %q, %k, %v mask %m {scale = 0.176776692 : f32} : (tensor<40x32xf32>, tensor<33x32xf32>, tensor<33x24xf32>, tensor<40x33xi1>) -> tensor<40x24xf32>
    %t = sluice.transpose %r {perm = array<i64: 1, 0>} : (tensor<40x24xf32>) -> tensor<24x40xf32>
    sluice.kernel_yield %t : tensor<24x40xf32>
  }
  return %0 : tensor<24x40xf32>
}
