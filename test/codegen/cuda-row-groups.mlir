// REQUIRES: nvcc
// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref > /dev/null
// RUN: sluice-compile %s --target=cuda --gpu-arch=sm_80 -o %t/b.sluice --report=%t/r.json --quiet
// RUN: FileCheck %s < %t/b.sluice/model.cu
// RUN: FileCheck %s --check-prefix=REPORT < %t/r.json
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/b.sluice/manifest.json
// RUN: %if gpu %{ sluice-run %t/b.sluice --random-inputs --expect %t/ref/o0.npy %t/ref/o1.npy %t/ref/o2.npy %t/ref/o3.npy %t/ref/o4.npy %t/ref/o5.npy %t/ref/o6.npy %t/ref/o7.npy %t/ref/o8.npy %t/ref/o9.npy %t/ref/o10.npy %t/ref/o11.npy %t/ref/o12.npy %t/ref/o13.npy %t/ref/o14.npy %t/ref/o15.npy --rtol=1e-5 --atol=1e-6 | FileCheck %s --check-prefix=EXEC %}
//
// Row groups (form F3) on the cuda target (model.cu built by nvcc here; run
// against the reference evaluator where a GPU is present): a team of lanes
// per row (sub-warp for short rows, a warp, a block for long ones), the row
// in registers when it fits, streamed twice when not; 16-byte vectors for
// contiguous, aligned accesses. Groups the kernel cannot do run on the host
// with the reason in the report.

// EXEC-COUNT-16: : ok

