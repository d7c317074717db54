// RUN: sluice-opt %s --split-input-file --verify-diagnostics
// The sluice.kernel verifier checks the declared form against the body with
// the kernel model's judge (dialects/sluice/KernelForms.h).

func.func @elementwise_declared_row(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{declares form 'row' but its body is a 'elementwise' group}}
  %0 = sluice.kernel @k0_tanh row(%x : tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %t = sluice.tanh %a : (tensor<4xf32>) -> tensor<4xf32>
    sluice.kernel_yield %t : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @gemm_declared_elementwise(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  // expected-error@+1 {{declares form 'elementwise' but its body is a 'gemm' group}}
  %0 = sluice.kernel @k0_matmul elementwise(%a, %b : tensor<2x3xf32>, tensor<3x4xf32>) -> (tensor<2x4xf32>) {
  ^bb0(%x: tensor<2x3xf32>, %y: tensor<3x4xf32>):
    %m = sluice.matmul %x, %y : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    sluice.kernel_yield %m : tensor<2x4xf32>
  }
  return %0 : tensor<2x4xf32>
}

// -----

func.func @gemm_without_library(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  // expected-error@+1 {{a gemm group calls library "gemm"}}
  %0 = sluice.kernel @k0_matmul gemm(%a, %b : tensor<2x3xf32>, tensor<3x4xf32>) -> (tensor<2x4xf32>) {
  ^bb0(%x: tensor<2x3xf32>, %y: tensor<3x4xf32>):
    %m = sluice.matmul %x, %y : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    sluice.kernel_yield %m : tensor<2x4xf32>
  }
  return %0 : tensor<2x4xf32>
}

// -----

func.func @two_anchors(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error@+1 {{body is no row group: the group holds 2 ops that are neither elementwise nor views}}
  %0 = sluice.kernel @k0_softmax row(%x : tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  ^bb0(%a: tensor<4x8xf32>):
    %s = sluice.softmax %a {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %t = sluice.softmax %s {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    sluice.kernel_yield %t : tensor<4x8xf32>
  }
  return %0 : tensor<4x8xf32>
}

// -----

// Only f32 2-D convs take an epilogue (kernel::isEpilogueConv, form gemm).
func.func @conv_with_epilogue_f64(%x: tensor<1x3x8x8xf64>, %w: tensor<4x3x3x3xf64>) -> tensor<1x4x6x6xf64> {
  // expected-error@+1 {{no kernel form holds 'sluice.conv' with 1 more compute ops}}
  %0 = sluice.kernel @k0_conv library library "conv"(%x, %w : tensor<1x3x8x8xf64>, tensor<4x3x3x3xf64>) -> (tensor<1x4x6x6xf64>) {
  ^bb0(%a: tensor<1x3x8x8xf64>, %b: tensor<4x3x3x3xf64>):
    %c = sluice.conv %a, %b {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf64>, tensor<4x3x3x3xf64>) -> tensor<1x4x6x6xf64>
    %r = sluice.relu %c : (tensor<1x4x6x6xf64>) -> tensor<1x4x6x6xf64>
    sluice.kernel_yield %r : tensor<1x4x6x6xf64>
  }
  return %0 : tensor<1x4x6x6xf64>
}

// -----

// An f32 2-D conv with an epilogue is form gemm (cpu: oneDNN post-ops).
func.func @conv_with_epilogue(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error@+1 {{declares form 'library' but its body is a 'gemm' group}}
  %0 = sluice.kernel @k0_conv library library "conv"(%x, %w : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> (tensor<1x4x6x6xf32>) {
  ^bb0(%a: tensor<1x3x8x8xf32>, %b: tensor<4x3x3x3xf32>):
    %c = sluice.conv %a, %b {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
    %r = sluice.relu %c : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
    sluice.kernel_yield %r : tensor<1x4x6x6xf32>
  }
  return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @view_declared_single(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error@+1 {{declares form 'single' but its body is a 'view' group}}
  %0 = sluice.kernel @k0_transpose single(%x : tensor<2x3xf32>) -> (tensor<3x2xf32>) {
  ^bb0(%a: tensor<2x3xf32>):
    %t = sluice.transpose %a {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
    sluice.kernel_yield %t : tensor<3x2xf32>
  }
  return %0 : tensor<3x2xf32>
}

// -----

func.func @unknown_form(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{unknown kernel form 'fused'}}
  %0 = sluice.kernel @k0_tanh fused(%x : tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %t = sluice.tanh %a : (tensor<4xf32>) -> tensor<4xf32>
    sluice.kernel_yield %t : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @offsets_per_result(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{has 2 arena offsets for 1 results}}
  %0 = sluice.kernel @k0_tanh elementwise(%x : tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %t = sluice.tanh %a : (tensor<4xf32>) -> tensor<4xf32>
    sluice.kernel_yield %t : tensor<4xf32>
  } {arena_offsets = array<i64: 0, 64>}
  return %0 : tensor<4xf32>
}

// -----

// A kernel's name becomes a C++ function name in model.cpp: a crafted name
// must not inject code there.
func.func @injected_name(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{name 'k0(){system("id");}void k1' is not a C identifier}}
  %0 = sluice.kernel @"k0(){system(\"id\");}void k1" elementwise(%x : tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %t = sluice.tanh %a : (tensor<4xf32>) -> tensor<4xf32>
    sluice.kernel_yield %t : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @digit_first(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{name '0k' is not a C identifier}}
  %0 = sluice.kernel @"0k" elementwise(%x : tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %t = sluice.tanh %a : (tensor<4xf32>) -> tensor<4xf32>
    sluice.kernel_yield %t : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}
