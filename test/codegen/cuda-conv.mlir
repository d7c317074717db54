// REQUIRES: nvcc
// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref > /dev/null
// RUN: sluice-compile %s --target=cuda --gpu-arch=sm_90 -o %t/b.sluice --quiet
// RUN: FileCheck %s < %t/b.sluice/model.cu
// RUN: %if gpu %{ sluice-run %t/b.sluice --random-inputs --expect %t/ref/o0.npy %t/ref/o1.npy %t/ref/o2.npy %t/ref/o3.npy %t/ref/o4.npy %t/ref/o5.npy %t/ref/o6.npy --rtol=1e-4 --atol=1e-5 | FileCheck %s --check-prefix=EXEC %}
//
// Convolutions through cuDNN (library "conv" groups): grouped/strided/
// dilated 2-D with bias, 1-D (as 2-D with a unit height), 3-D, asymmetric
// pads (a zero-padded copy of the input in workspace scratch), transposed
// with output padding (backward data), and transposed with asymmetric and
// negative pads (the crop of the full output). f32 runs with FMA math only
// (no TF32), so the evaluator's 1e-4 holds.

// EXEC-COUNT-7: : ok

// CHECK: #define SLUICE_WITH_CUDNN 1
// CHECK-LABEL: static int32_t k0_conv(
// CHECK: static const SluiceConvShape conv = {SLUICE_CONV_F32, 0, 2, 2LL, 8LL, 16LL, 2LL, {16LL, 16LL, 0LL}, {3LL, 3LL, 0LL}, {8LL, 8LL, 0LL}, {1LL, 1LL, 0LL}, {2LL, 2LL, 0LL}, {1LL, 1LL, 0LL}, {1LL, 1LL, 0LL}, {0LL, 0LL, 0LL}};
// CHECK: sluice_conv<float>(args, state, "k0_conv", conv, (const float *)(in0 + 0LL), (const float *)(in1 + 0LL), (const float *)(in2 + 0LL), (float *)out0, (size_t)67108864LL, stream)
// CHECK-LABEL: static int32_t k1_conv(
// CHECK: {SLUICE_CONV_F32, 0, 1, 2LL, 4LL, 6LL, 1LL, {40LL, 0LL, 0LL}, {5LL, 0LL, 0LL}, {20LL, 0LL, 0LL}, {2LL, 0LL, 0LL}, {2LL, 0LL, 0LL}, {1LL, 0LL, 0LL}, {2LL, 0LL, 0LL}, {0LL, 0LL, 0LL}};
// CHECK-LABEL: static int32_t k2_conv(
// CHECK: {SLUICE_CONV_F32, 0, 3,
// CHECK-LABEL: static int32_t k3_conv(
// CHECK: {0LL, 1LL, 0LL}, {2LL, 2LL, 0LL}, {1LL, 1LL, 0LL}, {1LL, 2LL, 0LL}, {0LL, 0LL, 0LL}};
// CHECK-LABEL: static int32_t k4_conv_transpose(
// CHECK: {SLUICE_CONV_F32, 1, 2, 2LL, 8LL, 6LL, 1LL, {7LL, 9LL, 0LL}, {3LL, 3LL, 0LL}, {14LL, 18LL, 0LL}, {1LL, 1LL, 0LL}, {2LL, 2LL, 0LL}, {1LL, 1LL, 0LL}, {1LL, 1LL, 0LL}, {1LL, 1LL, 0LL}};
// CHECK-LABEL: static int32_t k5_conv_transpose(
// CHECK: {0LL, 1LL, 0LL}, {2LL, 2LL, 0LL}, {1LL, 1LL, 0LL}, {1LL, 2LL, 0LL}, {1LL, 0LL, 0LL}};
// CHECK-LABEL: static int32_t k6_conv_transpose(
// CHECK: {SLUICE_CONV_F32, 1, 1, 1LL, 3LL, 5LL, 1LL, {9LL, 0LL, 0LL}, {3LL, 0LL, 0LL}, {22LL, 0LL, 0LL}, {-1LL, 0LL, 0LL}

