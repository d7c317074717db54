// RUN: sluice-opt %s --split-input-file --sluice-fuse-groups --sluice-form-kernels 2>/dev/null | FileCheck %s
// RUN: sluice-opt %s --split-input-file --sluice-fuse-groups --sluice-form-kernels -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: sluice-opt %s --split-input-file --sluice-fuse-groups="mode=elementwise" --sluice-form-kernels 2>/dev/null | FileCheck %s --check-prefix=EW

// F1: an elementwise chain (broadcast bias included) is one kernel, named
// after its last op.
// CHECK-LABEL: func @f1_chain
// CHECK: sluice.kernel @k0_tanh elementwise(%arg0, %arg1 : tensor<4x8xf32>, tensor<8xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: sluice.constant dense<2.0
// CHECK-NEXT: sluice.mul
// CHECK-NEXT: sluice.add
// CHECK-NEXT: sluice.tanh
// CHECK-NEXT: sluice.kernel_yield
// CHECK-NOT: sluice.kernel
// EW-LABEL: func @f1_chain
// EW: sluice.kernel @k0_tanh
// EW-NOT: sluice.kernel @
// EW: return
func.func @f1_chain(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %two = sluice.constant dense<2.0> : tensor<f32>
  %0 = sluice.mul %x, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = sluice.add %0, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = sluice.tanh %1 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

// An F1 leaf read through a transpose of the innermost axis would not be
// unit-stride: the transpose stays a kernel of its own.
// CHECK-LABEL: func @f1_transposed_leaf
// CHECK: sluice.kernel @k0_transpose
// CHECK: sluice.kernel @k1_add
// REMARK: remark: not fused into the elementwise group of 'sluice.add': 'sluice.transpose' moves the innermost axis (non-unit-stride reads break vectorization)
func.func @f1_transposed_leaf(%x: tensor<8x4xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %t = sluice.transpose %x {perm = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %0 = sluice.add %t, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A transpose that keeps the innermost axis and a reshape are free F1 leaves.
// CHECK-LABEL: func @f1_view_leaves
// CHECK: sluice.kernel @k0_add
// CHECK: sluice.transpose
// CHECK: sluice.reshape
// CHECK-NOT: sluice.kernel @
// EW-LABEL: func @f1_view_leaves
// EW: sluice.kernel @k0_transpose
// EW: sluice.kernel @k1_reshape
// EW: sluice.kernel @k2_add
func.func @f1_view_leaves(%x: tensor<3x4x8xf32>, %y: tensor<4x24xf32>) -> tensor<4x3x8xf32> {
  %s = sluice.constant dense<[4, 3, 8]> : tensor<3xi64>
  %t = sluice.transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<3x4x8xf32>) -> tensor<4x3x8xf32>
  %r = sluice.reshape %y, %s : (tensor<4x24xf32>, tensor<3xi64>) -> tensor<4x3x8xf32>
  %0 = sluice.add %t, %r : (tensor<4x3x8xf32>, tensor<4x3x8xf32>) -> tensor<4x3x8xf32>
  return %0 : tensor<4x3x8xf32>
}

// -----

// An expensive producer is not recomputed for every broadcast element.
// CHECK-LABEL: func @f1_expensive_broadcast
// CHECK: sluice.kernel @k0_exp
// CHECK: sluice.kernel @k1_add
// REMARK: remark: not fused into the elementwise group of 'sluice.add': it is expensive and would be recomputed for every broadcast element
func.func @f1_expensive_broadcast(%x: tensor<8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = sluice.exp %x : (tensor<8xf32>) -> tensor<8xf32>
  %0 = sluice.add %e, %y : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// An elementwise value needed outside its chain, with the chain's shape, is
// one more output of the group (computed once).
// CHECK-LABEL: func @f1_two_outputs
// CHECK: %[[K:.+]]:2 = sluice.kernel @k0_mul
// CHECK: sluice.kernel_yield %{{.+}}, %{{.+}} : tensor<4xf32>, tensor<4xf32>
// CHECK: return %[[K]]#0, %[[K]]#1
func.func @f1_two_outputs(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %e = sluice.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %0 = sluice.mul %e, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %e, %0 : tensor<4xf32>, tensor<4xf32>
}

// -----

// F2: the view on the LHS, bias, activation and residual join the GEMM.
// CHECK-LABEL: func @f2_gemm
// CHECK: sluice.kernel @k0_matmul gemm library "gemm"(%arg0, %arg1, %arg2, %arg3 :
// CHECK: sluice.reshape
// CHECK-NEXT: sluice.matmul
// CHECK-NEXT: sluice.add
// CHECK-NEXT: sluice.gelu
// CHECK-NEXT: sluice.add
// CHECK-NEXT: sluice.kernel_yield
// CHECK-NOT: sluice.kernel @
// EW-LABEL: func @f2_gemm
// EW: sluice.kernel @k0_reshape
// EW: sluice.kernel @k1_matmul
// EW: sluice.kernel @k2_add
// EW-NOT: sluice.kernel @
// EW: return
func.func @f2_gemm(%x: tensor<2x3x4x8xf32>, %w: tensor<32x16xf32>, %b: tensor<16xf32>, %r: tensor<2x3x16xf32>) -> tensor<2x3x16xf32> {
  %s = sluice.constant dense<[2, 3, 32]> : tensor<3xi64>
  %v = sluice.reshape %x, %s : (tensor<2x3x4x8xf32>, tensor<3xi64>) -> tensor<2x3x32xf32>
  %m = sluice.matmul %v, %w : (tensor<2x3x32xf32>, tensor<32x16xf32>) -> tensor<2x3x16xf32>
  %0 = sluice.add %m, %b : (tensor<2x3x16xf32>, tensor<16xf32>) -> tensor<2x3x16xf32>
  %1 = sluice.gelu %0 : (tensor<2x3x16xf32>) -> tensor<2x3x16xf32>
  %2 = sluice.add %r, %1 : (tensor<2x3x16xf32>, tensor<2x3x16xf32>) -> tensor<2x3x16xf32>
  return %2 : tensor<2x3x16xf32>
}

// -----

// An epilogue op that broadcasts the GEMM result to a larger shape is not
// an epilogue.
// CHECK-LABEL: func @f2_shape_change
// CHECK: sluice.kernel @k0_matmul gemm library "gemm"
// CHECK: sluice.kernel @k1_add
// REMARK: remark: not fused into the epilogue of 'sluice.matmul': 'sluice.add' changes the shape of 'sluice.matmul''s result
func.func @f2_shape_change(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %y: tensor<3x4x16xf32>) -> tensor<3x4x16xf32> {
  %m = sluice.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %0 = sluice.add %m, %y : (tensor<4x16xf32>, tensor<3x4x16xf32>) -> tensor<3x4x16xf32>
  return %0 : tensor<3x4x16xf32>
}

// -----

// F3: a residual add before a layer_norm and an activation after it.
// CHECK-LABEL: func @f3_row
// CHECK: sluice.kernel @k0_layer_norm
// CHECK-NEXT: ^bb0
// CHECK-NEXT: sluice.add
// CHECK-NEXT: sluice.layer_norm
// CHECK-NEXT: sluice.relu
// CHECK-NEXT: sluice.kernel_yield %{{.+}} : tensor<4x8xf32>
// CHECK-NOT: sluice.kernel @
func.func @f3_row(%x: tensor<4x8xf32>, %r: tensor<4x8xf32>, %s: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = sluice.add %x, %r : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y, %mean, %inv = sluice.layer_norm %0, %s, %b {epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
  %1 = sluice.relu %y : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// A layer_norm whose statistics are used elsewhere stays alone.
// CHECK-LABEL: func @f3_stats_used
// CHECK: sluice.kernel @k0_add
// CHECK: sluice.kernel @k1_layer_norm
// REMARK: remark: not fused: the layer_norm's mean or inv_std_dev are used by other ops
func.func @f3_stats_used(%x: tensor<4x8xf32>, %r: tensor<4x8xf32>, %s: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
  %0 = sluice.add %x, %r : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y, %mean, %inv = sluice.layer_norm %0, %s {epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
  return %y, %mean : tensor<4x8xf32>, tensor<4x1xf32>
}

// -----

// A softmax over a leading axis is not a row op (its rows are strided): no
// prologue.
// CHECK-LABEL: func @f3_not_trailing
// CHECK: sluice.kernel @k0_mul
// CHECK: sluice.kernel @k1_softmax
// REMARK: remark: not fused: the reduced axes are not the innermost ones (strided rows break vectorization)
func.func @f3_not_trailing(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = sluice.constant dense<0.5> : tensor<f32>
  %0 = sluice.mul %x, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = sluice.softmax %0 {axis = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// A reduction over the trailing axis takes its elementwise prologue and an
// epilogue of its result's shape.
// CHECK-LABEL: func @f3_reduce
// CHECK: sluice.kernel @k0_reduce
// CHECK-NEXT: ^bb0
// CHECK: sluice.mul
// CHECK-NEXT: sluice.reduce
// CHECK-NEXT: sluice.sqrt
// CHECK-NEXT: sluice.kernel_yield
// CHECK-NOT: sluice.kernel @
func.func @f3_reduce(%x: tensor<4x8xf32>) -> tensor<4x1xf32> {
  %axes = sluice.constant dense<[-1]> : tensor<1xi64>
  %0 = sluice.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = sluice.reduce %0, %axes {kind = #sluice<reduce_kind mean>} : (tensor<4x8xf32>, tensor<1xi64>) -> tensor<4x1xf32>
  %2 = sluice.sqrt %1 : (tensor<4x1xf32>) -> tensor<4x1xf32>
  return %2 : tensor<4x1xf32>
}

// -----

// An expensive producer read by two groups is computed once.
// CHECK-LABEL: func @expensive_two_groups
// CHECK: sluice.kernel @k0_exp
// CHECK: sluice.kernel @k1_softmax
// CHECK-NOT: sluice.exp
// CHECK: sluice.kernel @k2_softmax
// CHECK-NOT: sluice.exp
// REMARK: remark: not fused into the prologue of 'sluice.softmax': it has 1 user(s) in other groups and is expensive to recompute
func.func @expensive_two_groups(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = sluice.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %0 = sluice.softmax %e {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = sluice.softmax %e {axis = 1 : i64, log = true} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A cheap one is duplicated into both.
// CHECK-LABEL: func @cheap_duplicated
// CHECK: sluice.kernel @k0_softmax
// CHECK: sluice.mul
// CHECK: sluice.softmax
// CHECK: sluice.kernel @k1_softmax
// CHECK: sluice.mul
// CHECK: sluice.softmax
// CHECK-NOT: sluice.kernel @
func.func @cheap_duplicated(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %c = sluice.constant dense<0.5> : tensor<f32>
  %m = sluice.mul %x, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %0 = sluice.softmax %m {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = sluice.softmax %m {axis = 1 : i64, log = true} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Attention as the chain exporters write: the score GEMM takes the head
// views of the QKV output (one split, shared) and the scale/mask epilogue,
// the softmax is a row group, the PV GEMM takes the V views, and the output
// projection takes the transpose+reshape back to [B,S,H*D]. K^T is not a
// view a GEMM can read (its rows are not unit-stride): it is copied first,
// and so is the [B,H,S,D] -> [B,S,H*D] transpose the output projection
// cannot read as strided rows. (Recognized attention avoids all of it.)
// CHECK-LABEL: func @attention_chain
// CHECK: sluice.kernel @k0_split
// CHECK: sluice.kernel @k1_transpose
// CHECK: sluice.kernel @k2_matmul gemm library "gemm"
// CHECK-COUNT-1: sluice.split
// CHECK: sluice.matmul
// CHECK-NEXT: sluice.div
// CHECK-NEXT: sluice.add
// CHECK: sluice.kernel @k3_softmax
// CHECK: sluice.kernel @k4_matmul gemm library "gemm"
// CHECK: sluice.kernel @k5_transpose
// CHECK: sluice.transpose
// CHECK-NEXT: sluice.reshape
// CHECK: sluice.kernel @k6_matmul gemm library "gemm"
// CHECK-NOT: sluice.kernel @
func.func @attention_chain(%qkv: tensor<2x5x96xf32>, %mask: tensor<2x1x1x5xf32>, %w: tensor<32x32xf32>) -> tensor<2x5x32xf32> {
  %sizes = sluice.constant dense<32> : tensor<3xi64>
  %heads = sluice.constant dense<[2, 5, 4, 8]> : tensor<4xi64>
  %flat = sluice.constant dense<[2, 5, 32]> : tensor<3xi64>
  %scale = sluice.constant dense<2.828> : tensor<f32>
  %p:3 = sluice.split %qkv, %sizes {axis = -1 : i64, num_outputs = 3 : i64} : (tensor<2x5x96xf32>, tensor<3xi64>) -> (tensor<2x5x32xf32>, tensor<2x5x32xf32>, tensor<2x5x32xf32>)
  %q0 = sluice.reshape %p#0, %heads : (tensor<2x5x32xf32>, tensor<4xi64>) -> tensor<2x5x4x8xf32>
  %k0 = sluice.reshape %p#1, %heads : (tensor<2x5x32xf32>, tensor<4xi64>) -> tensor<2x5x4x8xf32>
  %v0 = sluice.reshape %p#2, %heads : (tensor<2x5x32xf32>, tensor<4xi64>) -> tensor<2x5x4x8xf32>
  %q = sluice.transpose %q0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x8xf32>) -> tensor<2x4x5x8xf32>
  %kt = sluice.transpose %k0 {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x5x4x8xf32>) -> tensor<2x4x8x5xf32>
  %v = sluice.transpose %v0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x8xf32>) -> tensor<2x4x5x8xf32>
  %s0 = sluice.matmul %q, %kt : (tensor<2x4x5x8xf32>, tensor<2x4x8x5xf32>) -> tensor<2x4x5x5xf32>
  %s1 = sluice.div %s0, %scale : (tensor<2x4x5x5xf32>, tensor<f32>) -> tensor<2x4x5x5xf32>
  %s2 = sluice.add %s1, %mask : (tensor<2x4x5x5xf32>, tensor<2x1x1x5xf32>) -> tensor<2x4x5x5xf32>
  %pr = sluice.softmax %s2 {axis = -1 : i64} : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
  %a = sluice.matmul %pr, %v : (tensor<2x4x5x5xf32>, tensor<2x4x5x8xf32>) -> tensor<2x4x5x8xf32>
  %t = sluice.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x5x8xf32>) -> tensor<2x5x4x8xf32>
  %o = sluice.reshape %t, %flat : (tensor<2x5x4x8xf32>, tensor<3xi64>) -> tensor<2x5x32xf32>
  %r = sluice.matmul %o, %w : (tensor<2x5x32xf32>, tensor<32x32xf32>) -> tensor<2x5x32xf32>
  return %r : tensor<2x5x32xf32>
}

// -----

// F4: one kernel from the QKV GEMM output to the output projection's input.
// CHECK-LABEL: func @f4_attention
// CHECK: sluice.kernel @k0_attention attention(%arg0, %arg1 : tensor<2x5x96xf32>, tensor<2x1x1x5xf32>) -> (tensor<2x5x32xf32>)
// CHECK-COUNT-1: sluice.split
// CHECK-COUNT-3: sluice.reshape
// CHECK-COUNT-3: sluice.transpose
// CHECK-NEXT: sluice.attention
// CHECK-NEXT: sluice.transpose
// CHECK-NEXT: sluice.reshape
// CHECK-NEXT: sluice.kernel_yield
// CHECK: sluice.kernel @k1_matmul gemm library "gemm"(%0, %arg2
// CHECK-NOT: sluice.kernel @
func.func @f4_attention(%qkv: tensor<2x5x96xf32>, %mask: tensor<2x1x1x5xf32>, %w: tensor<32x32xf32>) -> tensor<2x5x32xf32> {
  %sizes = sluice.constant dense<32> : tensor<3xi64>
  %heads = sluice.constant dense<[2, 5, 4, 8]> : tensor<4xi64>
  %flat = sluice.constant dense<[2, 5, 32]> : tensor<3xi64>
  %p:3 = sluice.split %qkv, %sizes {axis = -1 : i64, num_outputs = 3 : i64} : (tensor<2x5x96xf32>, tensor<3xi64>) -> (tensor<2x5x32xf32>, tensor<2x5x32xf32>, tensor<2x5x32xf32>)
  %q0 = sluice.reshape %p#0, %heads : (tensor<2x5x32xf32>, tensor<4xi64>) -> tensor<2x5x4x8xf32>
  %k0 = sluice.reshape %p#1, %heads : (tensor<2x5x32xf32>, tensor<4xi64>) -> tensor<2x5x4x8xf32>
  %v0 = sluice.reshape %p#2, %heads : (tensor<2x5x32xf32>, tensor<4xi64>) -> tensor<2x5x4x8xf32>
  %q = sluice.transpose %q0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x8xf32>) -> tensor<2x4x5x8xf32>
  %k = sluice.transpose %k0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x8xf32>) -> tensor<2x4x5x8xf32>
  %v = sluice.transpose %v0 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x8xf32>) -> tensor<2x4x5x8xf32>
  %a = sluice.attention %q, %k, %v mask %mask {scale = 0.35355339 : f32} : (tensor<2x4x5x8xf32>, tensor<2x4x5x8xf32>, tensor<2x4x5x8xf32>, tensor<2x1x1x5xf32>) -> tensor<2x4x5x8xf32>
  %t = sluice.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x5x8xf32>) -> tensor<2x5x4x8xf32>
  %o = sluice.reshape %t, %flat : (tensor<2x5x4x8xf32>, tensor<3xi64>) -> tensor<2x5x32xf32>
  %r = sluice.matmul %o, %w : (tensor<2x5x32xf32>, tensor<32x32xf32>) -> tensor<2x5x32xf32>
  return %r : tensor<2x5x32xf32>
}

// -----

// A group whose outside user sits between its ops: the kernel goes after
// its last op and the user moves after the kernel.
// CHECK-LABEL: func @reorder
// CHECK: %[[K:.+]]:2 = sluice.kernel @k0_add
// CHECK: sluice.kernel @k1_reduce row(%[[K]]#0
// CHECK: return
func.func @reorder(%x: tensor<4x8xf32>) -> (tensor<1x8xf32>, tensor<4x8xf32>) {
  %axes = sluice.constant dense<[0]> : tensor<1xi64>
  %c = sluice.constant dense<0.5> : tensor<f32>
  %0 = sluice.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = sluice.reduce %0, %axes {kind = #sluice<reduce_kind sum>} : (tensor<4x8xf32>, tensor<1xi64>) -> tensor<1x8xf32>
  %2 = sluice.mul %0, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %3 = sluice.add %2, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1, %3 : tensor<1x8xf32>, tensor<4x8xf32>
}

// -----

// A layout-preserving reshape is an alias: it joins the transpose that reads
// it (F5); a reshape alone stays alone.
// CHECK-LABEL: func @views
// CHECK: sluice.kernel @k0_transpose
// CHECK-NEXT: ^bb0
// CHECK-NEXT: sluice.constant
// CHECK-NEXT: sluice.reshape
// CHECK-NEXT: sluice.transpose
// CHECK: sluice.kernel @k1_reshape
func.func @views(%x: tensor<2x12xf32>) -> (tensor<3x4x2xf32>, tensor<4x6xf32>) {
  %s = sluice.constant dense<[2, 3, 4]> : tensor<3xi64>
  %s2 = sluice.constant dense<[4, 6]> : tensor<2xi64>
  %r = sluice.reshape %x, %s : (tensor<2x12xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  %t = sluice.transpose %r {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %r2 = sluice.reshape %x, %s2 : (tensor<2x12xf32>, tensor<2xi64>) -> tensor<4x6xf32>
  return %t, %r2 : tensor<3x4x2xf32>, tensor<4x6xf32>
}

// -----

// A layout-preserving reshape of a returned value joins its producer's
// group (an F1 root taken before its trailing reshape).
// CHECK-LABEL: func @trailing_reshape
// CHECK: %[[K:.+]] = sluice.kernel @k0_add
// CHECK: sluice.add
// CHECK-NEXT: sluice.reshape
// CHECK-NEXT: sluice.kernel_yield %{{.+}} : tensor<2x4x8xf32>
// CHECK: return %[[K]]
func.func @trailing_reshape(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
  %s = sluice.constant dense<[2, 4, 8]> : tensor<3xi64>
  %0 = sluice.add %x, %y : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %1 = sluice.reshape %0, %s : (tensor<8x8xf32>, tensor<3xi64>) -> tensor<2x4x8xf32>
  return %1 : tensor<2x4x8xf32>
}

// -----

// A cast to strings is no scalar expression: it stays a kernel of its own.
// CHECK-LABEL: func @string_cast
// CHECK: sluice.kernel @k0_add
// CHECK: sluice.kernel @k1_cast
// EW-LABEL: func @string_cast
// EW: sluice.kernel @k0_add
// EW: sluice.kernel @k1_cast
func.func @string_cast(%x: tensor<3xf32>) -> tensor<3x!sluice.string> {
  %0 = sluice.add %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = sluice.cast %0 : tensor<3xf32> -> tensor<3x!sluice.string>
  return %1 : tensor<3x!sluice.string>
}
