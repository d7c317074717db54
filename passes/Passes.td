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
// recognize
//===----------------------------------------------------------------------===//

def DecomposeCompositesPass : Pass<"sluice-decompose-composites", "mlir::func::FuncOp"> {
  let summary = "Writes composites (gelu, silu, layer_norm, rms_norm, attention) as primitive ops";
  let description = [{
    The inverse of the recognizers, exactly each op's semantics: GELU as
    erf/tanh arithmetic, SiLU as `x * sigmoid(x)`, the norms as
    ReduceMean/Sub/Mul/Rsqrt with fp32 statistics, attention as rotary
    (slices, negation, concat), the key transpose, MatMul, the scale, the
    mask (Add for a float mask, Select with -inf for an i1 keep-mask, an
    additive constant for `causal`), Softmax on the last axis and the second
    MatMul. The fuse phase runs it first, restricted to the composites the
    target has no kernel for (lib/pipeline/Pipeline.cpp,
    `compositesToDecompose`); tests run it after the recognizers to compare
    the two graphs numerically. Fails on a causal or rotary attention whose
    sequence or head dims are not static.
  }];
  let options = [
    ListOption<"ops", "ops", "std::string",
               "Op names to decompose (e.g. sluice.attention,sluice.rms_norm); all composites when empty">,
  ];
  let dependentDialects = ["sluice::SluiceDialect"];
}

def RecognizeActivationsPass : Pass<"sluice-recognize-activations", "mlir::func::FuncOp"> {
  let summary = "Forms sluice.gelu and sluice.silu from their elementwise chains";
  let description = [{
    GELU, erf form: `0.5 * x * (1 + erf(x / sqrt(2)))` (or `x * 0.7071`);
    tanh form: `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))`
    with `x^3` as `Pow(x, 3)` or `x * x * x`. The three-factor product may be
    associated and ordered in any way; constants are compared with a
    relative tolerance of 1e-4. SiLU: `x * sigmoid(x)`. Intermediates that
    have users outside the chain, or that broadcast to a different shape,
    stop the match.
  }];
  let dependentDialects = ["sluice::SluiceDialect"];
}

def RecognizeAttentionPass : Pass<"sluice-recognize-attention", "mlir::func::FuncOp"> {
  let summary = "Forms sluice.attention from MatMul/scale/mask/Softmax/MatMul chains";
  let description = [{
    Matches `MatMul(Q, Transpose(K))`, a positive constant scale (Div or
    Mul, after the MatMul or on Q and K before it), up to two masks (Add of
    a float tensor, or Where with a -inf or <= -1e4 fill on either side, as
    masked_fill writes it), `Softmax` on the last axis and `MatMul(., V)`.
    The key operand is the transpose's source re-transposed with the last
    two perm entries swapped. A constant mask that is exactly causal (0 /
    -inf or <= -1e9, the same for every batch and head) becomes `causal =
    true`; the other mask stays an operand (a Where condition becomes an i1
    keep-mask, negated when it marks the dropped positions). Rotary
    embeddings in rotate-half form applied to both Q and K with the same
    cos/sin tables (and K already in [B..., Sk, D] layout) are absorbed as
    the rotary operands. Refused: an additive mask followed by a scale; a
    finite Where fill on a mask that is not constant, drops a whole row, or
    comes with a second mask; two masks neither of which is causal, or a
    causal one with a finite fill beside another; intermediates with users
    outside the chain.
  }];
  let dependentDialects = ["sluice::SluiceDialect"];
}

def RecognizeNormsPass : Pass<"sluice-recognize-norms", "mlir::func::FuncOp"> {
  let summary = "Forms sluice.layer_norm and sluice.rms_norm from reduction chains";
  let description = [{
    LayerNorm as older exporters write it: `d = x - ReduceMean(x)`,
    `ReduceMean(d^2)` (`Pow(d, 2)` or `d * d`), `+ eps`, then `d / Sqrt(.)`
    or `d * Rsqrt(.)` / `Reciprocal(Sqrt(.))` / `1 / Sqrt(.)`, then optional
    `* scale` and `+ bias`. RMSNorm: the same without the centering, with an
    optional Cast to fp32 around it and an optional `* weight`. The means
    must reduce the trailing axes with keepdims (axis = the first reduced
    axis); scale and bias must broadcast into the normalized dims only; a
    missing scale becomes ones. Intermediates with users outside the chain
    stop the match.
  }];
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
