//===- SluiceReductionOps.td - reductions, softmax, top-k, scans -*- tablegen -*-===//
//
// Ops that reduce or scan along axes. Axes that ONNX passes as a tensor input
// are an operand here too, folded to a constant by the simplify phase.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_REDUCTION_OPS_TD
#define SLUICE_REDUCTION_OPS_TD

include "dialects/sluice/SluiceBase.td"
include "dialects/sluice/SluiceAttrs.td"

def Sluice_ReduceOp : Sluice_InferredOp<"reduce", [Sluice_RowOp]> {
  let summary = "reduces over `axes` (all dims when absent or empty, unless noop_with_empty_axes)";
  let description = [{
    Floating-point sums and means accumulate in at least fp32. Reducing an
    empty set gives the combiner's identity (0, 1, -inf, +inf; mean is NaN).
  }];
  let arguments = (ins Sluice_Tensor:$input, Optional<1DTensorOf<[I64]>>:$axes,
                   Sluice_ReduceKindAttr:$kind,
                   DefaultValuedAttr<BoolAttr, "true">:$keepdims,
                   DefaultValuedAttr<BoolAttr, "false">:$noop_with_empty_axes);
  let results = (outs Sluice_Tensor:$output);
}

def Sluice_SoftmaxOp : Sluice_InferredOp<"softmax", [Sluice_RowOp, Sluice_RunsInHalf]> {
  let summary = "softmax along one axis (max-subtracted, fp32 statistics)";
  let arguments = (ins Sluice_FloatTensor:$input, I64Attr:$axis,
                   DefaultValuedAttr<BoolAttr, "false">:$log);
  let results = (outs Sluice_FloatTensor:$output);
  let hasVerifier = 1;
}

/// ArgMax and ArgMin share operands, attributes and result-type inference.
class Sluice_ArgReduceOp<string mnemonic, string which>
    : Sluice_InferredOp<mnemonic, [Sluice_RunsInHalf]> {
  let summary = "index (i64) of the " # which # " element along `axis`";
  let description = [{
    Ties resolve to the first occurrence, or to the last with
    `select_last_index`. With `keepdims` the reduced dim stays as size 1.
    NaN compares greater than (argmax) or less than (argmin) every number, so
    the first NaN wins, as NumPy's argmax does.
  }];
  let arguments = (ins Sluice_Tensor:$input,
                   DefaultValuedAttr<I64Attr, "0">:$axis,
                   DefaultValuedAttr<BoolAttr, "true">:$keepdims,
                   DefaultValuedAttr<BoolAttr, "false">:$select_last_index);
  let results = (outs TensorOf<[I64]>:$output);
  let hasVerifier = 1;
}

def Sluice_ArgMaxOp : Sluice_ArgReduceOp<"argmax", "largest">;
def Sluice_ArgMinOp : Sluice_ArgReduceOp<"argmin", "smallest">;

def Sluice_TopKOp : Sluice_InferredOp<"topk", [Sluice_RunsInHalf]> {
  let summary = "the `k` largest (or smallest) elements along `axis` and their i64 indices";
  let description = [{
    `k` is a one-element 1-D i64 tensor, as ONNX TopK's input: the result dim
    along `axis` is static only when `k` is a constant. Equal values keep the
    lower index first. With `sorted = false` the order is unspecified; the
    reference evaluator returns them sorted anyway.
  }];
  let arguments = (ins Sluice_Tensor:$input, 1DTensorOf<[I64]>:$k,
                   DefaultValuedAttr<I64Attr, "-1">:$axis,
                   DefaultValuedAttr<BoolAttr, "true">:$largest,
                   DefaultValuedAttr<BoolAttr, "true">:$sorted);
  let results = (outs Sluice_Tensor:$values, TensorOf<[I64]>:$indices);
  let hasVerifier = 1;
}

def Sluice_CumSumOp : Sluice_InferredOp<"cumsum"> {
  let summary = "inclusive (or exclusive) prefix sums along `axis`, optionally reversed";
  let description = [{
    `axis` is a 0-D or one-element 1-D i32/i64 tensor, as ONNX CumSum's
    input; it does not change the result type. Floating-point sums
    accumulate in at least fp32.
  }];
  let arguments = (ins Sluice_Tensor:$input, Sluice_IndexTensor:$axis,
                   DefaultValuedAttr<BoolAttr, "false">:$exclusive,
                   DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs Sluice_Tensor:$output);
  let hasVerifier = 1;
}

#endif // SLUICE_REDUCTION_OPS_TD
