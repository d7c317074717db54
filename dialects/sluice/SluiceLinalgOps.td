//===- SluiceLinalgOps.td - contractions, convolution, normalization -*- tablegen -*-===//
//
// Ops that contract or window over data: matmul, conv, pooling, the
// normalizations, einsum and the quantization ops with their integer forms.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_LINALG_OPS_TD
#define SLUICE_LINALG_OPS_TD

include "dialects/sluice/SluiceBase.td"
include "dialects/sluice/SluiceAttrs.td"

def Sluice_MatMulOp : Sluice_InferredOp<"matmul", [SameOperandsElementType]> {
  let summary = "NumPy matmul: batched, broadcasting batch dims, 1-D operands promoted";
  let description = [{
    Floating-point inputs accumulate in at least fp32 (fp64 stays fp64).
  }];
  let arguments = (ins Sluice_Tensor:$lhs, Sluice_Tensor:$rhs);
  let results = (outs Sluice_Tensor:$output);
}

#endif // SLUICE_LINALG_OPS_TD
