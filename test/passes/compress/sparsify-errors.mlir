// sluice-sparsify's bad input: one clear error each (docs/pruning.md, "Bad input").
//
// RUN: rm -rf %t && %python %S/Inputs/sparsify_case.py write %t
// RUN: not sluice-opt %t/model.mlir --sluice-sparsify="metric=rel-l2 pattern=1:4 calibration=%t/cal" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PATTERN
// PATTERN: error: --sparsity=1:4: unknown sparsity pattern (only 2:4)
// RUN: not sluice-opt %t/model.mlir --sluice-sparsify -o /dev/null 2>&1 | FileCheck %s --check-prefix=NODATA
// NODATA: error: --sparsity=2:4 needs --calibration=DIR
// RUN: not sluice-opt %t/model.mlir --sluice-sparsify="metric=rel-l2 calibration=%t/cal budget=nan" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BUDGET
// BUDGET: error: --accuracy-budget must be a number >= 0 (a relative L2 error, or the share of rows whose top-1 may change), got nan
// Calibration of another model (the digits classifiers' `image`).
// RUN: not sluice-opt %t/model.mlir --sluice-sparsify="metric=rel-l2 calibration=%S/../../quant/digits/calibration" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MISMATCH
// MISMATCH: error: {{.*}}calibration/set0: no x.npy for the model input 'x'
// RUN: sluice-opt %t/model.mlir --sluice-sparsify="metric=rel-l2 calibration=%t/cal budget=10" -o %t/once.mlir 2>/dev/null
// RUN: not sluice-opt %t/once.mlir --sluice-sparsify="metric=rel-l2 calibration=%t/cal" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: error: sluice-sparsify: the function is already sparsified or fused
// RUN: not sluice-opt %s --sluice-sparsify="metric=rel-l2 calibration=%t/cal" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOGEMM
// NOGEMM: error: --sparsity=2:4: the model has no float GEMM with a constant 2-D weight to sparsify

// The calibration of model.mlir (one input `x`, 64x64) fits this function;
// its only matmul has no constant weight.
func.func @main(%x: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {sluice.input_names = ["x"], sluice.output_names = ["y"]} {
  %0 = sluice.matmul %x, %x : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}
