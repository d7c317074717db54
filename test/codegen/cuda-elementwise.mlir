// REQUIRES: nvcc
// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref > /dev/null
// RUN: sluice-compile %s --target=cuda --gpu-arch=sm_80 -o %t/b.sluice --report=%t/r.json --quiet
// RUN: FileCheck %s < %t/b.sluice/model.cu
// RUN: FileCheck %s --check-prefix=HOST < %t/b.sluice/host.cpp
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/b.sluice/manifest.json
// RUN: %if gpu %{ sluice-run %t/b.sluice --random-inputs --expect %t/ref/o0.npy %t/ref/o1.npy %t/ref/o2.npy %t/ref/o3.npy %t/ref/o4.npy %t/ref/o5.npy --rtol=1e-5 --atol=1e-6 | FileCheck %s --check-prefix=EXEC %}
//
// Form F1 on the cuda target (model.cu built by nvcc here; run against the
// reference evaluator where a GPU is present): each thread computes VEC
// consecutive elements; contiguous accesses move as one 16-byte sluice_vec,
// broadcasts and transposed reads element by element. A group no cuda
// emitter takes (topk) runs as a host step between staging copies.

// EXEC-COUNT-6: : ok

// f32, contiguous + a broadcast row (contiguous along the inner dim, so a
// vector too): 4 floats per thread.
// CHECK-LABEL: namespace k0_add_k {
// CHECK: __global__ void __launch_bounds__(256) elementwise(const float *__restrict__ in0, const float *__restrict__ in1, float *__restrict__ out0)
// CHECK: for (int32_t t = blockIdx.x * blockDim.x + threadIdx.x; t < 2048; t += gridDim.x * blockDim.x) {
// CHECK: *(sluice_vec<float, 4> *)r0 = *(const sluice_vec<float, 4> *)(in0 + (b0 + i0));
// CHECK: *(sluice_vec<float, 4> *)r1 = *(const sluice_vec<float, 4> *)(in1 + (b1 + i0));
// CHECK: const float v0 = (r0[j] + r1[j]);
// CHECK: const float v1 = sl_max(v0, 0.f);
// CHECK: *(sluice_vec<float, 4> *)(out0 + (b2 + i0)) = *(const sluice_vec<float, 4> *)r2;
// f16 in and out: 8 halves (16 bytes) per thread, f32 arithmetic.
// CHECK-LABEL: namespace k1_mul_k {
// CHECK: sluice_vec<sluice_f16, 8>
// A transposed read: strided, no vector for it; the output is contiguous.
// CHECK-LABEL: namespace k2_neg_k {
// CHECK: const float v0 = (-in0[b0 + i * 32]);
// CHECK: *(sluice_vec<float, 4> *)(out0
// A cast f32 -> i64 with 16-byte vectors for the widest type (2 per thread).
// CHECK-LABEL: namespace k3_cast_k {
// CHECK: sluice_vec<int64_t, 2>
// An odd inner extent: one element per thread.
// CHECK-LABEL: namespace k4_sub_k {
// CHECK: t < 105;
// CHECK-NOT: sluice_vec
// CHECK-LABEL: static int32_t k5_topk(
// CHECK: cudaMemcpyAsync(h + 0, b[0], 480, cudaMemcpyDeviceToHost, stream)
// CHECK: cudaLaunchHostFunc(stream, sluice_host_step_trampoline, slot.get())
// CHECK: cudaMemcpyAsync(b[1], h + 512, 48, cudaMemcpyHostToDevice, stream)
// CHECK: cudaMemcpyAsync(b[2], h + 576, 96, cudaMemcpyHostToDevice, stream)
// CHECK-LABEL: extern "C" int32_t sluice_model_run(
// CHECK: SLUICE_STEP(0, k0_add(b, args));
// CHECK: SLUICE_STEP(5, k5_topk(b, args));

// HOST: static int32_t k5_topk(void *const *b, const SluiceRunArgs *args) {
// HOST: int32_t sluice_host_k5_topk(void *const *b, const SluiceRunArgs *args) { return k5_topk(b, args); }

