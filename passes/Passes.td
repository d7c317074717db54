//===- Passes.td - sluice passes ---------------------------*- tablegen -*-===//
//
// Every pass of the compiler, grouped by phase (docs/architecture.md), alphabetical
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
    Option<"foldDequantize", "fold-dequantize", "bool", "false",
           "Also fold dequantize_linear of integer weights (the compress phase, after "
           "sluice-fold-qdq); otherwise they stay for it">,

    Option<"maxElements", "max-elements", "int64_t", "int64_t(1) << 24",
           "Largest result (in elements) to fold">,
  ];
  let dependentDialects = ["sluice::SluiceDialect"];
}

def ResolveControlFlowPass : Pass<"sluice-resolve-control-flow", "mlir::func::FuncOp"> {
  let summary = "Resolves control flow and sequences the compiler can know: constant ifs, "
                "static loops and scans (unrolled), sequences of known elements";
  let description = [{
    Bundles are static tensor programs. An `if` on a constant condition
    becomes its branch; a `loop` whose trip count and conditions fold to
    constants and a `scan` (static length) are unrolled while the copies
    stay within `max-unrolled-ops` (each iteration is folded before the
    next, so iteration numbers and slice bounds become constants); sequences
    whose elements are known become `sequence_construct`s and the ops that
    read them (sequence_at, sequence_length, concat_from_sequence,
    sequence_map) are rewritten to the elements; optionals of a known value
    likewise. A scan over the budget becomes a `loop` (slices gathered at
    the iteration number). What remains is compiled as control flow by the
    targets or refused there.
  }];
  let options = [
    Option<"maxElements", "max-elements", "int64_t", "int64_t(1) << 24",
           "Largest result (in elements) to fold">,
    Option<"maxUnrolledOps", "max-unrolled-ops", "int64_t", "4096",
           "Most ops that unrolling loops, scans and sequence maps may create in all">,
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

    A sequence input's shape lists its elements' (`shapes="s=3x4,2x4"`,
    quoted for the commas; `s=empty` for none): the input is replaced by one
    tensor argument per element, `s.0`, `s.1` ... in its place in
    `sluice.input_names`, and a `sluice.sequence_construct` of them (a
    `sluice.sequence_empty` for none) takes its uses;
    `sluice.input_sequences` records each such input's name and element
    names (in input order), for the bundle's manifest.
  }];
  let options = [
    ListOption<"shapes", "shapes", "std::string",
               "Input shapes as name=DxDxD (rank 0: name=scalar); a sequence's as "
               "name=DxD,DxD,... (name=empty: no elements)">,
    Option<"maxElements", "max-elements", "int64_t", "int64_t(1) << 24",
           "Largest result (in elements) to fold">,
  ];
  let dependentDialects = ["sluice::SluiceDialect"];
}

//===----------------------------------------------------------------------===//
// recognize
//===----------------------------------------------------------------------===//

