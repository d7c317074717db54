// REQUIRES: nvcc
// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref > /dev/null
// RUN: sluice-compile %s --target=cuda --gpu-arch=sm_90 -o %t/b.sluice --quiet
// RUN: FileCheck %s < %t/b.sluice/model.cu
// RUN: %if gpu %{ sluice-run %t/b.sluice --random-inputs --expect %t/ref/o0.npy %t/ref/o1.npy %t/ref/o2.npy %t/ref/o3.npy %t/ref/o4.npy %t/ref/o5.npy %t/ref/o6.npy %t/ref/o7.npy %t/ref/o8.npy %t/ref/o9.npy %t/ref/o10.npy --rtol=1e-4 --atol=1e-5 | FileCheck %s --check-prefix=EXEC %}
//
// GEMM groups (form F2) on the cuda target: one cuBLASLt matmul each
// (row-major read as column-major: cuBLASLt computes D^T = B^T A^T), the
// epilogue prefix cuBLASLt fuses (alpha, bias, residual through beta = 1,
// relu / tanh GELU) in its descriptor, the rest (erf GELU, SiLU, a squared
// bias, extra outputs, transposed results) in one generated elementwise
// kernel over D. Same groups as cpu-gemm-groups.mlir, plus a transposed
// operand, a scale and a vector operand.

// EXEC-COUNT-11: : ok

// Bias fused: epilogue 1 (BIAS), D straight into out0, no generated kernel.
// CHECK-LABEL: static int32_t k0_matmul(
// CHECK: static const SluiceGemmShape gemm = {SLUICE_GEMM_F32, 0, 0, 64LL, 80LL, 96LL, 96LL, 80LL, 80LL, 80LL, 1LL, 0LL, 0LL, 0LL, 0LL, 1, 0};
// CHECK: sluice_gemm(args, state, "k0_matmul", gemm, (const void *)(in0 + a_off[o]), (const void *)(in1 + b_off[o]), nullptr, (void *)(out0 + d_off[o]), (const void *)(in2 + 0LL), 1.0,
// CHECK-NOT: epilogue
// CHECK-LABEL: static int32_t k1_matmul(
// erf GELU is not cuBLASLt's (tanh): D (the pre-activation, out1) feeds the generated kernel.
// CHECK: (void *)(out1 + d_off[o])
// CHECK: epilogue_vec<<<sluice_grid(5120, 256, 4), 256, 0, stream>>>((const float *)(out1), (float *)(out0));
// Two strided batches; the residual (broadcast over the batch: stride 0) is C.
// CHECK-LABEL: static int32_t k2_matmul(
// CHECK: {SLUICE_GEMM_F32, 0, 0, 64LL, 256LL, 128LL, 128LL, 256LL, 256LL, 256LL, 2LL, 8192LL, 0LL, 0LL, 16384LL, 0, 1};
// B broadcast over the leading batch dim only: two calls of three strided batches.
// CHECK-LABEL: static int32_t k3_matmul(
// CHECK: 3LL, 128LL, 192LL, 0LL, 96LL, 0, 0};
// CHECK: static const int64_t a_off[] = {0LL, 384LL};
// CHECK: for (int64_t o = 0; o < 2LL; ++o)
// A column slice of B: ldb 64, offset 8.
// CHECK-LABEL: static int32_t k4_matmul(
// CHECK: {SLUICE_GEMM_F32, 0, 0, 32LL, 40LL, 32LL, 32LL, 64LL, 40LL, 40LL,
// CHECK: static const int64_t b_off[] = {8LL};
// Written transposed: D in the workspace after cuBLASLt's 32 MiB.
// CHECK-LABEL: static int32_t k5_matmul(
// CHECK: ((float *)((unsigned char *)state->workspace + 33554432))
// CHECK: epilogue<<<
// f64: no fused bias; SiLU and the bias generated.
// CHECK-LABEL: static int32_t k6_matmul(
// CHECK: {SLUICE_GEMM_F64, 0, 0, 16LL, 12LL, 20LL,
// B transposed (trans_b 1, ldb 96), bias + residual + tanh GELU: GELU_BIAS (5) with C.
// CHECK-LABEL: static int32_t k7_matmul(
// CHECK: {SLUICE_GEMM_F32, 0, 1, 64LL, 80LL, 96LL, 96LL, 96LL, 80LL, 80LL, 1LL, 0LL, 0LL, 0LL, 0LL, 5, 1};
// CHECK-NOT: epilogue
// alpha 0.25, RELU_BIAS (3), then the transposed copy.
// CHECK-LABEL: static int32_t k8_matmul(
// CHECK: 0LL, 0LL, 0LL, 0LL, 3, 0};
// CHECK: (double)(0.25f)
// CHECK-LABEL: static int32_t k9_matmul(
// CHECK: {SLUICE_GEMM_F32, 0, 0, 1LL, 80LL, 96LL,
// CHECK: epilogue_vec<<<

