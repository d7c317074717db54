// REQUIRES: nvcc
// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref > /dev/null
// RUN: sluice-compile %s --target=cuda --gpu-arch=sm_90 -o %t/b.sluice --quiet
// RUN: FileCheck %s < %t/b.sluice/model.cu
// RUN: %if gpu %{ sluice-run %t/b.sluice --random-inputs --expect %t/ref/o0.npy %t/ref/o1.npy %t/ref/o2.npy %t/ref/o3.npy %t/ref/o4.npy %t/ref/o5.npy %t/ref/o6.npy --rtol=2e-2 --atol=2e-2 | FileCheck %s --check-prefix=EXEC %}
//
// Half-precision row groups on the cuda target: f16/bf16 in memory, 8
// halves per 16-byte vector, statistics and arithmetic in f32; a group that
// also writes f32 narrows the vector to 4 elements.

// EXEC-COUNT-7: : ok

// f16 softmax with a scale and an f16 mask: 8 halves a vector.
// CHECK-LABEL: namespace k0_softmax_k {
// CHECK: // sluice.softmax: 64 rows of 128, team 4 (sub-warp), 8 per vector, 4 vectors per lane in registers
// CHECK: row(const sluice_f16 *__restrict__ in0, const sluice_f16 *__restrict__ in1, sluice_f16 *__restrict__ out0)
// CHECK: auto load_ = [&](int64_t row, int64_t j0, float (&x_)[8], bool first_) {
// CHECK: const sluice_vec<sluice_f16, 8> lb0_ = *(const sluice_vec<sluice_f16, 8> *)(in0 + b0 + j0);
// CHECK: sluice_load(lb0_.v[k_])
// CHECK: sluice_vec<sluice_f16, 8> we0_;
// CHECK: sluice_row_run<SLUICE_ROW_SOFTMAX, 4, 8, 4, float>(64LL, 128LL,
// bf16 residual add + layer_norm (the sum stored in bf16) + a cast to f32:
// the f32 output makes the vector 4 elements.
// CHECK-LABEL: namespace k1_layer_norm_k {
// CHECK: // sluice.layer_norm: 16 rows of 768, team 32 (warp), 4 per vector, 6 vectors per lane in registers
// CHECK: sluice_vec<sluice_bf16, 4> wb2_;
// CHECK: wb2_.v[k_] = SLUICE_STORE(sluice_bf16, v0);
// CHECK: sluice_vec<float, 4> we2_;
// CHECK: sluice_row_run<SLUICE_ROW_LAYER_NORM, 32, 4, 6, float>(16LL, 768LL,
// f16 rms_norm of a long row: a block team.
// CHECK-LABEL: namespace k2_rms_norm_k {
// CHECK: // sluice.rms_norm: 4 rows of 4096, team 64 (block), 8 per vector, 8 vectors per lane in registers
// CHECK: sluice_row_run<SLUICE_ROW_RMS_NORM, 64, 8, 8, float>(4LL, 4096LL,
// bf16 sum: accumulated in f32, stored in bf16.
// CHECK-LABEL: namespace k3_reduce_k {
// CHECK: sluice_row_reduce_run<0, 4, 8, float>(12LL, 64LL, load_, store_);
// An odd f16 row: element by element.
// CHECK-LABEL: namespace k4_softmax_k {
// CHECK: // sluice.softmax: 5 rows of 77, team 32 (warp), 1 per vector, 3 vectors per lane in registers
// CHECK: x_[k_] = (float)sluice_load(in0[b0 + j]);
// f16 layer_norm with its f32 statistics yielded.
// CHECK-LABEL: namespace k5_layer_norm_k {
// CHECK: out1[s0] = (float)mean_;