def DecomposeCompositesPass : Pass<"sluice-decompose-composites", "mlir::func::FuncOp"> {
  let summary = "Writes composites (gelu, silu, layer_norm, rms_norm, attention, moe) as primitive ops";
  let description = [{
    The inverse of the recognizers, exactly each op's semantics: GELU as
    erf/tanh arithmetic, SiLU as `x * sigmoid(x)`, the norms as
    ReduceMean/Sub/Mul/Rsqrt with fp32 statistics, attention as rotary
    (slices, negation, concat), the key transpose, MatMul, the scale, the
    mask (Add for a float mask, Select with -inf for an i1 keep-mask, an
    additive constant for `causal`), Softmax on the last axis and the second
    MatMul. The fuse phase runs it first, restricted to the composites the
    target has no kernel for (tools/driver/Pipeline.cpp,
    `compositesToDecompose`); tests run it after the recognizers to compare
    the two graphs numerically. Fails on a causal or rotary attention whose
    sequence or head dims are not static. With `keep-moe-kernels` (the cpu
    and cuda targets) a `sluice.moe` the MoE kernel applies to (static f32,
    `kernel::moeKernelRefusal`) stays; the others take the dense form.
  }];
  let options = [
    ListOption<"ops", "ops", "std::string",
               "Op names to decompose (e.g. sluice.attention,sluice.rms_norm); all composites when empty">,
    Option<"keepMoeKernels", "keep-moe-kernels", "bool", /*default=*/"false",
           "Leave the sluice.moe ops the cpu/cuda MoE kernel runs (lib/kernel/Moe.h) as they are">,
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

def RecognizeLinearPass : Pass<"sluice-recognize-linear", "mlir::func::FuncOp"> {
  let summary = "Drops the flatten/unflatten reshapes around a Linear's MatMul (+ bias)";
  let description = [{
    `Reshape(MatMul(Reshape(x, [M, K]), W) [+ bias], [B..., N])` with x of
    static shape [B..., K], W [K, N] and a bias of shape [N] or [1, N]
    becomes `MatMul(x, W) [+ bias]` of shape [B..., N] (HF Conv1D: GPT-2's
    addmm layers). The same numbers, without the reshape that kept the
    GEMM's consumers (GELU, residual add) out of its epilogue. The matmul
    and the add must have no other users.
  }];
  let dependentDialects = ["sluice::SluiceDialect"];
}

def RecognizeMoePass : Pass<"sluice-recognize-moe", "mlir::func::FuncOp"> {
  let summary = "Forms sluice.moe from mixture-of-experts blocks, by structure";
  let description = [{
    A learned top-k router (a Linear of the experts' tokens by constant
    weights, Softmax, TopK, optionally renormalized weights) over experts
    whose constant weights are stacked [E, ...] (batched MatMuls, with
    biases, relu / gelu / silu, or gated as SwiGLU), whose chosen outputs
    are gathered by the top-k indices and summed with their weights; and
    hard gating, where each sample's expert weights are gathered from the
    stacks by an index input (the sentence's language). Rewrites in the same
    pattern set bring the other written forms there first (MoeForms.cpp):
    einsums that are matmuls become MatMuls, a softmax over the top-k
    logits becomes normalized top-k probabilities, per-expert chains
    (lists of nn.Linear) are stacked, a loop over the experts becomes a
    sum, dense [T, E] weights scattered from the top-k become a gather,
    slots scattered back to their tokens (scatter_add, index_add) become a
    sum; each keeps the evaluator's results whether or not a sluice.moe
    forms. Runs after sluice-recognize-activations (the activation is one op
    by then). Intermediates with users outside the block stop the match.
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
    stop the match. Also folds `batch_norm(conv(x, W, b), scale, bias,
    mean, var)` with constant f32 weights and parameters (the conv used by
    the batch_norm alone) into `conv(x, W * s, (b - mean) * s + bias)`,
    s = scale / sqrt(var + eps) per output channel, computed in double.
  }];
  let dependentDialects = ["sluice::SluiceDialect"];
}

//===----------------------------------------------------------------------===//
// compress
//===----------------------------------------------------------------------===//

def QuantizePass : Pass<"sluice-quantize", "mlir::ModuleOp"> {
  let summary = "Calibrated int8 GEMMs and convolutions, guarded by measured accuracy";
  let description = [{
    Runs the calibration sets (`calibration=DIR`: one `NAME.npy` per input
    of `main`, or sub-folders of such sets) through the reference evaluator,
    then rewrites every f32 `sluice.matmul` with a constant 2-D weight and
    every f32 `sluice.conv` with a constant weight into Form I8
    (docs/quantization.md): `quantize_linear` of the activation to u8 with
    the calibrated per-tensor range (`method`: minmax, percentile, entropy),
    the weight int8 symmetric per output channel, `matmul_integer` /
    `conv_integer` (int32), then `cast`, `mul` by input scale x weight
    scale and the bias `add`. The accuracy guard measures every output's
    error against the float model on the calibration sets (`metric`, see
    sluice-prune); over `budget`, the layers most sensitive on their own are kept in f32 until
    it holds, and when no quantized layer can, the pass fails with the
    per-layer table. `smooth-quant=ALPHA` (>= 0) first migrates activation
    outliers of layer norms that feed only GEMMs into the GEMMs' weights.
    `mode=fp8` writes Form F8 instead, on the matmuls only: the activation
    `quantize_linear` to f8E4M3FN and back with the per-tensor scale
    amax / 448, the weight an f8E4M3FN constant (scale amax(|W|) / 448)
    behind a `dequantize_linear`, the matmul itself in f32.
    `cache=FILE` keeps the ranges and the guard's outcome (JSON) for the
    next compile of the same function and data. The outcome is the
    function's `sluice.quantization` attribute (what `--report` prints).
  }];
  let options = [
    Option<"mode", "mode", "std::string", "\"int8\"",
           "int8 (Form I8, needs calibration), fp8 (Form F8, needs calibration), or w8a16 / w4a16 (weight-only, Form W; guarded when calibration is given)">,
    Option<"calibration", "calibration", "std::string", "\"\"",
           "Folder of calibration sets">,
    Option<"method", "method", "std::string", "\"minmax\"",
           "Calibration method: minmax, percentile or entropy">,
    Option<"percentile", "percentile", "double", "99.999",
           "Percentile of the percentile method">,
    Option<"metric", "metric", "std::string", "\"auto\"",
           "How outputs are judged: rel-l2, top1-agreement, or auto (top1-agreement when every output's last axis is a class axis)">,
    Option<"budget", "budget", "double", "-1",
           "Largest error of any output on the calibration sets in the metric (negative: its default, 0.05 rel-l2 or 0.01 top1-agreement)">,
    Option<"smoothQuant", "smooth-quant", "double", "-1",
           "SmoothQuant migration strength alpha (negative: off)">,
    Option<"cache", "cache", "std::string", "\"\"",
           "Calibration cache file (JSON); empty: none">,
    Option<"progress", "progress", "bool", "false", "Progress lines on stderr">,
  ];
  let dependentDialects = ["sluice::SluiceDialect"];
}

def SparsifyPass : Pass<"sluice-sparsify", "mlir::ModuleOp"> {
  let summary = "2:4 semi-structured sparsity of GEMM weights by calibrated importance, guarded by measured accuracy";
  let description = [{
    `pattern=2:4` (the only one): in every f32 / f16 / bf16 `sluice.matmul`
    of `main` with a constant 2-D weight [K, N] (K % 4 == 0, K >= 64,
    N >= 16; smaller GEMMs get a remark and stay dense), two of every four
    consecutive weights along K (same column n) become zero: the two least
    important by Wanda's score |W[k, n]| x ||X_k||_2, where ||X_k|| is the
    L2 norm of input feature k of the GEMM's activation over every
    calibration set (`calibration=DIR`, required; the format of
    sluice-quantize), observed with the reference evaluator. Sparse GEMMs
    carry the unit attribute `sluice.sparsity_2_4` (the cuda target runs
    them through cuSPARSELt when it is present and faster). The guard
    measures each GEMM's sensitivity (the largest error of the outputs with
    only it sparse, in `metric`, see sluice-prune) and, while the fully sparse model misses
    `budget` on the calibration sets, makes the most sensitive sparse GEMM
    dense again. The outcome is the function's `sluice.sparsity` attribute
    (what `--report` prints).
  }];
  let options = [
    Option<"pattern", "pattern", "std::string", "\"2:4\"",
           "Sparsity pattern (only 2:4)">,
    Option<"calibration", "calibration", "std::string", "\"\"",
           "Folder of calibration sets (required)">,
    Option<"metric", "metric", "std::string", "\"auto\"",
           "How outputs are judged: rel-l2, top1-agreement, or auto (top1-agreement when every output's last axis is a class axis)">,
    Option<"budget", "budget", "double", "-1",
           "Largest error of any output on the calibration sets in the metric (negative: its default, 0.05 rel-l2 or 0.01 top1-agreement)">,
    Option<"progress", "progress", "bool", "false", "Progress lines on stderr">,
  ];
  let dependentDialects = ["sluice::SluiceDialect"];
}

def FoldQdqPass : Pass<"sluice-fold-qdq", "mlir::func::FuncOp"> {
  let summary = "Explicitly quantized (QDQ) GEMMs and convolutions as real integer ops";
  let description = [{
    TensorRT's explicit-quantization semantics for ONNX QDQ models (ONNX
    Runtime's quantize_static, TensorRT-style Q/DQ): a `sluice.matmul` whose
    operands are `dequantize_linear` of 8-bit tensors with per-tensor
    parameters (the activation: the output of a `quantize_linear` or an
    integer input) and of an int8 weight with zero zero points (per tensor
    or per output column; through a 2-D transpose, as Gemm's transB),
    becomes `matmul_integer` on the integer tensors, `cast`, and a `mul` by
    the product of the scales (Form I8); a `sluice.conv` likewise becomes
    `conv_integer`, and its dequantized int32 bias a float `add`. A matmul
    of two dequantized activations (attention) becomes `matmul_integer`
    with both zero points. Weights stay int8 constants.
  }];
  let dependentDialects = ["sluice::SluiceDialect"];
}

def ConvertPrecisionPass : Pass<"sluice-convert-precision", "mlir::func::FuncOp"> {
  let summary = "Runs an f32 graph in f16 or bf16, keeping fp32 where numerics need it";
  let description = [{
    `precision=fp16|bf16` (aliases `float16`, `half`, `bfloat16`; `fp32`
    leaves the graph as it is): f32 weights and activations become half
    precision inside the function; its arguments and results keep their
    types (a cast after each f32 input a converted op reads, before each
    returned half value), integer tensors, shapes and indices are untouched.
    Ops run in half: data movement (reshape, transpose, slice, concat,
    split, squeeze/unsqueeze, expand, tile, pad, gathers, trilu, select),
    cheap elementwise arithmetic and comparisons, gelu/silu, matmul, conv,
    conv_transpose, pooling, batch_norm, reduce max/min/mean, arg-reductions,
    top-k, and softmax / layer_norm / rms_norm / attention, whose kernels
    compute statistics and accumulate in fp32. Every other op stays fp32
    (its half operands are cast back): exp and pow (f16 overflows above
    65504), log, reciprocal, rsqrt, reduce sum/prod, cumsum, ops with
    regions, and any op not listed. A Cast of the model to f32 still yields
    f32. Weights are converted in the pass (no cast kernels on constants),
    finite values saturating to f16's range; casts that cancel
    (f16 -> f32 -> f16) fold away. The function gets `sluice.precision`
    (what the bundle's manifest records). Fails on an unknown precision and
    on a function that already holds kernel groups.
  }];
  let options = [
    Option<"precision", "precision", "std::string", "\"fp16\"",
           "Target precision: fp16, bf16 or fp32 (no change)">,
  ];
  let dependentDialects = ["sluice::SluiceDialect"];
}

def QuantizeWeightsPass : Pass<"sluice-quantize-weights", "mlir::func::FuncOp"> {
  let summary = "Weight-only quantization (w8a16 / w4a16) of GEMMs with constant weights";
  let description = [{
    Rewrites every `sluice.matmul` whose B is a 2-D float constant [K, N]
    (and whose A has rank >= 2) into Form W (docs/quantization.md): an integer
    constant, f16 scales, a `sluice.dequantize_linear` (f16 result) and,
    when the activations are not f16, a `sluice.cast` to their type.
    `bits=8`: int8, symmetric per output column (scale [N], axis 1).
    `bits=4`: signed int4 in blocks of G = min(group, K) rows along K
    (scale [ceil(K / G), N], axis 0, block_size G). Scales are
    max|w| / 127 (/ 7 for int4) rounded to f16 before the weights are
    quantized (round half to even, clamped), so the stored scale is the one
    the values were quantized with. The new ops take the matmul's location.
    Runs after `sluice-convert-precision` (an fp16 model's DQ yields f16
    directly). The fuse phase makes each Form W dequantization the GEMM's
    prologue: the cpu kernel dequantizes inside (sluice_gen/cpu_wonly.h).
  }];
  let options = [
    Option<"bits", "bits", "int64_t", "8", "Weight bits: 8 or 4">,
    Option<"group", "group", "int64_t", "128",
           "Rows of K per int4 scale (min(group, K) is used)">,
  ];
  let dependentDialects = ["sluice::SluiceDialect"];
}

def PrunePass : Pass<"sluice-prune", "mlir::ModuleOp"> {
  let summary = "Structured pruning of attention heads, MLP units and conv channels, guarded by calibration data";
  let description = [{
    Removes whole units from `main`: attention heads (from Q, K, V, the
    output projection and the attention op's head axis), hidden units of
    MLPs (GEMM columns and biases, the next GEMM's rows) and convolution
    output channels (with their bias and batch norm, and the next layer's
    input channels). Dimensions tied by a residual, a norm, a concat or a
    function boundary are found by following every use and definition
    (DepGraph-style groups, passes/compress/PruneGroups.h) and are pruned
    together or not at all; a fused QKV projection split in three prunes by
    heads. The fractions `heads`, `ffn` and `channels`
    (in [0, 1)) say how much of each group to remove; `calibration=DIR`
    (required) runs sample sets through the reference evaluator: a unit's
    importance is the mean |activation| its consumers read times the norm
    of their weights for it. The guard measures each group alone at its
    fraction; when all together move an output by more than `budget`
    on the calibration sets, the most sensitive group is
    spared and its units are taken from the least sensitive groups of its
    kind instead (up to twice the fraction), until the budget holds.
    Weights shrink and nothing runs on zeros; the function's interface does
    not change. The outcome is `main`'s `sluice.pruning` attribute (what
    `--report` prints): per candidate group its first GEMM or convolution's
    ONNX node, kind, kept and original units, sensitivity and the reason of
    any deviation from the request, and apart the groups that cannot shrink
    with why, and per kind the fraction asked and achieved; when less than
    half of a kind's request was achieved, a warning says so.
    `metric` (shared with sluice-quantize and sluice-sparsify) judges the
    outputs: `rel-l2`, the relative L2 error of each output over the sets
    (default budget 0.05); `top1-agreement`, the share of an output's rows
    whose argmax over the last axis changed (default budget 0.01); `auto`,
    top1-agreement when every output's last axis is a class axis (rank 2,
    or named by the model's `sluice.class_outputs` metadata), else rel-l2.
    Ties of the metric (candidates that change no prediction) are ordered
    by relative L2. `mask-only` (for tests) zeros the removed units' weights
    instead of removing them: the same decisions at the old shapes.
  }];
  let options = [
    Option<"heads", "heads", "double", "0",
           "Fraction of each attention layer's heads to remove, in [0, 1)">,
    Option<"ffn", "ffn", "double", "0",
           "Fraction of each MLP's hidden units to remove, in [0, 1)">,
    Option<"channels", "channels", "double", "0",
           "Fraction of each convolution's output channels to remove, in [0, 1)">,
    Option<"calibration", "calibration", "std::string", "\"\"",
           "Folder of calibration sets (required when a fraction is > 0)">,
    Option<"metric", "metric", "std::string", "\"auto\"",
           "How outputs are judged: rel-l2, top1-agreement, or auto (top1-agreement when every output's last axis is a class axis)">,
    Option<"budget", "budget", "double", "-1",
           "Largest error of any output on the calibration sets in the metric (negative: its default, 0.05 rel-l2 or 0.01 top1-agreement)">,
    Option<"progress", "progress", "bool", "false", "Progress lines on stderr">,
    Option<"maskOnly", "mask-only", "bool", "false",
           "Zero the removed units' weights instead of removing them (tests)">,
  ];
  let dependentDialects = ["sluice::SluiceDialect"];
}

//===----------------------------------------------------------------------===//
// parallelize
//===----------------------------------------------------------------------===//

def PartitionPass : Pass<"sluice-partition", "mlir::func::FuncOp"> {
  let summary = "Rewrites a planned function into one rank's program with collectives";
  let description = [{
    Reads the plan of sluice-plan-tensor-parallel (the split weights, the
    vocab-parallel lookup, `sluice.tp` / `sluice.sp` on the function) and
    walks the function in order, giving every value a sharding (replicated,
    split along an axis, or partial sums) by a rule per op: elementwise ops
    and row ops keep a split that is not on their reduced axes, transposes
    and reshapes carry it to its new axis, a matmul with a column-split
    weight splits its result and one with a row-split weight gives partial
    sums, attention splits by heads. Each op is rewritten to its per-rank
    shapes; split weights become `sluice.shard_constant`; where an op has
    no rule for its operands' layouts they are made whole first
    (`all_gather` a split, `all_reduce` partial sums, with a remark), and
    with sequence parallelism partial sums become `reduce_scatter` along
    the sequence so that norms and residual adds run on a slice of the
    tokens. The graph's outputs are made whole. A function without
    `sluice.tp` is left unchanged.
  }];
  let dependentDialects = ["sluice::SluiceDialect"];
}

def PipelinePass : Pass<"sluice-pipeline", "mlir::func::FuncOp"> {
  let summary = "Cuts one rank's program into pipeline stages with transfers between them";
  let description = [{
    Gives every op a pipeline stage (`sluice.stage`): `pp` contiguous
    stages balanced by the cost model's predicted time, cut only where one
    activation crosses (between layers, never inside attention). A compute
    value read by a later stage goes through `sluice.transfer`; weights and
    values computed from the inputs alone get a copy per stage that reads
    them. Records `sluice.pp`, `sluice.micro_batches` and the plan
    (`sluice.pipeline`) on the function. Fails when `pp` exceeds the
    model's layers or its cut points. `pp` = 1 leaves the function as it is.
  }];
  let options = [
    Option<"pp", "pp", "int64_t", "1", "Pipeline stages">,
    Option<"microBatches", "micro-batches", "int64_t", "1",
           "Micro-batches each run streams through the stages (recorded; the "
           "driver compiles the program at the micro-batch's shapes)">,
  ];
  let dependentDialects = ["sluice::SluiceDialect"];
}

def ExpertParallelPass : Pass<"sluice-expert-parallel", "mlir::func::FuncOp"> {
  let summary = "Spreads the experts of every sluice.moe over --ep=N ranks";
  let description = [{
    Pure expert parallelism: each `sluice.moe` keeps E/N of its E experts
    per rank (its stacked weights become `sluice.shard_constant`s split
    along the expert axis, and `expert_offset` names the rank's first
    expert), and its result goes through an `all_reduce`: the tokens and the
    router are replicated, so a rank selects the tokens routed to its
    experts and the sum combines the ranks' partial outputs (no capacity
    factor, no dropped tokens). Records `sluice.ep` and the MoE layers
    (`sluice.moe`: node, experts, top_k, gating, experts_per_rank) on the
    function. Errors: N not dividing an op's experts (naming the op and E),
    a function with no `sluice.moe`, a function already split by --tp or
    --pp. `ep` = 1 leaves the function as it is.
  }];
  let options = [
    Option<"ep", "ep", "int64_t", "1", "Ranks the experts are spread over">,
  ];
  let dependentDialects = ["sluice::SluiceDialect"];
}

def PlanTensorParallelPass : Pass<"sluice-plan-tensor-parallel", "mlir::func::FuncOp"> {
  let summary = "Chooses the Megatron-style split of each weight for --tp=N [--sp]";
  let description = [{
    Starts from the recognized composites: each `sluice.attention` is split
    by heads (the Q/K/V projections behind it column-parallel, traced back
    through the exporter's reshapes, transposes and the split of a fused
    QKV weight; the output projection row-parallel), each MLP (matmuls into
    an elementwise chain into a matmul: gelu, silu, gated) column- then
    row-parallel, the largest embedding table vocab-parallel with the LM
    head that projects onto the same vocabulary. Marks the weights
    (`sluice.split = array<i64: axis, groups>`) and the lookup
    (`sluice.vocab_parallel`); sluice-partition does the rewriting. Heads or
    an MLP width that `tp` does not divide are an error naming the op and
    the sizes; an attention whose projections it cannot trace stays
    replicated, with a remark saying why.
  }];
  let options = [
    Option<"tp", "tp", "int64_t", "1", "Ranks of the tensor-parallel grid">,
    Option<"sp", "sp", "bool", "false",
           "Sequence parallelism: norms and residual adds split along the sequence">,
  ];
  let dependentDialects = ["sluice::SluiceDialect"];
}

//===----------------------------------------------------------------------===//
// fuse
//===----------------------------------------------------------------------===//

def FlattenSequenceIOPass : Pass<"sluice-flatten-sequence-io", "mlir::func::FuncOp"> {
  let summary = "Returns a sequence result's elements as the bundle's outputs";
  let description = [{
    The first pass of the fuse phase: bundles are static tensor programs, so
    each result of the function that is a `sluice.sequence_construct` of
    ranked tensors (or a `sluice.sequence_empty`) is replaced by its element
    tensors, named `NAME.0`, `NAME.1` ... in `sluice.output_names`;
    `sluice.output_sequences` records each such output's name and element
    names, in order (an array of dictionaries `name`, `elements`), for the
    bundle's manifest. A returned sequence that is anything else stays (the
    plan phase then says it cannot be planned). A sequence input left at
    this point is an error naming the `--shape` syntax that binds its
    elements (sluice-specialize-shapes flattens inputs in the simplify
    phase). Not in the simplify phase, whose results the reference
    evaluator returns as they are (a sequence output stays a sequence there).
  }];
  let dependentDialects = ["sluice::SluiceDialect"];
}

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
    `fp8-gemm=true` (the cuda target) first gives every Form F8 matmul the
    dequantize_linear ops of its E4M3 activation and constant E4M3 weight,
    so that it runs as one fp8 GEMM and the activation's producer stores
    E4M3. `conv-epilogue=true` (the cpu target) treats an f32 2-D `sluice.conv`
    as an F2 anchor: its elementwise consumers (ReLU, the residual Add of a
    ResNet block) join its group, which the cpu target runs as one oneDNN
    convolution with post-ops.
  }];
  let options = [
    Option<"mode", "mode", "std::string", "\"all\"",
           "Which groups to grow: elementwise or all">,
    Option<"fp8Gemm", "fp8-gemm", "bool", "false",
           "Form F8: make the dequantizations of an fp8 GEMM's E4M3 operands its "
           "prologue (targets with fp8 GEMM kernels: cuda)">,
    Option<"convEpilogue", "conv-epilogue", "bool", "false",
           "Grow an elementwise epilogue (bias, ReLU, residual Add) on f32 2-D "
           "convolutions, form F2 (targets that fold it: cpu, as oneDNN post-ops)">,
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

def ConfigureTargetPass : Pass<"sluice-configure-target", "mlir::ModuleOp"> {
  let summary = "Records the targets' kernel choices on the module";
  let description = [{
    The last step of the plan phase: records the choices that the cpu
    kernels' code depends on beyond the IR, as the module attribute
    `sluice.cpu_config = {isa, conv, packed_weights}`, so that code
    generation reads them from the IR (and a planned .mlir file carries
    them) instead of from the environment or the compiling host:

    - `isa`: the instruction set the bundle's kernels are written for:
      `avx512` (sluice_sgemm's packed AVX-512 kernel), `avx2` (AVX2 + FMA:
      OpenBLAS, one-row GEMMs on the AVX2 kernel) or `generic` (OpenBLAS).
      sluice-compile's `--cpu-isa=native` (the default) names the host's.
    - `conv`: how f32 convolutions run: `onednn` (oneDNN, activations that
      only convolutions read kept in its blocked layout), `onednn-nchw`
      (oneDNN, each call reordering its NCHW src and dst) or `im2col`
      (im2col + OpenBLAS).
    - `packed_weights`: f32 GEMM weights stored packed for the `isa`'s
      kernel at compile time.

    The cuda target's host steps (groups without a cuda kernel, emitted by
    the cpu kernel emitter) follow it too. A module without the attribute
    is emitted as `generic`, `onednn` where the compiler has oneDNN, and
    unpacked weights.

    With a cuSPARSELt header given, also
    `sluice.cuda_config = {cusparselt_header, cusparselt_lib_dir}`: the
    cuda target emits 2:4 GEMMs through cuSPARSELt with these files (the
    driver finds them: sluice-compile's `--cusparselt-dir`); without it 2:4
    GEMMs run dense.
  }];
  let options = [
    Option<"isa", "isa", "std::string", /*default=*/"\"generic\"",
           "avx512, avx2 or generic">,
    Option<"conv", "conv", "std::string", /*default=*/"\"onednn\"",
           "onednn, onednn-nchw or im2col">,
    Option<"packedWeights", "packed-weights", "bool", /*default=*/"false",
           "store f32 GEMM weights packed for the isa's kernel">,
    Option<"cusparseltHeader", "cusparselt-header", "std::string", /*default=*/"",
           "cuda: cusparseLt.h as found at compile time (empty: none)">,
    Option<"cusparseltLibDir", "cusparselt-lib-dir", "std::string", /*default=*/"",
           "cuda: the folder of cuSPARSELt's library">,
  ];
}

#endif // SLUICE_PASSES_TD
