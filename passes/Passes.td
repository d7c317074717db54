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

def FuseGroupsPass : Pass<"sluice-fuse-groups", "mlir::func::FuncOp"> {
  let summary = "Grows kernel groups (forms F1-F5) and marks them for sluice-form-kernels";
  let description = [{
    Decides which ops share one kernel and marks each group's ops with one
    `sluice.group` id (its kernel's naming op with `sluice.group_anchor`);
    `sluice-form-kernels` then wraps each group. Every group is one of the
    forms of docs/architecture.md ("fuse"): F1 elementwise (elementwise ops,
    views on their leaves, one iteration space), F2 gemm (views on a float
    matmul's operands, an elementwise epilogue: bias, activation, residual,
    scale), F3 row (softmax / layer_norm / rms_norm / reduce over trailing
    axes with an elementwise prologue and epilogue), F4 attention (views on
    `sluice.attention`'s operands and result) or F5 single op. Stages in
    order: attention, GEMMs, row ops, elementwise chains, leftover views.

    Cost model: views are free and duplicated into every group that reads
    them; a cheap elementwise producer (add, mul, compare, cast, ...) read by
    other groups too may be duplicated (at most 4 per group); an expensive
    one (anchors; exp, erf, tanh, sigmoid, gelu, silu, pow, ...) is never
    recomputed, nor fused where it would be evaluated once per broadcast
    element. A transpose moving the innermost axis of an elementwise leaf,
    a non-layout view on a row input and a row op over non-trailing axes are
    refused (they break unit-stride, vectorized loops). Refusals users would
    wonder about are remarks on the op, with the reason.

    `mode=elementwise` only chains elementwise ops without views (F1, what
    every target's emitter takes today); `mode=all` runs every stage.
  }];
  let options = [
    Option<"mode", "mode", "std::string", "\"all\"",
           "Which groups to grow: elementwise or all">,
  ];
  let dependentDialects = ["sluice::SluiceDialect"];
}

def FuseHorizontalGemmsPass : Pass<"sluice-fuse-horizontal-gemms", "mlir::func::FuncOp"> {
  let summary = "Merges float matmuls sharing their LHS into one GEMM on concatenated weights";
  let description = [{
    Float matmuls that read one LHS with constant 2-D weights of one K (the
    separate q/k/v projections of LLaMA, gate/up) become one matmul on the
    weights concatenated along N (a new dense_resource constant), followed
    by a `sluice.split` on the last axis that gives back each result. When
    every branch's only user adds a constant `[N]` bias, the biases are
    concatenated and added once before the split. Each fusion and each
    refusal is a remark.
  }];
  let dependentDialects = ["sluice::SluiceDialect"];
}

def FormKernelsPass : Pass<"sluice-form-kernels", "mlir::func::FuncOp"> {
  let summary = "Puts every compute op into exactly one sluice.kernel group";
  let description = [{
    The last pass of the fuse phase: one group per op, except that ops the
    fusion passes marked with one `sluice.group` id form one group (named
    after the op marked `sluice.group_anchor`; it yields the values used
    outside it, and sits where the group's last op was, the block then being
    sorted topologically). Matmuls, convolutions and transposed convolutions on
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
