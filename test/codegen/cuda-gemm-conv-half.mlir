// REQUIRES: nvcc
// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref > /dev/null
// RUN: sluice-compile %s --target=cuda --gpu-arch=sm_90 -o %t/b.sluice --quiet
// RUN: FileCheck %s < %t/b.sluice/model.cu
// RUN: %if gpu %{ sluice-run %t/b.sluice --random-inputs --expect %t/ref/o0.npy %t/ref/o1.npy %t/ref/o2.npy %t/ref/o3.npy %t/ref/o4.npy --rtol=2e-2 --atol=2e-2 | FileCheck %s --check-prefix=EXEC %}
//
// Half-precision library calls (--precision=fp16/bf16 bundles): cuBLASLt
// with f16/bf16 tensors and fp32 accumulation (bias, residual and tanh GELU
// fused; the cast to the fp32 boundary generated), strided-batch bf16
// attention scores with the scale as alpha, and cuDNN convolutions with
// tensor-op math.

// EXEC-COUNT-5: : ok

// CHECK-LABEL: static int32_t k0_matmul(
// CHECK: {SLUICE_GEMM_F16, 0, 1, 64LL, 80LL, 96LL, 96LL, 96LL, 80LL, 80LL, 1LL, 0LL, 0LL, 0LL, 0LL, 5, 1};
// CHECK: epilogue_vec<<<
// CHECK-LABEL: static int32_t k1_matmul(
// CHECK: {SLUICE_GEMM_BF16, 0, 1, 16LL, 24LL, 32LL, 32LL, 32LL, 24LL, 24LL, 8LL, 512LL, 768LL, 0LL, 384LL, 0, 0};
// CHECK: (double)(0.125f)
// CHECK-LABEL: static int32_t k2_conv(
// CHECK: sluice_conv<sluice_f16>
// CHECK-LABEL: static int32_t k3_conv(
// CHECK: sluice_conv<sluice_bf16>

module {
  func.func @main(%x: tensor<64x96xf16>, %wt: tensor<80x96xf16>, %bias: tensor<80xf16>, %res: tensor<64x80xf16>,
                  %q: tensor<2x4x16x32xbf16>, %k: tensor<2x4x24x32xbf16>,
                  %x1: tensor<2x8x40xf16>, %w1: tensor<8x8x5xf16>,
                  %x2: tensor<2x8x12x12xbf16>, %w2: tensor<16x4x3x3xbf16>, %b2: tensor<16xbf16>)
      -> (tensor<64x80xf16>, tensor<64x80xf32>, tensor<2x4x16x24xbf16>, tensor<2x8x20xf16>, tensor<2x16x12x12xbf16>)
      attributes {sluice.input_names = ["x", "wt", "bias", "res", "q", "k", "x1", "w1", "x2", "w2", "b2"],
                  sluice.output_names = ["o0", "o1", "o2", "o3", "o4"]} {
    %0:2 = sluice.kernel @k0_matmul library "gemm"(%x, %wt, %bias, %res : tensor<64x96xf16>, tensor<80x96xf16>, tensor<80xf16>, tensor<64x80xf16>) -> (tensor<64x80xf16>, tensor<64x80xf32>) {
    ^bb0(%a: tensor<64x96xf16>, %b: tensor<80x96xf16>, %c: tensor<80xf16>, %r: tensor<64x80xf16>):
      %bt = sluice.transpose %b {perm = array<i64: 1, 0>} : (tensor<80x96xf16>) -> tensor<96x80xf16>
      %mm = sluice.matmul %a, %bt : (tensor<64x96xf16>, tensor<96x80xf16>) -> tensor<64x80xf16>
      %s = sluice.add %mm, %c : (tensor<64x80xf16>, tensor<80xf16>) -> tensor<64x80xf16>
      %s2 = sluice.add %r, %s : (tensor<64x80xf16>, tensor<64x80xf16>) -> tensor<64x80xf16>
      %g = sluice.gelu %s2 {approximate = "tanh"} : (tensor<64x80xf16>) -> tensor<64x80xf16>
      %f = sluice.cast %g : tensor<64x80xf16> -> tensor<64x80xf32>
      sluice.kernel_yield %g, %f : tensor<64x80xf16>, tensor<64x80xf32>
    }
    %1 = sluice.kernel @k1_matmul library "gemm"(%q, %k : tensor<2x4x16x32xbf16>, tensor<2x4x24x32xbf16>) -> (tensor<2x4x16x24xbf16>) {
    ^bb0(%a: tensor<2x4x16x32xbf16>, %b: tensor<2x4x24x32xbf16>):
      %sc = sluice.constant dense<0.125> : tensor<bf16>
      %kt = sluice.transpose %b {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x24x32xbf16>) -> tensor<2x4x32x24xbf16>
      %mm = sluice.matmul %a, %kt : (tensor<2x4x16x32xbf16>, tensor<2x4x32x24xbf16>) -> tensor<2x4x16x24xbf16>
      %s = sluice.mul %mm, %sc : (tensor<2x4x16x24xbf16>, tensor<bf16>) -> tensor<2x4x16x24xbf16>
      sluice.kernel_yield %s : tensor<2x4x16x24xbf16>
    }
    %2 = sluice.kernel @k2_conv library "conv"(%x1, %w1 : tensor<2x8x40xf16>, tensor<8x8x5xf16>) -> (tensor<2x8x20xf16>) {
    ^bb0(%a: tensor<2x8x40xf16>, %b: tensor<8x8x5xf16>):
      %y = sluice.conv %a, %b {dilations = array<i64: 1>, pads = array<i64: 2, 2>, strides = array<i64: 2>} : (tensor<2x8x40xf16>, tensor<8x8x5xf16>) -> tensor<2x8x20xf16>
      sluice.kernel_yield %y : tensor<2x8x20xf16>
    }
    %3 = sluice.kernel @k3_conv library "conv"(%x2, %w2, %b2 : tensor<2x8x12x12xbf16>, tensor<16x4x3x3xbf16>, tensor<16xbf16>) -> (tensor<2x16x12x12xbf16>) {
    ^bb0(%a: tensor<2x8x12x12xbf16>, %b: tensor<16x4x3x3xbf16>, %c: tensor<16xbf16>):
      %y = sluice.conv %a, %b, %c {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, group = 2} : (tensor<2x8x12x12xbf16>, tensor<16x4x3x3xbf16>, tensor<16xbf16>) -> tensor<2x16x12x12xbf16>
      sluice.kernel_yield %y : tensor<2x16x12x12xbf16>
    }
    return %0#0, %0#1, %1, %2, %3 : tensor<64x80xf16>, tensor<64x80xf32>, tensor<2x4x16x24xbf16>, tensor<2x8x20xf16>, tensor<2x16x12x12xbf16>
  }
}
