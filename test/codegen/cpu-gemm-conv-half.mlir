// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref > /dev/null
// RUN: sluice-compile %s -o %t/b.sluice --quiet
// RUN: FileCheck %s < %t/b.sluice/model.cpp
// RUN: sluice-run %t/b.sluice --random-inputs --threads=2 --expect %t/ref/o0.npy %t/ref/o1.npy %t/ref/o2.npy %t/ref/o3.npy %t/ref/o4.npy %t/ref/o5.npy %t/ref/o6.npy --rtol=2e-2 --atol=2e-2 | FileCheck %s --check-prefix=EXEC
// RUN: sluice-run %t/b.sluice --random-inputs --threads=1 --expect %t/ref/o0.npy %t/ref/o1.npy %t/ref/o2.npy %t/ref/o3.npy %t/ref/o4.npy %t/ref/o5.npy %t/ref/o6.npy --max-rel-l2=3e-3 | FileCheck %s --check-prefix=EXEC
//
// Half-precision GEMMs and convolutions on the cpu target (--precision
// bundles), against the reference evaluator: OpenBLAS has no half GEMM, so
// A and B are widened to f32 (sluice_gemm_batched_half_ep), the GEMM
// accumulates in fp32 into f32 scratch C and the epilogue (bias, residual,
// GELU, the cast to the f32 boundary) reads it and narrows on its stores;
// a lone matrix-vector matmul, convolutions (grouped, with bias) and a
// transposed convolution widen their operands and narrow the result.

// EXEC-COUNT-7: : ok

// CHECK-LABEL: static int32_t k0_matmul(
// CHECK: float *gemm_c = gemm_c_buf.get();
// CHECK: const float acc_ = gemm_c[
// CHECK: SLUICE_STORE(sluice_f16,
// CHECK: SLUICE_STORE(float,
// CHECK: sluice_gemm_batched_ep(args->num_threads, 1LL, 64LL, 80LL, 96LL, in0, a_off, 96LL, in1, b_off, 80LL, gemm_c, epilogue);
// CHECK-LABEL: static int32_t k1_matmul(
// CHECK: SLUICE_STORE(sluice_bf16,
// CHECK: sluice_gemm_batched_ep(args->num_threads, 8LL, 16LL, 24LL, 32LL, in0, a_off, 32LL, in1, b_off, 24LL, gemm_c, epilogue);
// CHECK-LABEL: static int32_t k2_matmul(
// CHECK: sluice_gemm_batched(
// CHECK-LABEL: static int32_t k3_conv(
// CHECK: sluice_conv_gemm(
// CHECK-LABEL: static int32_t k4_conv(
// CHECK: sluice_conv_gemm(
// CHECK-LABEL: static int32_t k5_conv_transpose(
// CHECK: sluice_conv_transpose_gemm(

