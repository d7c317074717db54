// RUN: sluice-opt %s --split-input-file --sluice-convert-precision="precision=fp8" --verify-diagnostics
// RUN: not sluice-opt %s --split-input-file --sluice-compress-pipeline="precision=int4" 2>&1 | FileCheck %s --check-prefix=PIPELINE
// RUN: not sluice-opt %s --split-input-file --sluice-convert-precision="precision=fp16" 2>&1 | FileCheck %s --check-prefix=KERNEL

// An unknown precision names the value and the accepted ones, from the pass
// and from the compress pipeline.
// PIPELINE: error: unknown precision 'int4' (fp32, fp16, bf16; aliases float32, float16, half, bfloat16)
// expected-error @+1 {{unknown precision 'fp8' (fp32, fp16, bf16; aliases float32, float16, half, bfloat16)}}
func.func @unknown(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = sluice.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// The conversion runs before the fuse phase: kernel groups are refused.
// KERNEL: error: 'sluice.kernel' op sluice-convert-precision runs before the fuse phase, on graphs without kernel groups
// expected-error @+1 {{unknown precision 'fp8'}}
func.func @after_fuse(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = sluice.kernel @k0_exp(%x : tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %1 = sluice.exp %a : (tensor<4xf32>) -> tensor<4xf32>
    sluice.kernel_yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}
