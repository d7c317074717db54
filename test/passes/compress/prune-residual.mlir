// sluice-prune where dimensions are tied: the embedding GEMM's outputs, the
// down projection's outputs and the residual add are one stream that dies
// at a layer norm's normalized axis: unprunable, reported once, unchanged.
// The SwiGLU gate and up projections are tied by the mul: one group of 8
// units (named after the gate, the first), which loses the same 4 columns
// from both and 4 rows from the down projection. The down projection's odd
// rows are the heavy ones: they stay.
// RUN: rm -rf %t && %python %S/Inputs/prune_data.py %t/cal x=2x4x8
// RUN: sluice-opt %s --sluice-prune="ffn=0.5 calibration=%t/cal budget=10" -o %t/pruned.mlir
// RUN: FileCheck %s < %t/pruned.mlir
// CHECK-LABEL: func.func @main
// CHECK-SAME: layers = [{{[{]}}fraction = 5.000000e-01 : f64, kept = 4 : i64, kept_units = [1, 3, 5, 7], kind = "ffn", node = "gate", original = 8 : i64, reason = "as requested", {{[^}]*}}}]
// CHECK-SAME: unprunable = [{kind = "ffn", node = "embed", reason = "it reaches the normalized or reduced axis of 'sluice.layer_norm'"}, {kind = "ffn", node = "head", reason = "it reaches the function's result"}]
// CHECK-NOT: node = "down"
// CHECK-NOT: node = "up"
// CHECK: %[[E:.+]] = sluice.matmul %arg0, %{{.+}} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
// CHECK: %[[G:.+]] = sluice.matmul %[[E]], %{{.+}} : (tensor<2x4x8xf32>, tensor<8x4xf32>) -> tensor<2x4x4xf32>
// CHECK: %[[U:.+]] = sluice.matmul %[[E]], %{{.+}} : (tensor<2x4x8xf32>, tensor<8x4xf32>) -> tensor<2x4x4xf32>
// CHECK: %[[S:.+]] = sluice.silu %[[G]] : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
// CHECK: %[[H:.+]] = sluice.mul %[[S]], %[[U]] : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
// CHECK: %[[D:.+]] = sluice.matmul %[[H]], %{{.+}} : (tensor<2x4x4xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
// CHECK: sluice.add %[[E]], %[[D]] : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
//
// RUN: sluice-opt %s --sluice-prune="ffn=0.5 calibration=%t/cal budget=10 mask-only=1" -o %t/masked.mlir
// RUN: sluice-run %t/masked.mlir --reference x=%t/cal/set0/x.npy --save-outputs=%t/masked-out > /dev/null
// RUN: sluice-run %t/pruned.mlir --reference x=%t/cal/set0/x.npy --expect %t/masked-out/y.npy --rtol=1e-5 --atol=1e-6 | FileCheck %s --check-prefix=SAME
// SAME: output 'y' f32[2x4x2]: {{.*}}: ok
// RUN: not sluice-run %s --reference x=%t/cal/set0/x.npy --expect %t/masked-out/y.npy --rtol=1e-5 --atol=1e-6 | FileCheck %s --check-prefix=DIFFERENT
// DIFFERENT: MISMATCH
//
// No attention here: asking for heads is an error.
// RUN: not sluice-opt %s --sluice-prune="heads=0.25 calibration=%t/cal" 2>&1 | FileCheck %s --check-prefix=NOHEADS
// NOHEADS: error: --prune=heads: the model has no attention heads that can be pruned
func.func @main(%x: tensor<2x4x8xf32>) -> tensor<2x4x2xf32> attributes {sluice.input_names = ["x"], sluice.output_names = ["y"]} {
  %wa = sluice.constant dense<[[0.125, 0.25, 0.375, 0.125, 0.25, 0.375, 0.125, 0.25],
    [0.25, 0.375, 0.125, 0.25, 0.375, 0.125, 0.25, 0.375],
    [0.375, 0.125, 0.25, 0.375, 0.125, 0.25, 0.375, 0.125],
    [0.125, 0.25, 0.375, 0.125, 0.25, 0.375, 0.125, 0.25],
    [0.25, 0.375, 0.125, 0.25, 0.375, 0.125, 0.25, 0.375],
    [0.375, 0.125, 0.25, 0.375, 0.125, 0.25, 0.375, 0.125],
    [0.125, 0.25, 0.375, 0.125, 0.25, 0.375, 0.125, 0.25],
    [0.25, 0.375, 0.125, 0.25, 0.375, 0.125, 0.25, 0.375]]> : tensor<8x8xf32>
  %wg = sluice.constant dense<0.25> : tensor<8x8xf32>
  %wu = sluice.constant dense<-0.5> : tensor<8x8xf32>
  %wd = sluice.constant dense<[[0.001, -0.001, 0.001, -0.001, 0.001, -0.001, 0.001, -0.001],
    [0.01, -0.01, 0.01, -0.01, 0.01, -0.01, 0.01, -0.01],
    [0.001, -0.001, 0.001, -0.001, 0.001, -0.001, 0.001, -0.001],
    [0.01, -0.01, 0.01, -0.01, 0.01, -0.01, 0.01, -0.01],
    [0.001, -0.001, 0.001, -0.001, 0.001, -0.001, 0.001, -0.001],
    [0.01, -0.01, 0.01, -0.01, 0.01, -0.01, 0.01, -0.01],
    [0.001, -0.001, 0.001, -0.001, 0.001, -0.001, 0.001, -0.001],
    [0.01, -0.01, 0.01, -0.01, 0.01, -0.01, 0.01, -0.01]]> : tensor<8x8xf32>
  %scale = sluice.constant dense<1.0> : tensor<8xf32>
  %bias = sluice.constant dense<0.0> : tensor<8xf32>
  %wc = sluice.constant dense<[[1.0, -1.0], [0.5, 0.5], [1.0, -1.0], [0.5, 0.5], [1.0, -1.0], [0.5, 0.5], [1.0, -1.0], [0.5, 0.5]]> : tensor<8x2xf32>
  %e = sluice.matmul %x, %wa : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("embed")
  %g = sluice.matmul %e, %wg : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("gate")
  %u = sluice.matmul %e, %wu : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("up")
  %s = sluice.silu %g : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %h = sluice.mul %s, %u : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %d = sluice.matmul %h, %wd : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("down")
  %r = sluice.add %e, %d : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %n, %mean, %inv = sluice.layer_norm %r, %scale, %bias : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
  %o = sluice.matmul %n, %wc : (tensor<2x4x8xf32>, tensor<8x2xf32>) -> tensor<2x4x2xf32> loc("head")
  return %o : tensor<2x4x2xf32>
}