module {
  func.func @main(%x: tensor<64x96xf16>, %w: tensor<96x80xf16>, %bias: tensor<80xf16>, %res: tensor<64x80xf16>,
                  %q: tensor<2x4x16x32xbf16>, %k: tensor<2x4x32x24xbf16>,
                  %m: tensor<2x8x16xf16>, %v: tensor<16xf16>,
                  %x1: tensor<2x8x40xf16>, %w1: tensor<8x8x5xf16>,
                  %x2: tensor<2x8x12x12xbf16>, %w2: tensor<16x4x3x3xbf16>, %b2: tensor<16xbf16>,
                  %x3: tensor<1x4x6x6xf16>, %w3: tensor<4x3x3x3xf16>)
      -> (tensor<64x80xf16>, tensor<64x80xf32>, tensor<2x4x16x24xbf16>, tensor<2x8xf16>, tensor<2x8x20xf16>, tensor<2x16x12x12xbf16>, tensor<1x3x13x13xf16>)
      attributes {sluice.input_names = ["x", "w", "bias", "res", "q", "k", "m", "v", "x1", "w1", "x2", "w2", "b2", "x3", "w3"],
                  sluice.output_names = ["o0", "o1", "o2", "o3", "o4", "o5", "o6"]} {
    %0:2 = sluice.kernel @k0_matmul library "gemm"(%x, %w, %bias, %res : tensor<64x96xf16>, tensor<96x80xf16>, tensor<80xf16>, tensor<64x80xf16>) -> (tensor<64x80xf16>, tensor<64x80xf32>) {
    ^bb0(%a: tensor<64x96xf16>, %b: tensor<96x80xf16>, %c: tensor<80xf16>, %r: tensor<64x80xf16>):
      %mm = sluice.matmul %a, %b : (tensor<64x96xf16>, tensor<96x80xf16>) -> tensor<64x80xf16>
      %s = sluice.add %mm, %c : (tensor<64x80xf16>, tensor<80xf16>) -> tensor<64x80xf16>
      %s2 = sluice.add %r, %s : (tensor<64x80xf16>, tensor<64x80xf16>) -> tensor<64x80xf16>
      %g = sluice.gelu %s2 {approximate = "tanh"} : (tensor<64x80xf16>) -> tensor<64x80xf16>
      %f = sluice.cast %g : tensor<64x80xf16> -> tensor<64x80xf32>
      sluice.kernel_yield %g, %f : tensor<64x80xf16>, tensor<64x80xf32>
    }
    %1 = sluice.kernel @k1_matmul library "gemm"(%q, %k : tensor<2x4x16x32xbf16>, tensor<2x4x32x24xbf16>) -> (tensor<2x4x16x24xbf16>) {
    ^bb0(%a: tensor<2x4x16x32xbf16>, %b: tensor<2x4x32x24xbf16>):
      %sc = sluice.constant dense<0.125> : tensor<bf16>
      %mm = sluice.matmul %a, %b : (tensor<2x4x16x32xbf16>, tensor<2x4x32x24xbf16>) -> tensor<2x4x16x24xbf16>
      %s = sluice.mul %mm, %sc : (tensor<2x4x16x24xbf16>, tensor<bf16>) -> tensor<2x4x16x24xbf16>
      sluice.kernel_yield %s : tensor<2x4x16x24xbf16>
    }
    %2 = sluice.kernel @k2_matmul library "gemm"(%m, %v : tensor<2x8x16xf16>, tensor<16xf16>) -> (tensor<2x8xf16>) {
    ^bb0(%a: tensor<2x8x16xf16>, %b: tensor<16xf16>):
      %mv = sluice.matmul %a, %b : (tensor<2x8x16xf16>, tensor<16xf16>) -> tensor<2x8xf16>
      sluice.kernel_yield %mv : tensor<2x8xf16>
    }
    %3 = sluice.kernel @k3_conv library "conv"(%x1, %w1 : tensor<2x8x40xf16>, tensor<8x8x5xf16>) -> (tensor<2x8x20xf16>) {
    ^bb0(%a: tensor<2x8x40xf16>, %b: tensor<8x8x5xf16>):
      %y = sluice.conv %a, %b {dilations = array<i64: 1>, pads = array<i64: 2, 2>, strides = array<i64: 2>} : (tensor<2x8x40xf16>, tensor<8x8x5xf16>) -> tensor<2x8x20xf16>
      sluice.kernel_yield %y : tensor<2x8x20xf16>
    }
    %4 = sluice.kernel @k4_conv library "conv"(%x2, %w2, %b2 : tensor<2x8x12x12xbf16>, tensor<16x4x3x3xbf16>, tensor<16xbf16>) -> (tensor<2x16x12x12xbf16>) {
    ^bb0(%a: tensor<2x8x12x12xbf16>, %b: tensor<16x4x3x3xbf16>, %c: tensor<16xbf16>):
      %y = sluice.conv %a, %b, %c {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, group = 2} : (tensor<2x8x12x12xbf16>, tensor<16x4x3x3xbf16>, tensor<16xbf16>) -> tensor<2x16x12x12xbf16>
      sluice.kernel_yield %y : tensor<2x16x12x12xbf16>
    }
    %5 = sluice.kernel @k5_conv_transpose library "conv"(%x3, %w3 : tensor<1x4x6x6xf16>, tensor<4x3x3x3xf16>) -> (tensor<1x3x13x13xf16>) {
    ^bb0(%a: tensor<1x4x6x6xf16>, %b: tensor<4x3x3x3xf16>):
      %y = sluice.conv_transpose %a, %b {dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x4x6x6xf16>, tensor<4x3x3x3xf16>) -> tensor<1x3x13x13xf16>
      sluice.kernel_yield %y : tensor<1x3x13x13xf16>
    }
    return %0#0, %0#1, %1, %2, %3, %4, %5 : tensor<64x80xf16>, tensor<64x80xf32>, tensor<2x4x16x24xbf16>, tensor<2x8xf16>, tensor<2x8x20xf16>, tensor<2x16x12x12xbf16>, tensor<1x3x13x13xf16>
  }
}
