// RUN: sluice-opt %s --split-input-file --sluice-resolve-control-flow --canonicalize | FileCheck %s
// RUN: sluice-opt %s --split-input-file --sluice-resolve-control-flow="max-unrolled-ops=4" --canonicalize | FileCheck %s --check-prefix=BUDGET

// An if on a constant condition is its branch.
// CHECK-LABEL: func @constant_if
// CHECK-NOT: sluice.if
// CHECK: %[[R:.+]] = sluice.relu %arg0
// CHECK: return %[[R]]
func.func @constant_if(%a: tensor<2xf32>) -> tensor<?xf32> {
  %c = sluice.constant dense<true> : tensor<i1>
  %0 = sluice.if %c : tensor<i1> -> tensor<?xf32> {
    %1 = sluice.relu %a : (tensor<2xf32>) -> tensor<2xf32>
    sluice.yield %1 : tensor<2xf32>
  } else {
    sluice.yield %a : tensor<2xf32>
  }
  return %0 : tensor<?xf32>
}

// -----

// An if on a runtime condition stays (the targets branch at run time).
// CHECK-LABEL: func @runtime_if
// CHECK: sluice.if %arg0
func.func @runtime_if(%c: tensor<i1>, %a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = sluice.if %c : tensor<i1> -> tensor<2xf32> {
    %1 = sluice.relu %a : (tensor<2xf32>) -> tensor<2xf32>
    sluice.yield %1 : tensor<2xf32>
  } else {
    sluice.yield %a : tensor<2xf32>
  }
  return %0 : tensor<2xf32>
}

// -----