module {
  func.func @main(%x: tensor<2x8x16x16xf32>, %w: tensor<16x4x3x3xf32>, %b: tensor<16xf32>,
                  %x1: tensor<2x4x40xf32>, %w1: tensor<6x4x5xf32>, %b1: tensor<6xf32>,
                  %x3: tensor<1x4x6x7x8xf32>, %w3: tensor<6x4x3x3x3xf32>,
                  %xa: tensor<2x6x16x15xf32>, %wa: tensor<8x6x3x4xf32>, %ba: tensor<8xf32>,
                  %xt: tensor<2x8x7x9xf32>, %wt: tensor<8x6x3x3xf32>, %bt: tensor<6xf32>,
                  %xu: tensor<2x4x8x7xf32>, %wu: tensor<4x6x3x3xf32>,
                  %xn: tensor<1x3x9xf32>, %wn: tensor<3x5x3xf32>, %bn: tensor<5xf32>)
      -> (tensor<2x16x8x8xf32>, tensor<2x6x20xf32>, tensor<1x6x6x4x8xf32>, tensor<2x8x8x8xf32>,
          tensor<2x6x14x18xf32>, tensor<2x6x17x12xf32>, tensor<1x5x22xf32>)
      attributes {sluice.input_names = ["x", "w", "b", "x1", "w1", "b1", "x3", "w3", "xa", "wa", "ba", "xt", "wt", "bt", "xu", "wu", "xn", "wn", "bn"],
                  sluice.output_names = ["o0", "o1", "o2", "o3", "o4", "o5", "o6"]} {
    // 2-D, groups 2, stride 2, pad 1, bias
    %0 = sluice.kernel @k0_conv library "conv"(%x, %w, %b : tensor<2x8x16x16xf32>, tensor<16x4x3x3xf32>, tensor<16xf32>) -> (tensor<2x16x8x8xf32>) {
    ^bb0(%p: tensor<2x8x16x16xf32>, %q: tensor<16x4x3x3xf32>, %r: tensor<16xf32>):
      %y = sluice.conv %p, %q, %r {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, group = 2} : (tensor<2x8x16x16xf32>, tensor<16x4x3x3xf32>, tensor<16xf32>) -> tensor<2x16x8x8xf32>
      sluice.kernel_yield %y : tensor<2x16x8x8xf32>
    }
    // 1-D, stride 2, pad 2, bias
    %1 = sluice.kernel @k1_conv library "conv"(%x1, %w1, %b1 : tensor<2x4x40xf32>, tensor<6x4x5xf32>, tensor<6xf32>) -> (tensor<2x6x20xf32>) {
    ^bb0(%p: tensor<2x4x40xf32>, %q: tensor<6x4x5xf32>, %r: tensor<6xf32>):
      %y = sluice.conv %p, %q, %r {dilations = array<i64: 1>, pads = array<i64: 2, 2>, strides = array<i64: 2>} : (tensor<2x4x40xf32>, tensor<6x4x5xf32>, tensor<6xf32>) -> tensor<2x6x20xf32>
      sluice.kernel_yield %y : tensor<2x6x20xf32>
    }
    // 3-D, strides (1, 2, 1), pad 1, no bias
    %2 = sluice.kernel @k2_conv library "conv"(%x3, %w3 : tensor<1x4x6x7x8xf32>, tensor<6x4x3x3x3xf32>) -> (tensor<1x6x6x4x8xf32>) {
    ^bb0(%p: tensor<1x4x6x7x8xf32>, %q: tensor<6x4x3x3x3xf32>):
      %y = sluice.conv %p, %q {dilations = array<i64: 1, 1, 1>, pads = array<i64: 1, 1, 1, 1, 1, 1>, strides = array<i64: 1, 2, 1>} : (tensor<1x4x6x7x8xf32>, tensor<6x4x3x3x3xf32>) -> tensor<1x6x6x4x8xf32>
      sluice.kernel_yield %y : tensor<1x6x6x4x8xf32>
    }
    // SAME_UPPER-style asymmetric pads (0, 1) / (1, 2), stride 2
    %3 = sluice.kernel @k3_conv library "conv"(%xa, %wa, %ba : tensor<2x6x16x15xf32>, tensor<8x6x3x4xf32>, tensor<8xf32>) -> (tensor<2x8x8x8xf32>) {
    ^bb0(%p: tensor<2x6x16x15xf32>, %q: tensor<8x6x3x4xf32>, %r: tensor<8xf32>):
      %y = sluice.conv %p, %q, %r {dilations = array<i64: 1, 1>, pads = array<i64: 0, 1, 1, 2>, strides = array<i64: 2, 2>} : (tensor<2x6x16x15xf32>, tensor<8x6x3x4xf32>, tensor<8xf32>) -> tensor<2x8x8x8xf32>
      sluice.kernel_yield %y : tensor<2x8x8x8xf32>
    }
    // transposed, stride 2, pad 1, output padding 1, bias
    %4 = sluice.kernel @k4_conv_transpose library "conv"(%xt, %wt, %bt : tensor<2x8x7x9xf32>, tensor<8x6x3x3xf32>, tensor<6xf32>) -> (tensor<2x6x14x18xf32>) {
    ^bb0(%p: tensor<2x8x7x9xf32>, %q: tensor<8x6x3x3xf32>, %r: tensor<6xf32>):
      %y = sluice.conv_transpose %p, %q, %r {dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x8x7x9xf32>, tensor<8x6x3x3xf32>, tensor<6xf32>) -> tensor<2x6x14x18xf32>
      sluice.kernel_yield %y : tensor<2x6x14x18xf32>
    }
    // transposed, asymmetric pads (0, 1) / (1, 2) (an output_shape), output padding (1, 0)
    %5 = sluice.kernel @k5_conv_transpose library "conv"(%xu, %wu : tensor<2x4x8x7xf32>, tensor<4x6x3x3xf32>) -> (tensor<2x6x17x12xf32>) {
    ^bb0(%p: tensor<2x4x8x7xf32>, %q: tensor<4x6x3x3xf32>):
      %y = sluice.conv_transpose %p, %q {dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 0>, pads = array<i64: 0, 1, 1, 2>, strides = array<i64: 2, 2>} : (tensor<2x4x8x7xf32>, tensor<4x6x3x3xf32>) -> tensor<2x6x17x12xf32>
      sluice.kernel_yield %y : tensor<2x6x17x12xf32>
    }
    // transposed 1-D with negative pads: a bias-only border
    %6 = sluice.kernel @k6_conv_transpose library "conv"(%xn, %wn, %bn : tensor<1x3x9xf32>, tensor<3x5x3xf32>, tensor<5xf32>) -> (tensor<1x5x22xf32>) {
    ^bb0(%p: tensor<1x3x9xf32>, %q: tensor<3x5x3xf32>, %r: tensor<5xf32>):
      %y = sluice.conv_transpose %p, %q, %r {dilations = array<i64: 1>, output_padding = array<i64: 0>, pads = array<i64: -1, -2>, strides = array<i64: 2>} : (tensor<1x3x9xf32>, tensor<3x5x3xf32>, tensor<5xf32>) -> tensor<1x5x22xf32>
      sluice.kernel_yield %y : tensor<1x5x22xf32>
    }
    return %0, %1, %2, %3, %4, %5, %6 : tensor<2x16x8x8xf32>, tensor<2x6x20xf32>, tensor<1x6x6x4x8xf32>, tensor<2x8x8x8xf32>, tensor<2x6x14x18xf32>, tensor<2x6x17x12xf32>, tensor<1x5x22xf32>
  }
}