module {
  func.func @main(%x: tensor<64x96xf32>, %w: tensor<96x80xf32>, %bias: tensor<80xf32>,
                  %bx: tensor<2x64x128xf32>, %bw: tensor<128x256xf32>, %res: tensor<64x256xf32>,
                  %q: tensor<2x3x8x16xf32>, %k: tensor<3x16x12xf32>, %b12: tensor<12xf32>,
                  %r: tensor<4x8x32xf32>, %w2: tensor<32x64xf32>,
                  %t: tensor<24x40xf32>, %tw: tensor<40x36xf32>, %tb: tensor<36xf32>,
                  %d: tensor<16x20xf64>, %dw: tensor<20x12xf64>, %db: tensor<12xf64>,
                  %kt: tensor<80x96xf32>, %v: tensor<96xf32>)
      -> (tensor<64x80xf32>, tensor<64x80xf32>, tensor<64x80xf32>, tensor<128x256xf32>, tensor<2x3x8x12xf32>, tensor<32x40xf32>, tensor<36x24xf32>, tensor<16x12xf64>,
          tensor<64x80xf32>, tensor<80x64xf32>, tensor<80xf32>) attributes {sluice.input_names = ["x", "w", "bias", "bx", "bw", "res", "q", "k", "b12", "r", "w2", "t", "tw", "tb", "d", "dw", "db", "kt", "v"], sluice.output_names = ["o0", "o1", "o2", "o3", "o4", "o5", "o6", "o7", "o8", "o9", "o10"]} {
    // GEMM + bias
    %0 = sluice.kernel @k0_matmul library "gemm"(%x, %w, %bias : tensor<64x96xf32>, tensor<96x80xf32>, tensor<80xf32>) -> (tensor<64x80xf32>) {
    ^bb0(%a: tensor<64x96xf32>, %b: tensor<96x80xf32>, %c: tensor<80xf32>):
      %m = sluice.matmul %a, %b : (tensor<64x96xf32>, tensor<96x80xf32>) -> tensor<64x80xf32>
      %s = sluice.add %m, %c : (tensor<64x80xf32>, tensor<80xf32>) -> tensor<64x80xf32>
      sluice.kernel_yield %s : tensor<64x80xf32>
    }
    // GEMM + bias + gelu, yielding the pre-activation too
    %1:2 = sluice.kernel @k1_matmul library "gemm"(%x, %w, %bias : tensor<64x96xf32>, tensor<96x80xf32>, tensor<80xf32>) -> (tensor<64x80xf32>, tensor<64x80xf32>) {
    ^bb0(%a: tensor<64x96xf32>, %b: tensor<96x80xf32>, %c: tensor<80xf32>):
      %m = sluice.matmul %a, %b : (tensor<64x96xf32>, tensor<96x80xf32>) -> tensor<64x80xf32>
      %s = sluice.add %m, %c : (tensor<64x80xf32>, tensor<80xf32>) -> tensor<64x80xf32>
      %g = sluice.gelu %s : (tensor<64x80xf32>) -> tensor<64x80xf32>
      sluice.kernel_yield %g, %s : tensor<64x80xf32>, tensor<64x80xf32>
    }
    // stacked batches + residual broadcast over the batch + scale, yielded through a reshape
    %2 = sluice.kernel @k2_matmul library "gemm"(%bx, %bw, %res : tensor<2x64x128xf32>, tensor<128x256xf32>, tensor<64x256xf32>) -> (tensor<128x256xf32>) {
    ^bb0(%a: tensor<2x64x128xf32>, %b: tensor<128x256xf32>, %c: tensor<64x256xf32>):
      %half = sluice.constant dense<0.5> : tensor<f32>
      %shape = sluice.constant dense<[128, 256]> : tensor<2xi64>
      %m = sluice.matmul %a, %b : (tensor<2x64x128xf32>, tensor<128x256xf32>) -> tensor<2x64x256xf32>
      %s = sluice.add %m, %c : (tensor<2x64x256xf32>, tensor<64x256xf32>) -> tensor<2x64x256xf32>
      %h = sluice.mul %s, %half : (tensor<2x64x256xf32>, tensor<f32>) -> tensor<2x64x256xf32>
      %o = sluice.reshape %h, %shape : (tensor<2x64x256xf32>, tensor<2xi64>) -> tensor<128x256xf32>
      sluice.kernel_yield %o : tensor<128x256xf32>
    }
    // batched matmul, B broadcast over the first batch dim, bias (squared:
    // an epilogue op of the bias's shape, recomputed per element) + relu
    %3 = sluice.kernel @k3_matmul library "gemm"(%q, %k, %b12 : tensor<2x3x8x16xf32>, tensor<3x16x12xf32>, tensor<12xf32>) -> (tensor<2x3x8x12xf32>) {
    ^bb0(%a: tensor<2x3x8x16xf32>, %b: tensor<3x16x12xf32>, %c: tensor<12xf32>):
      %m = sluice.matmul %a, %b : (tensor<2x3x8x16xf32>, tensor<3x16x12xf32>) -> tensor<2x3x8x12xf32>
      %c2 = sluice.mul %c, %c : (tensor<12xf32>, tensor<12xf32>) -> tensor<12xf32>
      %s = sluice.add %m, %c2 : (tensor<2x3x8x12xf32>, tensor<12xf32>) -> tensor<2x3x8x12xf32>
      %y = sluice.relu %s : (tensor<2x3x8x12xf32>) -> tensor<2x3x8x12xf32>
      sluice.kernel_yield %y : tensor<2x3x8x12xf32>
    }
    // A through a reshape, B through a column slice (ldb 64), tanh
    %4 = sluice.kernel @k4_matmul library "gemm"(%r, %w2 : tensor<4x8x32xf32>, tensor<32x64xf32>) -> (tensor<32x40xf32>) {
    ^bb0(%a: tensor<4x8x32xf32>, %b: tensor<32x64xf32>):
      %shape = sluice.constant dense<[32, 32]> : tensor<2xi64>
      %st = sluice.constant dense<[8]> : tensor<1xi64>
      %en = sluice.constant dense<[48]> : tensor<1xi64>
      %ax = sluice.constant dense<[1]> : tensor<1xi64>
      %sp = sluice.constant dense<[1]> : tensor<1xi64>
      %a2 = sluice.reshape %a, %shape : (tensor<4x8x32xf32>, tensor<2xi64>) -> tensor<32x32xf32>
      %b2 = sluice.slice %b, %st, %en, %ax, %sp : (tensor<32x64xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<32x40xf32>
      %m = sluice.matmul %a2, %b2 : (tensor<32x32xf32>, tensor<32x40xf32>) -> tensor<32x40xf32>
      %y = sluice.tanh %m : (tensor<32x40xf32>) -> tensor<32x40xf32>
      sluice.kernel_yield %y : tensor<32x40xf32>
    }
    // result written through a transpose (C in scratch)
    %5 = sluice.kernel @k5_matmul library "gemm"(%t, %tw, %tb : tensor<24x40xf32>, tensor<40x36xf32>, tensor<36xf32>) -> (tensor<36x24xf32>) {
    ^bb0(%a: tensor<24x40xf32>, %b: tensor<40x36xf32>, %c: tensor<36xf32>):
      %m = sluice.matmul %a, %b : (tensor<24x40xf32>, tensor<40x36xf32>) -> tensor<24x36xf32>
      %s = sluice.add %m, %c : (tensor<24x36xf32>, tensor<36xf32>) -> tensor<24x36xf32>
      %tr = sluice.transpose %s {perm = array<i64: 1, 0>} : (tensor<24x36xf32>) -> tensor<36x24xf32>
      sluice.kernel_yield %tr : tensor<36x24xf32>
    }
    // f64 (OpenBLAS path): bias + silu
    %6 = sluice.kernel @k6_matmul library "gemm"(%d, %dw, %db : tensor<16x20xf64>, tensor<20x12xf64>, tensor<12xf64>) -> (tensor<16x12xf64>) {
    ^bb0(%a: tensor<16x20xf64>, %b: tensor<20x12xf64>, %c: tensor<12xf64>):
      %m = sluice.matmul %a, %b : (tensor<16x20xf64>, tensor<20x12xf64>) -> tensor<16x12xf64>
      %s = sluice.add %m, %c : (tensor<16x12xf64>, tensor<12xf64>) -> tensor<16x12xf64>
      %y = sluice.silu %s : (tensor<16x12xf64>) -> tensor<16x12xf64>
      sluice.kernel_yield %y : tensor<16x12xf64>
    }
    // x W^T (W a transposed view) + bias, tanh GELU: one cuBLASLt call; a residual through beta
    %7 = sluice.kernel @k7_matmul library "gemm"(%x, %kt, %bias, %0 : tensor<64x96xf32>, tensor<80x96xf32>, tensor<80xf32>, tensor<64x80xf32>) -> (tensor<64x80xf32>) {
    ^bb0(%a: tensor<64x96xf32>, %b: tensor<80x96xf32>, %c: tensor<80xf32>, %rs: tensor<64x80xf32>):
      %bt = sluice.transpose %b {perm = array<i64: 1, 0>} : (tensor<80x96xf32>) -> tensor<96x80xf32>
      %m = sluice.matmul %a, %bt : (tensor<64x96xf32>, tensor<96x80xf32>) -> tensor<64x80xf32>
      %s = sluice.add %m, %c : (tensor<64x80xf32>, tensor<80xf32>) -> tensor<64x80xf32>
      %s2 = sluice.add %rs, %s : (tensor<64x80xf32>, tensor<64x80xf32>) -> tensor<64x80xf32>
      %g = sluice.gelu %s2 {approximate = "tanh"} : (tensor<64x80xf32>) -> tensor<64x80xf32>
      sluice.kernel_yield %g : tensor<64x80xf32>
    }
    // scale (alpha), bias + relu fused, written transposed through scratch
    %8 = sluice.kernel @k8_matmul library "gemm"(%x, %w, %bias : tensor<64x96xf32>, tensor<96x80xf32>, tensor<80xf32>) -> (tensor<80x64xf32>) {
    ^bb0(%a: tensor<64x96xf32>, %b: tensor<96x80xf32>, %c: tensor<80xf32>):
      %sc = sluice.constant dense<0.25> : tensor<f32>
      %m = sluice.matmul %a, %b : (tensor<64x96xf32>, tensor<96x80xf32>) -> tensor<64x80xf32>
      %h = sluice.mul %m, %sc : (tensor<64x80xf32>, tensor<f32>) -> tensor<64x80xf32>
      %s = sluice.add %h, %c : (tensor<64x80xf32>, tensor<80xf32>) -> tensor<64x80xf32>
      %y = sluice.relu %s : (tensor<64x80xf32>) -> tensor<64x80xf32>
      %tr = sluice.transpose %y {perm = array<i64: 1, 0>} : (tensor<64x80xf32>) -> tensor<80x64xf32>
      sluice.kernel_yield %tr : tensor<80x64xf32>
    }
    // vector x matrix + bias, silu
    %9 = sluice.kernel @k9_matmul library "gemm"(%v, %w, %bias : tensor<96xf32>, tensor<96x80xf32>, tensor<80xf32>) -> (tensor<80xf32>) {
    ^bb0(%a: tensor<96xf32>, %b: tensor<96x80xf32>, %c: tensor<80xf32>):
      %m = sluice.matmul %a, %b : (tensor<96xf32>, tensor<96x80xf32>) -> tensor<80xf32>
      %s = sluice.add %m, %c : (tensor<80xf32>, tensor<80xf32>) -> tensor<80xf32>
      %y = sluice.silu %s : (tensor<80xf32>) -> tensor<80xf32>
      sluice.kernel_yield %y : tensor<80xf32>
    }
    return %0, %1#0, %1#1, %2, %3, %4, %5, %6, %7, %8, %9 : tensor<64x80xf32>, tensor<64x80xf32>, tensor<64x80xf32>, tensor<128x256xf32>, tensor<2x3x8x12xf32>, tensor<32x40xf32>, tensor<36x24xf32>, tensor<16x12xf64>, tensor<64x80xf32>, tensor<80x64xf32>, tensor<80xf32>
  }
}
