// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref > /dev/null
// RUN: sluice-compile %s -o %t/b.sluice --quiet
// RUN: sluice-run %t/b.sluice --random-inputs --threads=2 --expect %t/ref/o0.npy %t/ref/o1.npy %t/ref/o2.npy %t/ref/o3.npy %t/ref/o4.npy %t/ref/o5.npy %t/ref/o6.npy %t/ref/o7.npy --rtol=1e-4 --atol=1e-6 | FileCheck %s --check-prefix=EXEC
// RUN: FileCheck %s < %t/b.sluice/model.cpp
//
// GEMM groups (form F2) on the cpu target, against the reference evaluator:
// the matmul's operands are read through their views (lda/ldb, per-batch
// offsets), the epilogue runs on each block of C inside
// sluice_gemm_batched_ep while it is in cache; C lives in the output that
// yields the matmul result or an epilogue value (updated in place), or in
// scratch when every output is strided (the transpose of k5).

// EXEC-COUNT-8: : ok

// CHECK-LABEL: static int32_t k0_matmul(
// CHECK: const auto epilogue = [&](int64_t batch, int64_t r0, int64_t rows, int64_t col0, int64_t cols) {
// CHECK: #pragma omp simd
// CHECK-NEXT: for (int64_t j = col0; j < col0 + cols; ++j) {
// CHECK-NEXT: const float acc_ = out0[b1 + j];
// CHECK-NEXT: const float v0 = (acc_ + in2[b0 + j]);
// CHECK-NEXT: out0[b2 + j] = SLUICE_STORE(float, v0);
// CHECK: sluice_gemm_batched_ep(args->num_threads, 1LL, 64LL, 80LL, 96LL, in0, a_off, 96LL, in1, b_off, 80LL, out0, epilogue);
// CHECK-LABEL: static int32_t k1_matmul(
// CHECK: const float v1 = sl_gelu(v0);
// CHECK-NEXT: out0[b2 + j] = SLUICE_STORE(float, v1);
// CHECK-NEXT: out1[b3 + j] = SLUICE_STORE(float, v0);
// The batches stack into one 128-row GEMM (split into tiles over 2 threads); the residual row is row % 64.
// CHECK-LABEL: static int32_t k2_matmul(
// CHECK: const int64_t br1_ = brest_ % 64;
// CHECK: const int64_t b0 = 0 + br1_ * 256;
// CHECK: sluice_gemm_batched_ep(args->num_threads, 1LL, 128LL, 256LL, 128LL,
// Six real batches; B is shared by the leading batch dim.
// CHECK-LABEL: static int32_t k3_matmul(
// CHECK: static const int64_t b_off[] = {0LL, 192LL, 384LL, 0LL, 192LL, 384LL};
// CHECK: const float v0 = (in2[b0 + j] * in2[b0 + j]);
// CHECK: sluice_gemm_batched_ep(args->num_threads, 6LL, 8LL, 12LL, 16LL,
// A through a reshape, B a column slice: ldb 64, offset 8.
// CHECK-LABEL: static int32_t k4_matmul(
// CHECK: static const int64_t b_off[] = {8LL};
// CHECK: sluice_gemm_batched_ep(args->num_threads, 1LL, 32LL, 40LL, 32LL, in0, a_off, 32LL, in1, b_off, 64LL,
// CHECK-LABEL: static int32_t k5_matmul(
// CHECK: gemm_c = gemm_c_buf.get();
// CHECK: out0[b2 + j * 24] =
// CHECK-LABEL: static int32_t k6_matmul(
// CHECK: const double v1 = sl_silu(v0);

module {
  func.func @main(%x: tensor<64x96xf32>, %w: tensor<96x80xf32>, %bias: tensor<80xf32>,
                  %bx: tensor<2x64x128xf32>, %bw: tensor<128x256xf32>, %res: tensor<64x256xf32>,
                  %q: tensor<2x3x8x16xf32>, %k: tensor<3x16x12xf32>, %b12: tensor<12xf32>,
                  %r: tensor<4x8x32xf32>, %w2: tensor<32x64xf32>,
                  %t: tensor<24x40xf32>, %tw: tensor<40x36xf32>, %tb: tensor<36xf32>,
                  %d: tensor<16x20xf64>, %dw: tensor<20x12xf64>, %db: tensor<12xf64>)
      -> (tensor<64x80xf32>, tensor<64x80xf32>, tensor<64x80xf32>, tensor<128x256xf32>, tensor<2x3x8x12xf32>, tensor<32x40xf32>, tensor<36x24xf32>, tensor<16x12xf64>) attributes {sluice.input_names = ["x", "w", "bias", "bx", "bw", "res", "q", "k", "b12", "r", "w2", "t", "tw", "tb", "d", "dw", "db"], sluice.output_names = ["o0", "o1", "o2", "o3", "o4", "o5", "o6", "o7"]} {
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
    return %0, %1#0, %1#1, %2, %3, %4, %5, %6 : tensor<64x80xf32>, tensor<64x80xf32>, tensor<64x80xf32>, tensor<128x256xf32>, tensor<2x3x8x12xf32>, tensor<32x40xf32>, tensor<36x24xf32>, tensor<16x12xf64>
  }
}