// softmax with a scale and a broadcast mask prologue: 32 floats a row.
// CHECK-LABEL: namespace k0_softmax_k {
// CHECK: // sluice.softmax: 128 rows of 32, team 4 (sub-warp), 4 per vector, 2 vectors per lane in registers
// CHECK: __global__ void __launch_bounds__(128) row(const float *__restrict__ in0, const float *__restrict__ in1, float *__restrict__ out0)
// CHECK: const sluice_vec<float, 4> lb0_ = *(const sluice_vec<float, 4> *)(in0 + b0 + j0);
// CHECK: const float v0 = (lb0_.v[k_] * 0.125f);
// CHECK-NEXT: const float v1 = (v0 + lb1_.v[k_]);
// CHECK-NEXT: x_[k_] = (float)v1;
// CHECK: *(sluice_vec<float, 4> *)(out0 + e0 + j0) = we0_;
// CHECK: sluice_row_run<SLUICE_ROW_SOFTMAX, 4, 4, 2, float>(128LL, 32LL, (float)0, load_, store_, stats_);
// The residual sum is stored by the prologue on the first pass.
// CHECK-LABEL: namespace k1_layer_norm_k {
// CHECK: if (first_) {
// CHECK-NEXT: wb2_.v[k_] = SLUICE_STORE(float, v0);
// CHECK: *(sluice_vec<float, 4> *)(out1 + b2 + j0) = wb2_;
// CHECK: const float y_ = y0_[k_] * (float)le0_.v[k_] + (float)le1_.v[k_];
// CHECK: sluice_row_run<SLUICE_ROW_LAYER_NORM, 4, 4, 4, float>(32LL, 64LL, (float)9.999999747e-06,
// layer_norm over the last two dims + residual and gelu epilogue.
// CHECK-LABEL: namespace k2_layer_norm_k {
// CHECK: const float v1 = sl_gelu(v0);
// CHECK: sluice_row_run<SLUICE_ROW_LAYER_NORM, 4, 4, 4, float>(8LL, 64LL, (float)1.000000047e-03,
// CHECK-LABEL: namespace k3_rms_norm_k {
// CHECK: sl_silu(
// CHECK: sluice_row_run<SLUICE_ROW_RMS_NORM, 4, 4, 3, float>(6LL, 40LL, (float)9.999999975e-07,
// reduce mean of squares + sqrt epilogue: one value a row, lane 0 stores it.
// CHECK-LABEL: namespace k4_reduce_k {
// CHECK: auto store_ = [&](int64_t row, float y0_) {
// CHECK: const float v1 = sl_sqrt(y_);
// CHECK: sluice_row_reduce_run<4, 4, 2, float>(24LL, 10LL, load_, store_);
// CHECK-LABEL: namespace k5_reduce_k {
// CHECK: sluice_row_reduce_run<2, 4, 4, float>(4LL, 60LL, load_, store_);
// The transpose is a strided read: no vector for it, the output still one.
// CHECK-LABEL: namespace k6_softmax_k {
// CHECK: x_[k_] = (float)in0[b0 + j * 16];
// CHECK: *(sluice_vec<float, 4> *)(out0 + e0 + j0) = we0_;
// CHECK: sluice_row_run<SLUICE_ROW_LOG_SOFTMAX,
// rms_norm alone.
// CHECK-LABEL: namespace k7_rms_norm_k {
// CHECK: sluice_row_run<SLUICE_ROW_RMS_NORM, 4, 4, 3, float>(12LL, 48LL,
// A long row: a block of 128 threads, 8 vectors of 4 per lane in registers.
// CHECK-LABEL: namespace k8_softmax_k {
// CHECK: // sluice.softmax: 3 rows of 4096, team 128 (block), 4 per vector, 8 vectors per lane in registers
// CHECK: __launch_bounds__(128)
// Too long for the registers: streamed statistics, the prologue read twice.
// CHECK-LABEL: namespace k9_layer_norm_k {
// CHECK: // sluice.layer_norm: 2 rows of 40000, team 1024 (block), 4 per vector, streamed
// CHECK: sluice_row_run<SLUICE_ROW_LAYER_NORM, 1024, 4, 0, float>(2LL, 40000LL,
// An odd row length: element by element, one warp a row.
// CHECK-LABEL: namespace k10_softmax_k {
// CHECK: // sluice.softmax: 10 rows of 201, team 32 (warp), 1 per vector, 7 vectors per lane in registers
// CHECK-NOT: sluice_vec
// CHECK: x_[k_] = (float)in0[b0 + j];
// CHECK: sluice_row_run<SLUICE_ROW_SOFTMAX, 32, 1, 7, float>(10LL, 201LL,
// layer_norm alone with its mean and inv_std_dev results stored, one a row.
// CHECK-LABEL: namespace k11_layer_norm_k {
// CHECK: out1[s0] = (float)mean_;
// CHECK-NEXT: out2[s1] = (float)inv_;
// Integer sums accumulate in int64_t.
// CHECK-LABEL: namespace k12_reduce_k {
// CHECK: sluice_row_reduce_run<0, 8, 2, int64_t>(5LL, 64LL, load_, store_);
// CHECK-NOT: namespace k13_reduce_k {
// CHECK-NOT: namespace k14_softmax_k {
// The launches: blocks of 128 threads hold 128 / team rows.
// CHECK-LABEL: static int32_t k0_softmax(
// CHECK: row<<<sluice_grid(128LL, 32), 128, 0, stream>>>(in0, in1, out0);
// CHECK-NEXT: SLUICE_LAUNCHED("k0_softmax");
// CHECK-LABEL: static int32_t k8_softmax(
// CHECK: row<<<sluice_grid(3LL, 1), 128, 0, stream>>>
// CHECK-LABEL: static int32_t k9_layer_norm(
// CHECK: row<<<sluice_grid(2LL, 1), 1024, 0, stream>>>
// CHECK-LABEL: static int32_t k13_reduce(
// CHECK: cudaLaunchHostFunc(stream, sluice_host_step_trampoline

