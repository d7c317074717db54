// RUN: sluice-opt %s --split-input-file --verify-diagnostics --sluice-specialize-shapes="shapes=x=2x4,\"s=3x4,2\""
// RUN: not sluice-opt %s --split-input-file --sluice-specialize-shapes="shapes=x=2x4,\"s=3x4,,2x4\"" 2>&1 | FileCheck %s --check-prefix=TYPO
// RUN: not sluice-opt %s --split-input-file --sluice-specialize-shapes="shapes=x=2x4,s=3x5" 2>&1 | FileCheck %s --check-prefix=DIM
// RUN: not sluice-opt %s --split-input-file --sluice-specialize-shapes="shapes=s=3x4,\"x=3x4,3x4\"" 2>&1 | FileCheck %s --check-prefix=TENSOR
// RUN: not sluice-opt %s --split-input-file --sluice-specialize-shapes="shapes=x=2x4,s=3x4,y=1" 2>&1 | FileCheck %s --check-prefix=MISSING

// An element of the wrong rank names the element and the sequence.
// expected-error @+1 {{shape of element 1 of sequence 's' has rank 1, input has rank 2}}
func.func @wrong_rank(%s: !sluice.sequence<tensor<?x4xf32>>, %x: tensor<?x4xf32>) -> !sluice.sequence<tensor<?x4xf32>> attributes {sluice.input_names = ["s", "x"]} {
  return %s : !sluice.sequence<tensor<?x4xf32>>
}

// -----

// An element name the model already uses for an input.
// expected-error @+1 {{sequence input 's': its element 0 would be input 's.0', which the model already has}}
func.func @name_taken(%s: !sluice.sequence<tensor<*xf32>>, %x: tensor<?x4xf32>, %t: tensor<4xf32>) -> !sluice.sequence<tensor<*xf32>> attributes {sluice.input_names = ["s", "x", "s.0"]} {
  return %s : !sluice.sequence<tensor<*xf32>>
}

// TYPO: error: bad shape 's=3x4,,2x4' for sequence input 's' (expected its element shapes: name=3x4,3x4,2x4, name=scalar or name=empty)
// DIM: error: shape of element 0 of sequence 's' sets dim 1 to 5, input fixes it to 4
// TENSOR: error: shape for 'x' lists a sequence's element shapes, but input 'x' is a tensor (expected name=2x128)
// MISSING: error: no input named 'y'
