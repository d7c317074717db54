// RUN: sluice-opt %s --split-input-file --sluice-fuse-pipeline 2>/dev/null | FileCheck %s
// RUN: sluice-opt %s --split-input-file --sluice-fuse-pipeline 2>/dev/null | sluice-opt --split-input-file | FileCheck %s

// Every sluice.kernel the fuse phase forms declares its form (KernelForm,
// dialects/sluice/SluiceAttrs.td), one function per form; the second RUN line
// shows the printed form parses back to the same kernels.

// F1: elementwise ops (and views) over one iteration space; a group is named
// after its last op when it has no anchor.
// CHECK-LABEL: func @elementwise
// CHECK: sluice.kernel @k0_tanh elementwise(
// CHECK-NOT: sluice.kernel @
// CHECK: return
func.func @elementwise(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = sluice.mul %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = sluice.tanh %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// F2: a GEMM library call with its epilogue (bias, activation).
// CHECK-LABEL: func @gemm
// CHECK: sluice.kernel @k0_matmul gemm library "gemm"(
// CHECK: sluice.matmul
// CHECK: sluice.add
// CHECK: sluice.relu
// CHECK-NOT: sluice.kernel @
// CHECK: return
func.func @gemm(%a: tensor<4x16xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = sluice.matmul %a, %w : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %1 = sluice.add %0, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = sluice.relu %1 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// F3: a row op with its prologue and epilogue.
// CHECK-LABEL: func @row
// CHECK: sluice.kernel @k0_softmax row(
// CHECK: sluice.mul
// CHECK: sluice.softmax
// CHECK-NOT: sluice.kernel @
// CHECK: return
func.func @row(%x: tensor<4x8xf32>, %s: tensor<f32>) -> tensor<4x8xf32> {
  %0 = sluice.mul %x, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = sluice.softmax %0 {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// F4: attention with the views on its operands.
// CHECK-LABEL: func @attention
// CHECK: sluice.kernel @k0_attention attention(
// CHECK: sluice.attention
// CHECK: sluice.transpose
// CHECK-NOT: sluice.kernel @
// CHECK: return
func.func @attention(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x8x2x16xf32> {
  %0 = sluice.attention %q, %k, %v {scale = 0.25 : f32} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %1 = sluice.transpose %0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x8x16xf32>) -> tensor<1x8x2x16xf32>
  return %1 : tensor<1x8x2x16xf32>
}

// -----

// A convolution is a library call of its own.
// CHECK-LABEL: func @library
// CHECK: sluice.kernel @k0_conv library library "conv"(
// CHECK: return
func.func @library(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = sluice.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// F5: one op without a fused form (here a gather).
// CHECK-LABEL: func @single
// CHECK: sluice.kernel @k0_gather single(
// CHECK: return
func.func @single(%e: tensor<10x16xf32>, %i: tensor<3xi64>) -> tensor<3x16xf32> {
  %0 = sluice.gather %e, %i {axis = 0 : i64} : (tensor<10x16xf32>, tensor<3xi64>) -> tensor<3x16xf32>
  return %0 : tensor<3x16xf32>
}

// -----

// One data-moving view with layout-preserving views around it: DepthToSpace's
// reshape -> transpose -> reshape.
// CHECK-LABEL: func @view
// CHECK: sluice.kernel @k0_transpose view(
// CHECK: sluice.reshape
// CHECK: sluice.transpose
// CHECK: sluice.reshape
// CHECK-NOT: sluice.kernel @
// CHECK: return
func.func @view(%x: tensor<1x8x2x3xf32>) -> tensor<1x2x4x6xf32> {
  %s0 = sluice.constant dense<[1, 2, 2, 2, 2, 3]> : tensor<6xi64>
  %s1 = sluice.constant dense<[1, 2, 4, 6]> : tensor<4xi64>
  %0 = sluice.reshape %x, %s0 : (tensor<1x8x2x3xf32>, tensor<6xi64>) -> tensor<1x2x2x2x2x3xf32>
  %1 = sluice.transpose %0 {perm = array<i64: 0, 3, 4, 1, 5, 2>} : (tensor<1x2x2x2x2x3xf32>) -> tensor<1x2x2x2x3x2xf32>
  %2 = sluice.reshape %1, %s1 : (tensor<1x2x2x2x3x2xf32>, tensor<4xi64>) -> tensor<1x2x4x6xf32>
  return %2 : tensor<1x2x4x6xf32>
}
