//===- SluiceIndexingOps.td - gathers, scatters, index-driven ops -*- tablegen -*-===//
//
// Ops whose data movement is driven by index tensors: gather and scatter
// families, one-hot, non-zero, compress, and resampling (resize).
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_INDEXING_OPS_TD
#define SLUICE_INDEXING_OPS_TD

include "dialects/sluice/SluiceBase.td"
include "dialects/sluice/SluiceAttrs.td"

def Sluice_GatherOp : Sluice_InferredOp<"gather"> {
  let summary = "ONNX Gather: take slices along `axis` at `indices` (negative indices count from the end)";
  let arguments = (ins Sluice_Tensor:$input, Sluice_IndexTensor:$indices,
                   DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Sluice_Tensor:$output);
  let hasVerifier = 1;
}

#endif // SLUICE_INDEXING_OPS_TD
