// RUN: sluice-opt %s --split-input-file --sluice-specialize-shapes="shapes=x=2x8" | FileCheck %s
// RUN: sluice-opt %s --split-input-file --sluice-specialize-shapes | FileCheck %s --check-prefix=NOBIND

// The exporter's Shape -> Reshape chain folds once x is bound, and every
// result type becomes static, the function signature included.
// CHECK-LABEL: func @bind_and_fold
// CHECK-SAME: (%[[X:.+]]: tensor<2x8xf32>) -> tensor<16xf32>
// CHECK-NOT: sluice.shape
// CHECK: %[[C:.+]] = sluice.constant dense<16> : tensor<1xi64>
// CHECK: %[[R:.+]] = sluice.reshape %[[X]], %[[C]] : (tensor<2x8xf32>, tensor<1xi64>) -> tensor<16xf32>
// CHECK: return %[[R]]
// NOBIND-LABEL: func @bind_and_fold
// NOBIND-SAME: (%{{.*}}: tensor<?x8xf32>) -> tensor<?xf32>
// NOBIND: sluice.shape
func.func @bind_and_fold(%x: tensor<?x8xf32>) -> tensor<?xf32> attributes {sluice.input_names = ["x"]} {
  %s = sluice.shape %x : (tensor<?x8xf32>) -> tensor<2xi64>
  %axes = sluice.constant dense<0> : tensor<1xi64>
  %n = sluice.reduce %s, %axes {kind = #sluice<reduce_kind prod>} : (tensor<2xi64>, tensor<1xi64>) -> tensor<1xi64>
  %r = sluice.reshape %x, %n : (tensor<?x8xf32>, tensor<1xi64>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// Broadcasting refines the dynamic dims of downstream ops.
// CHECK-LABEL: func @propagate
// CHECK: sluice.add {{.*}} -> tensor<2x8xf32>
// CHECK: sluice.relu {{.*}} -> tensor<2x8xf32>
// CHECK: return {{.*}} : tensor<2x8xf32>
func.func @propagate(%x: tensor<?x?xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32> attributes {sluice.input_names = ["x", "b"]} {
  %0 = sluice.add %x, %b : (tensor<?x?xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %1 = sluice.relu %0 : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return %1 : tensor<?x8xf32>
}

// -----

// Cast has no type inference: its result takes the operand's shape once that
// is static (HF GPT-2's attention_mask[:, None, None, :].to(float), whose
// declared type keeps the export's dynamic dims).
// CHECK-LABEL: func @cast_takes_operand_shape
// CHECK: %[[U:.+]] = sluice.reshape %{{.+}} -> tensor<2x1x1x8xi64>
// CHECK: %[[C:.+]] = sluice.cast %[[U]] : tensor<2x1x1x8xi64> -> tensor<2x1x1x8xf32>
// CHECK: sluice.sub %{{.+}}, %[[C]] : (tensor<f32>, tensor<2x1x1x8xf32>) -> tensor<2x1x1x8xf32>
// NOBIND-LABEL: func @cast_takes_operand_shape
// NOBIND: sluice.cast %{{.+}} : tensor<?x1x1x8xi64> -> tensor<?x1x1x8xf32>
// NOBIND: sluice.cast %{{.+}} : tensor<?x1x1x8xi64> -> tensor<2x1x1x8xf32>
func.func @cast_takes_operand_shape(%x: tensor<?x8xi64>) -> (tensor<?x1x1x?xf32>, tensor<2x1x1x?xf32>) attributes {sluice.input_names = ["x"]} {
  %shape = sluice.constant dense<[0, 1, 1, 8]> : tensor<4xi64>
  %one = sluice.constant dense<1.0> : tensor<f32>
  %u = sluice.reshape %x, %shape : (tensor<?x8xi64>, tensor<4xi64>) -> tensor<?x1x1x8xi64>
  %c = sluice.cast %u : tensor<?x1x1x8xi64> -> tensor<?x1x1x?xf32>
  %m = sluice.sub %one, %c : (tensor<f32>, tensor<?x1x1x?xf32>) -> tensor<?x1x1x?xf32>
  %c3 = sluice.cast %u : tensor<?x1x1x8xi64> -> tensor<2x1x1x?xf32>
  return %m, %c3 : tensor<?x1x1x?xf32>, tensor<2x1x1x?xf32>
}