module {
  func.func @main(%s: tensor<4x16x128xf16>, %mask: tensor<4x1x128xf16>,
                  %x: tensor<16x768xbf16>, %h: tensor<16x768xbf16>, %g: tensor<768xbf16>, %be: tensor<768xbf16>,
                  %r: tensor<4x4096xf16>, %rg: tensor<4096xf16>,
                  %u: tensor<12x64xbf16>,
                  %odd: tensor<5x77xf16>,
                  %ln: tensor<3x256xf16>, %lg: tensor<256xf16>)
      -> (tensor<4x16x128xf16>, tensor<16x768xf32>, tensor<16x768xbf16>, tensor<4x4096xf16>, tensor<12xbf16>, tensor<5x77xf16>, tensor<3x256xf16>, tensor<3x1xf32>)
      attributes {sluice.input_names = ["s", "mask", "x", "h", "g", "be", "r", "rg", "u", "odd", "ln", "lg"],
                  sluice.output_names = ["o0", "o1", "o2", "o3", "o4", "o5", "o6", "o7"]} {
    %0 = sluice.kernel @k0_softmax(%s, %mask : tensor<4x16x128xf16>, tensor<4x1x128xf16>) -> (tensor<4x16x128xf16>) {
    ^bb0(%a: tensor<4x16x128xf16>, %m: tensor<4x1x128xf16>):
      %c = sluice.constant dense<0.5> : tensor<f16>
      %p = sluice.mul %a, %c : (tensor<4x16x128xf16>, tensor<f16>) -> tensor<4x16x128xf16>
      %q = sluice.add %p, %m : (tensor<4x16x128xf16>, tensor<4x1x128xf16>) -> tensor<4x16x128xf16>
      %y = sluice.softmax %q {axis = -1 : i64} : (tensor<4x16x128xf16>) -> tensor<4x16x128xf16>
      sluice.kernel_yield %y : tensor<4x16x128xf16>
    }
    %1:2 = sluice.kernel @k1_layer_norm(%x, %h, %g, %be : tensor<16x768xbf16>, tensor<16x768xbf16>, tensor<768xbf16>, tensor<768xbf16>) -> (tensor<16x768xf32>, tensor<16x768xbf16>) {
    ^bb0(%a: tensor<16x768xbf16>, %b: tensor<16x768xbf16>, %sc: tensor<768xbf16>, %bi: tensor<768xbf16>):
      %sum = sluice.add %a, %b : (tensor<16x768xbf16>, tensor<16x768xbf16>) -> tensor<16x768xbf16>
      %o, %mean, %inv = sluice.layer_norm %sum, %sc, %bi {axis = -1 : i64} : (tensor<16x768xbf16>, tensor<768xbf16>, tensor<768xbf16>) -> (tensor<16x768xbf16>, tensor<16x1xf32>, tensor<16x1xf32>)
      %f = sluice.cast %o : tensor<16x768xbf16> -> tensor<16x768xf32>
      sluice.kernel_yield %f, %sum : tensor<16x768xf32>, tensor<16x768xbf16>
    }
    %2 = sluice.kernel @k2_rms_norm(%r, %rg : tensor<4x4096xf16>, tensor<4096xf16>) -> (tensor<4x4096xf16>) {
    ^bb0(%a: tensor<4x4096xf16>, %sc: tensor<4096xf16>):
      %o = sluice.rms_norm %a, %sc {axis = -1 : i64, epsilon = 1.0e-6 : f32} : (tensor<4x4096xf16>, tensor<4096xf16>) -> tensor<4x4096xf16>
      sluice.kernel_yield %o : tensor<4x4096xf16>
    }
    %3 = sluice.kernel @k3_reduce(%u : tensor<12x64xbf16>) -> (tensor<12xbf16>) {
    ^bb0(%a: tensor<12x64xbf16>):
      %ax = sluice.constant dense<[1]> : tensor<1xi64>
      %y = sluice.reduce %a, %ax {keepdims = false, kind = #sluice<reduce_kind sum>} : (tensor<12x64xbf16>, tensor<1xi64>) -> tensor<12xbf16>
      sluice.kernel_yield %y : tensor<12xbf16>
    }
    %4 = sluice.kernel @k4_softmax(%odd : tensor<5x77xf16>) -> (tensor<5x77xf16>) {
    ^bb0(%a: tensor<5x77xf16>):
      %y = sluice.softmax %a {axis = -1 : i64} : (tensor<5x77xf16>) -> tensor<5x77xf16>
      sluice.kernel_yield %y : tensor<5x77xf16>
    }
    %5:2 = sluice.kernel @k5_layer_norm(%ln, %lg : tensor<3x256xf16>, tensor<256xf16>) -> (tensor<3x256xf16>, tensor<3x1xf32>) {
    ^bb0(%a: tensor<3x256xf16>, %sc: tensor<256xf16>):
      %o, %mean, %inv = sluice.layer_norm %a, %sc {axis = -1 : i64} : (tensor<3x256xf16>, tensor<256xf16>) -> (tensor<3x256xf16>, tensor<3x1xf32>, tensor<3x1xf32>)
      sluice.kernel_yield %o, %mean : tensor<3x256xf16>, tensor<3x1xf32>
    }
    return %0, %1#0, %1#1, %2, %3, %4, %5#0, %5#1 : tensor<4x16x128xf16>, tensor<16x768xf32>, tensor<16x768xbf16>, tensor<4x4096xf16>, tensor<12xbf16>, tensor<5x77xf16>, tensor<3x256xf16>, tensor<3x1xf32>
  }
}