// A counted loop: three copies of the body, each slicing at its own
// (folded) iteration number; the scan output is the stacked values.
// CHECK-LABEL: func @counted_loop
// CHECK-NOT: sluice.loop
// CHECK-COUNT-3: sluice.add
// CHECK: sluice.concat
// CHECK-SAME: -> tensor<3x1xf32>
// CHECK: return {{.*}} : tensor<1xf32>, tensor<3x1xf32>
// The budget (4 ops) is less than three bodies: the loop stays.
// BUDGET-LABEL: func @counted_loop
// BUDGET: sluice.loop
func.func @counted_loop(%y: tensor<1xf32>) -> (tensor<?xf32>, tensor<?x?xf32>) {
  %n = sluice.constant dense<3> : tensor<i64>
  %t = sluice.constant dense<true> : tensor<i1>
  %x = sluice.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0:2 = sluice.loop(%n : tensor<i64>)(%t : tensor<i1>) carried(%y : tensor<1xf32>) -> tensor<?xf32>, tensor<?x?xf32> {
  ^bb0(%i: tensor<i64>, %cond: tensor<i1>, %v: tensor<?xf32>):
    %one = sluice.constant dense<1> : tensor<i64>
    %end = sluice.add %i, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
    %axes = sluice.constant dense<0> : tensor<1xi64>
    %s = sluice.unsqueeze %i, %axes : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
    %e = sluice.unsqueeze %end, %axes : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
    %step = sluice.constant dense<1> : tensor<1xi64>
    %slice = sluice.slice %x, %s, %e, %axes, %step : (tensor<4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xf32>
    %next = sluice.add %v, %slice : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
    sluice.yield %cond, %next, %next : tensor<i1>, tensor<?xf32>, tensor<?xf32>
  }
  return %0#0, %0#1 : tensor<?xf32>, tensor<?x?xf32>
}

// -----

// A loop whose condition the body computes from the iteration number: it
// stops when the condition folds to false (after two iterations).
// CHECK-LABEL: func @conditional_loop
// CHECK-NOT: sluice.loop
// CHECK-COUNT-2: sluice.mul
// CHECK-NOT: sluice.mul
func.func @conditional_loop(%y: tensor<2xf32>) -> tensor<?xf32> {
  %0 = sluice.loop()() carried(%y : tensor<2xf32>) -> tensor<?xf32> {
  ^bb0(%i: tensor<i64>, %cond: tensor<i1>, %v: tensor<?xf32>):
    %limit = sluice.constant dense<1> : tensor<i64>
    %go = sluice.less %i, %limit : (tensor<i64>, tensor<i64>) -> tensor<i1>
    %next = sluice.mul %v, %v : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
    sluice.yield %go, %next : tensor<i1>, tensor<?xf32>
  }
  return %0 : tensor<?xf32>
}

// -----

// A loop with a runtime trip count stays.
// CHECK-LABEL: func @runtime_loop
// CHECK: sluice.loop(%arg0
func.func @runtime_loop(%n: tensor<i64>, %y: tensor<2xf32>) -> tensor<?xf32> {
  %0 = sluice.loop(%n : tensor<i64>)() carried(%y : tensor<2xf32>) -> tensor<?xf32> {
  ^bb0(%i: tensor<i64>, %cond: tensor<i1>, %v: tensor<?xf32>):
    %next = sluice.mul %v, %v : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
    sluice.yield %cond, %next : tensor<i1>, tensor<?xf32>
  }
  return %0 : tensor<?xf32>
}

// -----

// A scan: one body copy per slice of x (reversed), outputs stacked.
// CHECK-LABEL: func @scan
// CHECK-NOT: sluice.scan
// CHECK-COUNT-3: sluice.add
// CHECK: sluice.concat
// CHECK: return {{.*}} : tensor<2xf32>, tensor<3x2xf32>
// A scan over the budget becomes a loop the targets run: the slices are
// gathered at the iteration number (from the end: the input is reversed),
// the scan output is the loop's stacked values.
// BUDGET-LABEL: func @scan
// BUDGET-NOT: sluice.scan
// BUDGET: sluice.loop(%{{.*}} : tensor<i64>) () carried(%arg0 : tensor<2xf32>) -> tensor<2xf32>, tensor<3x2xf32>
// BUDGET: sluice.sub
// BUDGET: sluice.gather %arg1
// BUDGET: sluice.add
// BUDGET: sluice.yield
func.func @scan(%init: tensor<2xf32>, %x: tensor<3x2xf32>) -> (tensor<?xf32>, tensor<?x?xf32>) {
  %0:2 = sluice.scan(%init, %x : tensor<2xf32>, tensor<3x2xf32>) -> tensor<?xf32>, tensor<?x?xf32> {
  ^bb0(%s: tensor<?xf32>, %row: tensor<?xf32>):
    %sum = sluice.add %s, %row : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
    sluice.yield %sum, %sum : tensor<?xf32>, tensor<?xf32>
  } {num_scan_inputs = 1 : i64, scan_input_axes = array<i64: 0>, scan_input_directions = array<i64: 1>, scan_output_axes = array<i64: 0>, scan_output_directions = array<i64: 0>}
  return %0#0, %0#1 : tensor<?xf32>, tensor<?x?xf32>
}

// -----

// Sequences of known elements: insert, erase, at, length and concat are
// resolved to the element tensors.
// CHECK-LABEL: func @sequences
// CHECK-NOT: sluice.sequence
// CHECK-DAG: %[[N:.+]] = sluice.constant dense<2> : tensor<i64>
// CHECK-DAG: %[[C:.+]] = sluice.concat %arg1, %arg0 {axis = 0 : i64}
// CHECK: return %[[N]], %[[C]], %arg1
func.func @sequences(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %c: tensor<2x3xf32>)
    -> (tensor<i64>, tensor<?x3xf32>, tensor<*xf32>) {
  %s = sluice.sequence_construct %a, %c : (tensor<2x3xf32>, tensor<2x3xf32>) -> !sluice.sequence<tensor<2x3xf32>>
  %zero = sluice.constant dense<0> : tensor<i64>
  %s1 = sluice.sequence_insert %s, %b, %zero : (!sluice.sequence<tensor<2x3xf32>>, tensor<2x3xf32>, tensor<i64>) -> !sluice.sequence<tensor<2x3xf32>>
  %s2 = sluice.sequence_erase %s1 : (!sluice.sequence<tensor<2x3xf32>>) -> !sluice.sequence<tensor<2x3xf32>>
  %n = sluice.sequence_length %s2 : (!sluice.sequence<tensor<2x3xf32>>) -> tensor<i64>
  %cat = sluice.concat_from_sequence %s2 {axis = 0 : i64} : (!sluice.sequence<tensor<2x3xf32>>) -> tensor<?x3xf32>
  %first = sluice.sequence_at %s2, %zero : (!sluice.sequence<tensor<2x3xf32>>, tensor<i64>) -> tensor<*xf32>
  return %n, %cat, %first : tensor<i64>, tensor<?x3xf32>, tensor<*xf32>
}

// -----

// split_to_sequence without split: one element per index, squeezed
// (keepdims = 0); sequence_map runs its body per element.
// CHECK-LABEL: func @split_and_map
// CHECK-NOT: sluice.sequence_map
// CHECK-NOT: sluice.split_to_sequence
// CHECK-COUNT-3: sluice.relu {{.*}} -> tensor<4xf32>
// CHECK: sluice.sequence_construct {{.*}} -> !sluice.sequence<tensor<4xf32>>
func.func @split_and_map(%x: tensor<3x4xf32>) -> !sluice.sequence<tensor<?xf32>> {
  %s = sluice.split_to_sequence %x {axis = 0 : i64, keepdims = false} : (tensor<3x4xf32>) -> !sluice.sequence<tensor<?xf32>>
  %m = sluice.sequence_map(%s : !sluice.sequence<tensor<?xf32>>) -> !sluice.sequence<tensor<?xf32>> {
  ^bb0(%e: tensor<?xf32>):
    %r = sluice.relu %e : (tensor<?xf32>) -> tensor<?xf32>
    sluice.yield %r : tensor<?xf32>
  }
  return %m : !sluice.sequence<tensor<?xf32>>
}