// Reduce over the first axis and softmax over a middle one: host steps.
// REPORT: "k13_reduce (sluice.reduce): runs on the host: reduce over axis 0 followed by kept axes (not innermost, the reduced elements are not contiguous)"
// REPORT: "k14_softmax (sluice.softmax): runs on the host: softmax over axis 1, not the innermost (its rows are not contiguous)"
// MANIFEST: "name": "k0_softmax",
// MANIFEST-NEXT: "kind": "kernel",
// MANIFEST-NEXT: "op": "sluice.softmax",
// MANIFEST: "name": "k12_reduce",
// MANIFEST-NEXT: "kind": "kernel",
// MANIFEST-NEXT: "op": "sluice.reduce",
// MANIFEST: "name": "k13_reduce",
// MANIFEST-NEXT: "kind": "host",
// MANIFEST-NEXT: "op": "sluice.reduce",

module {
  func.func @main(%s: tensor<2x4x16x32xf32>, %mask: tensor<2x1x1x32xf32>,
                  %x: tensor<32x64xf32>, %h: tensor<32x64xf32>, %g: tensor<64xf32>, %be: tensor<64xf32>,
                  %y: tensor<8x4x16xf32>, %g2: tensor<4x16xf32>, %res: tensor<8x4x16xf32>,
                  %z: tensor<6x40xf32>, %zs: tensor<40xf32>,
                  %u: tensor<4x6x10xf32>,
                  %t: tensor<32x16xf32>,
                  %v: tensor<12x48xf32>, %vs: tensor<48xf32>,
                  %long: tensor<3x4096xf32>,
                  %huge: tensor<2x40000xf32>, %hg: tensor<40000xf32>,
                  %odd: tensor<10x201xf32>,
                  %ln: tensor<6x96xf32>, %lg: tensor<96xf32>, %lb: tensor<96xf32>,
                  %ints: tensor<5x64xi64>,
                  %w: tensor<8x16xf32>, %m3: tensor<2x8x16xf32>)
      -> (tensor<2x4x16x32xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<8x4x16xf32>, tensor<6x40xf32>, tensor<4x6x1xf32>, tensor<4xf32>, tensor<16x32xf32>, tensor<12x48xf32>,
          tensor<3x4096xf32>, tensor<2x40000xf32>, tensor<10x201xf32>, tensor<6x96xf32>, tensor<6x1xf32>, tensor<6x1xf32>, tensor<5x1xi64>, tensor<16xf32>, tensor<2x8x16xf32>)
      attributes {sluice.input_names = ["s", "mask", "x", "h", "g", "be", "y", "g2", "res", "z", "zs", "u", "t", "v", "vs", "long", "huge", "hg", "odd", "ln", "lg", "lb", "ints", "w", "m3"],
                  sluice.output_names = ["o0", "o1", "o2", "o3", "o4", "o5", "o6", "o7", "o8", "o9", "o10", "o11", "o12", "o13", "o14", "o15", "o16", "o17"]} {
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
    // rms_norm alone
    %7 = sluice.kernel @k7_rms_norm(%v, %vs : tensor<12x48xf32>, tensor<48xf32>) -> (tensor<12x48xf32>) {
    ^bb0(%a: tensor<12x48xf32>, %sc: tensor<48xf32>):
      %o = sluice.rms_norm %a, %sc : (tensor<12x48xf32>, tensor<48xf32>) -> tensor<12x48xf32>
      sluice.kernel_yield %o : tensor<12x48xf32>
    }
    // a long row (block team, registers)
    %8 = sluice.kernel @k8_softmax(%long : tensor<3x4096xf32>) -> (tensor<3x4096xf32>) {
    ^bb0(%a: tensor<3x4096xf32>):
      %r = sluice.softmax %a {axis = 1 : i64} : (tensor<3x4096xf32>) -> tensor<3x4096xf32>
      sluice.kernel_yield %r : tensor<3x4096xf32>
    }
    // a row too long for the registers (streamed), exp prologue
    %9 = sluice.kernel @k9_layer_norm(%huge, %hg : tensor<2x40000xf32>, tensor<40000xf32>) -> (tensor<2x40000xf32>) {
    ^bb0(%a: tensor<2x40000xf32>, %sc: tensor<40000xf32>):
      %p = sluice.exp %a : (tensor<2x40000xf32>) -> tensor<2x40000xf32>
      %o, %mean, %inv = sluice.layer_norm %p, %sc {axis = -1 : i64} : (tensor<2x40000xf32>, tensor<40000xf32>) -> (tensor<2x40000xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
      sluice.kernel_yield %o : tensor<2x40000xf32>
    }
    // an odd row length (no vectors)
    %10 = sluice.kernel @k10_softmax(%odd : tensor<10x201xf32>) -> (tensor<10x201xf32>) {
    ^bb0(%a: tensor<10x201xf32>):
      %r = sluice.softmax %a {axis = -1 : i64} : (tensor<10x201xf32>) -> tensor<10x201xf32>
      sluice.kernel_yield %r : tensor<10x201xf32>
    }
    // layer_norm alone, its statistics yielded
    %11:3 = sluice.kernel @k11_layer_norm(%ln, %lg, %lb : tensor<6x96xf32>, tensor<96xf32>, tensor<96xf32>) -> (tensor<6x96xf32>, tensor<6x1xf32>, tensor<6x1xf32>) {
    ^bb0(%a: tensor<6x96xf32>, %sc: tensor<96xf32>, %bi: tensor<96xf32>):
      %o, %mean, %inv = sluice.layer_norm %a, %sc, %bi {axis = -1 : i64} : (tensor<6x96xf32>, tensor<96xf32>, tensor<96xf32>) -> (tensor<6x96xf32>, tensor<6x1xf32>, tensor<6x1xf32>)
      sluice.kernel_yield %o, %mean, %inv : tensor<6x96xf32>, tensor<6x1xf32>, tensor<6x1xf32>
    }
    // an integer sum
    %12 = sluice.kernel @k12_reduce(%ints : tensor<5x64xi64>) -> (tensor<5x1xi64>) {
    ^bb0(%a: tensor<5x64xi64>):
      %ax = sluice.constant dense<[1]> : tensor<1xi64>
      %r = sluice.reduce %a, %ax {kind = #sluice<reduce_kind sum>} : (tensor<5x64xi64>, tensor<1xi64>) -> tensor<5x1xi64>
      sluice.kernel_yield %r : tensor<5x1xi64>
    }
    // reduce over the outer axis: not contiguous rows, a host step
    %13 = sluice.kernel @k13_reduce(%w : tensor<8x16xf32>) -> (tensor<16xf32>) {
    ^bb0(%a: tensor<8x16xf32>):
      %ax = sluice.constant dense<[0]> : tensor<1xi64>
      %r = sluice.reduce %a, %ax {keepdims = false, kind = #sluice<reduce_kind sum>} : (tensor<8x16xf32>, tensor<1xi64>) -> tensor<16xf32>
      sluice.kernel_yield %r : tensor<16xf32>
    }
    // softmax over a middle axis: a host step
    %14 = sluice.kernel @k14_softmax(%m3 : tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>) {
    ^bb0(%a: tensor<2x8x16xf32>):
      %r = sluice.softmax %a {axis = 1 : i64} : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
      sluice.kernel_yield %r : tensor<2x8x16xf32>
    }
    return %0, %1#0, %1#1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11#0, %11#1, %11#2, %12, %13, %14 : tensor<2x4x16x32xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<8x4x16xf32>, tensor<6x40xf32>, tensor<4x6x1xf32>, tensor<4xf32>, tensor<16x32xf32>, tensor<12x48xf32>,
          tensor<3x4096xf32>, tensor<2x40000xf32>, tensor<10x201xf32>, tensor<6x96xf32>, tensor<6x1xf32>, tensor<6x1xf32>, tensor<5x1xi64>, tensor<16xf32>, tensor<2x8x16xf32>
  }
}
