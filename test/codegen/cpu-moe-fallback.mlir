// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref | FileCheck %s --check-prefix=REF
// RUN: sluice-compile %s -o %t/bundle.sluice --quiet
// RUN: FileCheck %s --check-prefix=CODE < %t/bundle.sluice/model.cpp
// RUN: sluice-run %t/bundle.sluice --random-inputs --expect %t/ref/out.npy --rtol=1e-9 --atol=1e-12 | FileCheck %s
// A sluice.moe the MoE kernel does not take (f64: kernel::moeKernelRefusal)
// falls back to the dense decomposition on the cpu target, and still
// matches the reference evaluator.

// REF: output 'out'
// CHECK: output 'out' {{.*}}: ok
// CODE-NOT: sluice_moe
// CODE: sluice_gemm
// CODE-NOT: sluice_moe

func.func @main(%x: tensor<10x8xf64>, %logits: tensor<10x3xf64>, %w1: tensor<3x8x6xf64>, %w2: tensor<3x6x8xf64>) -> tensor<10x8xf64> attributes {sluice.input_names = ["x", "logits", "w1", "w2"], sluice.output_names = ["out"]} {
  %0 = sluice.moe %x, %logits experts(%w1, %w2) {activation = "relu", experts = 3 : i64, gating = "top_k", top_k = 2 : i64, normalize = true} : (tensor<10x8xf64>, tensor<10x3xf64>, tensor<3x8x6xf64>, tensor<3x6x8xf64>) -> tensor<10x8xf64>
  return %0 : tensor<10x8xf64>
}
