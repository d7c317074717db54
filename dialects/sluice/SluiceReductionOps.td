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

def Sluice_ReduceOp : Sluice_InferredOp<"reduce"> {
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

def Sluice_SoftmaxOp : Sluice_InferredOp<"softmax"> {
  let summary = "softmax along one axis (max-subtracted, fp32 statistics)";
  let arguments = (ins Sluice_FloatTensor:$input, I64Attr:$axis,
                   DefaultValuedAttr<BoolAttr, "false">:$log);
  let results = (outs Sluice_FloatTensor:$output);
  let hasVerifier = 1;
}

#endif // SLUICE_REDUCTION_OPS_TD
