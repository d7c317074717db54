//===- Passes.td - sluice passes ---------------------------*- tablegen -*-===//
//
// Every pass of the compiler, grouped by phase (DESIGN.md), alphabetical
// within a group. Flags are prefixed `sluice-`; options live here.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_PASSES_TD
#define SLUICE_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// simplify
//===----------------------------------------------------------------------===//

def FoldConstantsPass : Pass<"sluice-fold-constants", "mlir::func::FuncOp"> {
  let summary = "Evaluates ops whose operands are all constants";
  let description = [{
    Runs the reference evaluator on every op whose operands are constants and
    replaces it with a `sluice.constant` (dense for small results, a
    dense_resource blob otherwise). This is what turns the
    Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains of exporters into
    constants once shapes are static.
  }];
  let options = [
    Option<"maxElements", "max-elements", "int64_t", "int64_t(1) << 24",
           "Largest result (in elements) to fold">,
  ];
  let dependentDialects = ["sluice::SluiceDialect"];
}

def SpecializeShapesPass : Pass<"sluice-specialize-shapes", "mlir::func::FuncOp"> {
  let summary = "Binds input shapes and propagates static shapes through the graph";
  let description = [{
    Replaces the types of the named inputs (`shapes=name=2x128`; inputs are
    named by the function's `sluice.input_names`), then walks the function in
    order, folding all-constant ops with the evaluator and re-inferring every
    op's result types, so that shape subgraphs fold and the graph becomes
    static. The function's result types are updated to match.
  }];
  let options = [
    ListOption<"shapes", "shapes", "std::string",
               "Input shapes as name=DxDxD (rank 0: name=scalar)">,
    Option<"maxElements", "max-elements", "int64_t", "int64_t(1) << 24",
           "Largest result (in elements) to fold">,
  ];
  let dependentDialects = ["sluice::SluiceDialect"];
}

//===----------------------------------------------------------------------===//
// fuse
//===----------------------------------------------------------------------===//

def FormKernelsPass : Pass<"sluice-form-kernels", "mlir::func::FuncOp"> {
  let summary = "Puts every compute op into exactly one sluice.kernel group";
  let description = [{
    The first form of the fuse phase: one group per op (the fusion passes grow
    groups later). Matmuls, convolutions and transposed convolutions on
    floating-point tensors become library calls (`library = "gemm"` /
    `"conv"`): BLAS and cuBLASLt/cuDNN beat generated code there. Values used
    inside a group (including inside nested regions) become its inputs, except
    small dense constants (scalars, shapes, axes), which are cloned into the
    body so that code generation reads them as compile-time values. Kernels
    are named `k<N>_<op>` in program order.
  }];
  let options = [
    Option<"maxInlineElements", "max-inline-elements", "int64_t", "256",
           "Largest dense constant (in elements) cloned into a kernel body">,
  ];
  let dependentDialects = ["sluice::SluiceDialect"];
}

//===----------------------------------------------------------------------===//
// plan
//===----------------------------------------------------------------------===//

def PlanBuffersPass : Pass<"sluice-plan-buffers", "mlir::func::FuncOp"> {
  let summary = "Places every kernel result in one arena by liveness, or in an output";
  let description = [{
    Walks the function's kernels in program order. A kernel result the
    function returns is written straight into the caller's output buffer (the
    first time it is returned); every other result gets a 64-byte aligned
    offset in one arena per run, reusing the space of values whose last use
    has passed (first fit). Annotates each kernel with `arena_offsets`
    (one per result: the offset, or -(k+1) for output k) and the function
    with `sluice.arena_bytes`. Needs static shapes.
  }];
  let dependentDialects = ["sluice::SluiceDialect"];
}

#endif // SLUICE_PASSES_TD
