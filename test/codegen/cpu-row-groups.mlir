// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref > /dev/null
// RUN: sluice-compile %s -o %t/b.sluice --quiet
// RUN: sluice-run %t/b.sluice --random-inputs --expect %t/ref/o0.npy %t/ref/o1.npy %t/ref/o2.npy %t/ref/o3.npy %t/ref/o4.npy %t/ref/o5.npy %t/ref/o6.npy %t/ref/o7.npy %t/ref/o8.npy --rtol=1e-4 --atol=1e-6 | FileCheck %s --check-prefix=EXEC
// RUN: FileCheck %s < %t/b.sluice/model.cpp
//
// Row groups (form F3) on the cpu target, against the reference evaluator:
// per row, the prologue fills a thread-local buffer, a sluice_row_* function
// computes the statistics, and one more pass applies the row op and the
// epilogue while storing. rms_norm alone is form F5 (sluice_rms_norm).

// EXEC-COUNT-9: : ok

// CHECK-LABEL: static int32_t k0_softmax(
// CHECK: for (int64_t row = 0; row < 128LL; ++row) {
// CHECK: float *buf_ = sluice_row_buffer<float>(32LL);
// CHECK: const int64_t b1 = 0 + br0_ * 32;
// CHECK: const float v0 = (in0[b0 + j] * 0.125f);
// CHECK-NEXT: const float v1 = (v0 + in1[b1 + j]);
// CHECK-NEXT: buf_[j] = (float)v1;
// CHECK: const float inv_ = sluice_row_softmax_exp(buf_, 32LL);
// CHECK: const float y_ = buf_[j] * inv_;
// The residual sum is stored by the prologue as it fills the buffer.
// CHECK-LABEL: static int32_t k1_layer_norm(
// CHECK: buf_[j] = (float)v0;
// CHECK-NEXT: out1[b2 + j] = SLUICE_STORE(float, v0);
// CHECK: sluice_row_moments(buf_, 64LL, (float)9.999999747e-06, &mean_, &inv_);
// CHECK: const float y_ = (buf_[j] - mean_) * inv_ * (float)in2[e0 + j] + (float)in3[e1 + j];
// CHECK-LABEL: static int32_t k2_layer_norm(
// CHECK: sluice_row_moments(buf_, 64LL, (float)1.000000047e-03, &mean_, &inv_);
// CHECK: const float v1 = sl_gelu(v0);
// CHECK-LABEL: static int32_t k3_rms_norm(
// CHECK: const float inv_ = sluice_row_rms_inv(buf_, 40LL, (float)9.999999975e-07);
// CHECK: sl_silu(
// CHECK-LABEL: static int32_t k4_reduce(
// CHECK: const float red_ = (float)sluice_row_reduce<4>(buf_, 10LL);
// CHECK: sl_sqrt(y_)
// CHECK-LABEL: static int32_t k5_reduce(
// CHECK: sluice_row_reduce<2>(buf_, 60LL);
// The transpose is a strided read into the buffer.
// CHECK-LABEL: static int32_t k6_softmax(
// CHECK: buf_[j] = (float)in0[b0 + j * 16];
// CHECK: const float lse_ = sluice_row_logsumexp(buf_, 32LL);
// CHECK-LABEL: static int32_t k7_rms_norm(
// CHECK: sluice_rms_norm<float, float>(args->num_threads, in0, in1, out0, 12, 48, 9.999999747e-06f, nullptr);

