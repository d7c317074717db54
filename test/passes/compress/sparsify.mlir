// sluice-sparsify (--sparsity=2:4, docs/pruning.md): which weights stay (Wanda's
// |W| x ||X_k|| from the calibration sets, checked bit for bit against numpy
// through the evaluator), GEMMs too small to sparsify, and the guard. The
// module and data come from Inputs/sparsify_case.py (its header explains the
// weights); this file holds the RUN lines only.
//
// RUN: rm -rf %t && %python %S/Inputs/sparsify_case.py write %t
//
// Budget 10: both candidates 2:4; W2 (N = 8) and W4 (K = 32) stay dense with
// a remark.
// RUN: sluice-opt %t/model.mlir --sluice-sparsify="metric=rel-l2 calibration=%t/cal budget=10" -o %t/sparse.mlir 2>&1 | FileCheck %s --check-prefix=REMARK
// REMARK: remark: not sparsified 2:4: too small: N = 8 < 16
// REMARK: remark: not sparsified 2:4: too small: K = 32 < 64
// RUN: FileCheck %s --check-prefix=SPARSE < %t/sparse.mlir
// SPARSE-LABEL: func.func @main
// SPARSE-SAME: sluice.sparsity = {budget = 1.000000e+01 : f64, calibration_sets = 2 : i64, gemms_2_4 = 2 : i64, gemms_dense = 2 : i64
// SPARSE-SAME: {k = 64 : i64, n = 16 : i64, node = "sluice.matmul #0", reason = "2:4 by calibrated importance", sensitivity = {{[0-9.e+-]+}} : f64, sparse = true, zeroed = 512 : i64}
// SPARSE-SAME: {k = 64 : i64, n = 8 : i64, node = "sluice.matmul #1", reason = "too small: N = 8 < 16", sensitivity = -1.000000e+00 : f64, sparse = false, zeroed = 0 : i64}
// SPARSE-SAME: {k = 64 : i64, n = 32 : i64, node = "sluice.matmul #2", reason = "2:4 by calibrated importance", sensitivity = {{[0-9.e+-]+}} : f64, sparse = true, zeroed = 1024 : i64}
// SPARSE-SAME: {k = 32 : i64, n = 16 : i64, node = "sluice.matmul #3", reason = "too small: K = 32 < 64", sensitivity = -1.000000e+00 : f64, sparse = false, zeroed = 0 : i64}
// SPARSE-SAME: metric = "rel-l2", outputs = [{error = {{[0-9.e+-]+}} : f64, name = "y1", rel_l2 = {{[0-9.e+-]+}} : f64}, {error = 0.000000e+00 : f64, name = "y2", rel_l2 = 0.000000e+00 : f64}, {error = {{[0-9.e+-]+}} : f64, name = "y4", rel_l2 = {{[0-9.e+-]+}} : f64}], pattern = "2:4"}
// SPARSE: sluice.matmul %arg0, %{{.*}} {sluice.sparsity_2_4} : (tensor<64x64xf32>, tensor<64x16xf32>)
// SPARSE: sluice.matmul %arg0, %{{.*}} : (tensor<64x64xf32>, tensor<64x8xf32>)
// SPARSE: %[[Y3:.*]] = sluice.matmul %arg0, %{{.*}} {sluice.sparsity_2_4} : (tensor<64x64xf32>, tensor<64x32xf32>)
// SPARSE: sluice.matmul %[[Y3]], %{{.*}} : (tensor<64x32xf32>, tensor<32x16xf32>)
// With the identity as input, the outputs are the pruned weights.
// RUN: sluice-run %t/sparse.mlir --reference x=%t/eye/x.npy --save-outputs=%t/sparse-out > /dev/null
// RUN: %python %S/Inputs/sparsify_case.py check %t %t/sparse-out sparse sparse | FileCheck %s --check-prefix=PATTERN
// PATTERN: y1: every group of 4 along K has <= 2 nonzeros: ok
// PATTERN: y1: kept k % 4 in {2, 3} (loud features), not the larger {0, 1}: ok
// PATTERN: y1: equals numpy's Wanda 2:4: ok
// PATTERN: y4: equals numpy's Wanda 2:4 of W3 times the dense W4: ok
// PATTERN: y4: differs from dense: ok
// PATTERN: y2: too small, dense: ok
// PATTERN: all ok
//
// Budget 0.15: W1 alone moves y1 by about 0.2, W3 alone y4 by about 0.09:
// the guard makes W1 dense again and keeps W3 2:4.
// RUN: sluice-opt %t/model.mlir --sluice-sparsify="metric=rel-l2 calibration=%t/cal budget=0.15 progress=true" -o %t/guard.mlir 2>&1 | FileCheck %s --check-prefix=PROGRESS
// PROGRESS: sparsify: calibrating on 2 sets
// PROGRESS: sparsify: sensitivity sluice.matmul #0 (K 64, N 16): 0.2
// PROGRESS: sparsify: sensitivity sluice.matmul #2 (K 64, N 32): 0.0
// PROGRESS: sparsify: all 2 candidate GEMMs 2:4: output error 0.2{{[0-9]+}} (budget 0.1500)
// PROGRESS: sparsify: kept sluice.matmul #0 dense: output error 0.0
// RUN: FileCheck %s --check-prefix=GUARD < %t/guard.mlir
// GUARD: gemms_2_4 = 1 : i64, gemms_dense = 3 : i64
// GUARD-SAME: node = "sluice.matmul #0", reason = "kept dense: most sensitive (error 0.2{{[0-9]+}} alone)", sensitivity = {{[0-9.e+-]+}} : f64, sparse = false, zeroed = 0 : i64}
// GUARD-SAME: node = "sluice.matmul #2", reason = "2:4 by calibrated importance"
// GUARD: sluice.matmul %arg0, %{{.*}} : (tensor<64x64xf32>, tensor<64x16xf32>)
// GUARD: sluice.matmul %arg0, %{{.*}} {sluice.sparsity_2_4} : (tensor<64x64xf32>, tensor<64x32xf32>)
// RUN: sluice-run %t/guard.mlir --reference x=%t/eye/x.npy --save-outputs=%t/guard-out > /dev/null
// RUN: %python %S/Inputs/sparsify_case.py check %t %t/guard-out dense sparse | FileCheck %s --check-prefix=GUARD-OUT
// GUARD-OUT: y1: dense, as in the model: ok
// GUARD-OUT: y4: equals numpy's Wanda 2:4 of W3 times the dense W4: ok
// GUARD-OUT: all ok
//
// Budget 0: every GEMM dense again, the model unchanged.
// RUN: sluice-opt %t/model.mlir --sluice-sparsify="metric=rel-l2 calibration=%t/cal budget=0" -o %t/dense.mlir 2>/dev/null
// RUN: FileCheck %s --check-prefix=DENSE < %t/dense.mlir
// DENSE: gemms_2_4 = 0 : i64, gemms_dense = 4 : i64
// DENSE-NOT: sluice.sparsity_2_4
// RUN: sluice-run %t/dense.mlir --reference x=%t/eye/x.npy --save-outputs=%t/dense-out > /dev/null
// RUN: %python %S/Inputs/sparsify_case.py check %t %t/dense-out dense dense | FileCheck %s --check-prefix=DENSE-OUT
// DENSE-OUT: all ok
