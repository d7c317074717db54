// sluice-prune's bad inputs: one clear error each.
// RUN: rm -rf %t && %python %S/Inputs/prune_data.py %t/cal x=2x3 && %python %S/Inputs/prune_data.py %t/wrong x=2x5
// RUN: not sluice-opt %s --sluice-prune="heads=1.0 calibration=%t/cal" 2>&1 | FileCheck %s --check-prefix=ONE
// ONE: error: --prune: heads=1 is not a fraction in [0, 1) of the units to remove
// RUN: not sluice-opt %s --sluice-prune="ffn=-0.25 calibration=%t/cal" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// NEGATIVE: error: --prune: ffn=-0.25 is not a fraction in [0, 1) of the units to remove
// RUN: not sluice-opt %s --sluice-prune="ffn=0.5" 2>&1 | FileCheck %s --check-prefix=NODATA
// NODATA: error: --prune needs --calibration=DIR
// RUN: not sluice-opt %s --sluice-prune="ffn=0.5 calibration=%t/wrong" 2>&1 | FileCheck %s --check-prefix=MISMATCH
// MISMATCH: error: {{.*}}x.npy{{.*}}2x5
// RUN: not sluice-opt %s --sluice-prune="channels=0.25 calibration=%t/cal" 2>&1 | FileCheck %s --check-prefix=NOCONV
// NOCONV: error: --prune=channels: the model has no convolution channels that can be pruned
// RUN: not sluice-opt %s --sluice-prune="ffn=0.5 calibration=%t/cal budget=nan" 2>&1 | FileCheck %s --check-prefix=BUDGET
// BUDGET: error: --accuracy-budget must be a number >= 0 (a relative L2 error, or the share of rows whose top-1 may change), got nan
// RUN: not sluice-opt %s --sluice-prune="ffn=0.5 calibration=%t/cal metric=top5" 2>&1 | FileCheck %s --check-prefix=METRIC
// METRIC: error: unknown --accuracy-metric 'top5' (rel-l2, top1-agreement, or auto: top1-agreement for classifiers)
//
// Nothing asked, nothing done (no report either).
// RUN: sluice-opt %s --sluice-prune | FileCheck %s --check-prefix=NONE
// NONE-NOT: sluice.pruning
// NONE: sluice.matmul %arg0, %{{.+}} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x2xf32> attributes {sluice.input_names = ["x"], sluice.output_names = ["y"]} {
  %w1 = sluice.constant dense<[[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0]]> : tensor<3x4xf32>
  %w2 = sluice.constant dense<[[0.1, -0.1], [1.0, -1.0], [0.2, 0.2], [2.0, 0.5]]> : tensor<4x2xf32>
  %0 = sluice.matmul %x, %w1 : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %1 = sluice.relu %0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %2 = sluice.matmul %1, %w2 : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
  return %2 : tensor<2x2xf32>
}
