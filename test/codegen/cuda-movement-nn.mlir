// REQUIRES: nvcc
// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref > /dev/null
// RUN: sluice-compile %s --target=cuda --gpu-arch=sm_90 -o %t/b.sluice --quiet
// RUN: FileCheck %s < %t/b.sluice/model.cu
// RUN: %if gpu %{ sluice-run %t/b.sluice --random-inputs --expect %t/ref/o0.npy %t/ref/o1.npy %t/ref/o2.npy %t/ref/o3.npy %t/ref/o4.npy --rtol=1e-5 --atol=1e-6 | FileCheck %s --check-prefix=EXEC %}
//
// Single ops with cuda kernels (F5): gather and concat move 16-byte chunks
// where rows allow, pooling and batch norm one thread per output element.
// Gather's indices are checked on the device (the error word).

// EXEC-COUNT-5: : ok

// CHECK-LABEL: static int32_t k0_gather(
// CHECK: sluice_gather_kernel<uint4><<<sluice_grid(24, 256), 256, 0, stream>>>((const uint4 *)in0, in1, (uint4 *)out0, 1LL, 10LL, 4LL, 6LL, state->deviceError, 0);
// CHECK-LABEL: static int32_t k1_concat(
// CHECK: sluice_copy_rows_kernel<uint2><<<
// CHECK: sluice_copy_rows_kernel<uint2><<<
// CHECK-LABEL: static int32_t k2_pool(
// CHECK: sluice_pool_kernel<float, 0><<<sluice_grid(48, 256), 256, 0, stream>>>(sluice_cuda_window{{[{][{]}}1LL, 8LL, 8LL}, {1LL, 2LL, 2LL}, {1LL, 4LL, 4LL}, {1LL, 2LL, 2LL}, {1LL, 1LL, 1LL}, {0LL, 0LL, 0LL}, {0LL, 0LL, 0LL}}, 3LL, false, 2.0, false, in0, out0, (int64_t *)nullptr);
// CHECK-LABEL: static int32_t k3_pool(
// CHECK: sluice_pool_kernel<float, 1>
// CHECK-LABEL: static int32_t k4_batch_norm(
// CHECK: sluice_batch_norm_kernel<float, float><<<sluice_grid(24, 256), 256, 0, stream>>>(in0, in1, in2, in3, in4, out0, 2LL, 4LL, 3LL, 9.999999747e-06f);

module {
  func.func @main(%e: tensor<10x16xf32>, %i: tensor<2x3xi64>, %a: tensor<2x6xf32>, %b: tensor<2x2xf32>,
                  %x: tensor<1x3x8x8xf32>, %y: tensor<1x3x9x9xf32>, %n: tensor<2x4x3xf32>,
                  %s: tensor<4xf32>, %bi: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>)
      -> (tensor<2x3x16xf32>, tensor<2x8xf32>, tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>, tensor<2x4x3xf32>)
      attributes {sluice.input_names = ["e", "i", "a", "b", "x", "y", "n", "s", "bi", "m", "v"],
                  sluice.output_names = ["o0", "o1", "o2", "o3", "o4"]} {
    %0 = sluice.kernel @k0_gather(%e, %i : tensor<10x16xf32>, tensor<2x3xi64>) -> (tensor<2x3x16xf32>) {
    ^bb0(%t: tensor<10x16xf32>, %j: tensor<2x3xi64>):
      %g = sluice.gather %t, %j : (tensor<10x16xf32>, tensor<2x3xi64>) -> tensor<2x3x16xf32>
      sluice.kernel_yield %g : tensor<2x3x16xf32>
    }
    %1 = sluice.kernel @k1_concat(%a, %b : tensor<2x6xf32>, tensor<2x2xf32>) -> (tensor<2x8xf32>) {
    ^bb0(%p: tensor<2x6xf32>, %q: tensor<2x2xf32>):
      %c = sluice.concat %p, %q {axis = 1 : i64} : (tensor<2x6xf32>, tensor<2x2xf32>) -> tensor<2x8xf32>
      sluice.kernel_yield %c : tensor<2x8xf32>
    }
    %2 = sluice.kernel @k2_pool(%x : tensor<1x3x8x8xf32>) -> (tensor<1x3x4x4xf32>) {
    ^bb0(%p: tensor<1x3x8x8xf32>):
      %r = sluice.pool %p {kind = #sluice<pool_kind max>, kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
      sluice.kernel_yield %r : tensor<1x3x4x4xf32>
    }
    %3 = sluice.kernel @k3_pool(%y : tensor<1x3x9x9xf32>) -> (tensor<1x3x4x4xf32>) {
    ^bb0(%p: tensor<1x3x9x9xf32>):
      %r = sluice.pool %p {kind = #sluice<pool_kind avg>, kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 0, 0>} : (tensor<1x3x9x9xf32>) -> tensor<1x3x4x4xf32>
      sluice.kernel_yield %r : tensor<1x3x4x4xf32>
    }
    %4 = sluice.kernel @k4_batch_norm(%n, %s, %bi, %m, %v : tensor<2x4x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x3xf32>) {
    ^bb0(%p: tensor<2x4x3xf32>, %q: tensor<4xf32>, %r: tensor<4xf32>, %u: tensor<4xf32>, %w: tensor<4xf32>):
      %o = sluice.batch_norm %p, %q, %r, %u, %w : (tensor<2x4x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3xf32>
      sluice.kernel_yield %o : tensor<2x4x3xf32>
    }
    return %0, %1, %2, %3, %4 : tensor<2x3x16xf32>, tensor<2x8xf32>, tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>, tensor<2x4x3xf32>
  }
}
