//===- SluiceCompositeOps.td - recognized composites -------*- tablegen -*-===//
//
// Ops that the recognize phase (docs/architecture.md) forms from the
// primitive chains exporters write: GELU, SiLU, RMS normalization,
// attention and mixture-of-experts MLPs.
// (LayerNorm is `sluice.layer_norm`, which the importer also produces from
// ONNX LayerNormalization.) Every composite has a decomposition back to
// primitive ops (`sluice-decompose-composites`, passes/recognize) and its
// own reference evaluator, so the two can be compared.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_COMPOSITE_OPS_TD
#define SLUICE_COMPOSITE_OPS_TD

include "dialects/sluice/SluiceBase.td"

def Sluice_GeluOp : Sluice_InferredOp<"gelu", [Sluice_Transcendental, Sluice_Elementwise, Sluice_RunsInHalf]> {
  let summary = "GELU: x * Phi(x), exact (erf) or with the tanh approximation";
  let description = [{
    `approximate = "none"`: `0.5 * x * (1 + erf(x / sqrt(2)))`;
    `approximate = "tanh"`:
    `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))` (ONNX Gelu,
    opset 20). Elementwise: fuses like any unary op.
  }];
  let arguments = (ins Sluice_FloatTensor:$input,
                   DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let results = (outs Sluice_FloatTensor:$output);
  let hasVerifier = 1;
}

def Sluice_SiluOp : Sluice_InferredOp<"silu", [Sluice_Transcendental, Sluice_Elementwise, Sluice_RunsInHalf]> {
  let summary = "SiLU (swish): x * sigmoid(x)";
  let arguments = (ins Sluice_FloatTensor:$input);
  let results = (outs Sluice_FloatTensor:$output);
}

def Sluice_RmsNormOp : Sluice_InferredOp<"rms_norm", [Sluice_RowOp, Sluice_RunsInHalf]> {
  let summary = "RMS normalization over dims [axis, rank): x / sqrt(mean(x^2) + epsilon) * scale";
  let description = [{
    ONNX RMSNormalization (opset 23) and the Pow/ReduceMean/Add/Sqrt/Div (or
    Rsqrt/Mul) chains that LLaMA-style models export. Statistics are
    computed in fp32 or wider. `scale` broadcasts against the normalized
    dims.
  }];
  let arguments = (ins Sluice_FloatTensor:$input, Sluice_FloatTensor:$scale,
                   DefaultValuedAttr<I64Attr, "-1">:$axis,
                   DefaultValuedAttr<F32Attr, "1e-5">:$epsilon);
  let results = (outs Sluice_FloatTensor:$output);
  let hasVerifier = 1;
}

def Sluice_AttentionOp : Sluice_Op<"attention",
    [Sluice_RunsInHalf, AttrSizedOperandSegments, Sluice_InferTypes]> {
  let summary = "scaled dot-product attention: softmax(scale * Q K^T + mask) V";
  let description = [{
    `query` is `[B..., Sq, D]`, `key` `[B..., Sk, D]`, `value`
    `[B..., Sk, Dv]` (heads are batch dims); the result is `[B..., Sq, Dv]`.
    Batch dims of key and value broadcast against the query's.

    - `mask` (optional) broadcasts to `[B..., Sq, Sk]`: a float mask is
      added to the scaled scores (0 keeps, -inf or a large negative value
      drops); a boolean mask keeps the positions where it is true (others
      get -inf).
    - `causal`: query i sees keys j <= i + (Sk - Sq) (bottom-right aligned).
    - `window` (with `causal`, > 0; Mistral's `sliding_window`): query i sees
      only the `window` keys i + (Sk - Sq) - window < j <= i + (Sk - Sq),
      and kernels skip the rest; 0 is no window.
    - `rotary_cos` / `rotary_sin` (optional, together) apply rotary position
      embeddings to query and key first, in the rotate-half form of
      GPT-NeoX/LLaMA: `x * cos + rotate_half(x) * sin` with
      `rotate_half(x) = concat(-x[..., D/2:], x[..., :D/2])`; both broadcast
      against the query's and the key's shapes.

    Softmax statistics are fp32 (or wider). A row whose keys are all masked
    out is NaN, as the decomposition (Where -> Softmax) gives.
  }];
  let arguments = (ins Sluice_FloatTensor:$query, Sluice_FloatTensor:$key,
                   Sluice_FloatTensor:$value,
                   Optional<TensorOf<[F16, BF16, F32, F64, I1]>>:$mask,
                   Optional<Sluice_FloatTensor>:$rotary_cos,
                   Optional<Sluice_FloatTensor>:$rotary_sin,
                   F32Attr:$scale,
                   DefaultValuedAttr<BoolAttr, "false">:$causal,
                   DefaultValuedAttr<I64Attr, "0">:$window);
  let results = (outs Sluice_FloatTensor:$output);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^)?
    (`rotary` `(` $rotary_cos^ `,` $rotary_sin `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Sluice_MoeOp : Sluice_Op<"moe", [AttrSizedOperandSegments, Sluice_InferTypes]> {
  let summary = "a mixture-of-experts MLP: each token through its chosen experts";
  let description = [{
    `tokens` is `[N..., D]`; expert e is the MLP
    `act(x w1[e] + b1[e]) w2[e] + b2[e]`, or with `w3` the gated MLP
    `(act(x w1[e] + b1[e]) * (x w3[e] + b3[e])) w2[e] + b2[e]` (SwiGLU
    with `act = silu`, as Mixtral and Qwen2-MoE), with `w1` and `w3`
    `[E, D, F]`, `b1` and `b3` `[E, F]`, `w2` `[E, F, Do]`, `b2` `[E, Do]`
    (biases optional); the result is `[N..., Do]`. `experts` is E of the
    whole model.

    - `gating = "top_k"`: `router` holds the router's logits `[N..., E]`;
      `p = softmax(router)`, the token goes to the `top_k` largest (ties:
      the lower expert first, as TopK), weighted by their probabilities
      (divided by their sum when `normalize`), and the weighted outputs are
      summed.
    - `gating = "hard"`: `router` is an integer expert index per sample
      (`[B]` for tokens `[B, S, D]`; a sentence's language): every token of
      sample b goes to expert `router[b]` with weight 1 (`top_k` = 1).

    `activation` is "none", "relu", "gelu", "gelu_tanh" or "silu".
    `expert_offset` (optional, `tensor<1xi64>`) is set by expert
    parallelism (`--ep`): the op holds only experts
    `[offset, offset + E_local)` (`w1`'s first dim), tokens routed elsewhere
    contribute nothing (partial sums that an all_reduce adds up). The offset
    is a shard constant, so one program serves every rank.
  }];
  let arguments = (ins Sluice_FloatTensor:$tokens, Sluice_Tensor:$router,
                   Sluice_FloatTensor:$w1, Optional<Sluice_FloatTensor>:$b1,
                   Sluice_FloatTensor:$w2, Optional<Sluice_FloatTensor>:$b2,
                   Optional<Sluice_FloatTensor>:$w3, Optional<Sluice_FloatTensor>:$b3,
                   Optional<Sluice_IndexTensor>:$expert_offset,
                   I64Attr:$experts, I64Attr:$top_k, StrAttr:$gating,
                   DefaultValuedStrAttr<StrAttr, "none">:$activation,
                   DefaultValuedAttr<BoolAttr, "false">:$normalize);
  let results = (outs Sluice_FloatTensor:$output);
  let assemblyFormat = [{
    $tokens `,` $router `experts` `(` $w1 (`bias` $b1^)? `,` $w2 (`bias` $b2^)?
    (`,` `up` $w3^ (`bias` $b3^)?)? `)`
    (`offset` $expert_offset^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // SLUICE_COMPOSITE_OPS_TD