module {
  func.func @main(%s: tensor<2x4x16x32xf32>, %mask: tensor<2x1x1x32xf32>,
                  %x: tensor<32x64xf32>, %h: tensor<32x64xf32>, %g: tensor<64xf32>, %be: tensor<64xf32>,
                  %y: tensor<8x4x16xf32>, %g2: tensor<4x16xf32>, %res: tensor<8x4x16xf32>,
                  %z: tensor<6x40xf32>, %zs: tensor<40xf32>,
                  %u: tensor<4x6x10xf32>,
                  %t: tensor<32x16xf32>,
                  %v: tensor<12x48xf32>, %vs: tensor<48xf32>)
      -> (tensor<2x4x16x32xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<8x4x16xf32>, tensor<6x40xf32>, tensor<4x6x1xf32>, tensor<4xf32>, tensor<16x32xf32>, tensor<12x48xf32>)
      attributes {sluice.input_names = ["s", "mask", "x", "h", "g", "be", "y", "g2", "res", "z", "zs", "u", "t", "v", "vs"],
                  sluice.output_names = ["o0", "o1", "o2", "o3", "o4", "o5", "o6", "o7", "o8"]} {
    // softmax with a scale and a broadcast mask prologue
    %0 = sluice.kernel @k0_softmax(%s, %mask : tensor<2x4x16x32xf32>, tensor<2x1x1x32xf32>) -> (tensor<2x4x16x32xf32>) {
    ^bb0(%a: tensor<2x4x16x32xf32>, %m: tensor<2x1x1x32xf32>):
      %c = sluice.constant dense<0.125> : tensor<f32>
      %p = sluice.mul %a, %c : (tensor<2x4x16x32xf32>, tensor<f32>) -> tensor<2x4x16x32xf32>
      %q = sluice.add %p, %m : (tensor<2x4x16x32xf32>, tensor<2x1x1x32xf32>) -> tensor<2x4x16x32xf32>
      %r = sluice.softmax %q {axis = -1 : i64} : (tensor<2x4x16x32xf32>) -> tensor<2x4x16x32xf32>
      sluice.kernel_yield %r : tensor<2x4x16x32xf32>
    }
    // residual add + layer_norm, the sum yielded too
    %1:2 = sluice.kernel @k1_layer_norm(%x, %h, %g, %be : tensor<32x64xf32>, tensor<32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<32x64xf32>, tensor<32x64xf32>) {
    ^bb0(%a: tensor<32x64xf32>, %b: tensor<32x64xf32>, %sc: tensor<64xf32>, %bi: tensor<64xf32>):
      %sum = sluice.add %a, %b : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
      %o, %mean, %inv = sluice.layer_norm %sum, %sc, %bi {axis = -1 : i64} : (tensor<32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<32x64xf32>, tensor<32x1xf32>, tensor<32x1xf32>)
      sluice.kernel_yield %o, %sum : tensor<32x64xf32>, tensor<32x64xf32>
    }
    // layer_norm over the last two dims (no bias) + an epilogue (residual add, gelu)
    %2 = sluice.kernel @k2_layer_norm(%y, %g2, %res : tensor<8x4x16xf32>, tensor<4x16xf32>, tensor<8x4x16xf32>) -> (tensor<8x4x16xf32>) {
    ^bb0(%a: tensor<8x4x16xf32>, %sc: tensor<4x16xf32>, %rr: tensor<8x4x16xf32>):
      %o, %mean, %inv = sluice.layer_norm %a, %sc {axis = 1 : i64, epsilon = 1.0e-3 : f32} : (tensor<8x4x16xf32>, tensor<4x16xf32>) -> (tensor<8x4x16xf32>, tensor<8x1x1xf32>, tensor<8x1x1xf32>)
      %e = sluice.add %o, %rr : (tensor<8x4x16xf32>, tensor<8x4x16xf32>) -> tensor<8x4x16xf32>
      %f = sluice.gelu %e : (tensor<8x4x16xf32>) -> tensor<8x4x16xf32>
      sluice.kernel_yield %f : tensor<8x4x16xf32>
    }
    // rms_norm with a prologue (x * 2) and an epilogue (silu)
    %3 = sluice.kernel @k3_rms_norm(%z, %zs : tensor<6x40xf32>, tensor<40xf32>) -> (tensor<6x40xf32>) {
    ^bb0(%a: tensor<6x40xf32>, %sc: tensor<40xf32>):
      %c = sluice.constant dense<2.0> : tensor<f32>
      %p = sluice.mul %a, %c : (tensor<6x40xf32>, tensor<f32>) -> tensor<6x40xf32>
      %o = sluice.rms_norm %p, %sc {axis = -1 : i64, epsilon = 1.0e-6 : f32} : (tensor<6x40xf32>, tensor<40xf32>) -> tensor<6x40xf32>
      %e = sluice.silu %o : (tensor<6x40xf32>) -> tensor<6x40xf32>
      sluice.kernel_yield %e : tensor<6x40xf32>
    }
    // reduce mean of squares (keepdims) + sqrt epilogue
    %4 = sluice.kernel @k4_reduce(%u : tensor<4x6x10xf32>) -> (tensor<4x6x1xf32>) {
    ^bb0(%a: tensor<4x6x10xf32>):
      %ax = sluice.constant dense<[-1]> : tensor<1xi64>
      %p = sluice.mul %a, %a : (tensor<4x6x10xf32>, tensor<4x6x10xf32>) -> tensor<4x6x10xf32>
      %r = sluice.reduce %p, %ax {kind = #sluice<reduce_kind mean>} : (tensor<4x6x10xf32>, tensor<1xi64>) -> tensor<4x6x1xf32>
      %e = sluice.sqrt %r : (tensor<4x6x1xf32>) -> tensor<4x6x1xf32>
      sluice.kernel_yield %e : tensor<4x6x1xf32>
    }
    // reduce max over the last two axes (no keepdims) of an abs prologue
    %5 = sluice.kernel @k5_reduce(%u : tensor<4x6x10xf32>) -> (tensor<4xf32>) {
    ^bb0(%a: tensor<4x6x10xf32>):
      %ax = sluice.constant dense<[1, 2]> : tensor<2xi64>
      %p = sluice.abs %a : (tensor<4x6x10xf32>) -> tensor<4x6x10xf32>
      %r = sluice.reduce %p, %ax {keepdims = false, kind = #sluice<reduce_kind max>} : (tensor<4x6x10xf32>, tensor<2xi64>) -> tensor<4xf32>
      sluice.kernel_yield %r : tensor<4xf32>
    }
    // log-softmax of a transposed input (a view-only prologue)
    %6 = sluice.kernel @k6_softmax(%t : tensor<32x16xf32>) -> (tensor<16x32xf32>) {
    ^bb0(%a: tensor<32x16xf32>):
      %tr = sluice.transpose %a {perm = array<i64: 1, 0>} : (tensor<32x16xf32>) -> tensor<16x32xf32>
      %r = sluice.softmax %tr {axis = -1 : i64, log = true} : (tensor<16x32xf32>) -> tensor<16x32xf32>
      sluice.kernel_yield %r : tensor<16x32xf32>
    }
    // rms_norm alone (form F5)
    %7 = sluice.kernel @k7_rms_norm(%v, %vs : tensor<12x48xf32>, tensor<48xf32>) -> (tensor<12x48xf32>) {
    ^bb0(%a: tensor<12x48xf32>, %sc: tensor<48xf32>):
      %o = sluice.rms_norm %a, %sc : (tensor<12x48xf32>, tensor<48xf32>) -> tensor<12x48xf32>
      sluice.kernel_yield %o : tensor<12x48xf32>
    }
    return %0, %1#0, %1#1, %2, %3, %4, %5, %6, %7 : tensor<2x4x16x32xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<8x4x16xf32>, tensor<6x40xf32>, tensor<4x6x1xf32>, tensor<4xf32>, tensor<16x32xf32>, tensor<12x48xf32>
  }
}