// MANIFEST: "target": "cuda",
// MANIFEST: "host_arena_bytes": 704,
// MANIFEST: "gpu_architectures": [
// MANIFEST-NEXT: "sm_80"
// MANIFEST-NEXT: ],
// MANIFEST: "name": "k0_add",
// MANIFEST-NEXT: "kind": "kernel",
// MANIFEST-NEXT: "op": "sluice.add",
// MANIFEST: "name": "k5_topk",
// MANIFEST-NEXT: "kind": "host",
// MANIFEST-NEXT: "op": "sluice.topk",

module {
  func.func @main(%x: tensor<64x128xf32>, %bias: tensor<128xf32>, %h: tensor<32x64xf16>,
                  %t: tensor<64x32xf32>, %c: tensor<16x8xf32>, %o: tensor<15x7xf32>,
                  %k: tensor<4x30xf32>)
      -> (tensor<64x128xf32>, tensor<32x64xf16>, tensor<32x64xf32>, tensor<16x8xi64>, tensor<15x7xf32>, tensor<4x3xf32>)
      attributes {sluice.input_names = ["x", "bias", "h", "t", "c", "o", "k"],
                  sluice.output_names = ["o0", "o1", "o2", "o3", "o4", "o5"]} {
    %0 = sluice.kernel @k0_add(%x, %bias : tensor<64x128xf32>, tensor<128xf32>) -> (tensor<64x128xf32>) {
    ^bb0(%a: tensor<64x128xf32>, %b: tensor<128xf32>):
      %z = sluice.constant dense<0.0> : tensor<f32>
      %s = sluice.add %a, %b : (tensor<64x128xf32>, tensor<128xf32>) -> tensor<64x128xf32>
      %r = sluice.max %s, %z : (tensor<64x128xf32>, tensor<f32>) -> tensor<64x128xf32>
      sluice.kernel_yield %r : tensor<64x128xf32>
    }
    %1 = sluice.kernel @k1_mul(%h : tensor<32x64xf16>) -> (tensor<32x64xf16>) {
    ^bb0(%a: tensor<32x64xf16>):
      %m = sluice.mul %a, %a : (tensor<32x64xf16>, tensor<32x64xf16>) -> tensor<32x64xf16>
      sluice.kernel_yield %m : tensor<32x64xf16>
    }
    %2 = sluice.kernel @k2_neg(%t : tensor<64x32xf32>) -> (tensor<32x64xf32>) {
    ^bb0(%a: tensor<64x32xf32>):
      %tr = sluice.transpose %a {perm = array<i64: 1, 0>} : (tensor<64x32xf32>) -> tensor<32x64xf32>
      %n = sluice.neg %tr : (tensor<32x64xf32>) -> tensor<32x64xf32>
      sluice.kernel_yield %n : tensor<32x64xf32>
    }
    %3 = sluice.kernel @k3_cast(%c : tensor<16x8xf32>) -> (tensor<16x8xi64>) {
    ^bb0(%a: tensor<16x8xf32>):
      %ci = sluice.cast %a : tensor<16x8xf32> -> tensor<16x8xi64>
      sluice.kernel_yield %ci : tensor<16x8xi64>
    }
    %4 = sluice.kernel @k4_sub(%o : tensor<15x7xf32>) -> (tensor<15x7xf32>) {
    ^bb0(%a: tensor<15x7xf32>):
      %d = sluice.sub %a, %a : (tensor<15x7xf32>, tensor<15x7xf32>) -> tensor<15x7xf32>
      %e = sluice.exp %d : (tensor<15x7xf32>) -> tensor<15x7xf32>
      sluice.kernel_yield %e : tensor<15x7xf32>
    }
    %5:2 = sluice.kernel @k5_topk(%k : tensor<4x30xf32>) -> (tensor<4x3xf32>, tensor<4x3xi64>) {
    ^bb0(%a: tensor<4x30xf32>):
      %kk = sluice.constant dense<3> : tensor<1xi64>
      %v, %i = sluice.topk %a, %kk : (tensor<4x30xf32>, tensor<1xi64>) -> (tensor<4x3xf32>, tensor<4x3xi64>)
      sluice.kernel_yield %v, %i : tensor<4x3xf32>, tensor<4x3xi64>
    }
    return %0, %1, %2, %3, %4, %5#0 : tensor<64x128xf32>, tensor<32x64xf16>, tensor<32x64xf32>, tensor<16x8xi64>, tensor<15x7xf32>, tensor<4x3xf32>
  }
}
