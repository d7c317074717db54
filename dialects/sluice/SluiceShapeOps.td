//===- SluiceShapeOps.td - shape and data-movement ops -------*- tablegen -*-===//
//
// Ops that move data without arithmetic: reshape, transpose, slicing,
// concatenation, padding, gathers and scatters, and the ops that compute or
// create shapes. Where ONNX takes a parameter as a tensor input (Reshape's
// shape, Slice's starts, ...), so does the op: the simplify phase folds those
// operands to constants, and result types become static once they are.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_SHAPE_OPS_TD
#define SLUICE_SHAPE_OPS_TD

include "dialects/sluice/SluiceBase.td"
include "dialects/sluice/SluiceAttrs.td"

def Sluice_ShapeOp : Sluice_InferredOp<"shape"> {
  let summary = "the shape of a tensor as a 1-D i64 tensor, dims [start, end)";
  let arguments = (ins AnyTensor:$input,
                   DefaultValuedAttr<I64Attr, "0">:$start,
                   OptionalAttr<I64Attr>:$end);
  let results = (outs 1DTensorOf<[I64]>:$output);
  let hasFolder = 1;
}

def Sluice_ReshapeOp : Sluice_InferredOp<"reshape"> {
  let summary = "ONNX Reshape: 0 copies the input dim unless allowzero, -1 is inferred";
  let arguments = (ins Sluice_Tensor:$input, 1DTensorOf<[I64]>:$shape,
                   DefaultValuedAttr<BoolAttr, "false">:$allowzero);
  let results = (outs Sluice_Tensor:$output);
  let hasFolder = 1;
}

def Sluice_TransposeOp : Sluice_InferredOp<"transpose"> {
  let summary = "permutes dims: output dim i is input dim perm[i]";
  let arguments = (ins Sluice_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Sluice_Tensor:$output);
  let hasVerifier = 1;
}

#endif // SLUICE_SHAPE_OPS_TD
